"""The cube kernel (AIC) of a ``@cube_kernel``'s cube stage (pass 2 of the cube lowering).

Output blocks over the cube cores in the chosen order (row-major, column-major, swizzled
groups), optional split-K; per block K is staged GM → L1 with the ND → Nz ``DataCopy``
(ping-pong ``STAGES``), L1 → L0A/L0B with ``LoadData`` (ping-pong), ``Mmad`` accumulating
in L0C, ``Fixpipe`` to GM (Nz → ND, optional ReLU and fp32 → fp16/bf16).
"""

from __future__ import annotations

from .. import ir
from ..ir import DTYPE_BYTES
from ..names import mangle, size_expr
from ..parser import DslError
from .compute_ops import CTYPE
from .cube_tiling import Buf, CubeTiling
from .tiling import camel

QUANT = {"f32": "QuantMode_t::NoQuant", "f16": "QuantMode_t::F322F16", "bf16": "QuantMode_t::F322BF16"}



def cube_buffers(p: ir.Program) -> list[Buf]:
    c = p.cube
    assert c is not None
    dt = p.dtype_of(c.a.tensor)
    return [
        Buf("qA1", "A1", "sel(aWhole > 0, 0, bm * kl1 * eb)", size_expr(c.stages), dt),
        Buf("qAW", "A1", "sel(aWhole > 0, bm * align_up(kPerSplit, 16) * eb, 0)", "1", dt),
        # with b_whole the stage ring carries only b_hold's streamed K steps (bk rows each), if any
        Buf("qB1", "B1", "sel(bWhole > 0, sel(bStream > 0, bk * bn * eb, 0), kl1 * bn * eb)", size_expr(c.stages), dt),
        Buf("qBW", "B1", "sel(bWhole > 0, sel(bAhead > 0, kl1 * bn * eb, align_up(bHold, 16) * bn * eb), 0)",
            "bwSlots", dt),
        # (tile sizes: one tile's rows / columns)
        Buf("qA2", "A2", "sel(l1Acc > 0, tm, bm) * bk * eb" if c.l1_acc else "bm * bk * eb", size_expr(c.l0_depth), dt),
        Buf("qB2", "B2", "bk * sel(l1Acc > 0, tn, bn) * eb" if c.l1_acc else "bk * bn * eb", size_expr(c.l0_depth), dt),
        Buf("qC1", "CO1", "sel(l1Acc > 0, tm * tn * 4, bm * bn * 4)" if c.l1_acc else "bm * bn * 4",
            size_expr(c.acc_depth), "f32"),
    ] + bias_buffers(p) + ordered_buffers(p) + l1_acc_buffers(p)


def l1_acc_buffers(p: ir.Program) -> list[Buf]:
    """tile_m= / tile_n=: the block's fp32 partial sums in L1 (each tile's Nz image as L0C holds it,
    tm x tn apart); with ordered_split the combine stages its shares there too (after the last stage)."""
    c = p.cube
    if c is None or not c.l1_acc:
        return []
    # one image per tile (with stages in alternating order every tile leaves L0C at some boundary);
    # the combine's staging fits (a share of the block is at most the block)
    return [Buf("qAcc", "A1", "sel(l1Acc > 0, ceil_div(bm, tm) * ceil_div(bn, tn) * tm * tn * 4, 0)", "1", "f32")]


def bias_buffers(p: ir.Program) -> list[Buf]:
    """accumulator(blk, bias=b): the block's bias row staged in L1 (C1), then in the bias table (C2,
    fp32) that the first Mmad of the block reads."""
    c = p.cube
    if c is None or c.bias is None:
        return []
    return [Buf("qBias1", "C1", "bn * eb", "1", p.dtype_of(c.bias)), Buf("qBiasT", "C2", "bn * 4", "1", "f32")]


def bias_checks(p: ir.Program, t: dict[str, int], dims: list[list[int]], bias_table_bytes: int) -> None:
    """accumulator(blk, bias=b): b holds N values and one block's BN of them (fp32) fit the SoC's
    bias table (``Soc.bt_kib``)."""
    c = p.cube
    if c is None or c.bias is None:
        return
    shape = dict(zip([x.name for x in p.tensors], dims, strict=False))[c.bias]
    n = 1
    for d in shape:
        n *= d
    if n != t["N"]:
        raise DslError(f"accumulator(..., bias={c.bias}): '{c.bias}' has {n} values, the product has N = {t['N']} "
                       "columns (one bias value per column)", c.loc)
    if t["bn"] * 4 > bias_table_bytes:
        raise DslError(f"bias table capacity: a block of {t['bn']} columns needs {t['bn'] * 4} B of fp32 bias, "
                       f"the bias table holds {bias_table_bytes} B (BN <= {bias_table_bytes // 4})", c.loc)


def _bias_load(p: ir.Program, T: str) -> list[str]:
    """Per block, before its K loop: bias[col0 : col0 + nB] GM -> L1 (one ND row is contiguous in Nz,
    tail zero-filled) -> bias table, converted to fp32 (DataCopy C1 -> C2, 16 values per 64 B unit)."""
    c = p.cube
    assert c is not None and c.bias is not None
    return [
        f"            // bias row GM -> L1 -> bias table (C2), DSL line {c.loc.line}",
        f"            LocalTensor<{T}> bs1 = qBias1.AllocTensor<{T}>();",
        "            CopyNd2Nz(bs1, biasGm[col0], 1, nB, td_.N, 1);",
        "            qBias1.EnQue(bs1);",
        f"            bs1 = qBias1.DeQue<{T}>();",
        "            LocalTensor<float> btab = qBiasT.AllocTensor<float>();",
        "            DataCopyParams bp;",
        "            bp.blockCount = 1;",
        "            bp.blockLen = static_cast<uint16_t>(n16 / 16);",
        "            DataCopy(btab, bs1, bp);",
        "            qBias1.FreeTensor(bs1);",
        "            qBiasT.EnQue(btab);",
        "            btab = qBiasT.DeQue<float>();",
    ]


CUBE_PRELUDE = r"""
__aicore__ inline int64_t acx_min(int64_t a, int64_t b) { return a < b ? a : b; }
__aicore__ inline int64_t acx_align16(int64_t a) { return (a + 15) / 16 * 16; }

// GM -> L1, ND -> Nz: `rows` x `cols` elements of a row-major matrix with row stride `ld`,
// written as Nz with C0-wide column blocks and `rowsPad` rows per block. Row strides
// above the Nd2Nz limit (65535) fall back to one row per call.
template <typename T>
__aicore__ inline void CopyNd2Nz(const LocalTensor<T>& dst, const GlobalTensor<T>& src, int64_t rows,
                                 int64_t cols, int64_t ld, int64_t rowsPad) {
    constexpr int64_t C0 = 32 / sizeof(T);
    if (ld <= 65535) {
        Nd2NzParams p;
        p.ndNum = 1;
        p.nValue = static_cast<uint16_t>(rows);
        p.dValue = static_cast<uint16_t>(cols);
        p.srcNdMatrixStride = 0;
        p.srcDValue = static_cast<uint16_t>(ld);
        p.dstNzC0Stride = static_cast<uint16_t>(rowsPad);
        p.dstNzNStride = 1;
        p.dstNzMatrixStride = 0;
        DataCopy(dst, src, p);
        return;
    }
    for (int64_t r = 0; r < rows; ++r) {
        Nd2NzParams p;
        p.ndNum = 1;
        p.nValue = 1;
        p.dValue = static_cast<uint16_t>(cols);
        p.srcNdMatrixStride = 0;
        p.srcDValue = static_cast<uint16_t>(cols);
        p.dstNzC0Stride = static_cast<uint16_t>(rowsPad);
        p.dstNzNStride = 1;
        p.dstNzMatrixStride = 0;
        DataCopy(dst[r * C0], src[r * ld], p);
    }
}

// GM -> L1 for fp32 B stored K x N: `rows` x `cols` (row stride `ld`) as 16-row strips, each strip
// Nz with 16-row column blocks (its 16 x 8 fractals consecutive, so two of them form the 16 x 16
// square LoadDataWithTranspose takes); strips are 16 * colsPad elements apart.
template <typename T>
__aicore__ inline void CopyNd2Strips(const LocalTensor<T>& dst, const GlobalTensor<T>& src, int64_t rows,
                                     int64_t cols, int64_t ld, int64_t colsPad) {
    int64_t s = 0;
    if (ld <= 4095 && colsPad <= 1024 && rows >= 16) {  // full strips in one call (one ND matrix each)
        Nd2NzParams p;
        p.ndNum = static_cast<uint16_t>(rows / 16);
        p.nValue = 16;
        p.dValue = static_cast<uint16_t>(cols);
        p.srcNdMatrixStride = static_cast<uint16_t>(16 * ld);
        p.srcDValue = static_cast<uint16_t>(ld);
        p.dstNzC0Stride = 16;
        p.dstNzNStride = 1;
        p.dstNzMatrixStride = static_cast<uint16_t>(16 * colsPad);
        DataCopy(dst, src, p);
        s = rows / 16;
    }
    for (; s * 16 < rows; ++s)
        CopyNd2Nz(dst[s * 16 * colsPad], src[s * 16 * ld], acx_min(16, rows - s * 16), cols, ld, 16);
}

__aicore__ inline void Load2DTrans32(const LocalTensor<CUBE_T>& dst, const LocalTensor<CUBE_T>& src,
                                     int64_t squares) {
    LoadData2dTransposeParams p;
    p.startIndex = 0;
    p.repeatTimes = static_cast<uint8_t>(squares);
    p.srcStride = 1;
    p.dstGap = 0;
    p.dstFracGap = static_cast<uint16_t>(squares - 1);
    p.addrMode = 0;
    LoadDataWithTranspose(dst, src, p);
}

// fp32 A stored K x M: each 16-row (k) strip of L1 holds m16 / 16 squares of 16 k x 16 m; transposed,
// square q gives the Zz fractals (m block q, k fractals 2ks and 2ks + 1), `k1f` fractals per m block.
__aicore__ inline void Load2DTrans32A(const LocalTensor<CUBE_T>& dst, const LocalTensor<CUBE_T>& src,
                                      int64_t squares, int64_t k1f) {
    LoadData2dTransposeParams p;
    p.startIndex = 0;
    p.repeatTimes = static_cast<uint8_t>(squares);
    p.srcStride = 1;
    p.dstGap = static_cast<uint16_t>(k1f - 1);
    p.dstFracGap = 0;
    p.addrMode = 0;
    LoadDataWithTranspose(dst, src, p);
}

__aicore__ inline void Load2D(const LocalTensor<CUBE_T>& dst, const LocalTensor<CUBE_T>& src, int64_t repeat,
                              int64_t srcStride, bool transpose) {
    LoadData2DParams p;
    p.startIndex = 0;
    p.repeatTimes = static_cast<uint8_t>(repeat);
    p.srcStride = static_cast<uint16_t>(srcStride);
    p.sid = 0;
    p.dstGap = 0;
    p.ifTranspose = transpose;
    p.addrMode = 0;
    LoadData(dst, src, p);
}
""".strip("\n")


