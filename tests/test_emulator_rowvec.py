"""Per-row values on the vector side: the emulator's Brcb and the repeat forms of the binary
ops (block / repeat strides, a block stride of 0 broadcasting one 32 B block) compute what the
API reference documents, refuse out-of-bounds and overlapping operands, and trace one record
a call with its repeat count (the cost basis of every other vector op)."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from ascendcraft.emulator import build_kernel, run_kernel
from ascendcraft.emulator.build import entry_glue
from ascendcraft.emulator.trace_format import OP_INSTR_CLASS, Op, Pipe, RecordKind

pytestmark = pytest.mark.skipif(
    __import__("shutil").which("g++") is None, reason="g++ is needed to build emulator kernels"
)

R, W = 16, 128  # 16 rows of 128 fp32 (2 repeats a row)

SRC = r"""
#include "kernel_operator.h"
using namespace AscendC;
struct T { uint32_t mode; uint32_t pad; };

extern "C" __global__ __aicore__ void rowvec(GM_ADDR x, GM_ADDR v, GM_ADDR hx, GM_ADDR hv, GM_ADDR out, GM_ADDR hout,
                                             GM_ADDR workspace, GM_ADDR tiling) {
    const T t = *(const T*)tiling;
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bv, bb, bd, bh, bhv, bhb, bhd;
    pipe.InitBuffer(bx, 16 * 128 * 4); pipe.InitBuffer(bv, 256 * 4); pipe.InitBuffer(bb, 16 * 32);
    pipe.InitBuffer(bd, 4 * 16 * 128 * 4); pipe.InitBuffer(bh, 2 * 128 * 2); pipe.InitBuffer(bhv, 16 * 2);
    pipe.InitBuffer(bhb, 8 * 32); pipe.InitBuffer(bhd, 2 * 128 * 2);
    GlobalTensor<float> xG, vG, oG;
    GlobalTensor<half> hxG, hvG, hoG;
    xG.SetGlobalBuffer((__gm__ float*)x, 16 * 128); vG.SetGlobalBuffer((__gm__ float*)v, 16);
    hxG.SetGlobalBuffer((__gm__ half*)hx, 2 * 128); hvG.SetGlobalBuffer((__gm__ half*)hv, 16);
    oG.SetGlobalBuffer((__gm__ float*)out, 16 * 8 + 4 * 16 * 128); hoG.SetGlobalBuffer((__gm__ half*)hout, 8 * 16 + 2 * 128);
    LocalTensor<float> X = bx.Get<float>(), V = bv.Get<float>(), B = bb.Get<float>(), D = bd.Get<float>();
    LocalTensor<half> HX = bh.Get<half>(), HV = bhv.Get<half>(), HB = bhb.Get<half>(), HD = bhd.Get<half>();
    DataCopy(X, xG, 16 * 128);
    DataCopy(V, vG, 16);
    DataCopy(HX, hxG, 2 * 128);
    DataCopy(HV, hvG, 16);
    if (t.mode == 1) { Brcb(V[8], V, 2, BrcbRepeatParams(1, 8)); return; }                   // dst overlaps src0
    if (t.mode == 2) { Sub(D, X, B, 64, 17, BinaryRepeatParams(1, 1, 0, 8, 8, 1)); return; }    // src1: 17 blocks of 16
    if (t.mode == 3) { Sub(D, X, B, 65, 1, BinaryRepeatParams(1, 1, 0, 8, 8, 0)); return; }    // mask > 64 fp32 lanes
    if (t.mode == 4) { Brcb(B, V, 3, BrcbRepeatParams(1, 8)); return; }                       // dst: 24 blocks of 16
    Brcb(B, V, 2, BrcbRepeatParams(1, 8));                       // row i's value in block i
    DataCopy(oG, B, 16 * 8);
    Duplicate(D, 0.0f, 4 * 16 * 128);
    // down the rows: one repeat per row, the row's block with block stride 0; the first 64 columns only
    Sub(D, X, B, 64, 16, BinaryRepeatParams(1, 1, 0, 16, 16, 1));
    // along a row: 2 repeats of row 3's value, 40 lanes each
    Mul(D[16 * 128], X, B[3 * 8], 40, 2, BinaryRepeatParams(1, 1, 0, 8, 8, 0));
    // the row value first: v[0] / x over 4 repeats
    Div(D[2 * 16 * 128], B, X, 64, 4, BinaryRepeatParams(1, 0, 1, 8, 0, 8));
    // in place, every other block of a repeat (block stride 2), a bitwise mask (lanes 0-7 and 16-23)
    const uint64_t m[2] = {0x0000000000ff00ffull, 0};
    Max(X, X, B[5 * 8], m, 2, BinaryRepeatParams(2, 2, 0, 16, 16, 0));
    DataCopy(D[3 * 16 * 128], X, 16 * 128);
    DataCopy(oG[16 * 8], D, 4 * 16 * 128);
    // fp16: 16 lanes a block, 128 a repeat
    Brcb(HB, HV, 1, BrcbRepeatParams(1, 8));
    DataCopy(hoG, HB, 8 * 16);
    Min(HD, HX, HB, 128, 2, BinaryRepeatParams(1, 1, 0, 8, 8, 1));
    DataCopy(hoG[8 * 16], HD, 2 * 128);
}

