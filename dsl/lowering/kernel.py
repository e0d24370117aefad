"""Passes 2 and 4, and assembly: kernel init (class, GM views, UB buffers) and the 32-byte
alignment rules (DataCopy for whole blocks, DataCopyPad otherwise), around the compute
body of pass 3, giving one AscendC kernel source shared by every output form.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import ir
from ..checker import TypedProgram, check_program
from ..names import mangle, op_name, size_expr, size_value
from ..parser import DslError, parse
from .compute import CTYPE, KernelPlan, plan_kernel, unit_elems
from .glue import ROW_COPIES, emulator_entries, ub_init, ub_members
from .tiling import TilingSpec, camel, formulas, host_expr, render_header

ROLE = {"inq": "in", "outq": "out"}  # buffer kind -> UB member role (else a VECCALC buffer)

# Pass 4: the alignment rules live in these helpers, emitted into every kernel.
ALIGN_PRELUDE = r"""
constexpr float ACX_INF = __builtin_huge_valf();

__aicore__ inline int64_t acx_min(int64_t a, int64_t b) { return a < b ? a : b; }
__aicore__ inline int64_t acx_max(int64_t a, int64_t b) { return a > b ? a : b; }
__aicore__ inline float acx_fmax(float a, float b) { return a > b ? a : b; }
__aicore__ inline float acx_fmin(float a, float b) { return a < b ? a : b; }
__aicore__ inline int64_t acx_align_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

// Scalar reads of UB wait for the vector pipe; vector reads wait for scalar writes.
__aicore__ inline void SyncVS() { SetFlag<HardEvent::V_S>(0); WaitFlag<HardEvent::V_S>(0); }
__aicore__ inline void SyncSV() { SetFlag<HardEvent::S_V>(0); WaitFlag<HardEvent::S_V>(0); }

// A unary function of a kernel-side scalar, computed on 8 lanes of the vector unit.
enum AcxFn { ACX_FN_EXP, ACX_FN_LN, ACX_FN_SQRT, ACX_FN_RSQRT, ACX_FN_ABS, ACX_FN_RECIP };
__aicore__ inline float AcxScalarFn(const LocalTensor<float>& b, float v, AcxFn fn) {
    Duplicate(b, v, 8);
    switch (fn) {
        case ACX_FN_EXP: Exp(b, b, 8); break;
        case ACX_FN_LN: Ln(b, b, 8); break;
        case ACX_FN_SQRT: Sqrt(b, b, 8); break;
        case ACX_FN_RSQRT: Rsqrt(b, b, 8); break;
        case ACX_FN_ABS: Abs(b, b, 8); break;
        case ACX_FN_RECIP: Reciprocal(b, b, 8); break;
    }
    SyncVS();
    const float r = b.GetValue(0);
    SyncSV();
    return r;
}

