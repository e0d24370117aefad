"""Passes 2 and 4, and assembly: kernel init (class, GM views, UB buffers) and the 32-byte
alignment rules (DataCopy for whole blocks, DataCopyPad otherwise), around the compute
body of pass 3, giving one AscendC kernel source shared by every output form.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import ir
from ..checker import TypedProgram, check_program
from ..parser import DslError, parse
from .compute import CTYPE, NBYTES, KernelPlan, plan_kernel
from .tiling import TilingSpec, camel, formulas, render_header

# Pass 4: the alignment rules live in these helpers, emitted into every kernel.
ALIGN_PRELUDE = r"""
constexpr float ACX_INF = __builtin_huge_valf();

__aicore__ inline int64_t acx_min(int64_t a, int64_t b) { return a < b ? a : b; }
__aicore__ inline int64_t acx_align_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

// Scalar reads of UB wait for the vector pipe; vector reads wait for scalar writes.
__aicore__ inline void SyncVS() { SetFlag<HardEvent::V_S>(0); WaitFlag<HardEvent::V_S>(0); }
__aicore__ inline void SyncSV() { SetFlag<HardEvent::S_V>(0); WaitFlag<HardEvent::S_V>(0); }

// GM -> UB: `rows` rows of `len` elements, `gmStride` apart in GM, `ubStride` apart in UB.
// Whole 32 B blocks in one contiguous run use DataCopy; anything ragged uses DataCopyPad
// (GM side in bytes, UB side in 32 B blocks, each row padded up to 32 B in UB).
template <typename T>
__aicore__ inline void CopyRowsIn(const LocalTensor<T>& dst, const GlobalTensor<T>& src, int64_t rows,
                                  int64_t len, int64_t gmStride, int64_t ubStride) {
    const int64_t bytes = len * static_cast<int64_t>(sizeof(T));
    if (bytes % 32 == 0 && (rows == 1 || (gmStride == len && ubStride == len))) {
        DataCopy(dst, src, static_cast<uint32_t>(rows * len));
        return;
    }
    const int64_t ubGapBlocks = (ubStride * static_cast<int64_t>(sizeof(T)) - acx_align_up(bytes, 32)) / 32;
    for (int64_t r0 = 0; r0 < rows; r0 += 4095) {  // blockCount <= 4095
        const int64_t n = acx_min(4095, rows - r0);
        DataCopyExtParams p{static_cast<uint16_t>(n), static_cast<uint32_t>(bytes),
                            static_cast<uint32_t>((gmStride - len) * static_cast<int64_t>(sizeof(T))),
                            static_cast<uint32_t>(ubGapBlocks), 0};
        DataCopyPadExtParams<T> pad{false, 0, 0, static_cast<T>(0)};
        DataCopyPad(dst[r0 * ubStride], src[r0 * gmStride], p, pad);
    }
}

// UB -> GM: writes exactly `len` elements per row, so neighbouring data is never clobbered.
template <typename T>
__aicore__ inline void CopyRowsOut(const GlobalTensor<T>& dst, const LocalTensor<T>& src, int64_t rows,
                                   int64_t len, int64_t gmStride, int64_t ubStride) {
    const int64_t bytes = len * static_cast<int64_t>(sizeof(T));
    if (bytes % 32 == 0 && (rows == 1 || (gmStride == len && ubStride == len))) {
        DataCopy(dst, src, static_cast<uint32_t>(rows * len));
        return;
    }
    const int64_t ubGapBlocks = (ubStride * static_cast<int64_t>(sizeof(T)) - acx_align_up(bytes, 32)) / 32;
    for (int64_t r0 = 0; r0 < rows; r0 += 4095) {
        const int64_t n = acx_min(4095, rows - r0);
        DataCopyExtParams p{static_cast<uint16_t>(n), static_cast<uint32_t>(bytes),
                            static_cast<uint32_t>(ubGapBlocks),
                            static_cast<uint32_t>((gmStride - len) * static_cast<int64_t>(sizeof(T))), 0};
        DataCopyPad(dst[r0 * gmStride], src[r0 * ubStride], p);
    }
}
""".strip("\n")


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
        return self.program.name

    @property
    def entry(self) -> str:
        return self.program.name

    def kernel_source(self, tiling_include: bool = True) -> str:
        """Kernel .cpp for direct launch and the emulator: tiling read from the GM pointer."""
        p = self.program
        args = ", ".join(f"GM_ADDR {t.name}" for t in p.tensors)
        names = ", ".join(t.name for t in p.tensors)
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
            f"    op.Init({names}, td);\n"
            f"    op.Process();\n"
            f"}}\n"
        )

    def cann_kernel_source(self) -> str:
        """op_kernel/<op>.cpp for a CANN custom-op project: tiling via GET_TILING_DATA."""
        p = self.program
        args = ", ".join(f"GM_ADDR {t.name}" for t in p.tensors)
        names = ", ".join(t.name for t in p.tensors)
        return (
            f"{self._banner()}#include \"kernel_operator.h\"\nusing namespace AscendC;\n\n{self.kernel_class}\n\n"
            f"extern \"C\" __global__ __aicore__ void {self.entry}({args}, GM_ADDR workspace, GM_ADDR tiling) {{\n"
            f"    GET_TILING_DATA(tilingData, tiling);\n"
            f"    Kernel{camel(self.op)}<decltype(tilingData)> op;\n"
            f"    op.Init({names}, tilingData);\n"
            f"    op.Process();\n"
            f"}}\n"
        )

    def emulator_source(self) -> str:
        """The kernel plus the two C entry points the emulator runner calls."""
        p = self.program
        s = self.tiling.struct_name
        fn = f"{camel(self.op)}ComputeTiling"
        tun = "".join(f", tunables[{i}]" for i in range(len(p.tunables)))
        sc = "".join(f", static_cast<float>(scalars[{i}])" for i in range(len(p.scalars)))
        n_gm = len(p.tensors) + 2
        call = ", ".join(f"(GM_ADDR)gm[{i}]" for i in range(n_gm))
        return (
            self.kernel_source()
            + f"""
