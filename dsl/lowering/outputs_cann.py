"""The parts of a CANN custom-op project that vector and cube kernels write the same way: the
msopgen JSON, the ``BEGIN_TILING_DATA_DEF`` class, ``InferDataType``, the ``OpDef`` and the
``AddConfig`` targets. Mixed into the vector generator (``outputs._Gen``) and the cube one
(``outputs_cann_cube.CubeCannForm``), which provide the program (``p``), the op names
(``op``, ``op_type``, ``struct``), the ``configs`` and the tiling fields (``_fields``,
``_field_notes``)."""

from __future__ import annotations

import json
from collections.abc import Iterable

from ascendcraft.soc import all_socs, load_soc

from .. import ir
from ..names import tunable
from .outputs_direct import GE_TYPE, MSOPGEN_TYPE
from .tiling import camel

SCALAR_ATTR_DEFAULT = 0.0  # msopgen/OpDef need a default for an optional attr; callers always pass one


def family_configs(op: str, program: ir.Program, kernel_text: str, soc: str, *,
                   split_cores: bool = False) -> list[str]:
    """``AddConfig`` targets: the CANN family of the target SoC, then that of every other
    known SoC that has what the kernel uses (DataCopyPad, bf16; separate cube and vector
    cores for a kernel with both) — the SoCs' capabilities, never their names."""
    target = load_soc(soc)
    needs = ["data_copy_pad"] if "DataCopyPad" in kernel_text else []
    if any(t.dtype == "bf16" for t in program.tensors):
        needs.append("bf16")
    missing = target.capabilities.missing(needs)
    if split_cores and not target.capabilities.split_cores:
        missing.append("separate cube and vector cores")
    if missing:
        raise ValueError(f"{op}: {target.name} cannot run this kernel "
                         f"({' and '.join(missing)} not supported on {target.name})")
    configs = [target.capabilities.cann_family]
    for other in all_socs():
        family = other.capabilities.cann_family
        fits = not other.capabilities.missing(needs) and (other.capabilities.split_cores or not split_cores)
        if family not in configs and fits:
            configs.append(family)
    return configs