extern "C" int acx_tiling(const int64_t* dims, const int32_t* ranks, int32_t n_tensors, const int64_t* tunables,
                          int32_t n_tunables, const double* scalars, int32_t n_scalars, uint32_t core_num, uint8_t* out,
                          uint32_t out_cap, uint32_t* block_dim, uint64_t* workspace_bytes, char* err, int32_t errlen) {
    T t{(uint32_t)tunables[0], 0};
    *block_dim = 1;
    *workspace_bytes = 0;
    memcpy(out, &t, sizeof t);
    return sizeof t;
}
""" + entry_glue("rowvec", 8)


@pytest.fixture(scope="module")
def so():
    return build_kernel({"rowvec.cpp": SRC}, "rowvec.cpp")


def _inputs(rng: np.random.Generator):
    x = rng.standard_normal((R, W)).astype(np.float32)
    x[np.abs(x) < 1e-3] = 0.5  # a divisor
    v = rng.standard_normal(R).astype(np.float32)
    hx = rng.standard_normal((2, W)).astype(np.float16)
    hv = rng.standard_normal(16).astype(np.float16)
    return x, v, hx, hv


def _run(so, mode: int, inputs):
    outs = [(R * 8 + 4 * R * W, np.float32), (8 * 16 + 2 * W, np.float16)]
    return run_kernel(so, list(inputs), outputs=outs, tiling=struct.pack("<II", mode, 0), block_dim=1,
                      trace="records")


def test_brcb_and_strided_binaries_match_the_documented_semantics(so) -> None:
    x, v, hx, hv = _inputs(np.random.default_rng(7))
    r = _run(so, 0, (x, v, hx, hv))
    assert r.ok, r.message
    out, hout = r.outputs
    np.testing.assert_array_equal(out[: R * 8].reshape(R, 8), np.repeat(v[:, None], 8, 1))
    d = out[R * 8:].reshape(4, R, W)
    want = np.zeros((R, W), np.float32)
    want[:, :64] = x[:, :64] - v[:, None]
    np.testing.assert_array_equal(d[0], want)
    flat = x.reshape(-1)
    want = np.zeros(R * W, np.float32)
    for k in range(2):
        want[k * 64: k * 64 + 40] = flat[k * 64: k * 64 + 40] * v[3]
    np.testing.assert_array_equal(d[1].reshape(-1), want)
    want = np.zeros(R * W, np.float32)
    want[:256] = v[0] / flat[:256]
    np.testing.assert_array_equal(d[2].reshape(-1), want)
    want = flat.copy()  # lanes 0-7 (block 0) and 16-23 (block 2) of each repeat; blocks 2 apart; repeats 16 apart
    for k in range(2):
        for blk in (0, 2):
            s = k * 16 * 8 + blk * 2 * 8
            want[s: s + 8] = np.maximum(flat[s: s + 8], v[5])
    np.testing.assert_array_equal(d[3].reshape(-1), want)
    np.testing.assert_array_equal(hout[: 8 * 16].reshape(8, 16), np.repeat(hv[:8, None], 16, 1))
    want = np.stack([np.minimum(hx[k], hv[k]) for k in range(2)])  # repeat k: block k of every lane
    np.testing.assert_array_equal(hout[8 * 16:].reshape(2, W), want)

    tr = r.trace
    ins = tr[tr["kind"] == int(RecordKind.INSTR)]
    brcb = ins[ins["op"] == int(Op.BRCB)]
    assert len(brcb) == 2 and (brcb["pipe"] == int(Pipe.V)).all()
    assert brcb["repeats"].tolist() == [2, 1]
    sub = ins[ins["op"] == int(Op.SUB)]
    assert sub["repeats"].tolist() == [16] and sub["elems"].tolist() == [16 * 64]
    mul = ins[ins["op"] == int(Op.MUL)]
    assert mul["repeats"].tolist() == [2] and mul["elems"].tolist() == [80]
    assert OP_INSTR_CLASS[Op.BRCB] == "one_input"  # 256 B written a repeat, like Duplicate


@pytest.mark.parametrize("mode,fragments", [
    (1, ["Brcb", "overlap"]),
    (2, ["Sub", "src1", "out-of-bounds"]),
    (3, ["Sub", "mask=65"]),
    (4, ["Brcb", "dst", "out-of-bounds"]),
])
def test_bad_repeat_arguments_are_refused_with_the_reason(so, mode, fragments) -> None:
    r = _run(so, mode, _inputs(np.random.default_rng(0)))
    assert r.status == "error", r.message
    for f in fragments:
        assert f in r.message, r.message
