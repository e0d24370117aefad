"""Output forms of one lowering: the CANN custom-op project, the direct-launch
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

from dataclasses import dataclass

from .. import ir
from ..names import mangle
from .kernel import LoweredKernel
from .outputs_cann import CannProjectForm, family_configs, shape_gather
from .outputs_direct import DTYPE_NAME, DirectForm
from .outputs_torch import TorchForm
from .tiling import pooled_extent, pooled_size, window_extents, window_of_dim


@dataclass(frozen=True)
class OutputShape:
    """How an output's shape follows from the shape of ``source`` (an input tensor):
    ``same`` shape, ``drop_trailing`` the last ``n`` dims (rows reduced to one value per row),
    or ``drop_axis`` axis ``n`` (slabs reduced over their middle axis)."""

    output: str
    source: str
    rule: str
    n: int = 0
    window: tuple = (0, 0, 0)  # rule "window": kernel, stride, padding (ints, or tuples per dim)
    ceil: bool = False  # rule "window": PyTorch's ceil_mode output size

    def describe(self) -> str:
        if self.rule == "same":
            return f"shape of {self.source}"
        if self.rule == "drop_trailing":
            return f"shape of {self.source} without its last {self.n} dim(s)"
        if self.rule == "scalar":
            return "a 0-d tensor (one value)"
        if self.rule == "window":
            how = " (ceil_mode)" if self.ceil else ""
            if all(isinstance(v, int) for v in self.window):
                k, st, pd = self.window
                return (f"shape of {self.source} with each of its last {self.n} dims d pooled to "
                        f"(d + {2 * pd} - {k}) / {st} + 1{how}")
            per = ", ".join(f"(d + {2 * pd} - {k}) / {st} + 1" for k, st, pd in
                            (window_of_dim(self.window, j) for j in range(self.n)))
            return f"shape of {self.source} with its last {self.n} dims d pooled to {per}{how}"
        return f"shape of {self.source} without axis {self.n}"

    def apply(self, shape: list[int]) -> list[int]:
        """Python mirror of the C++ rules (used by tests and documentation)."""
        if self.rule == "same":
            return list(shape)
        if self.rule == "scalar":
            return []
        if self.rule == "window":
            lead = len(shape) - self.n
            return list(shape[:lead]) + [pooled_size(d, *window_of_dim(self.window, j), self.ceil)
                                         for j, d in enumerate(shape[lead:])]
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
            rules.append(OutputShape(o.name, source, "window", loop.dim, _dilated(loop), loop.ceil))
        else:
            raise ValueError(f"output {o.name!r} has role {role!r} in a {loop.kind} loop: no shape rule")
    return rules


def _dilated(loop: ir.Loop) -> tuple:
    """The loop's window with each kernel replaced by its dilated extent (the output size's)."""
    if loop.dilation == 1:
        return loop.window
    ext = window_extents(loop)
    per = [ext[n] for n in ("D", "H", "W")[3 - loop.dim:]]
    return tuple(tuple(v[i] for v in per) for i in range(3))


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


def render_outputs(lk: LoweredKernel, *, soc: str = "Ascend910B2",
                   params: dict[str, int] | None = None) -> dict[str, str]:
    """Relative path -> file text of every output form (the caller writes them where it wants)."""
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
    """``AddConfig`` targets of a vector kernel (see ``outputs_cann.family_configs``). Today
    every kernel carries the DataCopyPad row copies."""
    return family_configs(lk.op, lk.program, lk.kernel_class, soc)


class _Gen(CannProjectForm, DirectForm, TorchForm):
    """Renders the host-side files of one lowered kernel."""

    def __init__(self, lk: LoweredKernel, soc: str, values: dict[str, int]):
        self._init_form(lk, soc, values)
        self.shapes = output_shapes(lk)
        self.configs = ai_core_configs(lk, soc)

    # ---- shared pieces ------------------------------------------------------------------
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
            L.append(f"    std::vector<int64_t> shape = {src};")
            if all(isinstance(v, int) for v in o.window):
                k, st, pd = o.window
                L.append(f"    for (size_t i = shape.size() - {o.n}; i < shape.size(); ++i) "
                         f"shape[i] = {pooled_extent('shape[i]', k, st, pd, o.ceil, '/')};")
            else:
                for j in range(o.n):
                    d = f"shape[shape.size() - {o.n - j}]"
                    L.append(f"    {d} = {pooled_extent(d, *window_of_dim(o.window, j), o.ceil, '/')};")
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

    # ---- cann/op_host/<op>.cpp -------------------------------------------------------------
    def op_host_cpp(self) -> str:
        p = self.p
        ub_reserve = (self.spec.ub_kib - self.spec.ub_budget_kib) * 1024
        L = [f"// CANN host side of '{self.op}' (op type {self.op_type}), generated by ascendcraft.",
             "// TilingFunc computes no split itself: it gathers the shapes, the vector core count and",
             f"// the attributes and calls {self.compute} from {self.op}_tiling_plain.h — the same",
             "// function the direct launcher, the torch extension and the emulator call — then copies",
             "// the result field by field into the registered tiling class."]
        L += self._host_includes(("cstdint", "cstdio", "vector"))
        L += self._host_plain_and_tunables(ub_reserve, kernels="kernel", plain_note=(
            "<cstdint> is included", "// above, so the header's own #include <cstdint> adds nothing inside the namespace."))
        L += ["static ge::graphStatus TilingFunc(gert::TilingContext* context) {",
              "    // 1. Shapes of the kernel's tensors, in kernel-argument order (inputs, then outputs).",
              ]
        L += shape_gather(p.tensors, p.inputs, p.outputs)
        L += [
              "",
              "    // 2. Vector cores and UB size of the SoC this op runs on.",
              "    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());",
              "    const int64_t coreNum = static_cast<int64_t>(platform.GetCoreNumAiv());",
              "    uint64_t ubSize = 0;",
              "    platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ubSize);",
              ""]
        reads, scalar_names = self._attr_reads(3)
        L += reads
        L += self._host_call_plain("coreNum", scalar_names)
        L += ["    const uint64_t ubAvailable = ubSize > kUbReserveBytes ? ubSize - kUbReserveBytes : 0;",
              "    if (static_cast<uint64_t>(plain.ubBytes) > ubAvailable) {",
              f"        std::fprintf(stderr, \"{self.op_type} tiling: needs %lld B of UB, %llu B available\\n\",",
              "                     static_cast<long long>(plain.ubBytes), static_cast<unsigned long long>(ubAvailable));",
              "        return ge::GRAPH_FAILED;",
              "    }",
              "",
              "    // Copy every field into the registered class (same names as the plain struct).",
              f"    {self.struct} tiling;"]
        L += self._copy_fields("tiling", "plain")
        L += ["    context->SetBlockDim(static_cast<uint32_t>(plain.blockDim));",
              "    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());",
              "    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());",
              ""]
        L += self._host_tail(["    // Workspace: the system workspace AscendC reserves plus the kernel's own (the",
                              "    // per-core partials of total_* reductions; 0 for kernels without them)."],
                             "static_cast<size_t>(plain.workspaceBytes)")
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
                L.append(f"    *{dst} = *{src};")
                if all(isinstance(v, int) for v in o.window):
                    k, st, pd = o.window
                    L += [f"    for (size_t i = {dst}->GetDimNum() - {o.n}; i < {dst}->GetDimNum(); ++i) {{",
                          f"        {dst}->SetDim(i, {pooled_extent(f'{dst}->GetDim(i)', k, st, pd, o.ceil, '/')});",
                          "    }"]
                else:
                    for j in range(o.n):
                        i, d = f"{dst}->GetDimNum() - {o.n - j}", f"{dst}->GetDim({dst}->GetDimNum() - {o.n - j})"
                        L.append(f"    {dst}->SetDim({i}, {pooled_extent(d, *window_of_dim(o.window, j), o.ceil, '/')});")
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