class CannProjectForm:
    """``cann/<op>.json``, ``cann/op_host/<op>_tiling.h`` and the shared tail of
    ``cann/op_host/<op>.cpp`` (InferDataType, OpDef)."""

    p: ir.Program
    op: str
    op_type: str
    struct: str
    configs: list[str]
    values: dict[str, int]  # every tunable's value baked into this build

    def _init_form(self, lk: object, soc: str, values: dict[str, int]) -> None:
        """What every project form knows of its lowering (vector ``LoweredKernel`` or cube)."""
        self.lk = lk
        self.p = lk.program
        self.soc = soc
        self.spec = load_soc(soc)
        self.values = values
        self.op = lk.op
        self.op_type = camel(lk.op)
        self.struct = lk.tiling.struct_name
        self.compute = f"{camel(lk.op)}ComputeTiling"

    def _fields(self) -> list[tuple[str, str]]:
        raise NotImplementedError

    def _field_notes(self) -> dict[str, str]:
        raise NotImplementedError

    def _tunable_comment(self, name: str) -> str:
        default = self.p.defaults()[name]
        return "DSL default" if self.values[name] == default else f"tuned (DSL default {default})"

    def _tunable_consts(self, indent: str = "") -> list[str]:
        width = max((len(tunable(t.name)) for t in self.p.tunables), default=0)
        vwidth = max((len(str(self.values[t.name])) + 1 for t in self.p.tunables), default=0)
        out = []
        for t in self.p.tunables:
            value = f"{self.values[t.name]};"
            out.append(f"{indent}constexpr int64_t {tunable(t.name).ljust(width)} = {value.ljust(vwidth)}  "
                       f"// {self._tunable_comment(t.name)}")
        return out

    def _compute_args(self, prefix: str, scalars: list[str]) -> str:
        tun = "".join(f", {prefix}{tunable(t.name)}" for t in self.p.tunables)
        sc = "".join(f", {s}" for s in scalars)
        return tun + sc

    # ---- cann/op_host/<op>.cpp: the pieces vector and cube hosts share --------------------
    def _host_includes(self, std: tuple[str, ...]) -> list[str]:
        """op_host's includes: these standard headers, the tiling class, CANN's registry and platform."""
        return [*(f"#include <{h}>" for h in std), "",
                f"#include \"{self.op}_tiling.h\"",
                "#include \"register/op_def_registry.h\"",
                "#include \"tiling/platform/platform_ascendc.h\"",
                ""]

    def _host_plain_and_tunables(self, ub_reserve: int, *, kernels: str, plain_note: tuple[str, ...] = ()) -> list[str]:
        """The plain tiling header in its own namespace, the baked-in tunables and the UB
        reserve: everything of op_host between the includes and TilingFunc."""
        depth = "queue depth is" if kernels == "kernel" else "queue depths are"
        L = [f"// The plain header's POD struct has the same name as the CANN class {self.struct}",
             "// (namespace optiling); it is kept apart in namespace acx_plain." + (f" {plain_note[0]}" if plain_note else ""),
             *plain_note[1:],
             "namespace acx_plain {",
             f"#include \"{self.op}_tiling_plain.h\"",
             "}  // namespace acx_plain",
             "",
             "namespace optiling {",
             f"// Tunables baked into this build (the search's choice; the {depth} also compiled",
             f"// into the {kernels}, so rebuild the whole project to change any of them).",
             "namespace tunables {"]
        L += self._tunable_consts()
        return L + ["}  // namespace tunables", "",
                    f"// UB bytes kept free for AscendC API scratch on {self.soc} (same budget as ascendcraft's checker).",
                    f"constexpr uint64_t kUbReserveBytes = {ub_reserve};", ""]

    def _host_call_plain(self, cores: str, scalar_names: list[str]) -> list[str]:
        """TilingFunc's call of the one plain tiling function, failing the graph on its error."""
        return [f"    // {4 if self.p.scalars else 3}. The split: the one plain C++ tiling function.",
                f"    acx_plain::{self.struct} plain{{}};",
                f"    const char* error = acx_plain::{self.compute}(dims.data(), ranks.data(), "
                f"static_cast<int32_t>(ranks.size()), {cores}{self._compute_args('tunables::', scalar_names)}, &plain);",
                "    if (error != nullptr) {",
                f"        std::fprintf(stderr, \"{self.op_type} tiling: %s\\n\", error);",
                "        return ge::GRAPH_FAILED;",
                "    }"]

    def _host_tail(self, workspace_note: list[str], extra_workspace: str) -> list[str]:
        """The end of op_host: the workspace size (AscendC's system workspace plus
        ``extra_workspace``, a C++ expression or ""), then InferShape, InferDataType, OpDef."""
        total = "static_cast<size_t>(platform.GetLibApiWorkSpaceSize())" + (
            f" +\n                        {extra_workspace};" if extra_workspace else ";")
        return [*workspace_note,
                "    size_t* workspaceSizes = context->GetWorkspaceSizes(1);",
                f"    workspaceSizes[0] = {total}",
                "    return ge::GRAPH_SUCCESS;",
                "}",
                "}  // namespace optiling",
                "",
                *self._infer_shape(), *self._infer_dtype(), *self._op_def()]

    # ---- cann/<op>.json -------------------------------------------------------------------
    def op_json(self) -> str:
        def desc(t: ir.Param) -> dict:
            return {"name": t.name, "param_type": "required", "format": ["ND"], "type": [MSOPGEN_TYPE[t.dtype]]}

        op: dict = {"op": self.op_type,
                    "input_desc": [desc(t) for t in self.p.inputs],
                    "output_desc": [desc(t) for t in self.p.outputs]}
        if self.p.scalars:
            op["attr"] = [{"name": s.name, "param_type": "optional", "type": "float",
                           "default_value": SCALAR_ATTR_DEFAULT} for s in self.p.scalars]
        return json.dumps([op], indent=4) + "\n"

    # ---- cann/op_host/<op>_tiling.h ---------------------------------------------------------
    def cann_tiling_header(self) -> str:
        guard = f"ACX_{self.op.upper()}_TILING_H"
        notes = self._field_notes()
        fields = self._fields()
        width = max(len(f"TILING_DATA_FIELD_DEF({t}, {n});") for t, n in fields)
        L = [f"// CANN tiling data class of '{self.op}' (op type {self.op_type}), generated by ascendcraft.",
             f"// Same field names, types and order as struct {self.struct} in {self.op}_tiling_plain.h:",
             "// the kernel is a template on its tiling type, so it reads CANN's generated struct and",
             "// the direct-launch struct the same way. The values come from the plain function.",
             f"#ifndef {guard}", f"#define {guard}", "#include \"register/tilingdata_base.h\"", "",
             "namespace optiling {", f"BEGIN_TILING_DATA_DEF({self.struct})"]
        for t, n in fields:
            decl = f"TILING_DATA_FIELD_DEF({t}, {n});"
            L.append(f"    {decl.ljust(width)}  // {notes.get(n, '')}".rstrip())
        L += ["END_TILING_DATA_DEF;", "",
              f"REGISTER_TILING_DATA_CLASS({self.op_type}, {self.struct})",
              "}  // namespace optiling", f"#endif  // {guard}", ""]
        return "\n".join(L)

    # ---- cann/op_host/<op>.cpp: the tail --------------------------------------------------
    def _copy_fields(self, dst: str, src: str) -> list[str]:
        """Copy every field of the plain struct into the registered tiling class."""
        return [f"    {dst}.set_{n}({src}.{n});" for _, n in self._fields()]

    def _infer_dtype(self) -> list[str]:
        L = ["// Every tensor has one fixed dtype in the DSL program.",
             "static ge::graphStatus InferDataType(gert::InferDataTypeContext* context) {"]
        for i, o in enumerate(self.p.outputs):
            L.append(f"    context->SetOutputDataType({i}, {GE_TYPE[o.dtype]});  // {o.name}")
        L += ["    return ge::GRAPH_SUCCESS;", "}", "}  // namespace ge", ""]
        return L

    def _op_def(self) -> list[str]:
        t = self.op_type
        L = ["namespace ops {",
             f"class {t} : public OpDef {{",
             "public:",
             f"    explicit {t}(const char* name) : OpDef(name) {{"]
        for x in self.p.inputs:
            L.append(f"        this->Input(\"{x.name}\").ParamType(REQUIRED).DataType({{{GE_TYPE[x.dtype]}}})"
                     ".Format({ge::FORMAT_ND}).UnknownShapeFormat({ge::FORMAT_ND});")
        for x in self.p.outputs:
            L.append(f"        this->Output(\"{x.name}\").ParamType(REQUIRED).DataType({{{GE_TYPE[x.dtype]}}})"
                     ".Format({ge::FORMAT_ND}).UnknownShapeFormat({ge::FORMAT_ND});")
        for s in self.p.scalars:
            L.append(f"        this->Attr(\"{s.name}\").AttrType(OPTIONAL).Float({SCALAR_ATTR_DEFAULT!r}f);"
                     "  // runtime scalar")
        L += ["        this->SetInferShape(ge::InferShape).SetInferDataType(ge::InferDataType);",
              "        this->AICore().SetTiling(optiling::TilingFunc);"]
        for c in self.configs:
            L.append(f"        this->AICore().AddConfig(\"{c}\");")
        L += ["    }", "};", f"OP_ADD({t});", "}  // namespace ops", ""]
        return L

    def _attr_reads(self, number: int) -> tuple[list[str], list[str]]:
        """TilingFunc lines reading the runtime scalars from the op attributes (step
        ``number``), and the C++ names of their values."""
        if not self.p.scalars:
            return [], []
        L = [f"    // {number}. Runtime scalars, passed as op attributes.",
             "    const gert::RuntimeAttrs* attrs = context->GetAttrs();",
             "    if (attrs == nullptr) return ge::GRAPH_FAILED;"]
        names = []
        for i, s in enumerate(self.p.scalars):
            ptr, val = f"attr_{s.name}", f"sc_{s.name}"
            L += [f"    const float* {ptr} = attrs->GetAttrPointer<float>({i});  // {s.name}",
                  f"    if ({ptr} == nullptr) return ge::GRAPH_FAILED;",
                  f"    const float {val} = *{ptr};"]
            names.append(val)
        L.append("")
        return L, names