# The walk from work item w to its block (batch, rows, columns, K split): inline in the item loop
# (the mixed form's AIVs repeat it) and in KeyOfB (b_ahead: the panel of a later item).
_WALK = [
    "            // run > 1: this core's ri-th item (ri = w / cubeDim) is item ri % run of its (ri / run)-th",
    "            // run of consecutive items (written with w alone: the mixed form's AIVs repeat this walk)",
    "            const int64_t ri = w / td_.cubeDim;",
    "            const int64_t it = w < td_.runFull",
    "                ? ((ri / td_.runLen) * td_.cubeDim + w % td_.cubeDim) * td_.runLen + ri % td_.runLen : w;",
    "            // work item -> block; items past the full waves are N-pieces of the tail blocks",
    "            const bool piece = it >= td_.fullTiles;",
    "            // (N pieces: a block's pieces on consecutive items, which read its A rows together through L2;",
    "            // M pieces, tail=2: piece j of every block, then j + 1, so item i keeps the column of item",
    "            // i - cubeDim, as its core's held B panel does)",
    "            const int64_t tj = it - td_.fullTiles;",
    "            const int64_t blk = piece ? td_.fullTiles + (td_.tailM ? tj % td_.remTiles : tj / td_.tparts) : it;",
    "            const int64_t part = piece ? (td_.tailM ? tj / td_.remTiles : tj % td_.tparts) : 0;",
    "            const int64_t split = blk % td_.splits;",
    "            const int64_t tile = blk / td_.splits;",
    "            const int64_t bt = tile / perBatch;",
    "            const int64_t rest = tile % perBatch;",
    "            int64_t mi, ni;  // output block order over the cube cores",
    "            if (td_.order == 1) {  // column-major",
    "                ni = rest / td_.nM; mi = rest % td_.nM;",
    "            } else if (td_.order == 2) {  // swizzled: groups of `group` block rows, column-first inside",
    "                const int64_t g = rest / (td_.group * td_.nN);",
    "                const int64_t rowsIn = acx_min(td_.group, td_.nM - g * td_.group);",
    "                const int64_t idx = rest % (td_.group * td_.nN);",
    "                mi = g * td_.group + idx % rowsIn; ni = idx / rowsIn;",
    "            } else {  // row-major",
    "                mi = rest / td_.nN; ni = rest % td_.nN;",
    "            }",
    "            int64_t row0 = mi * td_.bm;",
    "            int64_t col0 = ni * td_.bn;",
    "            int64_t mB = acx_min(td_.bm, td_.M - row0);",
    "            int64_t nB = acx_min(td_.bn, td_.N - col0);",
    "            if (piece && td_.tparts > 1 && td_.tailM) {  // this item's rows of the tail block (tail=2)",
    "                const int64_t sub = acx_align16((mB + td_.tparts - 1) / td_.tparts);",
    "                if (part * sub >= mB) continue;",
    "                row0 += part * sub;",
    "                mB = acx_min(sub, mB - part * sub);",
    "            } else if (piece && td_.tparts > 1) {  // this item's columns of the tail block",
    "                const int64_t sub = acx_align16((nB + td_.tparts - 1) / td_.tparts);",
    "                if (part * sub >= nB) continue;",
    "                col0 += part * sub;",
    "                nB = acx_min(sub, nB - part * sub);",
    "            }",
]

_KEY_B = "((bt * td_.N + col0) * (td_.bn + 1) + nB) * td_.splits + split"  # a B panel (piece)


# b_ahead (with b_whole): the held panel is one ring buffer per K stage. A new run frees what is
# left of the last panel, keeps the pieces of this one already loaded and loads the others, then
# finds this core's next panel; from the run's second block the stage loop loads that panel's
# first b_ahead pieces a chunk of stored rows per K stage (behind the stage's A copy: MTE2 runs in
# order, so a whole piece at once would hold up the A copies) and, in the last stage of the run's
# last block, the rest (the pieces before that stage are then done). One copy of the panel per core and panel, as with b_whole alone.
_B_AHEAD_BLOCK = [
    "            bool lastOfRun = false;  // b_ahead: this core's next item holds the next panel",
    "            if (td_.bAhead > 0) {",
    "                ++runPos;  // this block's place in its run (0: the first)",
    f"                const int64_t key = {_KEY_B};",
    "                if (key != heldKeyB) {  // a new run",
    "                    for (; heldFrom < nHeld; ++heldFrom) qBW.FreeTensor(bP[heldFrom]);",
    "                    nHeld = (kEnd - kBeg + td_.kl1 - 1) / td_.kl1;",
    "                    int64_t s0 = 0;",
    "                    if (key == keyNext) {",
    "                        for (; s0 < nNext; ++s0) bP[s0] = bN[s0];",
    "                        if (chunkNext > 0) {  // the last piece, part loaded: the rest in the stage before its own",
    "                            bP[s0] = bN[s0];",
    "                            pendB = s0++;",
    "                            pendRow = chunkNext;",
    "                        }",
    "                    } else {",
    "                        for (int64_t q = 0; q < nNext + (chunkNext > 0 ? 1 : 0); ++q) qBW.FreeTensor(bN[q]);",
    "                    }",
    "                    chunkNext = 0;",
    "                    for (int64_t q = s0; q < nHeld; ++q) LoadPieceB(bP[q], bt, col0, nB, kBeg + q * td_.kl1, kEnd, 0, PieceSpanB(nB, kBeg + q * td_.kl1, kEnd));",
    "                    heldKeyB = key;",
    "                    runPos = 0;",
    "                    heldFrom = 0;",
    "                    nNext = 0;",
    "                    nextPieces = 0;",
    "                    keyNext = -1;",
    "                    for (int64_t w2 = w + td_.cubeDim; w2 < td_.items; w2 += td_.cubeDim) {  // this core's next panel",
    "                        const int64_t k2 = KeyOfB(w2, nbt, ncol0, nnB, nkBeg, nkEnd);",
    "                        if (k2 >= 0 && k2 != key) {",
    "                            keyNext = k2;",
    "                            break;",
    "                        }",
    "                    }",
    "                    if (keyNext >= 0) nextPieces = (nkEnd - nkBeg + td_.kl1 - 1) / td_.kl1;",
    "                }",
    "                if (keyNext >= 0) {  // the run's last item: this core's next item (with a block) is of the next panel",
    "                    int64_t u0, u1, u2, u3, u4;",
    "                    for (int64_t w2 = w + td_.cubeDim; w2 < td_.items; w2 += td_.cubeDim) {",
    "                        const int64_t k2 = KeyOfB(w2, u0, u1, u2, u3, u4);",
    "                        if (k2 >= 0) {",
    "                            lastOfRun = k2 != key;",
    "                            break;",
    "                        }",
    "                    }",
    "                }",
    "            }",
]