// ---- emulator entry points (not part of the AscendC operator) ----
#include <cstring>
extern "C" int acx_tiling(const int64_t* dims, const int32_t* ranks, int32_t n_tensors,
                          const int64_t* tunables, int32_t n_tunables, const double* scalars, int32_t n_scalars,
                          uint32_t core_num, uint8_t* out, uint32_t out_cap, uint32_t* block_dim,
                          uint64_t* workspace_bytes, char* err, int32_t errlen) {{
    if (n_tunables != {len(p.tunables)} || n_scalars != {len(p.scalars)}) {{
        std::snprintf(err, errlen, "expected {len(p.tunables)} tunables and {len(p.scalars)} scalars");
        return -1;
    }}
    {s} t{{}};
    const char* e = {fn}(dims, ranks, n_tensors, core_num{tun}{sc}, &t);
    if (e != nullptr) {{ std::snprintf(err, errlen, "%s", e); return -1; }}
    if (sizeof(t) > out_cap) {{ std::snprintf(err, errlen, "tiling buffer too small"); return -1; }}
    std::memcpy(out, &t, sizeof(t));
    *block_dim = static_cast<uint32_t>(t.blockDim);
    *workspace_bytes = 0;
    return static_cast<int>(sizeof(t));
}}

extern "C" int acx_run(void** gm, const uint64_t* gm_bytes, int n_gm, const AcxRunOptions* opt, char* err, int errlen) {{
    if (n_gm != {n_gm}) {{ std::snprintf(err, errlen, "expected {n_gm} GM buffers, got %d", n_gm); return -1; }}
    return acx::Run(gm, gm_bytes, n_gm, opt, err, errlen, [&] {{ {self.entry}({call}); }});
}}
"""
        )

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


def unit_elems(program: ir.Program) -> int:
    """Row/tile alignment in elements: 32 B of the narrowest type in use, so every buffer's
    rows start 32 B aligned whatever its dtype (a wider type just gets a longer row)."""
    nbytes = [NBYTES[p.dtype] for p in program.tensors]
    nbytes += [NBYTES[e.dtype] for e in ir.body_exprs(program.loop.body) if isinstance(e, ir.Cast)]
    return 32 // min(nbytes)


def tiling_spec(tp: TypedProgram, plan: KernelPlan) -> TilingSpec:
    p = tp.program
    ref = [t.name for t in p.tensors].index(p.loop.tensor)
    buffers = []
    depth = p.loop.depth
    for b in plan.buffers:
        slots = str(depth) if b.kind in ("inq", "outq") else "1"
        buffers.append((f"{b.name}Bytes", slots, b.bytes_expr))
    return TilingSpec(
        op=p.name, kind=p.loop.kind, ref_index=ref, dim=p.loop.dim, unit=unit_elems(p),
        formulas=tuple(formulas(p.loop, tp.chunked)), buffers=tuple(buffers),
        tunables=tuple(t.name for t in p.tunables), scalars=tuple(s.name for s in p.scalars),
    )


def _gm_size(p: ir.Program, role: str) -> str:
    kind = p.loop.kind
    if kind == "tiles":
        return "td.n"
    if kind == "rows":
        return {"bcast": "td.W", "per_row": "td.N", "row_out": "td.N"}.get(role, "td.N * td.W")
    return "td.A * td.K * td.B" if role == "step" else "td.A * td.B"


def _kernel_class(tp: TypedProgram, plan: KernelPlan, spec: TilingSpec, depth: int) -> str:
    """Pass 2 (init) wrapped around the compute body of pass 3."""
    p = tp.program
    cls = f"Kernel{camel(p.name)}"
    L: list[str] = [ALIGN_PRELUDE, "", f"constexpr int32_t DEPTH = {depth};  // queue depth: 2 = double buffering", ""]
    L.append("template <typename TilingT>")
    L.append(f"class {cls} {{")
    L.append("public:")
    L.append(f"    __aicore__ inline {cls}() {{}}")
    args = ", ".join(f"GM_ADDR {t.name}" for t in p.tensors)
    L.append(f"    __aicore__ inline void Init({args}, const TilingT& td) {{")
    L.append("        td_ = td;")
    for t in p.tensors:
        role = plan.roles.get(t.name, "tile")
        L.append(f"        {t.name}Gm.SetGlobalBuffer(reinterpret_cast<__gm__ {CTYPE[t.dtype]}*>({t.name}), "
                 f"static_cast<uint64_t>({_gm_size(p, role)}));")
    for b in plan.buffers:
        if b.kind in ("inq", "outq"):
            L.append(f"        pipe.InitBuffer({b.name}, DEPTH, static_cast<uint32_t>(td.{b.name}Bytes));")
        else:
            L.append(f"        pipe.InitBuffer({b.name}, static_cast<uint32_t>(td.{b.name}Bytes));")
    L.append("    }")
    L.append("")
    L.append("    __aicore__ inline void Process() {")
    L.append("        const int64_t core = GetBlockIdx();")
    loop = p.loop
    if loop.kind == "tiles":
        L += [
            "        const int64_t units = td_.baseUnits + (core < td_.bigCores ? 1 : 0);",
            "        const int64_t start = (core * td_.baseUnits + acx_min(core, td_.bigCores)) * " + str(spec.unit) + ";",
            "        const int64_t len = acx_min(units * " + str(spec.unit) + ", td_.n - start);",
            "        for (int64_t off = 0; off < len; off += td_.tileLen) {",
            "            const int64_t n = acx_min(td_.tileLen, len - off);",
            "            const int64_t g = start + off;  // element offset in GM",
            "            const int64_t cnt = n;",
        ]
    elif loop.kind == "rows":
        L += [
            "        const int64_t rows = td_.baseRows + (core < td_.bigCores ? 1 : 0);",
            "        const int64_t row0 = core * td_.baseRows + acx_min(core, td_.bigCores);",
            "        const int64_t wp = td_.chunkPad;  // UB row stride (elements, 32 B multiple)",
            "        for (int64_t i = 0; i < rows; i += td_.tileRows) {",
            "            const int64_t r = acx_min(td_.tileRows, rows - i);",
            "            const int64_t gr = row0 + i;  // first global row of this tile",
        ]
        if not tp.chunked:
            L += [
                "            const int64_t w = td_.W;",
                "            const int64_t c0 = 0;",
                "            const int64_t cnt = r * wp;",
            ]
    else:
        L += [
            "        const int64_t items = td_.baseItems + (core < td_.bigCores ? 1 : 0);",
            "        const int64_t item0 = core * td_.baseItems + acx_min(core, td_.bigCores);",
            "        for (int64_t j = 0; j < items; ++j) {",
            "            const int64_t a = (item0 + j) / td_.blocksPerOuter;",
            "            const int64_t b0 = ((item0 + j) % td_.blocksPerOuter) * td_.tileLen;",
            "            const int64_t cnt = acx_min(td_.tileLen, td_.B - b0);",
        ]
    L += ["        " + line[4:] if line.startswith("    ") else line for line in plan.body]
    L.append("        }")
    L.append("    }")
    L.append("")
    L.append("private:")
    L.append("    TPipe pipe;")
    for b in plan.buffers:
        if b.kind == "inq":
            L.append(f"    TQue<QuePosition::VECIN, DEPTH> {b.name};")
        elif b.kind == "outq":
            L.append(f"    TQue<QuePosition::VECOUT, DEPTH> {b.name};")
        else:
            L.append(f"    TBuf<QuePosition::VECCALC> {b.name};")
    for t in p.tensors:
        L.append(f"    GlobalTensor<{CTYPE[t.dtype]}> {t.name}Gm;")
    L.append("    TilingT td_;")
    L.append("};")
    return "\n".join(L)


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
    try:
        t = spec.evaluate(dims, values, core_num)
    except ValueError as e:
        raise DslError(f"shapes do not fit the kernel: {e}") from None
    if t["ubBytes"] > ub_bytes:
        parts = ", ".join(f"{f.removesuffix('Bytes')}={t[f] * int(values.get(slots, slots))}"
                          for f, slots, _ in spec.buffers)
        raise DslError(f"UB budget exceeded: needs {t['ubBytes']} B, {ub_bytes} B available "
                       f"({parts}; tunables {values})")
    return t