def shape_gather(tensors: Iterable[ir.Param], inputs: list[ir.Param], outputs: list[ir.Param]) -> list[str]:
    """TilingFunc lines gathering the shapes of ``tensors`` (kernel-argument order) into
    ``dims`` / ``ranks``, the layout every plain tiling function reads."""
    in_idx = {t.name: i for i, t in enumerate(inputs)}
    out_idx = {t.name: i for i, t in enumerate(outputs)}
    L = ["    const gert::StorageShape* tensorShapes[] = {"]
    for t in tensors:
        call = (f"context->GetInputShape({in_idx[t.name]})" if t.kind == "in"
                else f"context->GetOutputShape({out_idx[t.name]})")
        L.append(f"        {call},  // {t.name}")
    L += ["    };",
          "    std::vector<int64_t> dims;",
          "    std::vector<int32_t> ranks;",
          "    for (const gert::StorageShape* tensorShape : tensorShapes) {",
          "        if (tensorShape == nullptr) return ge::GRAPH_FAILED;",
          "        const gert::Shape& shape = tensorShape->GetStorageShape();",
          "        ranks.push_back(static_cast<int32_t>(shape.GetDimNum()));",
          "        for (size_t i = 0; i < shape.GetDimNum(); ++i) dims.push_back(shape.GetDim(i));",
          "    }"]
    return L