def cube_kernel_class(p: ir.Program, t: CubeTiling) -> str:
    c = p.cube
    assert c is not None
    dt = p.dtype_of(c.a.tensor)
    T = CTYPE[dt]
    out_t = CTYPE[c.out_dtype]
    c0 = 32 // DTYPE_BYTES[dt]
    fr = 512 // DTYPE_BYTES[dt]  # elements per 512 B fractal
    cls = f"CubeKernel{camel(p.name)}"
    names = [x.name for x in p.tensors]
    gm_args = names[:len(p.inputs)] + [w.name for w in p.workspaces] + names[len(p.inputs):]
    ta, tb = c.a.transpose, c.b.transpose
    L = [CUBE_PRELUDE.replace("CUBE_T", T), ""]
    L += ["template <typename TilingT>", f"class {cls} {{", "public:", f"    __aicore__ inline {cls}() {{}}"]
    L.append(f"    __aicore__ inline void Init({', '.join('GM_ADDR ' + mangle('arg', n) for n in gm_args)}, "
             "const TilingT& td) {")
    L.append("        td_ = td;")
    L.append(f"        aGm.SetGlobalBuffer(reinterpret_cast<__gm__ {T}*>({mangle('arg', c.a.tensor)}), "
             "static_cast<uint64_t>(td.Bt * td.M * td.K));")
    L.append(f"        bGm.SetGlobalBuffer(reinterpret_cast<__gm__ {T}*>({mangle('arg', c.b.tensor)}), "
             "static_cast<uint64_t>(td.Bt * td.K * td.N));")
    slices = "td.splits * " if p.is_workspace(c.target) else ""
    L.append(f"        cGm.SetGlobalBuffer(reinterpret_cast<__gm__ {out_t}*>({mangle('arg', c.target)}), "
             f"static_cast<uint64_t>({slices}td.Bt * td.M * td.N));")
    if c.ordered_split:
        L.append(f"        wsGm.SetGlobalBuffer(reinterpret_cast<__gm__ float*>({mangle('arg', c.ordered_split)}), "
                 "static_cast<uint64_t>(td.wsFloats));")
    if c.bias is not None:
        L.append(f"        biasGm.SetGlobalBuffer(reinterpret_cast<__gm__ {CTYPE[p.dtype_of(c.bias)]}*>"
                 f"({mangle('arg', c.bias)}), static_cast<uint64_t>(td.N));")
    for b in t.buffers:
        if b.mem != "UB":
            depth = "td.bwSlots" if b.name == "qBW" else "1" if b.name in ("qAW", "qW1", "qAcc") else _DEPTH_CONST[b.pos]
            init = f"pipe.InitBuffer({b.name}, {depth}, static_cast<uint32_t>(td.b_{b.name}));"
            if b.name in ("qA1", "qAW", "qB1", "qBW", "qW1", "qAcc"):  # one of each pair is unused (0 B): a_whole / b_whole pick
                init = f"if (td.b_{b.name} > 0) {init}"
            L.append(f"        {init}")
    L.append("    }")
    a_off = "bt * td_.M * td_.K + " + ("k1 * td_.M + row0" if ta else "row0 * td_.K + k1")
    b_off = "bt * td_.K * td_.N + " + ("col0 * td_.K + k1" if tb else "k1 * td_.N + col0")
    L += [
        "",
        "    __aicore__ inline void Process() {",
        "        const int64_t core = GetBlockIdx();",
        "        const int64_t perBatch = td_.nM * td_.nN;",
        f"        LocalTensor<{T}> aW;  // a_whole: the held A panel and the (batch, rows, split) it holds",
        "        int64_t heldKey = -1;",
        f"        LocalTensor<{T}> bW;  // b_whole: the held B panel and the (batch, columns, split) it holds",
        "        int64_t heldKeyB = -1;",
        f"        LocalTensor<{T}> bP[8];  // b_ahead: the held panel's pieces (one per K stage; [heldFrom, nHeld) in use)",
        f"        LocalTensor<{T}> bN[8];  // and the first nNext pieces of this core's next panel, already loaded",
        "        int64_t nHeld = 0, heldFrom = 0, nNext = 0, nextPieces = 0, keyNext = -1, runPos = -1;",
        "        int64_t chunkNext = 0;  // rows of piece nNext of the next panel already loaded (PieceSpanB)",
        "        int64_t pendB = -1, pendRow = 0, deqB = -1;  // a held piece loaded to row pendRow; one enqueued, not dequeued",
        "        int64_t nbt = 0, ncol0 = 0, nnB = 0, nkBeg = 0, nkEnd = 0;  // where that next panel lies",
        *_FIX_SPLIT_PROLOGUE,
        *(["        LocalTensor<float> pC1;  // fix_defer: a block whose Fixpipe is held back, and where it goes",
           "        int64_t pBt = 0, pRow0 = 0, pCol0 = 0, pMB = 0, pNB = 0, pSplit = 0;",
           "        bool pend = false;"] if defers_fixpipe(c) else []),
        *(_L1_ACC_PROLOGUE if c.l1_acc else []),
        *ordered_loop_head(c),
        *_WALK,
        "            const int64_t m16 = acx_align16(mB), n16 = acx_align16(nB);",
        *(["            const int64_t per = (n16 / 16 + td_.splits - 1) / td_.splits;  // ordered_split: column "
           "blocks of a share"] if c.ordered_split else []),
        "            const int64_t kBeg = split * td_.kPerSplit, kEnd = acx_min(td_.K, kBeg + td_.kPerSplit);",
        "            if (td_.aWhole) {  // the whole A panel of this block, loaded when it changes",
        "                const int64_t key = ((bt * td_.M + row0) * (td_.bm + 1) + mB) * td_.splits + split;",
        "                if (key != heldKey) {",
        "                    if (heldKey >= 0) qAW.FreeTensor(aW);",
        f"                    aW = qAW.AllocTensor<{T}>();",
        "                    CopyNd2Nz(aW, aGm[bt * td_.M * td_.K + row0 * td_.K + kBeg], mB, kEnd - kBeg, td_.K, m16);",
        "                    qAW.EnQue(aW);",
        f"                    aW = qAW.DeQue<{T}>();",
        "                    heldKey = key;",
        "                }",
        "            }",
        "            // b_whole: the panel's K range held in L1. b_hold: only bHold rows of it; nStrm of its nStp K steps",
        "            // stream their B rows per step instead, spread evenly (StreamedStep), so every K stage has a",
        "            // few L2-served copies to fill the time its A copy leaves, and the panel is the held steps in order",
        "            const int64_t kLen = kEnd - kBeg, nStp = (kLen + td_.bk - 1) / td_.bk;",
        "            const int64_t nStrm = td_.bStream && kLen > td_.bHold ? (kLen - td_.bHold + td_.bk - 1) / td_.bk : 0;",
        "            const int64_t kHeld = (nStp - nStrm) * td_.bk < kLen ? (nStp - nStrm) * td_.bk : kLen;",
        "            const int64_t kAll16 = acx_align16(kHeld);",
        "            if (td_.bWhole && td_.bAhead == 0) {  // the whole B panel of this block (piece), loaded when it changes",
        f"                const int64_t key = {_KEY_B};",
        "                if (key != heldKeyB) {",
        "                    if (heldKeyB >= 0) qBW.FreeTensor(bW);",
        f"                    bW = qBW.AllocTensor<{T}>();",
        "                    for (int64_t t = 0, h = 0; t < nStp;) {  // each run of held steps: one copy",
        "                        if (StreamedStep(t, nStrm, nStp)) { ++t; continue; }",
        "                        int64_t t1 = t + 1;",
        "                        while (t1 < nStp && !StreamedStep(t1, nStrm, nStp)) ++t1;",
        "                        const int64_t r0 = t * td_.bk, rows = acx_min(t1 * td_.bk, kLen) - r0;",
        ("                        CopyNd2Nz(bW[h * n16], bGm[bt * td_.K * td_.N + col0 * td_.K + kBeg + r0], nB, rows, td_.K, n16);"
         if tb else
         "                        CopyNd2Nz(bW[h * 16], bGm[bt * td_.K * td_.N + (kBeg + r0) * td_.N + col0], rows, nB, td_.N, kAll16);"),
        "                        h += rows;",
        "                        t = t1;",
        "                    }",
        "                    qBW.EnQue(bW);",
        f"                    bW = qBW.DeQue<{T}>();",
        "                    heldKeyB = key;",
        "                }",
        "            }",
        *_B_AHEAD_BLOCK,
        *(_L1_ACC_BLOCK if c.l1_acc else
          ["            LocalTensor<float> c1 = td_.fixSplit ? cW : qC1.AllocTensor<float>();", *_FIX_SPLIT_BLOCK]),
    ]
    if c.bias is not None:
        L += _bias_load(p, CTYPE[p.dtype_of(c.bias)])
    L += [
        "            for (int64_t k1 = kBeg; k1 < kEnd; k1 += td_.kl1) {",
        "                const int64_t kB = acx_min(td_.kl1, kEnd - k1);",
        "                const int64_t k16 = acx_align16(kB);",
        f"                // GM -> L1 (ND -> Nz), DSL line {c.loc.line}",
        f"                LocalTensor<{T}> a1;",
        "                if (!td_.aWhole) a1 = qA1.AllocTensor<" + T + ">();",
    ]
    a32_km = ta and DTYPE_BYTES[dt] == 4
    if a32_km:
        L.append(f"                CopyNd2Strips(a1, aGm[{a_off}], kB, mB, td_.M, m16);  // fp32 A stored K x M")
    elif ta:
        L.append(f"                CopyNd2Nz(a1, aGm[{a_off}], kB, mB, td_.M, k16);  // A stored K x M")
    else:
        L.append(f"                if (!td_.aWhole) CopyNd2Nz(a1, aGm[{a_off}], mB, kB, td_.K, m16);")
    L += ["                if (!td_.aWhole) qA1.EnQue(a1);", f"                LocalTensor<{T}> b1;",
          "                if (!td_.bWhole) b1 = qB1.AllocTensor<" + T + ">();"]
    b32_kn = not tb and DTYPE_BYTES[dt] == 4
    if tb:
        L.append(f"                if (!td_.bWhole) CopyNd2Nz(b1, bGm[{b_off}], nB, kB, td_.K, n16);  // B stored N x K")
    elif b32_kn:
        L.append(f"                CopyNd2Strips(b1, bGm[{b_off}], kB, nB, td_.N, n16);  // fp32 B stored K x N")
    else:
        L.append(f"                if (!td_.bWhole) CopyNd2Nz(b1, bGm[{b_off}], kB, nB, td_.N, k16);")
    L += [
        "                if (!td_.bWhole) qB1.EnQue(b1);",
        f"                a1 = td_.aWhole ? aW[(k1 - kBeg) * m16] : qA1.DeQue<{T}>();",
        "                if (pendB >= 0 && (k1 - kBeg) / td_.kl1 + 1 == pendB) {  // the held panel's last piece, finished",
        "                    // behind this stage's A copy and handed to MTE1 in the next stage (which uses it)",
        "                    LoadPieceB(bP[pendB], bt, col0, nB, kBeg + pendB * td_.kl1, kEnd, pendRow,",
        "                               PieceSpanB(nB, kBeg + pendB * td_.kl1, kEnd), false);",
        "                    deqB = pendB;",
        "                    pendB = -1;",
        "                }",
        f"                if (deqB >= 0 && (k1 - kBeg) / td_.kl1 == deqB) {{ bP[deqB] = qBW.DeQue<{T}>(); deqB = -1; }}",
        "                if (td_.bAhead > 0 && keyNext >= 0) {  // the next panel, behind this stage's A copy",
        "                    if (lastOfRun && k1 + td_.kl1 >= kEnd) {  // the run's last stage: the earlier pieces",
        "                        // are done (their L0B loads were issued), the rest of the next panel loads",
        "                        for (; heldFrom < nHeld - 1; ++heldFrom) qBW.FreeTensor(bP[heldFrom]);",
        "                        for (; nNext < nextPieces; ++nNext, chunkNext = 0) {",
        "                            const int64_t span = PieceSpanB(nnB, nkBeg + nNext * td_.kl1, nkEnd);",
        "                            if (nNext > 0 && nNext == nextPieces - 1) {  // the last piece: its first half here, the",
        "                                // rest behind the next block's first A copy (pendB), so those copies do not wait",
        "                                const int64_t c1 = chunkNext > span / 2 ? chunkNext : acx_align16(span / 2);",
        "                                if (c1 < span) {",
        "                                    LoadPieceB(bN[nNext], nbt, ncol0, nnB, nkBeg + nNext * td_.kl1, nkEnd, chunkNext, c1);",
        "                                    chunkNext = c1;",
        "                                    break;",
        "                                }",
        "                            }",
        "                            LoadPieceB(bN[nNext], nbt, ncol0, nnB, nkBeg + nNext * td_.kl1, nkEnd, chunkNext, span);",
        "                        }",
        "                    } else if (runPos > 0 && nNext < acx_min(td_.bAhead, nextPieces)) {",
        "                        // one chunk of columns per stage from the run's second block (its first has the",
        "                        // run's own loads): small copies, so the A copies behind them wait little",
        "                        const int64_t span = PieceSpanB(nnB, nkBeg + nNext * td_.kl1, nkEnd);",
        "                        const int64_t c1 = acx_min(span, chunkNext + td_.bChunk);",
        "                        LoadPieceB(bN[nNext], nbt, ncol0, nnB, nkBeg + nNext * td_.kl1, nkEnd, chunkNext, c1);",
        "                        chunkNext = c1;",
        "                        if (chunkNext >= span) {",
        "                            ++nNext;",
        "                            chunkNext = 0;",
        "                        }",
        "                    }",
        "                }",
        f"                b1 = td_.bAhead > 0 ? bP[(k1 - kBeg) / td_.kl1] : td_.bWhole ? bW : qB1.DeQue<{T}>();",
        "                const int64_t bRows = td_.bWhole && td_.bAhead == 0 ? kAll16 : k16;  // rows per column block of b1 (Nz)",
        *(_L1_ACC_PARTS if c.l1_acc else _FIX_SPLIT_PARTS),
        "                for (int64_t k0 = 0; k0 < kB; k0 += td_.bk) {",
        "                    const int64_t kb0 = acx_min(td_.bk, kB - k0);",
        f"                    const int64_t kf0 = k0 / {c0}, k1f = (kb0 + {c0 - 1}) / {c0};  // K fractals (C0 = {c0})",
        "                    // the step's first K fractal in b1 (the held panel: the held steps before this one)",
        "                    const int64_t tStp = (k1 - kBeg + k0) / td_.bk;  // the step's index in the K range",
        f"                    const int64_t kqB = td_.bWhole && td_.bAhead == 0 ? (tStp - tStp * nStrm / nStp) * td_.bk / {c0} : kf0;",
        "                    const int64_t n1 = n16 / 16, h1 = hn16 / 16, hb = hc0 / 16;  // column blocks: all, part, first",
    ]
    if not b32_kn:  # b_hold: a streamed K step copies its bk rows of B first (never fp32 K x N: no b_whole there)
        L += ["                    const bool bStrm = StreamedStep(tStp, nStrm, nStp);  // b_hold",
              f"                    LocalTensor<{T}> bs;",
              "                    if (bStrm) {  // this step's B rows GM -> L1 (L2 after the panel's first block)",
              f"                        bs = qB1.AllocTensor<{T}>();",
              ("                        CopyNd2Nz(bs, bGm[bt * td_.K * td_.N + col0 * td_.K + k1 + k0], nB, kb0, td_.K, n16);"
               if tb else
               "                        CopyNd2Nz(bs, bGm[bt * td_.K * td_.N + (k1 + k0) * td_.N + col0], kb0, nB, td_.N, "
               "acx_align16(kb0));"),
              "                        qB1.EnQue(bs);",
              f"                        bs = qB1.DeQue<{T}>();",
              "                    }"]
    L += [
        "                    // L1 -> L0A (Zz) and L1 -> L0B (Zn)",
        f"                    LocalTensor<{T}> a2 = qA2.AllocTensor<{T}>();",
    ]
    if a32_km:  # the last strip first: with an odd k1f its second fractal spills into the next m block's
        # first slot, which strip 0 then writes
        # (one K fractal: square by square, in order, each spill overwritten by the next square)
        L += ["                    if (k1f == 1) {",
              "                        for (int64_t q = 0; q < m16 / 16; ++q)",
              f"                            Load2DTrans32A(a2[q * {fr}], a1[(k0 / 16) * 16 * m16 + q * 256], 1, 1);",
              "                    } else {",
              "                        for (int64_t j = 0, ns = (kb0 + 15) / 16; j < ns; ++j) {",
              "                            const int64_t ks = j == 0 ? ns - 1 : j - 1;",
              f"                            Load2DTrans32A(a2[2 * ks * {fr}], a1[(k0 / 16 + ks) * 16 * m16], m16 / 16, k1f);",
              "                        }",
              "                    }"]
    elif ta:
        L += ["                    for (int64_t mb = hr0 / 16; mb < (hr0 + hm16) / 16; ++mb)  // this part's rows",
              f"                        Load2D(a2[(mb - hr0 / 16) * k1f * {fr}], a1[(mb * (k16 / 16) + kf0) * {fr}], k1f, 1, true);"]
    else:
        L += ["                    for (int64_t mb = hr0 / 16; mb < (hr0 + hm16) / 16; ++mb)  // this part's rows",
              f"                        Load2D(a2[(mb - hr0 / 16) * k1f * {fr}], a1[(kf0 * (m16 / 16) + mb) * {fr}], k1f, m16 / 16, false);"]
    L += ["                    qA2.EnQue(a2);", f"                    LocalTensor<{T}> b2 = qB2.AllocTensor<{T}>();"]
    if tb:
        L += ["                    for (int64_t kf = 0; kf < k1f; ++kf)",
              f"                        if (bStrm) Load2D(b2[kf * h1 * {fr}], bs[(kf * n1 + hb) * {fr}], h1, 1, false);",
              f"                        else Load2D(b2[kf * h1 * {fr}], b1[((kqB + kf) * n1 + hb) * {fr}], h1, 1, false);"]
    elif b32_kn:  # each 16-row strip: n1 squares -> Zn fractals (k rows 0-7, then 8-15, n1 apart)
        L += ["                    for (int64_t ks = 0; ks < (kb0 + 15) / 16; ++ks)",
              f"                        Load2DTrans32(b2[ks * 2 * h1 * {fr}], b1[(k0 / 16 + ks) * n16 * 16 + hb * 256], h1);"]
    else:
        L += ["                    for (int64_t kf = 0; kf < k1f; ++kf)",
              f"                        if (bStrm) Load2D(b2[kf * h1 * {fr}], bs[(hb * k1f + kf) * {fr}], h1, k1f, true);",
              f"                        else Load2D(b2[kf * h1 * {fr}], b1[(hb * (bRows / 16) + kqB + kf) * {fr}], h1, bRows / 16, true);"]
    L += [
        *([] if b32_kn else ["                    if (bStrm) qB1.FreeTensor(bs);"]),
        "                    qB2.EnQue(b2);",
        f"                    a2 = qA2.DeQue<{T}>();",
        f"                    b2 = qB2.DeQue<{T}>();",
        f"                    MmadParams mp;  // DSL line {c.loc.line}: acc += A0 * B0",
        "                    mp.m = static_cast<uint16_t>(hm == 1 ? 2 : hm);  // m == 1 would switch Mmad to GEMV",
        "                    mp.n = static_cast<uint16_t>(hn);",
        "                    mp.k = static_cast<uint16_t>(kb0);",
        "                    const bool first = k1 == kBeg && k0 == 0;  // the block's (part's) first Mmad",
        "                    mp.cmatrixInitVal = first;",
        ("                    if (first) Mmad(c1[hc0 * m16 + hr0 * n16], a2, b2, btab[hc0], mp);  // C = A0 * B0 + bias (bias table)\n"
         "                    else Mmad(c1[hc0 * m16 + hr0 * n16], a2, b2, mp);") if c.bias is not None else
        "                    Mmad(td_.l1Acc ? cT : c1[hc0 * m16 + hr0 * n16], a2, b2, mp);" if c.l1_acc else
        "                    Mmad(c1[hc0 * m16 + hr0 * n16], a2, b2, mp);",
        "                    qA2.FreeTensor(a2);",
        "                    qB2.FreeTensor(b2);",
        "                }",
        *(_l1_acc_part_end(p) if c.l1_acc else _fix_split_store(p)),
        "                }",
        "                if (!td_.aWhole) qA1.FreeTensor(a1);",
        "                if (!td_.bWhole) qB1.FreeTensor(b1);",
        *(["                if ((k1 - kBeg) / td_.kl1 + 1 == td_.fixDefer) {  // after this stage's copies",
           *_flush_deferred(p, "                    "),
           "                }"] if defers_fixpipe(c) else []),
        "            }",
        *(["            qBiasT.FreeTensor(btab);"] if c.bias is not None else []),
        *(_l1_acc_block_end(p) if c.l1_acc else []),
        "            if (td_.fixSplit) continue;  // each part's Fixpipe ran in the last K stage",
        # a block of fewer stages than fix_defer: the held-back Fixpipe before this block's DeQue (its
        # wait for this block's Mmads would hold the Fixpipe pipe, and the next block's Mmads behind it)
        *(_flush_deferred(p, "            ") if defers_fixpipe(c) else []),
        "            qC1.EnQue(c1);",
        "            c1 = qC1.DeQue<float>();",
        *(["            if (td_.fixDefer > 0) {  // held back until the next block's fix_defer-th stage",
           "                pC1 = c1; pBt = bt; pRow0 = row0; pCol0 = col0; pMB = mB; pNB = nB; pSplit = split;",
           "                pend = true;",
           "                continue;",
           "            }"] if defers_fixpipe(c) else []),
        *(ordered_store(p, c) if c.ordered_split else _fixpipe(p, "            ", "nB", "0")),
        "            qC1.FreeTensor(c1);",
        "        }",
        *(_flush_deferred(p, "        ") if defers_fixpipe(c) else []),
        *_FIX_SPLIT_EPILOGUE,
        "        if (heldKey >= 0) qAW.FreeTensor(aW);",
        "        if (heldKeyB >= 0 && td_.bAhead == 0) qBW.FreeTensor(bW);",
        "        for (int64_t q = heldFrom; q < nHeld; ++q) qBW.FreeTensor(bP[q]);",
        "        for (int64_t q = 0; q < nNext + (chunkNext > 0 ? 1 : 0); ++q) qBW.FreeTensor(bN[q]);",
        "    }",
        "",
        "    // b_hold: is K step t of nStp one of the nStrm streamed ones (spread evenly; the last one is)",
        "    __aicore__ inline bool StreamedStep(int64_t t, int64_t nStrm, int64_t nStp) {",
        "        return (t + 1) * nStrm / nStp > t * nStrm / nStp;",
        "    }",
        "",
        "    // b_ahead: the B-panel key of work item w (-1: an empty piece of a tail block) and where",
        "    // its panel lies; the walk is the item loop's",
        "    __aicore__ inline int64_t KeyOfB(int64_t w, int64_t& btO, int64_t& col0O, int64_t& nBO, int64_t& kBegO,",
        "                                     int64_t& kEndO) {",
        "        const int64_t perBatch = td_.nM * td_.nN;",
        *[x.replace("continue;", "return -1;") for x in _WALK],
        "            const int64_t kBeg = split * td_.kPerSplit, kEnd = acx_min(td_.K, kBeg + td_.kPerSplit);",
        "            btO = bt; col0O = col0; nBO = nB; kBegO = kBeg; kEndO = kEnd;",
        f"            return {_KEY_B};",
        "    }",
        "",
        "    // b_ahead: the rows of a B piece as stored (K rows of a K x N panel, N rows of an N x K one):",
        "    // the unit its chunks are cut in, each row one contiguous GM run of the piece's full width",
        "    __aicore__ inline int64_t PieceSpanB(int64_t nB, int64_t k1, int64_t kEnd) {",
        "        return " + ("nB;" if tb else "acx_min(td_.kl1, kEnd - k1);"),
        "    }",
        "",
        "    // b_ahead: stored rows [c0, c1) of K stage [k1, min(k1 + kl1, kEnd)) of the B panel at",
        "    // (bt, col0, nB) into a ring buffer, rows c0.. of each Nz column block (allocated with the",
        "    // first rows, handed to MTE1 with the last)",
        f"    __aicore__ inline void LoadPieceB(LocalTensor<{T}>& dst, int64_t bt, int64_t col0, int64_t nB, int64_t k1,",
        "                                      int64_t kEnd, int64_t c0, int64_t c1, bool deq = true) {",
        "        const int64_t kB = acx_min(td_.kl1, kEnd - k1), k16 = acx_align16(kB), n16 = acx_align16(nB);",
        f"        if (c0 == 0) dst = qBW.AllocTensor<{T}>();",
        (f"        CopyNd2Nz(dst[c0 * {c0}], bGm[bt * td_.K * td_.N + (col0 + c0) * td_.K + k1], c1 - c0, kB, td_.K, n16);"
         "  // B stored N x K"
         if tb else
         f"        CopyNd2Nz(dst[c0 * {c0}], bGm[bt * td_.K * td_.N + (k1 + c0) * td_.N + col0], c1 - c0, nB, td_.N, k16);"),
        "        if (c1 < PieceSpanB(nB, k1, kEnd)) return;",
        "        qBW.EnQue(dst);",
        f"        if (deq) dst = qBW.DeQue<{T}>();",
        "    }",
        "",
        "private:",
        "    TPipe pipe;",
        "    TQue<TPosition::A1, STAGES> qA1;",
        "    TQue<TPosition::A1, 1> qAW;",
        "    TQue<TPosition::B1, 1> qBW;",
        "    TQue<TPosition::B1, STAGES> qB1;",
        "    TQue<TPosition::A2, L0DEPTH> qA2;",
        "    TQue<TPosition::B2, L0DEPTH> qB2;",
        "    TQue<TPosition::CO1, ACCDEPTH> qC1;",
        *(["    TQue<TPosition::A1, 1> qW1;", "    GlobalTensor<float> wsGm;"] if c.ordered_split else []),
        *(["    TQue<TPosition::A1, 1> qAcc;"] if c.l1_acc else []),
        *(["    TQue<TPosition::C1, 1> qBias1;", "    TQue<TPosition::C2, 1> qBiasT;",
           f"    GlobalTensor<{CTYPE[p.dtype_of(c.bias)]}> biasGm;"] if c.bias is not None else []),
        f"    GlobalTensor<{T}> aGm;",
        f"    GlobalTensor<{T}> bGm;",
        f"    GlobalTensor<{out_t}> cGm;",
        "    TilingT td_;",
        "};",
    ]
    return "\n".join(L)


