"""C++ text every launch shares, whichever pass generated its body: the helpers of the tiling
formula language, the emulator's two C entry points (``acx_tiling`` / ``acx_run``) and the
member declarations of a kernel class's UB queues and buffers.
"""

from __future__ import annotations

from collections.abc import Iterable

ROW_COPIES = r"""
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
"""The GM <-> UB row copies of every vector launch (they need ``acx_min`` and ``acx_align_up``)."""


def formula_helpers(namespace: str) -> list[str]:
    """The integer helpers of the tiling formulas (``tiling.PY_HELPERS`` in Python), in C++."""
    return [
        f"namespace {namespace} {{",
        "inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }",
        "inline int64_t floor_div(int64_t a, int64_t b) { return a / b; }",
        "inline int64_t align_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }",
        "inline int64_t align_down(int64_t a, int64_t b) { return (a / b) * b; }",
        "inline int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }",
        "inline int64_t max(int64_t a, int64_t b) { return a > b ? a : b; }",
        "inline int64_t sel(bool c, int64_t a, int64_t b) { return c ? a : b; }",
    ]


def emulator_entries(*, struct: str, tiling_fn: str, n_tunables: int, n_scalars: int, cores: str,
                     block_dim: str, workspace: str, n_gm: int, entry: str, includes: str = "") -> str:
    """``acx_tiling`` (run the tiling function for the runner) and ``acx_run`` (launch
    ``entry`` over the GM buffers): the runner's interface to one kernel library.
    ``cores``: the core-count arguments of the tiling function; ``block_dim`` and
    ``workspace``: the tiling fields reported back."""
    tun = "".join(f", tunables[{i}]" for i in range(n_tunables))
    sc = "".join(f", static_cast<float>(scalars[{i}])" for i in range(n_scalars))
    call = ", ".join(f"(GM_ADDR)gm[{i}]" for i in range(n_gm))
    return f"""
// ---- emulator entry points (not part of the AscendC operator) ----
#include <cstring>
{includes}extern "C" int acx_tiling(const int64_t* dims, const int32_t* ranks, int32_t n_tensors,
                          const int64_t* tunables, int32_t n_tunables, const double* scalars, int32_t n_scalars,
                          uint32_t core_num, uint8_t* out, uint32_t out_cap, uint32_t* block_dim,
                          uint64_t* workspace_bytes, char* err, int32_t errlen) {{
    if (n_tunables != {n_tunables} || n_scalars != {n_scalars}) {{
        std::snprintf(err, errlen, "expected {n_tunables} tunables and {n_scalars} scalars");
        return -1;
    }}
    {struct} t{{}};
    const char* e = {tiling_fn}(dims, ranks, n_tensors, {cores}{tun}{sc}, &t);
    if (e != nullptr) {{ std::snprintf(err, errlen, "%s", e); return -1; }}
    if (sizeof(t) > out_cap) {{ std::snprintf(err, errlen, "tiling buffer too small"); return -1; }}
    std::memcpy(out, &t, sizeof(t));
    *block_dim = static_cast<uint32_t>(t.{block_dim});
    *workspace_bytes = {workspace};
    return static_cast<int>(sizeof(t));
}}

