"""Output forms of one lowering (DESIGN §5): the CANN custom-op project, the direct-launch
program, a torch_npu extension and the emulator build, written side by side.

Every form calls the same plain C++ tiling function (``<op>_tiling.h``, pass 1) so the split
of the work can never differ between them; this module only writes the glue around it.

Naming: CANN's op_host registers a tiling class ``<Op>TilingData`` (``BEGIN_TILING_DATA_DEF``)
and the kernel gets a generated struct of that name, which is also the name of the POD struct
in the plain header. The kernel side never sees the plain header (``cann_kernel_source`` does
not include it); on the host side the op_host ``.cpp`` includes the plain header inside
``namespace acx_plain { ... }`` (after ``<cstdint>``, so the header's own include is a no-op)
while the CANN class lives in ``namespace optiling``: both keep their name and never meet.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ascendcraft.soc import all_socs, load_soc

from .. import ir
from ..names import mangle, tunable
from .kernel import LoweredKernel
from .tiling import camel

# DSL dtype -> name in each world.
MSOPGEN_TYPE = {"f32": "float", "f16": "float16", "bf16": "bfloat16", "i32": "int32", "i8": "int8",
                "u8": "uint8", "bool": "bool"}
GE_TYPE = {"f32": "ge::DT_FLOAT", "f16": "ge::DT_FLOAT16", "bf16": "ge::DT_BF16", "i32": "ge::DT_INT32",
           "i8": "ge::DT_INT8", "u8": "ge::DT_UINT8", "bool": "ge::DT_BOOL"}
TORCH_TYPE = {"f32": "at::kFloat", "f16": "at::kHalf", "bf16": "at::kBFloat16", "i32": "at::kInt",
              "i8": "at::kChar", "u8": "at::kByte", "bool": "at::kBool"}
TORCH_PY_TYPE = {"f32": "torch.float32", "f16": "torch.float16", "bf16": "torch.bfloat16", "i32": "torch.int32",
                 "i8": "torch.int8", "u8": "torch.uint8", "bool": "torch.bool"}
DTYPE_NAME = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "i32": "int32", "i8": "int8",
              "u8": "uint8", "bool": "bool"}

SCALAR_ATTR_DEFAULT = 0.0  # msopgen/OpDef need a default for an optional attr; callers always pass one


@dataclass(frozen=True)
class OutputShape:
    """How an output's shape follows from the shape of ``source`` (an input tensor):
    ``same`` shape, ``drop_trailing`` the last ``n`` dims (rows reduced to one value per row),
    or ``drop_axis`` axis ``n`` (slabs reduced over their middle axis)."""

    output: str
    source: str
    rule: str
    n: int = 0
    window: tuple[int, int, int] = (0, 0, 0)  # rule "window": kernel, stride, padding

    def describe(self) -> str:
        if self.rule == "same":
            return f"shape of {self.source}"
        if self.rule == "drop_trailing":
            return f"shape of {self.source} without its last {self.n} dim(s)"
        if self.rule == "scalar":
            return "a 0-d tensor (one value)"
        if self.rule == "window":
            k, st, pd = self.window
            return (f"shape of {self.source} with each of its last {self.n} dims d pooled to "
                    f"(d + {2 * pd} - {k}) / {st} + 1")
        return f"shape of {self.source} without axis {self.n}"

    def apply(self, shape: list[int]) -> list[int]:
        """Python mirror of the C++ rules (used by tests and documentation)."""
        if self.rule == "same":
            return list(shape)
        if self.rule == "scalar":
            return []
        if self.rule == "window":
            k, st, pd = self.window
            return list(shape[: len(shape) - self.n]) + [(d + 2 * pd - k) // st + 1
                                                         for d in shape[len(shape) - self.n:]]
        if self.rule == "drop_trailing":
            if len(shape) < self.n:
                raise ValueError(f"{self.source} needs rank >= {self.n}")
            return list(shape[: len(shape) - self.n])
        if len(shape) <= self.n:
            raise ValueError(f"{self.source} needs rank > {self.n}")
        return [d for i, d in enumerate(shape) if i != self.n]


def output_shapes(lk: LoweredKernel) -> list[OutputShape]:
    """Output shape rules from the loop kind and each output's role in the kernel plan."""
    p = lk.program
    loop = p.loop
    source = _shape_source(lk)
    rules = []
    for o in p.outputs:
        role = lk.plan.roles.get(o.name, "tile")
        if role in ("tile", "step"):
            rules.append(OutputShape(o.name, source, "same"))
        elif role == "row_out" and loop.kind == "rows":
            rules.append(OutputShape(o.name, source, "drop_trailing", loop.dim))
        elif role == "outer" and loop.kind == "slabs":
            rules.append(OutputShape(o.name, source, "drop_axis", loop.dim))
        elif role == "scalar_out":
            rules.append(OutputShape(o.name, source, "scalar"))
        elif role == "window_out":
            rules.append(OutputShape(o.name, source, "window", loop.dim, loop.window))
        else:
            raise ValueError(f"output {o.name!r} has role {role!r} in a {loop.kind} loop: no shape rule")
    return rules


def _shape_source(lk: LoweredKernel) -> str:
    """The input whose shape is the loop's iteration space: the loop tensor itself, or an
    input read whole (role tile/step), which has the same shape."""
    p = lk.program
    inputs = [t.name for t in p.inputs]
    if p.loop.tensor in inputs:
        return p.loop.tensor
    for name in inputs:
        if lk.plan.roles.get(name, "tile") in ("tile", "step"):
            return name
    raise ValueError(f"{p.name}: no input has the shape of loop tensor {p.loop.tensor!r}; "
                     "output shapes cannot be inferred")


def tunable_values(lk: LoweredKernel, params: dict[str, int] | None) -> dict[str, int]:
    """The tunables baked into every host form: program defaults, overridden by ``params``.
    The queue depth is already compiled into the kernel, so it must agree with ``lk.depth``."""
    p = lk.program
    values = p.defaults()
    unknown = sorted(set(params or {}) - set(values))
    if unknown:
        raise ValueError(f"{p.name}: unknown tunables {unknown}; known: {sorted(values)}")
    values.update(params or {})
    depth = p.loop.depth
    if isinstance(depth, str) and values[depth] != lk.depth:
        raise ValueError(f"{p.name}: {depth}={values[depth]} but the kernel was lowered with depth "
                         f"{lk.depth}; lower() with the same params")
    return values