_DEPTH_CONST = {"A1": "STAGES", "B1": "STAGES", "A2": "L0DEPTH", "B2": "L0DEPTH", "CO1": "ACCDEPTH", "C1": "1", "C2": "1"}


def ordered_loop_head(c: ir.CubeStage) -> list[str]:
    """The work-item loop; with ordered_split every core runs ``itemsPad / cubeDim`` rounds, and an
    idle slot of the last round joins the round's SyncAll phases (the same barrier count on every
    core: a core that finished while others wait would hang the device)."""
    if not c.ordered_split:
        return ["        for (int64_t w = core; w < td_.items; w += td_.cubeDim) {"]
    return ["        for (int64_t w = core; w < td_.itemsPad; w += td_.cubeDim) {",
            "            if (w >= td_.items) {  // idle slot of the last round: its phases' barriers only",
            "                if (td_.splits > 1) SyncAll();",
            "                continue;",
            "            }"]


def ordered_store(p: ir.Program, c: ir.CubeStage) -> list[str]:
    """ordered_split: every split writes its fp32 partial of the block into its own workspace slice
    (Fixpipe, Nz as L0C holds it; all cores at once), one Fixpipe per core's share of the column
    blocks (the pieces :func:`ordered_combine` reads back), then the combine. One split (short K):
    the direct store."""
    return [
        "            if (td_.splits == 1) {  // one K split: nothing to combine",
        *_fixpipe(p, "                ", "nB", "0"),
        "                qC1.FreeTensor(c1);",
        "                continue;",
        "            }",
        "            // the block's fp32 image in a workspace slice: Nz column blocks of mB rows x 16, share by share",
        "            for (int64_t jb = 0; jb < n16 / 16; jb += per) {",
        *_fixpipe_nz_f32("                ", f"wsGm[split * td_.wsSlice + {_IMG} + jb * mB * 16]", "c1[jb * m16 * 16]",
                         "acx_min(per, n16 / 16 - jb) * 16", "mB", "m16", "mB * 2"),
        "            }",
        "            qC1.FreeTensor(c1);",
        *ordered_combine(p, c, "            "),
        "            continue;",
    ]