extern "C" int acx_run(void** gm, const uint64_t* gmBytes, int n_gm, const AcxRunOptions* opt, char* err, int errlen) {{
    if (n_gm != {n_gm}) {{ std::snprintf(err, errlen, "expected {n_gm} GM buffers, got %d", n_gm); return -1; }}
    return acx::Run(gm, gmBytes, n_gm, opt, err, errlen, [&] {{ {entry}({call}); }});
}}
"""


def ub_members(buffers: Iterable[tuple[str, str]], position: str, depth: str) -> list[str]:
    """Class members of UB allocations, ``(name, "in" | "out" | "bind" | "calc")`` each: VECIN/VECOUT
    queues of ``depth`` slots, VECIN->VECOUT bound queues and VECCALC buffers (``position``: the enum spelling used)."""
    out = []
    for name, role in buffers:
        if role == "in":
            out.append(f"    TQue<{position}::VECIN, {depth}> {name};")
        elif role == "out":
            out.append(f"    TQue<{position}::VECOUT, {depth}> {name};")
        elif role == "bind":  # loaded, computed on in place and copied out of the same slot
            out.append(f"    TQueBind<{position}::VECIN, {position}::VECOUT, {depth}> {name};")
        else:
            out.append(f"    TBuf<{position}::VECCALC> {name};")
    return out


def ub_init(buffers: Iterable[tuple[str, bool, str]], depth: str) -> list[str]:
    """``InitBuffer`` calls for ``(name, is_queue, bytes field of the tiling)`` each."""
    out = []
    for name, queue, nbytes in buffers:
        slots = f"{depth}, " if queue else ""
        out.append(f"        pipe.InitBuffer({name}, {slots}static_cast<uint32_t>(td.{nbytes}));")
    return out


def tiling_struct(name: str, ints: Iterable[str], floats: Iterable[tuple[str, str]]) -> list[str]:
    """The POD tiling struct: int64 fields, then float fields ``(name, comment)``."""
    out = [f"struct {name} {{"]
    out += [f"    int64_t {f};" for f in ints]
    out += [f"    float {f};" + (f"  // {c}" if c else "") for f, c in floats]
    return out + ["};", ""]


def header_prologue(title: str, namespace: str, helpers: list[str], struct: str, ints: Iterable[str],
                    floats: Iterable[tuple[str, str]]) -> list[str]:
    """The start of a tiling header: banner, the formula helpers (and ``helpers``) in
    ``namespace``, and the tiling struct; the tiling function follows."""
    return [
        f"// Tiling for {title} — generated by ascendcraft (pass 1: host tiling). Plain C++,",
        "// shared by the CANN host TilingFunc and the emulator: the one source of the split.",
        "#pragma once",
        "#include <cstdint>",
        "",
        *formula_helpers(namespace),
        *helpers,
        f"}}  // namespace {namespace}",
        "",
        *tiling_struct(struct, ints, floats),
    ]


def tiling_fn_head(comment: list[str], fn: str, cores: str, tunables: Iterable[str], scalars: Iterable[str],
                   struct: str, namespace: str) -> list[str]:
    """The tiling function's signature (``cores``: its core-count parameters; tunables and
    scalars by their C++ names) and its first line."""
    tun = "".join(f", int64_t {t}" for t in tunables)
    scs = "".join(f", float {x}" for x in scalars)
    return [
        *comment,
        f"inline const char* {fn}(const int64_t* dims, const int32_t* ranks, int32_t nTensors,",
        f"                        {cores}{tun}{scs}, {struct}* t) {{",
        f"    using namespace {namespace};",
    ]


# The helpers every vector launch's code uses (alignment, scalar syncs, kernel scalars).
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

// One fp32 row's sum (KIND 0), max (1) or min (2) into dst[0] on the vector pipe alone:
// block reductions fold each 32 B block to one value (1 cycle a 256 B repeat), at most twice,
// and one whole-repeat reduction ends it; ReduceSum/Max/Min (3-7 cycles a repeat at every
// level) only past 4096 values. work holds ceil(n / 8) values, work2 (32 B aligned) 64.
template <int KIND>
__aicore__ inline void AcxBlockFold(const LocalTensor<float>& dst, const LocalTensor<float>& src, int32_t n) {
    const int32_t full = n / 64, tail = n % 64;
    for (int32_t r0 = 0; r0 < full; r0 += 248) {  // <= 255 repeats, 32 B-aligned outputs
        const int32_t rep = full - r0 < 248 ? full - r0 : 248;
        if (KIND == 0) BlockReduceSum<float>(dst[r0 * 8], src[r0 * 64], rep, 64, 1, 1, 8);
        else if (KIND == 1) BlockReduceMax<float>(dst[r0 * 8], src[r0 * 64], rep, 64, 1, 1, 8);
        else BlockReduceMin<float>(dst[r0 * 8], src[r0 * 64], rep, 64, 1, 1, 8);
    }
    if (tail > 0) {
        if (KIND == 0) BlockReduceSum<float>(dst[full * 8], src[full * 64], 1, tail, 1, 1, 8);
        else if (KIND == 1) BlockReduceMax<float>(dst[full * 8], src[full * 64], 1, tail, 1, 1, 8);
        else BlockReduceMin<float>(dst[full * 8], src[full * 64], 1, tail, 1, 1, 8);
    }
    PipeBarrier<PIPE_V>();
}
template <int KIND>
__aicore__ inline void AcxWholeReduce(const LocalTensor<float>& dst, const LocalTensor<float>& src, int32_t n) {
    if (KIND == 0) WholeReduceSum<float>(dst, src, n, 1, 1, 1, 8);
    else if (KIND == 1) WholeReduceMax<float>(dst, src, n, 1, 1, 1, 8, ReduceOrder::ORDER_ONLY_VALUE);
    else WholeReduceMin<float>(dst, src, n, 1, 1, 1, 8, ReduceOrder::ORDER_ONLY_VALUE);
}
template <int KIND>
__aicore__ inline void AcxRowReduce(const LocalTensor<float>& dst, const LocalTensor<float>& src,
                                    const LocalTensor<float>& work, const LocalTensor<float>& work2, int32_t n) {
    if (n > 4096) {
        if (KIND == 0) ReduceSum<float>(dst, src, work, n);
        else if (KIND == 1) ReduceMax<float>(dst, src, work, n, false);
        else ReduceMin<float>(dst, src, work, n, false);
        return;
    }
    if (n <= 64) {
        AcxWholeReduce<KIND>(dst, src, n);
        return;
    }
    AcxBlockFold<KIND>(work, src, n);
    const int32_t m = (n + 7) / 8;
    if (m <= 64) {
        AcxWholeReduce<KIND>(dst, work, m);
        return;
    }
    AcxBlockFold<KIND>(work2, work, m);
    AcxWholeReduce<KIND>(dst, work2, (m + 7) / 8);
}
// A tile's r rows (UB row stride wp) into dst[0..r): rows of at most one 256 B repeat in one
// whole-repeat reduction a repeat per row (the per-row call's arithmetic), wider rows one by one.
template <int KIND>
__aicore__ inline void AcxRowsReduce(const LocalTensor<float>& dst, const LocalTensor<float>& src,
                                     const LocalTensor<float>& work, const LocalTensor<float>& work2, int64_t r, int64_t n,
                                     int64_t wp) {
    if (n <= 64 && wp / 8 <= 255) {
        const int32_t cnt = static_cast<int32_t>(n), stride = static_cast<int32_t>(wp / 8);
        for (int64_t r0 = 0; r0 < r; r0 += 255) {
            const int32_t k = static_cast<int32_t>(acx_min(255, r - r0));
            if (KIND == 0) WholeReduceSum<float>(dst[r0], src[r0 * wp], cnt, k, 1, 1, stride);
            else if (KIND == 1) WholeReduceMax<float>(dst[r0], src[r0 * wp], cnt, k, 1, 1, stride, ReduceOrder::ORDER_ONLY_VALUE);
            else WholeReduceMin<float>(dst[r0], src[r0 * wp], cnt, k, 1, 1, stride, ReduceOrder::ORDER_ONLY_VALUE);
        }
        return;
    }
    for (int64_t ri = 0; ri < r; ++ri) AcxRowReduce<KIND>(dst[ri], src[ri * wp], work, work2, static_cast<int32_t>(n));
}

// dst = src (OP) v, or v (OP) src when ROW_FIRST, for each of r rows of w elements (UB row
// stride wp) with the row's value v held in one 32 B block of bc (put there by Brcb): that
// operand's block stride is 0, so the vector pipe applies a tile's row values with no scalar
// read. Rows of few 256 B repeats go down the rows (one call per 256 B column, a repeat per
// row), wider rows along each row (one call per row, a repeat per 256 B).
// Each row's element at column w - 1 into dst[ri] on the vector pipe: one strided UB->UB copy
// takes the 32 B block holding it out of every row, then a block reduction with one lane a block
// picks it (tmp: one 32 B block a row, 8 rows a repeat).
template <typename T>
__aicore__ inline void AcxRowLast(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& tmp, int64_t r,
                                  int64_t w, int64_t wp) {
    constexpr int64_t epb = 32 / sizeof(T);
    const int64_t k = (w - 1) % epb, first = w - 1 - k;
    for (int64_t r0 = 0; r0 < r; r0 += 4095) {
        const int64_t n = acx_min(4095, r - r0);
        DataCopy(tmp[r0 * epb], src[r0 * wp + first], DataCopyParams(n, 1, wp / epb - 1, 0));
    }
    PipeBarrier<PIPE_V>();
    uint64_t mask[2] = {0, 0};
    for (int64_t b = 0; b < 8; ++b) mask[(b * epb + k) / 64] |= 1ull << ((b * epb + k) % 64);
    for (int64_t r0 = 0; r0 < r; r0 += 255 * 8) {
        const int32_t n = static_cast<int32_t>(acx_min(255, (r - r0 + 7) / 8));
        BlockReduceMax<T>(dst[r0], tmp[r0 * epb], n, mask, 1, 1, 8);
    }
}
enum AcxBinOp { ACX_ADD, ACX_SUB, ACX_MUL, ACX_DIV, ACX_MAX, ACX_MIN };
// r row values into r 32 B blocks (8 rows a Brcb repeat, <= 255 repeats a call).
template <typename T>
__aicore__ inline void AcxBrcbRows(const LocalTensor<T>& bc, const LocalTensor<T>& v, int64_t r) {
    constexpr int64_t epb = 32 / sizeof(T);
    for (int64_t r0 = 0; r0 < r; r0 += 255 * 8) {
        const int64_t n = acx_min(255, (r - r0 + 7) / 8);
        Brcb(bc[r0 * epb], v[r0], static_cast<uint8_t>(n), BrcbRepeatParams(1, 8));
    }
    PipeBarrier<PIPE_V>();
}
template <int OP, typename T>
__aicore__ inline void AcxBinRep(const LocalTensor<T>& d, const LocalTensor<T>& a, const LocalTensor<T>& b, uint64_t mask,
                                 uint8_t rep, const BinaryRepeatParams& p) {
    if (OP == ACX_ADD) Add(d, a, b, mask, rep, p);
    else if (OP == ACX_SUB) Sub(d, a, b, mask, rep, p);
    else if (OP == ACX_MUL) Mul(d, a, b, mask, rep, p);
    else if (OP == ACX_DIV) Div(d, a, b, mask, rep, p);
    else if (OP == ACX_MAX) Max(d, a, b, mask, rep, p);
    else Min(d, a, b, mask, rep, p);
}
template <int OP, bool ROW_FIRST, typename T>
__aicore__ inline void AcxRowApply(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& bc, int64_t r,
                                   int64_t w, int64_t wp) {
    constexpr int64_t epr = 256 / sizeof(T), epb = 32 / sizeof(T);
    const int64_t cols = (w + epr - 1) / epr, stride = wp / epb;
    if (cols <= r && stride <= 255) {
        const uint8_t s = static_cast<uint8_t>(stride);
        for (int64_t j = 0; j < cols; ++j) {
            const uint64_t mask = static_cast<uint64_t>(acx_min(epr, w - j * epr));
            for (int64_t r0 = 0; r0 < r; r0 += 255) {
                const uint8_t n = static_cast<uint8_t>(acx_min(255, r - r0));
                const int64_t at = r0 * wp + j * epr;
                if (ROW_FIRST) AcxBinRep<OP>(dst[at], bc[r0 * epb], src[at], mask, n, BinaryRepeatParams(1, 0, 1, s, 1, s));
                else AcxBinRep<OP>(dst[at], src[at], bc[r0 * epb], mask, n, BinaryRepeatParams(1, 1, 0, s, s, 1));
            }
        }
        return;
    }
    const BinaryRepeatParams p = ROW_FIRST ? BinaryRepeatParams(1, 0, 1, 8, 0, 8) : BinaryRepeatParams(1, 1, 0, 8, 8, 0);
    for (int64_t ri = 0; ri < r; ++ri) {
        const LocalTensor<T> v = bc[ri * epb];
        for (int64_t c0 = 0; c0 < w; c0 += 255 * epr) {  // <= 255 whole repeats a call, then the ragged end
            const int64_t left = w - c0, n = acx_min(255, left / epr), at = ri * wp + c0;
            if (n > 0) {
                if (ROW_FIRST) AcxBinRep<OP>(dst[at], v, src[at], epr, static_cast<uint8_t>(n), p);
                else AcxBinRep<OP>(dst[at], src[at], v, epr, static_cast<uint8_t>(n), p);
            }
            if (n < 255 && left % epr) {
                const int64_t t = at + n * epr;
                const uint64_t mask = static_cast<uint64_t>(left % epr);
                if (ROW_FIRST) AcxBinRep<OP>(dst[t], v, src[t], mask, 1, p);
                else AcxBinRep<OP>(dst[t], src[t], v, mask, 1, p);
            }
        }
    }
}

""".strip("\n") + "\n\n" + ROW_COPIES