def write_outputs(lk: LoweredKernel, out_dir: Path, *, soc: str = "Ascend910B2",
                  params: dict[str, int] | None = None) -> list[Path]:
    """Write every output form of ``lk`` under ``out_dir``; returns the files written."""
    forms = render_outputs(lk, soc=soc, params=params)
    out_dir = Path(out_dir)
    written = []
    for rel, text in forms.items():
        path = out_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written


def render_outputs(lk: LoweredKernel, *, soc: str = "Ascend910B2",
                   params: dict[str, int] | None = None) -> dict[str, str]:
    """Relative path -> file text of every output form (``write_outputs`` without the disk)."""
    _check_argument_order(lk.program)
    g = _Gen(lk, soc, tunable_values(lk, params))
    op = lk.op
    return {
        f"cann/{op}.json": g.op_json(),
        f"cann/op_host/{op}_tiling.h": g.cann_tiling_header(),
        f"cann/op_host/{op}_tiling_plain.h": lk.tiling_header,
        f"cann/op_host/{op}.cpp": g.op_host_cpp(),
        f"cann/op_kernel/{op}.cpp": lk.cann_kernel_source(),
        f"direct/{op}_kernel.cpp": lk.kernel_source(),
        f"direct/{op}_tiling.h": lk.tiling_header,
        "direct/main.cpp": g.direct_main(),
        "direct/CMakeLists.txt": g.direct_cmake(),
        f"torch/{op}_binding.cpp": g.torch_binding(),
        "torch/setup.py": g.torch_setup(),
        f"torch/{op}.py": g.torch_wrapper(),
        f"emulator/{op}.cpp": lk.emulator_source(),
        f"emulator/{op}_tiling.h": lk.tiling_header,
        "README.md": g.readme(),
    }


def _check_argument_order(p: ir.Program) -> None:
    """CANN calls the kernel with all inputs, then all outputs; the kernel's GM arguments
    follow the DSL declaration order, so the two agree only when inputs come first."""
    kinds = [t.kind for t in p.tensors]
    if kinds != sorted(kinds, key=lambda k: k != "in"):
        raise ValueError(f"{p.name}: declare every In[...] tensor before the Out[...] tensors "
                         "(CANN passes inputs first)")


def ai_core_configs(lk: LoweredKernel, soc: str) -> list[str]:
    """``AddConfig`` targets: the CANN family of the target SoC, then that of every other
    known SoC that has what the kernel uses (DataCopyPad, bf16) — the SoCs' capabilities,
    never their names. Today every kernel carries the DataCopyPad row copies."""
    target = load_soc(soc)
    needs = ["data_copy_pad"] if "DataCopyPad" in lk.kernel_class else []
    if any(t.dtype == "bf16" for t in lk.program.tensors):
        needs.append("bf16")
    missing = target.capabilities.missing(needs)
    if missing:
        raise ValueError(f"{lk.op}: {target.name} cannot run this kernel "
                         f"({' and '.join(missing)} not supported on {target.name})")
    configs = [target.capabilities.cann_family]
    for other in all_socs():
        family = other.capabilities.cann_family
        if family not in configs and not other.capabilities.missing(needs):
            configs.append(family)
    return configs