_IMG = "bt * td_.M * td_.n16All + row0 * td_.n16All + col0 * mB"  # a block's image in a workspace slice


def ordered_combine(p: ir.Program, c: ir.CubeStage, ind: str) -> list[str]:
    """ordered_split, after every split wrote its partial: one SyncAll; then each of the block's S
    cores sums its share of the column blocks. The shares of slices 1 .. S-1 are read into L1 in
    groups (as many as the staging holds, each piece in the shape its Fixpipe wrote: a just-written
    piece, which L2 serves), then added into slice 0's share in slice order with the atomic add of
    L1 -> GM copies (SetAtomicAdd: the A2 paths VECOUT/L0C/L1 -> GM; one core, program order, a
    barrier after each add); then the complete fp32 sum goes GM -> L1 -> L0C (DataCopy A1 -> CO1)
    -> Fixpipe with the dtype conversion, in pieces of whole column blocks that fit one L0C buffer:
    one rounding, a fixed add order (deterministic). A round of ``cubeDim`` (a multiple of S) work
    items holds whole blocks."""
    q, out_t = QUANT[c.out_dtype], CTYPE[c.out_dtype]
    qs = "qS" if c.l1_acc else "qW1"
    cap = "(td_.l1Acc ? td_.tm * td_.tn : td_.bm * td_.bn)" if c.l1_acc else "td_.bm * td_.bn"
    # the pieces the partial was written in: tile rows x (share n tile columns); without tiles the
    # whole block's rows x the share
    rows = "(td_.l1Acc ? td_.tm : m16)" if c.l1_acc else "m16"
    cols = "(td_.l1Acc ? td_.tn / 16 : n16 / 16)" if c.l1_acc else "n16 / 16"
    staging = f"{'(td_.l1Acc ? td_.b_qAcc : td_.b_qW1)' if c.l1_acc else 'td_.b_qW1'} / 4"
    body = [
        "SyncAll();  // every partial of the round's blocks is in GM",
        *(["TQue<TPosition::A1, 1>& qS = td_.l1Acc ? qAcc : qW1;  // the staging: the partial sums' L1, now free"]
          if c.l1_acc else []),
        "// this core's column blocks of the block (per: a share's): slices 1 .. S-1 added into slice 0, in order",
        "const int64_t jbA = split * per, jbZ = acx_min(n16 / 16, jbA + per);",
        "if (jbA < jbZ) {",
        f"    const int64_t sh = {_IMG} + jbA * mB * 16;",
        "    const int64_t nb = jbZ - jbA;",
        "    const int64_t len = nb * mB * 16;  // the share's floats",
        f"    const int64_t fitS = acx_min(td_.splits - 1, {staging} / len);  // slices per staging group",
        f"    const int64_t pr = {rows}, pc = {cols};  // a written piece: pr rows, pc column blocks",
        "    DataCopyParams sp;  // the share as one piece: nb column blocks of mB rows",
        "    sp.blockCount = static_cast<uint16_t>(nb);",
        "    sp.blockLen = static_cast<uint16_t>(mB * 2);  // 32 B units",
        "    sp.srcStride = 0;",
        "    sp.dstStride = 0;",
        "    for (int64_t s0 = 1; s0 < td_.splits; s0 += fitS) {",
        "        const int64_t s1 = acx_min(td_.splits, s0 + fitS);",
        f"        LocalTensor<float> p1 = {qs}.AllocTensor<float>();",
        "        for (int64_t s = s0; s < s1; ++s)  // each piece as it was written",
        "            for (int64_t r0 = 0; r0 < mB; r0 += pr)",
        "                for (int64_t jb = jbA; jb < jbZ;) {",
        "                    const int64_t jbE = acx_min(jbZ, (jb / pc + 1) * pc), rows = acx_min(pr, mB - r0);",
        "                    DataCopyParams rp;",
        "                    rp.blockCount = static_cast<uint16_t>(jbE - jb);",
        "                    rp.blockLen = static_cast<uint16_t>(rows * 2);",
        "                    rp.srcStride = static_cast<uint16_t>((mB - rows) * 2);",
        "                    rp.dstStride = static_cast<uint16_t>((mB - rows) * 2);",
        "                    DataCopy(p1[(s - s0) * len + (jb - jbA) * mB * 16 + r0 * 16],",
        "                             wsGm[s * td_.wsSlice + sh + (jb - jbA) * mB * 16 + r0 * 16], rp);",
        "                    jb = jbE;",
        "                }",
        f"        {qs}.EnQue(p1);",
        f"        p1 = {qs}.DeQue<float>();",
        "        for (int64_t s = s0; s < s1; ++s) {",
        "            SetAtomicAdd<float>();",
        "            DataCopy(wsGm[sh], p1[(s - s0) * len], sp);  // L1 -> GM, accumulating",
        "            SetAtomicNone();",
        "            PipeBarrier<PIPE_ALL>();  // each add lands before the next (and before slice 0 is read)",
        "        }",
        f"        {qs}.FreeTensor(p1);",
        "    }",
        f"    LocalTensor<float> w1 = {qs}.AllocTensor<float>();",
        "    DataCopy(w1, wsGm[sh], sp);  // the complete sum",
        f"    {qs}.EnQue(w1);",
        f"    w1 = {qs}.DeQue<float>();",
        f"    const int64_t capB = {cap} / (m16 * 16);  // column blocks per L0C piece",
        "    for (int64_t jb0 = jbA; jb0 < jbZ; jb0 += capB) {",
        "        const int64_t jb1 = acx_min(jbZ, jb0 + capB);",
        "        LocalTensor<float> c2 = qC1.AllocTensor<float>();",
        "        DataCopyParams cp;  // L1 -> L0C: each column block's mB rows, padded to m16",
        "        cp.blockCount = static_cast<uint16_t>(jb1 - jb0);",
        "        cp.blockLen = static_cast<uint16_t>(mB * 2);",
        "        cp.srcStride = 0;",
        "        cp.dstStride = static_cast<uint16_t>((m16 - mB) * 2);",
        "        DataCopy(c2, w1[(jb0 - jbA) * mB * 16], cp);",
        "        PipeBarrier<PIPE_ALL>();  // MTE1 -> FIX (no queue event covers the pair)",
        "        FixpipeParamsV220 cf;",
        "        cf.nSize = static_cast<uint16_t>(acx_min(nB - jb0 * 16, (jb1 - jb0) * 16));",
        "        cf.mSize = static_cast<uint16_t>(mB);",
        "        cf.srcStride = static_cast<uint16_t>(m16);",
        "        cf.dstStride = static_cast<uint32_t>(td_.N);",
        f"        cf.quantPre = {q};",
        "        cf.reluEn = false;",
        "        cf.ndNum = 1;",
        f"        Fixpipe<{out_t}, float, CFG_ROW_MAJOR>(cGm[bt * td_.M * td_.N + row0 * td_.N + col0 + jb0 * 16], c2, cf);",
        "        qC1.FreeTensor(c2);",
        "    }",
        f"    {qs}.FreeTensor(w1);",
        "}",
    ]
    return [ind + x for x in body]