# slabs(rows=R): an accumulator of R partial rows folded into every row, after its steps loop.
FOLD_ROWS = r"""
// rows partial rows of an accumulator (UB row stride wp) folded pairwise into row 0 (a tree of
// ceil(log2(rows)) vector ops, each on half the remaining rows), then row 0 copied back over
// the others (doubling) so every row holds the whole fold: later code reads any row alike.
// Row 0 copied over rows 1 .. rows - 1 (doubling): a one-row value of the tile (a load at the
// slab) made as tall as the blocked steps' values it meets.
template <typename T>
__aicore__ inline void AcxRepeatRows(const LocalTensor<T>& acc, int64_t rows, int64_t wp) {
    for (int64_t have = 1; have < rows;) {
        const int64_t m = acx_min(have, rows - have);
        PipeBarrier<PIPE_V>();
        Muls(acc[have * wp], acc, static_cast<T>(1.0f), static_cast<int32_t>(m * wp));
        have += m;
    }
    PipeBarrier<PIPE_V>();
}
template <int OP, typename T>
__aicore__ inline void AcxFoldRows(const LocalTensor<T>& acc, int64_t rows, int64_t wp) {
    for (int64_t h = rows; h > 1;) {
        const int64_t half = h / 2, keep = h - half;
        const int32_t n = static_cast<int32_t>(half * wp);
        PipeBarrier<PIPE_V>();
        if (OP == ACX_ADD) Add(acc, acc, acc[keep * wp], n);
        else if (OP == ACX_MUL) Mul(acc, acc, acc[keep * wp], n);
        else if (OP == ACX_MAX) Max(acc, acc, acc[keep * wp], n);
        else Min(acc, acc, acc[keep * wp], n);
        h = keep;
    }
    AcxRepeatRows(acc, rows, wp);
}
// The same tree into row 0 alone (slabs(block_max=True): a block's max and sum; rows 1.. are
// scratch afterwards).
template <int OP, typename T>
__aicore__ inline void AcxFoldRowsTo0(const LocalTensor<T>& acc, int64_t rows, int64_t wp) {
    for (int64_t h = rows; h > 1;) {
        const int64_t half = h / 2, keep = h - half;
        PipeBarrier<PIPE_V>();
        if (OP == ACX_ADD) Add(acc, acc, acc[keep * wp], static_cast<int32_t>(half * wp));
        else Max(acc, acc, acc[keep * wp], static_cast<int32_t>(half * wp));
        h = keep;
    }
}
"""