class _Gen:
    """Renders the host-side files of one lowered kernel."""

    def __init__(self, lk: LoweredKernel, soc: str, values: dict[str, int]):
        self.lk = lk
        self.p = lk.program
        self.soc = soc
        self.spec = load_soc(soc)
        self.values = values
        self.op = lk.op
        self.op_type = camel(lk.op)
        self.struct = lk.tiling.struct_name
        self.compute = f"{camel(lk.op)}ComputeTiling"
        self.shapes = output_shapes(lk)
        self.configs = ai_core_configs(lk, soc)

    # ---- shared pieces ------------------------------------------------------------------
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

    def _field_notes(self) -> dict[str, str]:
        notes = {
            "n": "elements of the iteration space",
            "N": "rows", "W": "row width (elements)",
            "A": "outer extent", "K": "reduced axis extent", "B": "inner extent",
            "coreNum": "vector cores available",
            "ubBytes": "UB bytes used by all buffers",
        }
        for name, expr in self.lk.tiling.all_formulas():
            notes[name] = expr
        for s in self.lk.tiling.scalars:
            notes[mangle("sc", s)] = f"runtime scalar {s}"
        return notes

    def _fields(self) -> list[tuple[str, str]]:
        """(C++ type, name) of every tiling field, in the plain struct's order."""
        return ([("int64_t", f) for f in self.lk.tiling.fields()]
                + [("float", mangle("sc", s)) for s in self.lk.tiling.scalars]
                + [("float", n) for n, _ in self.lk.tiling.host])

    def _vector_shape_fn(self, o: OutputShape) -> list[str]:
        """C++ over std::vector<int64_t>: the output shape, same rules as InferShape."""
        fn = mangle("oshape", o.output)
        src = mangle("shape", o.source)
        L = [f"// {o.output}: {o.describe()} (the rule InferShape uses in the CANN op).",
             f"static std::vector<int64_t> {fn}(const std::vector<int64_t>& {src}) {{"]
        if o.rule == "same":
            L.append(f"    return {src};")
        elif o.rule == "scalar":
            L.append(f"    (void){src};")
            L.append("    return {};")
        elif o.rule == "window":
            k, st, pd = o.window
            L.append(f"    std::vector<int64_t> shape = {src};")
            L.append(f"    for (size_t i = shape.size() - {o.n}; i < shape.size(); ++i) "
                     f"shape[i] = (shape[i] + {2 * pd - k}) / {st} + 1;")
            L.append("    return shape;")
        elif o.rule == "drop_trailing":
            L.append(f"    if ({src}.size() < {o.n}) return {{}};")
            L.append(f"    return std::vector<int64_t>({src}.begin(), {src}.end() - {o.n});")
        else:
            L.append("    std::vector<int64_t> shape;")
            L.append(f"    for (size_t i = 0; i < {src}.size(); ++i) {{")
            L.append(f"        if (i != {o.n}) shape.push_back({src}[i]);")
            L.append("    }")
            L.append("    return shape;")
        L.append("}")
        return L

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

    # ---- cann/op_host/<op>.cpp -------------------------------------------------------------
    def op_host_cpp(self) -> str:
        p = self.p
        ub_reserve = (self.spec.ub_kib - self.spec.ub_budget_kib) * 1024
        L = [f"// CANN host side of '{self.op}' (op type {self.op_type}), generated by ascendcraft.",
             "// TilingFunc computes no split itself: it gathers the shapes, the vector core count and",
             f"// the attributes and calls {self.compute} from {self.op}_tiling_plain.h — the same",
             "// function the direct launcher, the torch extension and the emulator call — then copies",
             "// the result field by field into the registered tiling class.",
             "#include <cstdint>",
             "#include <cstdio>",
             "#include <vector>",
             "",
             f"#include \"{self.op}_tiling.h\"",
             "#include \"register/op_def_registry.h\"",
             "#include \"tiling/platform/platform_ascendc.h\"",
             "",
             f"// The plain header's POD struct has the same name as the CANN class {self.struct}",
             "// (namespace optiling); it is kept apart in namespace acx_plain. <cstdint> is included",
             "// above, so the header's own #include <cstdint> adds nothing inside the namespace.",
             "namespace acx_plain {",
             f"#include \"{self.op}_tiling_plain.h\"",
             "}  // namespace acx_plain",
             "",
             "namespace optiling {",
             "// Tunables baked into this build (the search's choice; the queue depth is also compiled",
             "// into the kernel, so rebuild the whole project to change any of them).",
             "namespace tunables {"]
        L += self._tunable_consts()
        L += ["}  // namespace tunables", "",
              f"// UB bytes kept free for AscendC API scratch on {self.soc} (same budget as ascendcraft's checker).",
              f"constexpr uint64_t kUbReserveBytes = {ub_reserve};", "",
              "static ge::graphStatus TilingFunc(gert::TilingContext* context) {",
              "    // 1. Shapes of the kernel's tensors, in kernel-argument order (inputs, then outputs).",
              "    const gert::StorageShape* tensorShapes[] = {"]
        in_idx = {t.name: i for i, t in enumerate(p.inputs)}
        out_idx = {t.name: i for i, t in enumerate(p.outputs)}
        for t in p.tensors:
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
              "    }",
              "",
              "    // 2. Vector cores and UB size of the SoC this op runs on.",
              "    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());",
              "    const int64_t coreNum = static_cast<int64_t>(platform.GetCoreNumAiv());",
              "    uint64_t ubSize = 0;",
              "    platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ubSize);",
              ""]
        scalar_names = []
        if p.scalars:
            L += ["    // 3. Runtime scalars, passed as op attributes.",
                  "    const gert::RuntimeAttrs* attrs = context->GetAttrs();",
                  "    if (attrs == nullptr) return ge::GRAPH_FAILED;"]
            for i, s in enumerate(p.scalars):
                ptr, val = mangle("attr", s.name), mangle("sc", s.name)
                L += [f"    const float* {ptr} = attrs->GetAttrPointer<float>({i});  // {s.name}",
                      f"    if ({ptr} == nullptr) return ge::GRAPH_FAILED;",
                      f"    const float {val} = *{ptr};"]
                scalar_names.append(val)
            L.append("")
        L += [f"    // {4 if p.scalars else 3}. The split: the one plain C++ tiling function.",
              f"    acx_plain::{self.struct} plain{{}};",
              f"    const char* error = acx_plain::{self.compute}(dims.data(), ranks.data(), "
              f"static_cast<int32_t>(ranks.size()), coreNum{self._compute_args('tunables::', scalar_names)}, &plain);",
              "    if (error != nullptr) {",
              f"        std::fprintf(stderr, \"{self.op_type} tiling: %s\\n\", error);",
              "        return ge::GRAPH_FAILED;",
              "    }",
              "    const uint64_t ubAvailable = ubSize > kUbReserveBytes ? ubSize - kUbReserveBytes : 0;",
              "    if (static_cast<uint64_t>(plain.ubBytes) > ubAvailable) {",
              f"        std::fprintf(stderr, \"{self.op_type} tiling: needs %lld B of UB, %llu B available\\n\",",
              "                     static_cast<long long>(plain.ubBytes), static_cast<unsigned long long>(ubAvailable));",
              "        return ge::GRAPH_FAILED;",
              "    }",
              "",
              "    // Copy every field into the registered class (same names as the plain struct).",
              f"    {self.struct} tiling;"]
        for _, n in self._fields():
            L.append(f"    tiling.set_{n}(plain.{n});")
        L += ["    context->SetBlockDim(static_cast<uint32_t>(plain.blockDim));",
              "    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());",
              "    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());",
              "",
              "    // Workspace: the system workspace AscendC reserves plus the kernel's own (the",
              "    // per-core partials of total_* reductions; 0 for kernels without them).",
              "    size_t* workspaceSizes = context->GetWorkspaceSizes(1);",
              "    workspaceSizes[0] = static_cast<size_t>(platform.GetLibApiWorkSpaceSize()) +",
              "                        static_cast<size_t>(plain.workspaceBytes);",
              "    return ge::GRAPH_SUCCESS;",
              "}",
              "}  // namespace optiling",
              ""]
        L += self._infer_shape()
        L += self._infer_dtype()
        L += self._op_def()
        return "\n".join(L)

    def _infer_shape(self) -> list[str]:
        in_idx = {t.name: i for i, t in enumerate(self.p.inputs)}
        out_idx = {t.name: i for i, t in enumerate(self.p.outputs)}
        L = ["namespace ge {",
             "// Output shapes follow the loop's iteration space (the shape of one input).",
             "static ge::graphStatus InferShape(gert::InferShapeContext* context) {"]
        sources = sorted({o.source for o in self.shapes}, key=lambda n: in_idx[n])
        for src in sources:
            L += [f"    const gert::Shape* {mangle('shape', src)} = context->GetInputShape({in_idx[src]});",
                  f"    if ({mangle('shape', src)} == nullptr) return ge::GRAPH_FAILED;"]
        for o in self.shapes:
            src = mangle("shape", o.source)
            dst = mangle("shape", o.output)
            L += [f"    // {o.output}: {o.describe()}",
                  f"    gert::Shape* {dst} = context->GetOutputShape({out_idx[o.output]});",
                  f"    if ({dst} == nullptr) return ge::GRAPH_FAILED;"]
            if o.rule == "same":
                L.append(f"    *{dst} = *{src};")
            elif o.rule == "scalar":
                L.append(f"    {dst}->SetDimNum(0);")
            elif o.rule == "window":
                k, st, pd = o.window
                L += [f"    *{dst} = *{src};",
                      f"    for (size_t i = {dst}->GetDimNum() - {o.n}; i < {dst}->GetDimNum(); ++i) {{",
                      f"        {dst}->SetDim(i, ({dst}->GetDim(i) + {2 * pd - k}) / {st} + 1);",
                      "    }"]
            elif o.rule == "drop_trailing":
                L += [f"    if ({src}->GetDimNum() < {o.n}) return ge::GRAPH_FAILED;",
                      f"    {dst}->SetDimNum({src}->GetDimNum() - {o.n});",
                      f"    for (size_t i = 0; i + {o.n} < {src}->GetDimNum(); ++i) {dst}->SetDim(i, {src}->GetDim(i));"]
            else:
                L += [f"    if ({src}->GetDimNum() <= {o.n}) return ge::GRAPH_FAILED;",
                      f"    {dst}->SetDimNum({src}->GetDimNum() - 1);",
                      f"    for (size_t i = 0, j = 0; i < {src}->GetDimNum(); ++i) {{",
                      f"        if (i != {o.n}) {dst}->SetDim(j++, {src}->GetDim(i));",
                      "    }"]
        L += ["    return ge::GRAPH_SUCCESS;", "}", ""]
        return L

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

    # ---- direct/ ---------------------------------------------------------------------------
    def _usage(self, prog: str) -> list[str]:
        p = self.p
        args = [f"{t.name.upper()}_BIN:D0xD1x..." for t in p.inputs] + [f"{t.name.upper()}_BIN" for t in p.outputs]
        args += [s.name.upper() for s in p.scalars]
        L = [f"usage: {prog} {' '.join(args)} [--cores N] [--device ID]"]
        for t in p.inputs:
            L.append(f"  input  {t.name}: raw {DTYPE_NAME[t.dtype]} binary, with its shape (e.g. 4096x1024)")
        for o in self.shapes:
            t = p.param(o.output)
            L.append(f"  output {t.name}: raw {DTYPE_NAME[t.dtype]} binary written here; {o.describe()}")
        for s in p.scalars:
            L.append(f"  scalar {s.name}: a float")
        return L

    def direct_main(self) -> str:
        p = self.p
        op = self.op
        n_pos = len(p.inputs) + len(p.outputs) + len(p.scalars)
        usage = self._usage(f"{op}_main")
        L = [f"// Direct-launch host program for kernel '{op}', generated by ascendcraft.",
             "// Reads every input from a raw binary file, computes the tiling on the host with the plain",
             f"// function of {op}_tiling.h (the one the CANN TilingFunc also calls), launches the kernel",
             "// with ACLRT_LAUNCH_KERNEL, waits, and writes every output to a raw binary file.",
             "//"]
        L += [f"// {u}" for u in usage]
        L += ["#include <cstdint>",
              "#include <cstdio>",
              "#include <cstdlib>",
              "#include <cstring>",
              "#include <fstream>",
              "#include <string>",
              "#include <vector>",
              "",
              "#include \"acl/acl.h\"",
              f"#include \"aclrtlaunch_{op}.h\"",
              f"#include \"{op}_tiling.h\"",
              "",
              "// Tunables baked into this build (the kernel was compiled with the same queue depth).",
              "namespace tunables {"]
        L += self._tunable_consts()
        L += ["}  // namespace tunables",
              f"constexpr int64_t kDefaultCoreNum = {self.spec.vector_cores};  // vector cores of {self.soc}",
              "",
              "#define CHECK_ACL(call)                                                                   \\",
              "    do {                                                                                  \\",
              "        const aclError status = (call);                                                   \\",
              "        if (status != ACL_SUCCESS) {                                                      \\",
              "            std::fprintf(stderr, \"%s failed with error %d (line %d)\\n\", #call,           \\",
              "                         static_cast<int>(status), __LINE__);                             \\",
              "            return 1;                                                                     \\",
              "        }                                                                                 \\",
              "    } while (0)",
              "",
              "// One kernel tensor: its file, shape, host bytes and device buffer.",
              "struct Tensor {",
              "    std::string name;",
              "    std::string path;",
              "    std::vector<int64_t> shape;",
              "    size_t elemBytes = 0;",
              "    std::vector<uint8_t> host;",
              "    void* device = nullptr;",
              "    size_t Bytes() const {",
              "        size_t n = elemBytes;",
              "        for (int64_t d : shape) n *= static_cast<size_t>(d);",
              "        return n;",
              "    }",
              "};",
              "",
              "static void PrintUsage() {"]
        for u in usage:
            L.append(f"    std::fprintf(stderr, \"%s\\n\", {json.dumps(u)});")
        L += ["}",
              "",
              "// \"PATH:4096x1024\" -> path and shape; false if malformed.",
              "static bool ParseTensorArg(const std::string& arg, Tensor* t) {",
              "    const size_t colon = arg.rfind(':');",
              "    if (colon == std::string::npos) return false;",
              "    t->path = arg.substr(0, colon);",
              "    t->shape.clear();",
              "    size_t pos = colon + 1;",
              "    while (pos <= arg.size()) {",
              "        size_t end = arg.find('x', pos);",
              "        if (end == std::string::npos) end = arg.size();",
              "        const std::string dim = arg.substr(pos, end - pos);",
              "        if (dim.empty()) return false;",
              "        char* rest = nullptr;",
              "        const long long value = std::strtoll(dim.c_str(), &rest, 10);",
              "        if (*rest != '\\0' || value <= 0) return false;",
              "        t->shape.push_back(static_cast<int64_t>(value));",
              "        pos = end + 1;",
              "    }",
              "    return !t->shape.empty();",
              "}",
              "",
              "static bool ReadBinary(Tensor* t) {",
              "    std::ifstream file(t->path, std::ios::binary | std::ios::ate);",
              "    if (!file) return false;",
              "    const size_t size = static_cast<size_t>(file.tellg());",
              "    if (size != t->Bytes()) {",
              "        std::fprintf(stderr, \"%s: file has %zu bytes, shape needs %zu\\n\", t->path.c_str(), size, t->Bytes());",
              "        return false;",
              "    }",
              "    t->host.resize(size);",
              "    file.seekg(0);",
              "    return static_cast<bool>(file.read(reinterpret_cast<char*>(t->host.data()), static_cast<std::streamsize>(size)));",
              "}",
              "",
              "static bool WriteBinary(const Tensor& t) {",
              "    std::ofstream file(t.path, std::ios::binary);",
              "    return static_cast<bool>(file.write(reinterpret_cast<const char*>(t.host.data()),",
              "                                        static_cast<std::streamsize>(t.host.size())));",
              "}",
              ""]
        for o in self.shapes:
            L += self._vector_shape_fn(o)
            L.append("")
        L += ["int main(int argc, char** argv) {",
              "    // ---- command line ----",
              "    std::vector<std::string> positional;",
              "    int64_t coreNum = kDefaultCoreNum;",
              "    int32_t deviceId = 0;",
              "    for (int i = 1; i < argc; ++i) {",
              "        const std::string arg = argv[i];",
              "        if (arg == \"--cores\" && i + 1 < argc) {",
              "            coreNum = std::atoll(argv[++i]);",
              "        } else if (arg == \"--device\" && i + 1 < argc) {",
              "            deviceId = std::atoi(argv[++i]);",
              "        } else {",
              "            positional.push_back(arg);",
              "        }",
              "    }",
              f"    if (positional.size() != {n_pos} || coreNum <= 0) {{",
              "        PrintUsage();",
              "        return 2;",
              "    }",
              ""]
        def T(name: str) -> str:  # noqa: N802 - the host variable of a tensor
            return mangle("t", name)

        names = [T(t.name) for t in p.tensors]
        for t in p.tensors:
            L.append(f"    Tensor {T(t.name)};")
            L.append(f"    {T(t.name)}.name = \"{t.name}\";")
            L.append(f"    {T(t.name)}.elemBytes = {ir.DTYPE_BYTES[t.dtype]};  // {DTYPE_NAME[t.dtype]}")
        pos = 0
        for t in p.inputs:
            L += [f"    if (!ParseTensorArg(positional[{pos}], &{T(t.name)})) {{",
                  "        PrintUsage();",
                  "        return 2;",
                  "    }"]
            pos += 1
        for o in self.shapes:
            L.append(f"    {T(o.output)}.path = positional[{pos}];")
            L.append(f"    {T(o.output)}.shape = {mangle('oshape', o.output)}({T(o.source)}.shape);")
            L.append(f"    {T(o.output)}.host.resize({T(o.output)}.Bytes());")
            pos += 1
        for s in p.scalars:
            L.append(f"    const float {mangle('sc', s.name)} = std::strtof(positional[{pos}].c_str(), nullptr);")
            pos += 1
        L += [f"    Tensor* tensors[] = {{{', '.join('&' + n for n in names)}}};  // kernel-argument order",
              ""]
        for t in p.inputs:
            L += [f"    if (!ReadBinary(&{T(t.name)})) {{",
                  f"        std::fprintf(stderr, \"cannot read {t.name} from %s\\n\", {T(t.name)}.path.c_str());",
                  "        return 1;",
                  "    }"]
        L += ["",
              "    // ---- tiling on the host (plain C++, shared with every other form) ----",
              "    std::vector<int64_t> dims;",
              "    std::vector<int32_t> ranks;",
              "    for (const Tensor* t : tensors) {",
              "        ranks.push_back(static_cast<int32_t>(t->shape.size()));",
              "        dims.insert(dims.end(), t->shape.begin(), t->shape.end());",
              "    }",
              f"    {self.struct} tiling{{}};",
              f"    const char* error = {self.compute}(dims.data(), ranks.data(), static_cast<int32_t>(ranks.size()), "
              f"coreNum{self._compute_args('tunables::', [mangle('sc', s.name) for s in p.scalars])}, &tiling);",
              "    if (error != nullptr) {",
              f"        std::fprintf(stderr, \"{op} tiling: %s\\n\", error);",
              "        return 1;",
              "    }",
              "",
              "    // ---- device buffers, launch, results ----",
              "    CHECK_ACL(aclInit(nullptr));",
              "    CHECK_ACL(aclrtSetDevice(deviceId));",
              "    aclrtStream stream = nullptr;",
              "    CHECK_ACL(aclrtCreateStream(&stream));",
              "    for (Tensor* t : tensors) {",
              "        CHECK_ACL(aclrtMalloc(&t->device, t->Bytes(), ACL_MEM_MALLOC_HUGE_FIRST));",
              "    }"]
        for t in p.inputs:
            L.append(f"    CHECK_ACL(aclrtMemcpy({T(t.name)}.device, {T(t.name)}.Bytes(), {T(t.name)}.host.data(), "
                     f"{T(t.name)}.Bytes(), ACL_MEMCPY_HOST_TO_DEVICE));")
        L += ["    void* tilingDevice = nullptr;",
              "    CHECK_ACL(aclrtMalloc(&tilingDevice, sizeof(tiling), ACL_MEM_MALLOC_HUGE_FIRST));",
              "    CHECK_ACL(aclrtMemcpy(tilingDevice, sizeof(tiling), &tiling, sizeof(tiling), ACL_MEMCPY_HOST_TO_DEVICE));",
              "    void* workspace = nullptr;  // the kernel's own workspace (total_* partials), if any",
              "    if (tiling.workspaceBytes > 0) {",
              "        CHECK_ACL(aclrtMalloc(&workspace, static_cast<size_t>(tiling.workspaceBytes), ACL_MEM_MALLOC_HUGE_FIRST));",
              "    }",
              "",
              "    const uint32_t blockDim = static_cast<uint32_t>(tiling.blockDim);",
              f"    ACLRT_LAUNCH_KERNEL({op})(blockDim, stream, "
              f"{', '.join(n + '.device' for n in names)}, workspace, tilingDevice);",
              "    CHECK_ACL(aclrtSynchronizeStream(stream));",
              ""]
        for o in p.outputs:
            L += [f"    CHECK_ACL(aclrtMemcpy({T(o.name)}.host.data(), {T(o.name)}.Bytes(), {T(o.name)}.device, "
                  f"{T(o.name)}.Bytes(), ACL_MEMCPY_DEVICE_TO_HOST));",
                  f"    if (!WriteBinary({T(o.name)})) {{",
                  f"        std::fprintf(stderr, \"cannot write {o.name} to %s\\n\", {T(o.name)}.path.c_str());",
                  "        return 1;",
                  "    }"]
        L += ["",
              "    for (Tensor* t : tensors) CHECK_ACL(aclrtFree(t->device));",
              "    CHECK_ACL(aclrtFree(tilingDevice));",
              "    if (workspace != nullptr) CHECK_ACL(aclrtFree(workspace));",
              "    CHECK_ACL(aclrtDestroyStream(stream));",
              "    CHECK_ACL(aclrtResetDevice(deviceId));",
              "    CHECK_ACL(aclFinalize());",
              f"    std::printf(\"{op}: blockDim=%u, done\\n\", blockDim);",
              "    return 0;",
              "}",
              ""]
        return "\n".join(L)

    def direct_cmake(self) -> str:
        op = self.op
        return f"""# Direct-launch build of kernel '{op}', generated by ascendcraft.
#   cmake -S . -B build [-DSOC_VERSION={self.soc}] [-DASCEND_CANN_PACKAGE_PATH=/path/to/cann]
#   cmake --build build -j
# builds the kernel library with CANN's ascendc_library (bisheng) and the launcher {op}_main.
# -DACX_KERNEL_LIBRARY_TYPE=SHARED builds libkernels.so instead (used by ../torch/setup.py).
cmake_minimum_required(VERSION 3.16)
project(acx_{op} LANGUAGES CXX)

set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(SOC_VERSION "{self.soc}" CACHE STRING "SoC the kernel is compiled for")
if(DEFINED ENV{{ASCEND_HOME_PATH}})
    set(ACX_DEFAULT_CANN_PATH "$ENV{{ASCEND_HOME_PATH}}")
else()
    set(ACX_DEFAULT_CANN_PATH "/usr/local/Ascend/ascend-toolkit/latest")
endif()
set(ASCEND_CANN_PACKAGE_PATH "${{ACX_DEFAULT_CANN_PATH}}" CACHE PATH "CANN toolkit install path")
set(ACX_KERNEL_LIBRARY_TYPE STATIC CACHE STRING "STATIC (launcher) or SHARED (torch extension)")

# CANN ships ascendc.cmake (which defines ascendc_library) in one of these places.
if(EXISTS ${{ASCEND_CANN_PACKAGE_PATH}}/compiler/tikcpp/ascendc_kernel_cmake)
    set(ASCENDC_CMAKE_DIR ${{ASCEND_CANN_PACKAGE_PATH}}/compiler/tikcpp/ascendc_kernel_cmake)
elseif(EXISTS ${{ASCEND_CANN_PACKAGE_PATH}}/tools/tikcpp/ascendc_kernel_cmake)
    set(ASCENDC_CMAKE_DIR ${{ASCEND_CANN_PACKAGE_PATH}}/tools/tikcpp/ascendc_kernel_cmake)
else()
    message(FATAL_ERROR "ascendc_kernel_cmake not found under ${{ASCEND_CANN_PACKAGE_PATH}}: is CANN installed?")
endif()
include(${{ASCENDC_CMAKE_DIR}}/ascendc.cmake)

# The AscendC kernel; it includes {op}_tiling.h for the tiling struct it reads from GM.
ascendc_library(kernels ${{ACX_KERNEL_LIBRARY_TYPE}} {op}_kernel.cpp)
ascendc_include_directories(kernels PRIVATE ${{CMAKE_CURRENT_SOURCE_DIR}})

# The host launcher: reads raw binaries, computes the tiling, ACLRT_LAUNCH_KERNEL({op}).
add_executable({op}_main main.cpp)
target_include_directories({op}_main PRIVATE ${{CMAKE_CURRENT_SOURCE_DIR}} ${{ASCEND_CANN_PACKAGE_PATH}}/include)
target_link_directories({op}_main PRIVATE ${{ASCEND_CANN_PACKAGE_PATH}}/lib64)
target_link_libraries({op}_main PRIVATE kernels ascendcl)
"""

    # ---- torch/ ----------------------------------------------------------------------------
    def torch_binding(self) -> str:
        p = self.p
        op = self.op
        args = ([f"const at::Tensor& {mangle('t', t.name)}" for t in p.inputs]
                + [f"double {mangle('sc', s.name)}" for s in p.scalars])
        ret = "at::Tensor" if len(p.outputs) == 1 else "std::vector<at::Tensor>"
        L = [f"// torch_npu extension for kernel '{op}', generated by ascendcraft.",
             "// Takes NPU tensors, allocates the outputs with the shapes the CANN InferShape gives,",
             f"// computes the tiling on the host with {op}_tiling.h (the same plain function as every",
             "// other form) and launches the kernel on the current NPU stream.",
             "#include <cstdint>",
             "#include <cstdlib>",
             "#include <cstring>",
             "#include <vector>",
             "",
             "#include <torch/extension.h>",
             "#include \"torch_npu/csrc/core/npu/NPUStream.h\"",
             "",
             f"#include \"aclrtlaunch_{op}.h\"",
             f"#include \"{op}_tiling.h\"",
             "",
             "namespace {",
             "// Tunables baked into this build (the kernel was compiled with the same queue depth).",
             "namespace tunables {"]
        L += self._tunable_consts()
        L += ["}  // namespace tunables",
              f"// Vector cores of {self.soc}; set ACX_CORE_NUM to override on another SoC.",
              f"constexpr int64_t kDefaultCoreNum = {self.spec.vector_cores};",
              "",
              "int64_t CoreNum() {",
              "    const char* env = std::getenv(\"ACX_CORE_NUM\");",
              "    return env != nullptr ? std::atoll(env) : kDefaultCoreNum;",
              "}",
              ""]
        for o in self.shapes:
            L += self._vector_shape_fn(o)
            L.append("")
        L += ["}  // namespace", "",
              f"{ret} {op}_npu({', '.join(args)}) {{"]
        for t in p.inputs:
            a = mangle("t", t.name)
            L += [f"    TORCH_CHECK({a}.device().type() == c10::DeviceType::PrivateUse1, "
                  f"\"{op}: {t.name} must be an NPU tensor\");",
                  f"    TORCH_CHECK({a}.scalar_type() == {TORCH_TYPE[t.dtype]}, "
                  f"\"{op}: {t.name} must be {DTYPE_NAME[t.dtype]}\");",
                  f"    const at::Tensor {mangle('ct', t.name)} = {a}.contiguous();"]
        src0 = mangle("ct", p.inputs[0].name)
        for o in self.shapes:
            t = p.param(o.output)
            L.append(f"    at::Tensor {mangle('t', t.name)} = at::empty({mangle('oshape', t.name)}("
                     f"{mangle('ct', o.source)}.sizes().vec()), {src0}.options().dtype({TORCH_TYPE[t.dtype]}));")
        refs = [mangle("ct" if t.kind == "in" else "t", t.name) for t in p.tensors]
        scalars = [f"static_cast<float>({mangle('sc', x.name)})" for x in p.scalars]
        L += ["",
              "    // Tiling on the host, from the shapes in kernel-argument order.",
              "    std::vector<int64_t> dims;",
              "    std::vector<int32_t> ranks;",
              f"    const at::Tensor* kernelTensors[] = {{{', '.join('&' + r for r in refs)}}};",
              "    for (const at::Tensor* t : kernelTensors) {",
              "        ranks.push_back(static_cast<int32_t>(t->dim()));",
              "        for (int64_t d : t->sizes()) dims.push_back(d);",
              "    }",
              f"    {self.struct} tiling{{}};",
              f"    const char* error = {self.compute}(dims.data(), ranks.data(), static_cast<int32_t>(ranks.size()), "
              f"CoreNum(){self._compute_args('tunables::', scalars)}, &tiling);",
              f"    TORCH_CHECK(error == nullptr, \"{op}: \", error);",
              "",
              "    // The kernel reads the tiling struct from device memory.",
              "    at::Tensor tilingHost = at::empty({static_cast<int64_t>(sizeof(tiling))}, at::kByte);",
              "    std::memcpy(tilingHost.data_ptr(), &tiling, sizeof(tiling));",
              f"    at::Tensor tilingDevice = tilingHost.to({src0}.device());",
              "",
              "    aclrtStream stream = c10_npu::getCurrentNPUStream().stream();",
              "    at::Tensor workspaceTensor = at::empty({std::max<int64_t>(tiling.workspaceBytes, 1)},",
              f"                                           at::TensorOptions().dtype(at::kByte).device({src0}.device()));",
              "    void* workspace = workspaceTensor.data_ptr();  // total_* partials (unused when 0 bytes)",
              f"    ACLRT_LAUNCH_KERNEL({op})(static_cast<uint32_t>(tiling.blockDim), stream, "
              f"{', '.join(r + '.data_ptr()' for r in refs)}, workspace, tilingDevice.data_ptr());"]
        if len(p.outputs) == 1:
            L.append(f"    return {mangle('t', p.outputs[0].name)};")
        else:
            L.append(f"    return {{{', '.join(mangle('t', o.name) for o in p.outputs)}}};")
        L += ["}", "",
              "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {",
              f"    m.def(\"{op}\", &{op}_npu, \"{op} (ascendcraft AscendC kernel)\");",
              "}",
              ""]
        return "\n".join(L)

    def torch_setup(self) -> str:
        op = self.op
        return f'''"""Build the torch_npu extension acx_{op} for kernel '{op}' (generated by ascendcraft).

1. builds the kernel as a shared library (libkernels.so) with the direct-launch CMake project
   in ../direct (CANN's ascendc_library compiles the AscendC source with bisheng);
2. compiles {op}_binding.cpp against torch, torch_npu and the generated aclrtlaunch_{op}.h, linked
   to that library.

Usage (CANN environment sourced, torch_npu installed):  python setup.py build_ext --inplace
"""

import glob
import os
import subprocess

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension

HERE = os.path.dirname(os.path.abspath(__file__))
DIRECT = os.path.join(HERE, "..", "direct")
KERNEL_BUILD = os.path.join(DIRECT, "build_shared")
SOC_VERSION = os.environ.get("SOC_VERSION", "{self.soc}")
CANN = os.environ.get("ASCEND_HOME_PATH", "/usr/local/Ascend/ascend-toolkit/latest")


def build_kernel_library() -> tuple[str, str]:
    """Build libkernels.so; return the directories of aclrtlaunch_{op}.h and of the library."""
    subprocess.run(["cmake", "-S", DIRECT, "-B", KERNEL_BUILD, f"-DSOC_VERSION={{SOC_VERSION}}",
                    f"-DASCEND_CANN_PACKAGE_PATH={{CANN}}", "-DACX_KERNEL_LIBRARY_TYPE=SHARED"], check=True)
    subprocess.run(["cmake", "--build", KERNEL_BUILD, "--target", "kernels", "-j"], check=True)
    headers = glob.glob(os.path.join(KERNEL_BUILD, "**", "aclrtlaunch_{op}.h"), recursive=True)
    libs = glob.glob(os.path.join(KERNEL_BUILD, "**", "libkernels.so"), recursive=True)
    if not headers or not libs:
        raise RuntimeError(f"kernel build in {{KERNEL_BUILD}} produced no aclrtlaunch_{op}.h / libkernels.so")
    return os.path.dirname(headers[0]), os.path.dirname(libs[0])


def npu_extension(**kwargs):
    """torch_npu's NpuExtension when available, else a CppExtension with torch_npu's paths."""
    try:
        from torch_npu.utils.cpp_extension import NpuExtension

        return NpuExtension(**kwargs)
    except ImportError:
        import torch_npu
        from torch.utils.cpp_extension import CppExtension

        root = os.path.dirname(torch_npu.__file__)
        kwargs["include_dirs"] = kwargs.get("include_dirs", []) + [os.path.join(root, "include")]
        kwargs["library_dirs"] = kwargs.get("library_dirs", []) + [os.path.join(root, "lib")]
        kwargs["libraries"] = kwargs.get("libraries", []) + ["torch_npu"]
        return CppExtension(**kwargs)


launch_include, kernel_lib = build_kernel_library()
setup(
    name="acx_{op}",
    ext_modules=[
        npu_extension(
            name="acx_{op}",
            sources=["{op}_binding.cpp"],
            include_dirs=[launch_include, DIRECT, os.path.join(CANN, "include")],
            library_dirs=[kernel_lib, os.path.join(CANN, "lib64")],
            libraries=["kernels", "ascendcl"],
            extra_link_args=[f"-Wl,-rpath,{{kernel_lib}}"],
        )
    ],
    cmdclass={{"build_ext": BuildExtension}},
)
'''

    def torch_wrapper(self) -> str:
        p = self.p
        op = self.op
        params = [f"{t.name}: torch.Tensor" for t in p.inputs] + [f"{s.name}: float" for s in p.scalars]
        call = ", ".join([t.name for t in p.inputs] + [f"float({s.name})" for s in p.scalars])
        ret = "torch.Tensor" if len(p.outputs) == 1 else "tuple[torch.Tensor, ...]"
        body = f"_ext.{op}({call})" if len(p.outputs) == 1 else f"tuple(_ext.{op}({call}))"
        outs = "; ".join(f"{o.output}: {o.describe()}" for o in self.shapes)
        first = f"The ascendcraft kernel '{op}'."  # the DSL docstring is untrusted text: not copied
        return f'''"""{op} on Ascend NPUs through its ascendcraft-generated AscendC kernel (torch_npu).

Build the extension first: ``python setup.py build_ext --inplace`` in this folder.
"""

from __future__ import annotations

import torch
import torch_npu  # noqa: F401  (registers the NPU device with torch)

import acx_{op} as _ext


def {op}({", ".join(params)}) -> {ret}:
    """{first}

    Inputs must be contiguous-able NPU tensors of the DSL dtypes ({", ".join(f"{t.name}: {DTYPE_NAME[t.dtype]}" for t in p.inputs)}).
    Output {outs}.
    """
    return {body}
'''

    def _example_dims(self, name: str) -> list[int]:
        """Example shape of an input for the README commands, consistent with its role."""
        role = self.lk.plan.roles.get(name, "tile")
        rows, width = [4096], [1024] * max(1, self.p.loop.dim if self.p.loop.kind == "rows" else 1)
        if role == "bcast":
            return width
        if role == "per_row":
            return rows
        return rows + width

    # ---- README ----------------------------------------------------------------------------
    def readme(self) -> str:
        p = self.p
        op = self.op
        tun = "\n".join(f"| `{t.name}` | {self.values[t.name]} | {t.default} | `{t.domain}` |" for t in p.tunables)
        shapes = "\n".join(f"- `{o.output}`: {o.describe()}" for o in self.shapes)
        dims = {t.name: self._example_dims(t.name) for t in p.inputs}
        tensor_args = " ".join([f"{t.name}.bin:{'x'.join(map(str, dims[t.name]))}" for t in p.inputs]
                               + [f"{t.name}_out.bin" for t in p.outputs] + ["1.5" for _ in p.scalars])
        make = "; ".join(f"{t.name} = torch.randn({', '.join(map(str, dims[t.name]))}).to({TORCH_PY_TYPE[t.dtype]}).npu()"
                         for t in p.inputs)
        call = ", ".join([t.name for t in p.inputs] + ["1.5" for _ in p.scalars])
        example = f"{make}; print({op}({call}))"
        return f"""# `{op}` — AscendC kernel generated by ascendcraft

Generated from the DSL program `{op}`{f' (category {p.category})' if p.category else ''}. Edit the DSL, not these
files. All forms share one plain C++ tiling function, `{self.compute}` (`{op}_tiling.h`), so the
split of the work is the same everywhere.

## Tunables baked in

| tunable | value | DSL default | domain |
|---|---|---|---|
{tun}

The queue depth is compiled into the kernel (`constexpr int32_t DEPTH`); the other tunables are
constants in each host program. Changing any of them means regenerating these files.

Outputs:

{shapes}

## Folders

- `cann/` — CANN custom-op project sources (op type `{self.op_type}`): `{op}.json` for msopgen,
  `op_host/{op}_tiling.h` (the `BEGIN_TILING_DATA_DEF` class), `op_host/{op}.cpp` (TilingFunc,
  InferShape, InferDataType, OpDef), `op_host/{op}_tiling_plain.h` (the plain tiling function it
  calls) and `op_kernel/{op}.cpp` (the kernel, reading the tiling with `GET_TILING_DATA`).
- `direct/` — direct launch without the op framework: the kernel, its tiling header, a launcher
  `main.cpp` (raw binary files in and out) and a CMake project using `ascendc_library`.
- `torch/` — a torch_npu C++ extension and the Python function `{op}(...)` calling the kernel on
  the current NPU stream.
- `emulator/` — the same kernel with the entry points of ascendcraft's CPU emulator.

## Building on a machine with CANN (SoC `{self.soc}`)

Source the CANN environment first (`source /usr/local/Ascend/ascend-toolkit/set_env.sh`).

CANN custom op (msopgen + build.sh):

```sh
cd cann
msopgen gen -i {op}.json -c ai_core-{self.soc} -lan cpp -out {self.op_type}Proj
cp op_host/* {self.op_type}Proj/op_host/
cp op_kernel/* {self.op_type}Proj/op_kernel/
cd {self.op_type}Proj && ./build.sh && ./build_out/custom_opp_*.run
```

Then call `aclnn{self.op_type}` (header `aclnn_{op}.h`), e.g. from a small torch_npu extension.
Note that an op type equal to a built-in CANN op (`Add`, `Relu`, ...) shadows it.

Direct launch (CMake + `ascendc_library`):

```sh
cd direct
cmake -S . -B build -DSOC_VERSION={self.soc} -DASCEND_CANN_PACKAGE_PATH=$ASCEND_HOME_PATH
cmake --build build -j
./build/{op}_main {tensor_args}
```

torch_npu extension:

```sh
cd torch
python setup.py build_ext --inplace
python -c "import torch, torch_npu; from {op} import {op}; {example}"
```

`ACX_CORE_NUM` overrides the vector core count baked in ({self.spec.vector_cores} on {self.soc}).

Emulator (no NPU needed):

```python
from ascendcraft.emulator.build import build_kernel
so = build_kernel({{"{op}.cpp": open("emulator/{op}.cpp").read(),
                   "{op}_tiling.h": open("emulator/{op}_tiling.h").read()}}, "{op}.cpp")
```
"""