def ordered_buffers(p: ir.Program) -> list[Buf]:
    """ordered_split: the L1 staging of one core's share of a block's fp32 sum (its column blocks)."""
    c = p.cube
    if c is None or c.ordered_split is None:
        return []
    # a group of up to two slices' shares (the combine reads a group, then adds it)
    share = "sel(splits > 1, bm * 16 * ceil_div(ceil_div(bn, 16), splits) * 4 * min(2, splits - 1), 0)"
    # (tile sizes: the combine stages its shares in the partial sums' L1, qAcc)
    return [Buf("qW1", "A1", f"sel(l1Acc > 0, 0, {share})" if c.l1_acc else share, "1", "f32")]


def ordered_split_checks(p: ir.Program, t: dict[str, int], cube_cores: int) -> None:
    """ordered_split at these shapes: the launch fits the physical cube cores (SyncAll with more
    blocks than cores deadlocks: "the logical blockNum must not exceed the cores that run the
    operator", SyncAll, Ascend C API reference)."""
    c = p.cube
    if c is None or c.ordered_split is None or t["splits"] == 1:
        return
    if t["cubeDim"] > cube_cores:
        raise DslError(f"ordered_split=: {t['cubeDim']} blocks of SyncAll on {cube_cores} cube cores would "
                       "deadlock (cores >= splits)", c.loc)
    if t.get("runLen", 1) > 1:
        raise DslError("ordered_split=: a round of work items must hold whole blocks; run= must be 1", c.loc)