""".strip("\n") + "\n\n" + ROW_COPIES


@dataclass(frozen=True)
class LoweredKernel:
    """One lowering of a program for one assignment of its compile-time tunables."""

    program: ir.Program
    plan: KernelPlan
    tiling: TilingSpec
    tiling_header: str  # <op>_tiling.h
    kernel_class: str  # the kernel class + helpers (shared by all forms)
    depth: int

    @property
    def op(self) -> str:
        """The operator name: the program's name with CANN's conventional ``_custom`` suffix,
        which also keeps kernel entries clear of C library names (div, exp, abs, ...)."""
        return op_name(self.program.name)

    @property
    def entry(self) -> str:
        return self.op

    def kernel_source(self, tiling_include: bool = True) -> str:
        """Kernel .cpp for direct launch and the emulator: tiling read from the GM pointer."""
        p = self.program
        args = ", ".join(f"GM_ADDR {mangle('arg', t.name)}" for t in p.tensors)
        names = ", ".join(mangle("arg", t.name) for t in p.tensors)
        s = self.tiling.struct_name
        inc = f'#include "{self.op}_tiling.h"\n' if tiling_include else ""
        return (
            f"{self._banner()}#include \"kernel_operator.h\"\n{inc}"
            f"using namespace AscendC;\n\n{self.kernel_class}\n\n"
            f"extern \"C\" __global__ __aicore__ void {self.entry}({args}, GM_ADDR workspace, GM_ADDR tiling) {{\n"
            f"    {s} td;\n"
            f"    const __gm__ int64_t* src = reinterpret_cast<const __gm__ int64_t*>(tiling);\n"
            f"    int64_t* dst = reinterpret_cast<int64_t*>(&td);\n"
            f"    for (uint32_t i = 0; i < sizeof({s}) / sizeof(int64_t); ++i) dst[i] = src[i];\n"
            f"    Kernel{camel(self.op)}<{s}> op;\n"
            f"    op.Init({names}, workspace, td);\n"
            f"    op.Process();\n"
            f"}}\n"
        )

    def cann_kernel_source(self) -> str:
        """op_kernel/<op>.cpp for a CANN custom-op project: tiling via GET_TILING_DATA."""
        p = self.program
        args = ", ".join(f"GM_ADDR {mangle('arg', t.name)}" for t in p.tensors)
        names = ", ".join(mangle("arg", t.name) for t in p.tensors)
        return (
            f"{self._banner()}#include \"kernel_operator.h\"\nusing namespace AscendC;\n\n{self.kernel_class}\n\n"
            f"extern \"C\" __global__ __aicore__ void {self.entry}({args}, GM_ADDR workspace, GM_ADDR tiling) {{\n"
            f"    GET_TILING_DATA(tilingData, tiling);\n"
            f"    Kernel{camel(self.op)}<decltype(tilingData)> op;\n"
            f"    op.Init({names}, workspace, tilingData);\n"
            f"    op.Process();\n"
            f"}}\n"
        )

    def emulator_source(self) -> str:
        """The kernel plus the two C entry points the emulator runner calls."""
        p = self.program
        return self.kernel_source() + emulator_entries(
            struct=self.tiling.struct_name, tiling_fn=f"{camel(self.op)}ComputeTiling", n_tunables=len(p.tunables),
            n_scalars=len(p.scalars), cores="core_num", block_dim="blockDim",
            workspace="static_cast<uint64_t>(t.workspaceBytes)", n_gm=len(p.tensors) + 2, entry=self.entry)

    def _banner(self) -> str:
        p = self.program
        return (f"// Kernel '{p.name}' generated by ascendcraft from its DSL program"
                f"{' (category ' + p.category + ')' if p.category else ''}.\n"
                "// Comments 'DSL line N' point back to the program; edit the DSL, not this file.\n")


def compile_time_params(program: ir.Program, params: dict[str, int] | None) -> int:
    """The queue depth is a template argument of TQue, so it is fixed per build."""
    depth = program.loop.depth
    if isinstance(depth, int):
        return depth
    values = dict(program.defaults())
    values.update(params or {})
    return int(values[depth])


def lower(program: ir.Program | str, params: dict[str, int] | None = None,
          typed: TypedProgram | None = None) -> LoweredKernel:
    """Run the four passes. Only compile-time tunables (the queue depth) change the source."""
    if isinstance(program, str):
        program = parse(program)
    tp = typed or check_program(program)
    depth = compile_time_params(program, params)
    plan = plan_kernel(tp)
    spec = tiling_spec(tp, plan)
    return LoweredKernel(program, plan, spec, render_header(spec), _kernel_class(tp, plan, spec, depth), depth)


def tiling_spec(tp: TypedProgram, plan: KernelPlan) -> TilingSpec:
    p = tp.program
    ref = [t.name for t in p.tensors].index(p.loop.tensor)
    buffers = []
    depth = p.loop.depth
    for b in plan.buffers:
        slots = size_expr(depth) if b.kind in ("inq", "outq") else "1"
        buffers.append((f"{b.name}Bytes", slots, b.bytes_expr))
    return TilingSpec(
        op=op_name(p.name), kind=p.loop.kind, ref_index=ref, dim=p.loop.dim, unit=unit_elems(p),
        formulas=tuple(formulas(p.loop, tp.chunked, p.loops)), buffers=tuple(buffers),
        tunables=tuple(t.name for t in p.tunables), scalars=tuple(s.name for s in p.scalars),
        host=tuple((name, host_expr(e)) for name, e in plan.host_scalars),
        tensors=tuple(t.name for t in p.tensors), grid_loops=plan.grid_loops, groups=p.loop.groups,
        axis=p.loop.axis,
    )


def _gm_size(p: ir.Program, role: str) -> str:
    kind = p.loop.kind
    if role == "scalar_out":
        return "1"
    if role == "index":
        return "td.N"
    if role == "window_in":
        return "td.P * td.ID * td.IH * td.IW"
    if role == "window_out":
        return "td.NR * td.OW"
    if kind == "tiles":
        return "td.n"
    if kind == "rows":
        return {"bcast": "td.W", "per_row": "td.N", "row_out": "td.N"}.get(role, "td.N * td.W")
    return "td.A * td.K * td.B" if role == "step" else "td.A * td.B"


def _kernel_class(tp: TypedProgram, plan: KernelPlan, spec: TilingSpec, depth: int) -> str:
    """Pass 2 (init) wrapped around the compute body of pass 3."""
    p = tp.program
    cls = f"Kernel{camel(op_name(p.name))}"
    L: list[str] = [ALIGN_PRELUDE, "", f"constexpr int32_t DEPTH = {depth};  // queue depth: 2 = double buffering", ""]
    L.append("template <typename TilingT>")
    L.append(f"class {cls} {{")
    L.append("public:")
    L.append(f"    __aicore__ inline {cls}() {{}}")
    args = ", ".join(f"GM_ADDR {mangle('arg', t.name)}" for t in p.tensors)
    L.append(f"    __aicore__ inline void Init({args}, GM_ADDR workspace, const TilingT& td) {{")
    L.append("        td_ = td;")
    for t in p.tensors:
        role = plan.roles.get(t.name, "tile")
        L.append(f"        {mangle('gm', t.name)}.SetGlobalBuffer(reinterpret_cast<__gm__ {CTYPE[t.dtype]}*>"
                 f"({mangle('arg', t.name)}), static_cast<uint64_t>({_gm_size(p, role)}));")
    if plan.grid_loops:
        L.append("        gridGm.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(GetUserWorkspace(workspace)), "
                 "static_cast<uint64_t>(td.workspaceBytes / 4));")
    L += ub_init(((b.name, b.kind in ROLE, f"{b.name}Bytes") for b in plan.buffers), "DEPTH")
    L.append("    }")
    L.append("")
    L.append("    __aicore__ inline void Process() {")
    L.append("        const int64_t core = GetBlockIdx();")
    L += ["        " + line for line in plan.body]
    L.append("    }")
    L.append("")
    L.append("private:")
    L.append("    TPipe pipe;")
    L += ub_members(((b.name, ROLE.get(b.kind, "calc")) for b in plan.buffers), "QuePosition", "DEPTH")
    for t in p.tensors:
        L.append(f"    GlobalTensor<{CTYPE[t.dtype]}> {mangle('gm', t.name)};")
    if plan.grid_loops:
        L.append("    GlobalTensor<float> gridGm;  // per-core partials of total_* values")
    L.append("    TilingT td_;")
    L.append("};")
    return "\n".join(L)


def _check_dims(p: ir.Program, dims: list[list[int]]) -> None:
    """``size(x, d)`` must name a dim the tensor has (the tiling would otherwise read 0)."""
    names = [t.name for t in p.tensors]
    for e in ir.program_exprs(p):
        if isinstance(e, ir.Numel) and e.dim is not None and names.index(e.tensor) < len(dims):
            rank = len(dims[names.index(e.tensor)])
            if not -rank <= e.dim < rank:
                raise DslError(f"size({e.tensor}, {e.dim}): '{e.tensor}' has rank {rank}", e.loc)


def budget_spec(tp: TypedProgram) -> TilingSpec:
    """The tiling (with the UB plan) that check_budget evaluates; compute it once per program."""
    return tiling_spec(tp, plan_kernel(tp))


def check_budget(tp: TypedProgram, dims: list[list[int]], params: dict[str, int], core_num: int,
                 ub_bytes: int, spec: TilingSpec | None = None) -> dict[str, int]:
    """Evaluate the tiling for these shapes and tunables; raise DslError if the UB plan does
    not fit, naming the bytes needed and available. Runs before any build."""
    spec = spec or budget_spec(tp)
    values = dict(tp.program.defaults())
    values.update(params)
    _check_dims(tp.program, dims)
    try:
        t = spec.evaluate(dims, values, core_num)
    except ValueError as e:
        raise DslError(f"shapes do not fit the kernel: {e}") from None
    if t["ubBytes"] > ub_bytes:
        parts = ", ".join(f"{f.removesuffix('Bytes')}={t[f] * size_value(slots, values)}"
                          for f, slots, _ in spec.buffers)
        raise DslError(f"UB budget exceeded: needs {t['ubBytes']} B, {ub_bytes} B available "
                       f"({parts}; tunables {values})")
    return t