# ---------------------------------------------------------------- fix_split: per-half Fixpipe
# With one L0C buffer a block's Fixpipe would run in series with the Mmads (the next block's
# first Mmad overwrites L0C). With fix_split the block's first and last K stages run per column
# half: the last stage finishes half 0, whose Fixpipe then runs beside half 1's Mmads, and the
# next block's first stage starts on half 0 while half 1 is written out. The halves are synced by
# explicit flags (SetFlag/WaitFlag M_FIX and FIX_M, ids 0 and 1 per half) instead of the CO1 queue.

_FIX_SPLIT_PROLOGUE = [
    "        LocalTensor<float> cW;  // fix_split: the one accumulator of every block (column halves synced by flags)",
    "        int64_t prevH0 = -1;  // the previous block's geometry: where its half 0 ends in L0C",
    "        if (td_.fixSplit) {",
    "            cW = qC1.AllocTensor<float>();",
    "            SetFlag<HardEvent::FIX_M>(0);  // both halves free",
    "            SetFlag<HardEvent::FIX_M>(1);",
    "        }",
]

_FIX_SPLIT_BLOCK = [
    "            // fix_split 1: half 0 is columns [0, nh) (a multiple of 32, for the L0C and bias-table",
    "            // alignment of the second half), half 1 the rest; blocks of 32 columns or fewer run whole",
    "            const int64_t nh = td_.fixSplit == 1 && nB > 32 ? ((nB + 1) / 2 + 31) / 32 * 32 : nB;",
    "            // fix_split 2: half 0 is rows [0, mh16), half 1 the rest, each its own Nz tile in L0C (half 0's",
    "            // first): every K stage runs per half, and each Fixpipe writes whole rows of the block",
    "            const bool rowSplit = td_.fixSplit == 2 && m16 > 16;",
    "            const int64_t mh16 = rowSplit ? acx_align16(m16 / 2) : m16;",
    "            const int64_t h0End = rowSplit ? mh16 * n16 : nh * m16;  // where half 0 ends in L0C",
    "            const bool sameGeom = h0End == prevH0;  // this block's half 0 is where the last one's was",
    "            prevH0 = h0End;",
]

_FIX_SPLIT_PARTS = [
    "                const bool splitStage = rowSplit || (nh < nB && (k1 == kBeg || k1 + td_.kl1 >= kEnd));  // per half",
    "                for (int64_t h = 0; h < (splitStage ? 2 : 1); ++h) {",
    "                const bool colSplit = splitStage && !rowSplit;",
    "                const int64_t hc0 = colSplit ? h * nh : 0;  // this part's first column and its columns",
    "                const int64_t hn = colSplit ? (h == 0 ? nh : nB - nh) : nB, hn16 = acx_align16(hn);",
    "                const int64_t hr0 = rowSplit ? h * mh16 : 0;  // and its first row, rows, rows padded",
    "                const int64_t hm = rowSplit ? (h == 0 ? mh16 : mB - mh16) : mB;",
    "                const int64_t hm16 = rowSplit ? (h == 0 ? mh16 : m16 - mh16) : m16;",
    "                if (td_.fixSplit && k1 == kBeg) {  // the previous block's Fixpipe of this part's L0C is done",
    "                    if (h == 0) WaitFlag<HardEvent::FIX_M>(0);",
    "                    if (h == 0 ? !(splitStage && sameGeom) : sameGeom) WaitFlag<HardEvent::FIX_M>(1);",
    "                }",
]


def _fixpipe(p: ir.Program, ind: str, ncols: str, c0: str, part: bool = False, tile: str | None = None) -> list[str]:
    """Fixpipe of columns [c0, c0 + ncols) of the block's accumulator ``c1`` to the output (or
    workspace); ``part``: of the fix_split part's rows [hr0, hr0 + hm) too (its own Nz tile in L0C)."""
    c = p.cube
    assert c is not None
    slice_off = "split * td_.Bt * td_.M * td_.N + " if p.is_workspace(c.target) else ""
    dst, src = ("col0", "c1") if c0 == "0" else (f"col0 + {c0}", f"c1[{c0} * m16]")
    rows, stride, r0 = ("hm", "hm16", "(row0 + hr0)") if part else ("mB", "m16", "row0")
    if part:
        src = tile or f"c1[{c0} * m16 + hr0 * n16]"
    return [
        f"{ind}FixpipeParamsV220 fp;  // DSL line {c.store_loc.line}: L0C -> GM (Nz -> ND)",
        f"{ind}fp.nSize = static_cast<uint16_t>({ncols});",
        f"{ind}fp.mSize = static_cast<uint16_t>({rows});",
        f"{ind}fp.srcStride = static_cast<uint16_t>({stride});",
        f"{ind}fp.dstStride = static_cast<uint32_t>(td_.N);",
        f"{ind}fp.quantPre = {QUANT[c.out_dtype]};",
        f"{ind}fp.reluEn = {'true' if c.relu else 'false'};",
        f"{ind}fp.ndNum = 1;",
        f"{ind}Fixpipe<{CTYPE[c.out_dtype]}, float, CFG_ROW_MAJOR>(cGm[{slice_off}bt * td_.M * td_.N + {r0} * td_.N + "
        f"{dst}], {src}, fp);",
    ]


# ---------------------------------------------------------------- tile_m / tile_n: partial sums in L1
# A block of nP tiles (tm x tn; serpentine within a stage: one row of tiles, then the next
# backwards, so neighbours share A rows or B columns) computes every K stage tile by tile, the
# stages in alternating order (forwards, then backwards). With at most ACCDEPTH tiles each keeps its
# own L0C buffer for the whole block. With more, the last ACCDEPTH tiles of a stage stay in L0C as
# the first ones of the next; every other tile's fp32 partial sum goes L0C -> L1 (Fixpipe, Nz as
# L0C holds it) after the stage and L1 -> L0C (DataCopy CO1 <- A1) before its next one, into the
# buffer the tile ACCDEPTH places earlier left. One FIX -> MTE1 flag orders them: the k-th tile of a
# stage that is swapped in waits for the k-th one swapped out (the Fixpipe that read its buffer,
# issued after the Fixpipe that wrote the tile's image one stage earlier).

_L1_ACC_PROLOGUE = [
    "        LocalTensor<float> accL1;  // tile sizes: the block's tiles' fp32 partial sums in L1",
    "        LocalTensor<float> cR[ACCDEPTH];  // the tiles kept in L0C (all of a block of <= ACCDEPTH tiles)",
]

_L1_ACC_BLOCK = [
    "            // tile sizes: nP tiles of tm x tn; more than ACCDEPTH swap through L1 every K stage",
    "            // (l1Acc 0: tm = bm and tn = bn, one tile, the block)",
    "            const int64_t nPn = (n16 + td_.tn - 1) / td_.tn, nP = (m16 + td_.tm - 1) / td_.tm * nPn;",
    "            const bool resident = nP <= ACCDEPTH;",
    "            if (td_.l1Acc && !resident) accL1 = qAcc.AllocTensor<float>();",
    "            LocalTensor<float> c1;",
    "            if (!td_.l1Acc) c1 = qC1.AllocTensor<float>();",
]

_L1_ACC_PARTS = [
    "                const int64_t stg = (k1 - kBeg) / td_.kl1;",
    "                for (int64_t i = 0; i < nP; ++i) {",
    "                const int64_t h = stg % 2 == 0 ? i : nP - 1 - i;  // this stage's i-th tile",
    "                const int64_t pI = h / nPn, pJ = pI % 2 == 0 ? h % nPn : nPn - 1 - h % nPn;  // serpentine",
    "                const int64_t hr0 = pI * td_.tm, hm = acx_min(td_.tm, mB - hr0), hm16 = acx_min(td_.tm, m16 - hr0);",
    "                const int64_t hc0 = pJ * td_.tn, hn = acx_min(td_.tn, nB - hc0);",
    "                const int64_t hn16 = acx_align16(hn);",
    "                LocalTensor<float> cT;  // this tile's accumulator",
    "                if (td_.l1Acc && resident) {",
    "                    if (k1 == kBeg) cR[h] = qC1.AllocTensor<float>();",
    "                    cT = cR[h];",
    "                } else if (td_.l1Acc && stg > 0 && i < ACCDEPTH) {",
    "                    cT = cR[ACCDEPTH - 1 - i];  // kept in L0C from the end of the last stage",
    "                } else if (td_.l1Acc) {",
    "                    cT = qC1.AllocTensor<float>();",
    "                    if (i >= ACCDEPTH) WaitFlag<HardEvent::FIX_MTE1>(0);  // the Fixpipe that read this buffer",
    "                    if (stg > 0) {  // the tile's partial sum L1 -> L0C",
    "                        DataCopyParams lp;",
    "                        lp.blockCount = 1;",
    "                        lp.blockLen = static_cast<uint16_t>(hm16 * hn16 / 8);  // 32 B units",
    "                        lp.srcStride = 0;",
    "                        lp.dstStride = 0;",
    "                        DataCopy(cT, accL1[h * td_.tm * td_.tn], lp);",
    "                    }",
    "                }",
]


def _l1_acc_part_end(p: ir.Program) -> list[str]:
    """tile sizes, after a tile's Mmads of a K stage: in the last stage its store (the output, or
    with ordered_split its fp32 partial into the workspace image); before that, swapping, its partial
    sum L0C -> L1."""
    c = p.cube
    assert c is not None
    ind = "                        "
    direct = _fixpipe(p, ind, "hn", "hc0", part=True, tile="cT")
    if c.ordered_split:
        store = [
            "                        if (td_.splits > 1) {  // the tile's fp32 partial into this split's image, cut at the",
            "                            // combine's shares (the pieces it reads back)",
            "                            for (int64_t jb = hc0 / 16; jb < (hc0 + hn16) / 16;) {",
            "                                const int64_t jbE = acx_min((hc0 + hn16) / 16, (jb / per + 1) * per);",
            *_fixpipe_nz_f32("                                ", f"wsGm[split * td_.wsSlice + {_IMG} + jb * mB * 16 + hr0 * 16]",
                             "cT[(jb - hc0 / 16) * hm16 * 16]", "(jbE - jb) * 16", "hm", "hm16", "mB * 2"),
            "                                jb = jbE;",
            "                            }",
            "                        } else {",
            *["    " + x for x in direct],
            "                        }",
        ]
    else:
        store = direct
    return [
        "                if (td_.l1Acc) {",
        "                    const bool lastStage = k1 + td_.kl1 >= kEnd;",
        "                    if (!lastStage && (resident || i >= nP - ACCDEPTH)) {  // stays in L0C for the next stage",
        "                        if (!resident) cR[i - (nP - ACCDEPTH)] = cT;",
        "                    } else {",
        "                        qC1.EnQue(cT);",
        "                        cT = qC1.DeQue<float>();",
        "                        if (lastStage) {",
        *["    " + x for x in store],
        "                        } else {  // the partial sum L0C -> L1, Nz as L0C holds it",
        *_fixpipe_nz_f32("                            ", "accL1[h * td_.tm * td_.tn]", "cT", "hn16", "hm16", "hm16",
                         "hm16 * 2"),
        "                        }",
        "                        if (!resident && i < nP - ACCDEPTH) SetFlag<HardEvent::FIX_MTE1>(0);  // its buffer is read",
        "                        qC1.FreeTensor(cT);",
        "                    }",
        "                }",
    ]


def _l1_acc_block_end(p: ir.Program) -> list[str]:
    """tile sizes, after the block's K stages: every tile was stored in the last one; the partial
    sums' L1 is free (with ordered_split the combine stages its shares there)."""
    c = p.cube
    assert c is not None
    return [
        "            if (td_.l1Acc) {",
        "                if (!resident) qAcc.FreeTensor(accL1);",
        *([ "                if (td_.splits > 1) {", *ordered_combine(p, c, "                    "), "                }"]
          if c.ordered_split else []),
        "                continue;",
        "            }",
    ]


def l1_acc_checks(p: ir.Program, t: dict[str, int]) -> None:
    """tile sizes at these shapes: with ordered_split the combine's pieces are whole column blocks of
    the block's rows in one L0C buffer (tm x tn >= bm x 16)."""
    c = p.cube
    if c is None or not c.l1_acc or not t.get("l1Acc") or not c.ordered_split or t["splits"] == 1:
        return
    if t["tm"] * t["tn"] < t["bm"] * 16:
        raise DslError(f"tile_m= / tile_n= with ordered_split: a {t['tm']} x {t['tn']} tile's L0C buffer holds less "
                       f"than one column block of the block's {t['bm']} rows (the combine's piece); larger tiles",
                       c.loc)


def _fixpipe_nz_f32(ind: str, dst: str, src: str, cols: str, rows: str, src_stride: str, dst_stride: str) -> list[str]:
    """An fp32 Fixpipe L0C -> ``dst`` (GM workspace or L1) that keeps the Nz layout: ``cols``
    columns (16 a block) of ``rows`` rows, ``src_stride`` rows a column block in L0C and
    ``dst_stride`` 32 B units between column blocks at ``dst``."""
    return [
        f"{ind}FixpipeParamsV220 np_;",
        f"{ind}np_.nSize = static_cast<uint16_t>({cols});",
        f"{ind}np_.mSize = static_cast<uint16_t>({rows});",
        f"{ind}np_.srcStride = static_cast<uint16_t>({src_stride});",
        f"{ind}np_.dstStride = static_cast<uint32_t>({dst_stride});",
        f"{ind}np_.quantPre = QuantMode_t::NoQuant;",
        f"{ind}np_.ndNum = 1;",
        f"{ind}Fixpipe<float, float, CFG_NZ>({dst}, {src}, np_);",
    ]


def defers_fixpipe(c: ir.CubeStage) -> bool:
    """Is fix_defer possibly on (a tunable, or a literal above 0)? Off, no deferral code is emitted."""
    return not c.ordered_split and (isinstance(c.fix_defer, str) or int(c.fix_defer) > 0)


def _flush_deferred(p: ir.Program, ind: str) -> list[str]:
    """fix_defer: the Fixpipe of the block held back (its accumulator, walk values saved), in a scope
    of its own where the block's names stand for the saved values, then its L0C buffer is free."""
    return [
        f"{ind}if (pend) {{  // fix_defer: the held-back block's Fixpipe",
        f"{ind}    const int64_t bt = pBt, row0 = pRow0, col0 = pCol0, mB = pMB, nB = pNB, split = pSplit;",
        f"{ind}    const int64_t m16 = acx_align16(mB);",
        f"{ind}    (void)split;",
        f"{ind}    LocalTensor<float> c1 = pC1;",
        *_fixpipe(p, ind + "    ", "nB", "0"),
        f"{ind}    qC1.FreeTensor(c1);",
        f"{ind}    pend = false;",
        f"{ind}}}",
    ]


def _fix_split_store(p: ir.Program) -> list[str]:
    """fix_split, last K stage: the part is complete — its Fixpipe, then its L0C is free again."""
    ind = "                    "
    return [
        "                if (td_.fixSplit && k1 + td_.kl1 >= kEnd) {  // this part is complete: its Fixpipe",
        f"{ind}SetFlag<HardEvent::M_FIX>(h);",
        f"{ind}WaitFlag<HardEvent::M_FIX>(h);",
        *_fixpipe(p, ind, "hn", "hc0", part=True),
        f"{ind}SetFlag<HardEvent::FIX_M>(h);",
        f"{ind}if (!splitStage) SetFlag<HardEvent::FIX_M>(1);  // a whole block frees both halves",
        "                }",
    ]


_FIX_SPLIT_EPILOGUE = [
    "        if (td_.fixSplit) {  // the last block's Fixpipes are done",
    "            WaitFlag<HardEvent::FIX_M>(0);",
    "            WaitFlag<HardEvent::FIX_M>(1);",
    "            qC1.FreeTensor(cW);",
    "        }",
]
