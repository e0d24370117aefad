"""Functional tests of the AscendC CPU emulator on hand-written kernels (compared with numpy)."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from ascendcraft.emulator import build_kernel, run_kernel
from ascendcraft.emulator.build import entry_glue

pytestmark = pytest.mark.skipif(
    __import__("shutil").which("g++") is None, reason="g++ is needed to build emulator kernels"
)

ADD_SRC = r"""
#include "kernel_operator.h"
using namespace AscendC;
constexpr int32_t BUFFER_NUM = 2;
struct AddTiling { uint32_t total; uint32_t tile; uint32_t dtype; };

template <class T>
class KernelAdd {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, const AddTiling& t) {
        uint32_t per = (t.total + GetBlockNum() - 1) / GetBlockNum();
        uint32_t start = per * GetBlockIdx();
        len = start >= t.total ? 0 : (t.total - start < per ? t.total - start : per);
        tile = t.tile;
        xGm.SetGlobalBuffer((__gm__ T*)x + start, len);
        yGm.SetGlobalBuffer((__gm__ T*)y + start, len);
        zGm.SetGlobalBuffer((__gm__ T*)z + start, len);
        pipe.InitBuffer(inX, BUFFER_NUM, tile * sizeof(T));
        pipe.InitBuffer(inY, BUFFER_NUM, tile * sizeof(T));
        pipe.InitBuffer(outZ, BUFFER_NUM, tile * sizeof(T));
    }
    __aicore__ inline void Process() {
        for (uint32_t off = 0; off < len; off += tile) {
            uint32_t n = len - off < tile ? len - off : tile;
            CopyIn(off, n);
            Compute(n);
            CopyOut(off, n);
        }
    }
private:
    __aicore__ inline void CopyIn(uint32_t off, uint32_t n) {
        LocalTensor<T> x = inX.AllocTensor<T>();
        LocalTensor<T> y = inY.AllocTensor<T>();
        if ((n * sizeof(T)) % 32 == 0) {
            DataCopy(x, xGm[off], n);
            DataCopy(y, yGm[off], n);
        } else {  // ragged tail
            DataCopyExtParams p{1, (uint32_t)(n * sizeof(T)), 0, 0, 0};
            DataCopyPadExtParams<T> pad{false, 0, 0, 0};
            DataCopyPad(x, xGm[off], p, pad);
            DataCopyPad(y, yGm[off], p, pad);
        }
        inX.EnQue(x);
        inY.EnQue(y);
    }
    __aicore__ inline void Compute(uint32_t n) {
        LocalTensor<T> x = inX.DeQue<T>();
        LocalTensor<T> y = inY.DeQue<T>();
        LocalTensor<T> z = outZ.AllocTensor<T>();
        Add(z, x, y, n);
        outZ.EnQue<T>(z);
        inX.FreeTensor(x);
        inY.FreeTensor(y);
    }
    __aicore__ inline void CopyOut(uint32_t off, uint32_t n) {
        LocalTensor<T> z = outZ.DeQue<T>();
        if ((n * sizeof(T)) % 32 == 0) DataCopy(zGm[off], z, n);
        else DataCopyPad(zGm[off], z, DataCopyExtParams{1, (uint32_t)(n * sizeof(T)), 0, 0, 0});
        outZ.FreeTensor(z);
    }
    TPipe pipe;
    TQue<QuePosition::VECIN, BUFFER_NUM> inX, inY;
    TQue<QuePosition::VECOUT, BUFFER_NUM> outZ;
    GlobalTensor<T> xGm, yGm, zGm;
    uint32_t len, tile;
};

extern "C" __global__ __aicore__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR workspace, GM_ADDR tiling) {
    AddTiling t = *(const AddTiling*)tiling;
    if (t.dtype == 0) { KernelAdd<float> op; op.Init(x, y, z, t); op.Process(); }
    else { KernelAdd<half> op; op.Init(x, y, z, t); op.Process(); }
}

extern "C" int acx_tiling(const int64_t* dims, const int32_t* ranks, int32_t n_tensors, const int64_t* tunables,
                          int32_t n_tunables, const double* scalars, int32_t n_scalars, uint32_t core_num, uint8_t* out,
                          uint32_t out_cap, uint32_t* block_dim, uint64_t* workspace_bytes, char* err, int32_t errlen) {
    if (n_tensors < 1 || n_tunables < 1) { snprintf(err, errlen, "need one tensor and the tile tunable"); return -1; }
    AddTiling t{(uint32_t)dims[0], (uint32_t)tunables[0], (uint32_t)(n_scalars > 0 ? scalars[0] : 0)};
    uint32_t tiles = (t.total + t.tile - 1) / t.tile;
    *block_dim = tiles < core_num ? tiles : core_num;
    *workspace_bytes = 0;
    memcpy(out, &t, sizeof t);
    return sizeof t;
}
""" + entry_glue("add_custom", 5)


def add_tiling(total: int, tile: int, dtype: int = 0) -> bytes:
    return struct.pack("<3I", total, tile, dtype)


SOFTMAX_SRC = r"""
#include "kernel_operator.h"
using namespace AscendC;
struct SmTiling { uint32_t rows; uint32_t cols; };

extern "C" __global__ __aicore__ void softmax_rows(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
    SmTiling t = *(const SmTiling*)tiling;
    GlobalTensor<float> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, t.rows * t.cols);
    yGm.SetGlobalBuffer((__gm__ float*)y, t.rows * t.cols);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inQ;
    TQue<TPosition::VECOUT, 1> outQ;
    TBuf<TPosition::VECCALC> workBuf, redBuf;
    uint32_t colsAligned = (t.cols + 7) / 8 * 8;
    pipe.InitBuffer(inQ, 1, colsAligned * sizeof(float));
    pipe.InitBuffer(outQ, 1, colsAligned * sizeof(float));
    pipe.InitBuffer(workBuf, 256 * sizeof(float));
    pipe.InitBuffer(redBuf, 8 * sizeof(float));
    LocalTensor<float> work = workBuf.Get<float>();
    LocalTensor<float> red = redBuf.Get<float>();
    DataCopyExtParams cp{1, (uint32_t)(t.cols * sizeof(float)), 0, 0, 0};
    for (uint32_t r = GetBlockIdx(); r < t.rows; r += GetBlockNum()) {
        LocalTensor<float> xl = inQ.AllocTensor<float>();
        DataCopyPad(xl, xGm[r * t.cols], cp, DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
        inQ.EnQue(xl);
        xl = inQ.DeQue<float>();
        LocalTensor<float> yl = outQ.AllocTensor<float>();
        ReduceMax(red, xl, work, t.cols);
        SetFlag<HardEvent::V_S>(EVENT_ID0);
        WaitFlag<HardEvent::V_S>(EVENT_ID0);
        float mx = red.GetValue(0);
        Adds(yl, xl, -mx, t.cols);
        PipeBarrier<PIPE_V>();
        Exp(yl, yl, t.cols);
        PipeBarrier<PIPE_V>();
        ReduceSum(red, yl, work, t.cols);
        SetFlag<HardEvent::V_S>(EVENT_ID0);
        WaitFlag<HardEvent::V_S>(EVENT_ID0);
        float s = red.GetValue(0);
        Muls(yl, yl, 1.0f / s, t.cols);
        outQ.EnQue(yl);
        inQ.FreeTensor(xl);
        yl = outQ.DeQue<float>();
        DataCopyPad(yGm[r * t.cols], yl, cp);
        outQ.FreeTensor(yl);
    }
}
""" + entry_glue("softmax_rows", 4)

CMPSEL_SRC = r"""
#include "kernel_operator.h"
using namespace AscendC;
// z0 = where(x < y, x, y);  z1 = where(x > 0.5, x, 0)   (n is a multiple of 64)
extern "C" __global__ __aicore__ void cmpsel(GM_ADDR x, GM_ADDR y, GM_ADDR z0, GM_ADDR z1, GM_ADDR ws, GM_ADDR tiling) {
    uint32_t n = *(const uint32_t*)tiling;
    GlobalTensor<float> xg, yg, z0g, z1g;
    xg.SetGlobalBuffer((__gm__ float*)x, n); yg.SetGlobalBuffer((__gm__ float*)y, n);
    z0g.SetGlobalBuffer((__gm__ float*)z0, n); z1g.SetGlobalBuffer((__gm__ float*)z1, n);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bz, bm;
    pipe.InitBuffer(bx, n * 4); pipe.InitBuffer(by, n * 4); pipe.InitBuffer(bz, n * 4); pipe.InitBuffer(bm, n / 8);
    LocalTensor<float> xl = bx.Get<float>(), yl = by.Get<float>(), zl = bz.Get<float>();
    LocalTensor<uint8_t> m = bm.Get<uint8_t>();
    DataCopy(xl, xg, n); DataCopy(yl, yg, n);
    SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0);
    Compare(m, xl, yl, CMPMODE::LT, n);
    PipeBarrier<PIPE_V>();
    Select(zl, m, xl, yl, SELMODE::VSEL_TENSOR_TENSOR_MODE, n);
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(z0g, zl, n);
    SetFlag<HardEvent::MTE3_V>(0); WaitFlag<HardEvent::MTE3_V>(0);
    CompareScalar(m, xl, 0.5f, CMPMODE::GT, n);
    PipeBarrier<PIPE_V>();
    Select(zl, m, xl, 0.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, n);
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(z1g, zl, n);
}
""" + entry_glue("cmpsel", 6)

CAST_SRC = r"""
#include "kernel_operator.h"
using namespace AscendC;
// x: n fp32 -> out16: 6 x n fp16 (RINT FLOOR CEIL TRUNC ROUND ODD), outi: 5 x n int32 (RINT FLOOR CEIL ROUND TRUNC),
// outb: n bf16 (RINT), back: n fp32 from the RINT fp16, fromi: n fp32 from int32 (RINT)
extern "C" __global__ __aicore__ void casts(GM_ADDR x, GM_ADDR xi, GM_ADDR out16, GM_ADDR outi, GM_ADDR outb, GM_ADDR back,
                                          GM_ADDR fromi, GM_ADDR ws, GM_ADDR tiling) {
    uint32_t n = *(const uint32_t*)tiling;
    GlobalTensor<float> xg, backg, fromig; GlobalTensor<int32_t> xig, oig; GlobalTensor<half> o16g; GlobalTensor<bfloat16_t> obg;
    xg.SetGlobalBuffer((__gm__ float*)x, n); xig.SetGlobalBuffer((__gm__ int32_t*)xi, n);
    o16g.SetGlobalBuffer((__gm__ half*)out16, 6 * n); oig.SetGlobalBuffer((__gm__ int32_t*)outi, 5 * n);
    obg.SetGlobalBuffer((__gm__ bfloat16_t*)outb, n); backg.SetGlobalBuffer((__gm__ float*)back, n);
    fromig.SetGlobalBuffer((__gm__ float*)fromi, n);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bxi, b16, bi, bb, bf;
    pipe.InitBuffer(bx, n * 4); pipe.InitBuffer(bxi, n * 4); pipe.InitBuffer(b16, n * 2);
    pipe.InitBuffer(bi, n * 4); pipe.InitBuffer(bb, n * 2); pipe.InitBuffer(bf, n * 4);
    LocalTensor<float> xl = bx.Get<float>(), fl = bf.Get<float>();
    LocalTensor<int32_t> xil = bxi.Get<int32_t>(), il = bi.Get<int32_t>();
    LocalTensor<half> hl = b16.Get<half>(); LocalTensor<bfloat16_t> bl = bb.Get<bfloat16_t>();
    DataCopy(xl, xg, n); DataCopy(xil, xig, n);
    RoundMode hm[6] = {RoundMode::CAST_RINT, RoundMode::CAST_FLOOR, RoundMode::CAST_CEIL, RoundMode::CAST_TRUNC, RoundMode::CAST_ROUND, RoundMode::CAST_ODD};
    for (int k = 0; k < 6; k++) { Cast(hl, xl, hm[k], n); DataCopy(o16g[k * n], hl, n); }
    RoundMode im[5] = {RoundMode::CAST_RINT, RoundMode::CAST_FLOOR, RoundMode::CAST_CEIL, RoundMode::CAST_ROUND, RoundMode::CAST_TRUNC};
    for (int k = 0; k < 5; k++) { Cast(il, xl, im[k], n); DataCopy(oig[k * n], il, n); }
    Cast(bl, xl, RoundMode::CAST_RINT, n); DataCopy(obg, bl, n);
    Cast(hl, xl, RoundMode::CAST_NONE, n); Cast(fl, hl, RoundMode::CAST_NONE, n); DataCopy(backg, fl, n);
    Cast(fl, xil, RoundMode::CAST_RINT, n); DataCopy(fromig, fl, n);
}
""" + entry_glue("casts", 9)

SYNC_SRC = r"""
#include "kernel_operator.h"
using namespace AscendC;
// acc[0:8] += (b+1) atomically on every core b; SyncAll; every core copies acc to seen[b*8:(b+1)*8];
// mx[0:8] = max over cores of b (SetAtomicMax).
extern "C" __global__ __aicore__ void sync_atomic(GM_ADDR acc, GM_ADDR seen, GM_ADDR mx, GM_ADDR ws, GM_ADDR tiling) {
    int64_t b = GetBlockIdx();
    GlobalTensor<float> accG, seenG, mxG;
    accG.SetGlobalBuffer((__gm__ float*)acc, 8);
    seenG.SetGlobalBuffer((__gm__ float*)seen, 8 * GetBlockNum());
    mxG.SetGlobalBuffer((__gm__ float*)mx, 8);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 32);
    LocalTensor<float> v = buf.Get<float>();
    if (b == 0) { InitGlobalMemory(accG, 8, 0.0f); InitGlobalMemory(mxG, 8, -1.0f); }
    SyncAll();
    Duplicate(v, (float)(b + 1), 8);
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    SetAtomicAdd<float>();
    DataCopy(accG, v, 8);
    SetAtomicNone();
    SetFlag<HardEvent::MTE3_V>(0); WaitFlag<HardEvent::MTE3_V>(0);
    Duplicate(v, (float)b, 8);
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    SetAtomicMax<float>();
    DataCopy(mxG, v, 8);
    SetAtomicNone();
    SyncAll();
    SetFlag<HardEvent::MTE3_MTE2>(0); WaitFlag<HardEvent::MTE3_MTE2>(0);
    DataCopy(v, accG, 8);
    SetFlag<HardEvent::MTE2_MTE3>(0); WaitFlag<HardEvent::MTE2_MTE3>(0);
    DataCopy(seenG[b * 8], v, 8);
}
""" + entry_glue("sync_atomic", 5)


@pytest.fixture(scope="module")
def add_so():
    return build_kernel({"add.cpp": ADD_SRC}, "add.cpp")


def test_add_fp32_double_buffer_with_tail(add_so):
    rng = np.random.default_rng(0)
    n = 1000  # 3 cores x 334 -> tiles of 256 plus a ragged 78-element tail (DataCopyPad)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    r = run_kernel(add_so, [x, y], outputs=[(n, np.float32)], tiling=add_tiling(n, 256), block_dim=3)
    assert r.ok, r.message
    np.testing.assert_array_equal(r.outputs[0], x + y)
    assert r.block_dim == 3 and r.tiling == add_tiling(n, 256)


def test_add_fp16_round_to_nearest_even(add_so):
    rng = np.random.default_rng(1)
    n = 999
    x = rng.standard_normal(n).astype(np.float16)
    y = rng.standard_normal(n).astype(np.float16)
    # exact ties: 1 + 2^-11 -> 1 (even); (1 + 2^-10) + 2^-11 -> 1 + 2^-9 (even)
    x[:2] = [1.0, 1.0 + 2.0**-10]
    y[:2] = [2.0**-11, 2.0**-11]
    r = run_kernel(add_so, [x, y], outputs=[(n, np.float16)], tiling=add_tiling(n, 128, 1), block_dim=2)
    assert r.ok, r.message
    out = r.outputs[0]
    assert out[0] == np.float16(1.0) and out[1] == np.float16(1.0 + 2.0**-9)
    np.testing.assert_array_equal(out, (x.astype(np.float32) + y.astype(np.float32)).astype(np.float16))


def test_softmax_rows():
    so = build_kernel({"softmax.cpp": SOFTMAX_SRC}, "softmax.cpp")
    rng = np.random.default_rng(2)
    rows, cols = 7, 300  # 300 fp32 = 1200 B: not 32 B aligned
    x = (rng.standard_normal((rows, cols)) * 3).astype(np.float32)
    r = run_kernel(so, [x], outputs=[((rows, cols), np.float32)], tiling=struct.pack("<2I", rows, cols), block_dim=3)
    assert r.ok, r.message
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(r.outputs[0], e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_compare_select():
    so = build_kernel({"cmpsel.cpp": CMPSEL_SRC}, "cmpsel.cpp")
    rng = np.random.default_rng(3)
    n = 256
    x = rng.random(n).astype(np.float32)
    y = rng.random(n).astype(np.float32)
    r = run_kernel(so, [x, y], outputs=[(n, np.float32), (n, np.float32)], tiling=struct.pack("<I", n), block_dim=1)
    assert r.ok, r.message
    np.testing.assert_array_equal(r.outputs[0], np.where(x < y, x, y))
    np.testing.assert_array_equal(r.outputs[1], np.where(x > 0.5, x, 0).astype(np.float32))


def _f16_neighbours(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    h = x.astype(np.float16)
    hd = h.astype(np.float64)
    xd = x.astype(np.float64)
    lo = np.where(hd > xd, np.nextafter(h, np.float16(-np.inf)), h)
    hi = np.where(hd < xd, np.nextafter(h, np.float16(np.inf)), h)
    return lo, hi


def test_cast_round_modes():
    so = build_kernel({"cast.cpp": CAST_SRC}, "cast.cpp")
    n = 64
    vals = [1.0 + 2.0**-11, 1.0 + 3 * 2.0**-11, -(1.0 + 2.0**-11), 2.5, -2.5, 0.5, -0.5, 1.3, -1.7, 65519.0, 3.0e-6, 100.25]
    rng = np.random.default_rng(4)
    x = np.concatenate([np.array(vals), rng.standard_normal(n - len(vals)) * 50]).astype(np.float32)
    xi = rng.integers(-(2**30), 2**30, n).astype(np.int32)
    xi[:3] = [16777217, -16777219, 2**30 + 1]  # not representable in fp32
    outs = [(6 * n, np.float16), (5 * n, np.int32), (n, np.uint16), (n, np.float32), (n, np.float32)]
    r = run_kernel(so, [x, xi], outputs=outs, tiling=struct.pack("<I", n), block_dim=1)
    assert r.ok, r.message
    o16 = r.outputs[0].reshape(6, n)
    with np.errstate(over="ignore"):
        lo, hi = _f16_neighbours(x)
    xd = x.astype(np.float64)
    exact = lo == hi
    rne = x.astype(np.float16)
    dlo, dhi = xd - lo.astype(np.float64), hi.astype(np.float64) - xd
    away = np.where(dlo == dhi, np.where(xd > 0, hi, lo), np.where(dlo < dhi, lo, hi))
    odd = np.where(exact, lo, np.where(lo.view(np.uint16) & 1, lo, hi))
    trunc = np.where(xd >= 0, lo, hi)
    for k, want in enumerate([rne, lo, hi, trunc, away, odd]):
        np.testing.assert_array_equal(o16[k], want.astype(np.float16), err_msg=f"fp32->fp16 mode #{k}")
    oi = r.outputs[1].reshape(5, n)
    half_away = np.sign(xd) * np.floor(np.abs(xd) + 0.5)
    for k, want in enumerate([np.rint(xd), np.floor(xd), np.ceil(xd), half_away, np.trunc(xd)]):
        np.testing.assert_array_equal(oi[k], want.astype(np.int32), err_msg=f"fp32->int32 mode #{k}")
    u = x.view(np.uint32).astype(np.uint64)
    bf = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    np.testing.assert_array_equal(r.outputs[2], bf)
    np.testing.assert_array_equal(r.outputs[3], x.astype(np.float16).astype(np.float32))
    np.testing.assert_array_equal(r.outputs[4], xi.astype(np.float32))


def test_syncall_and_atomics():
    so = build_kernel({"sync.cpp": SYNC_SRC}, "sync.cpp")
    cores = 5
    r = run_kernel(
        so, [], outputs=[(8, np.float32), (8 * cores, np.float32), (8, np.float32)], tiling=b"\0" * 8, block_dim=cores
    )
    assert r.ok, r.message
    total = cores * (cores + 1) / 2
    np.testing.assert_array_equal(r.outputs[0], np.full(8, total, np.float32))
    # every core saw the sum of all cores' contributions: SyncAll ordered them
    np.testing.assert_array_equal(r.outputs[1], np.full(8 * cores, total, np.float32))
    np.testing.assert_array_equal(r.outputs[2], np.full(8, cores - 1, np.float32))


def test_block_subset_runs_only_given_cores(add_so):
    n = 1024
    x = np.ones(n, np.float32)
    r = run_kernel(add_so, [x, x], outputs=[(n, np.float32)], tiling=add_tiling(n, 256), block_dim=4, block_ids=[2])
    assert r.ok, r.message
    out = r.outputs[0]
    assert (out[512:768] == 2).all() and (out[:512] == 0).all() and (out[768:] == 0).all()


PAD_SRC = r"""
#include "kernel_operator.h"
using namespace AscendC;
// x: 3 rows of 5 fp32, 7 floats apart in GM. GM->UB: each burst gets left pad 1 and right pad 2 (value -1),
// padded to 32 B, with a 1-block UB gap between bursts; the UB image (3 x 16 floats) is copied out raw.
// UB->GM: bursts of 6 floats (pad + row) back to GM with a 4 B gap between them.
extern "C" __global__ __aicore__ void pad_kernel(GM_ADDR x, GM_ADDR img, GM_ADDR back, GM_ADDR ws, GM_ADDR tiling) {
    const uint32_t rows = 3, cols = 5;
    GlobalTensor<float> xg, ig, bg;
    xg.SetGlobalBuffer((__gm__ float*)x, rows * 7);
    ig.SetGlobalBuffer((__gm__ float*)img, rows * 16);
    bg.SetGlobalBuffer((__gm__ float*)back, rows * 7);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, rows * 16 * 4);
    LocalTensor<float> t = b.Get<float>();
    Duplicate(t, 7.0f, rows * 16);
    DataCopyPad(t, xg, DataCopyExtParams{rows, cols * 4, 8, 1, 0}, DataCopyPadExtParams<float>{true, 1, 2, -1.0f});
    DataCopy(ig, t, rows * 16);
    DataCopyPad(bg, t, DataCopyExtParams{rows, 6 * 4, 1, 4, 0});
}
""" + entry_glue("pad_kernel", 5)


def test_datacopypad_units_and_padding():
    """GM strides are bytes, UB strides 32 B blocks; GM->UB pads bursts to 32 B; UB->GM writes exactly blockLen."""
    so = build_kernel({"pad.cpp": PAD_SRC}, "pad.cpp")
    x = np.arange(21, dtype=np.float32) + 1
    r = run_kernel(so, [x], outputs=[(48, np.float32), np.full(21, -5, np.float32)], tiling=b"\0" * 4, block_dim=1)
    assert r.ok, r.message
    rows = x.reshape(3, 7)[:, :5]
    img = np.full((3, 16), 7, np.float32)
    img[:, :8] = -1
    img[:, 1:6] = rows
    np.testing.assert_array_equal(r.outputs[0].reshape(3, 16), img)
    back = np.full((3, 7), -5, np.float32)
    back[:, 0] = -1
    back[:, 1:6] = rows
    np.testing.assert_array_equal(r.outputs[1].reshape(3, 7)[:, :6], back[:, :6])
    assert (r.outputs[1].reshape(3, 7)[:, 6] == -5).all()


REDUCE_SRC = r"""
#include "kernel_operator.h"
using namespace AscendC;
// x: 4 x 64 fp32. sums[r] = WholeReduceSum row r; mx[2r], mx[2r+1] = WholeReduceMax (value, index bits);
// blk[8r + b] = BlockReduceSum of block b of row r
extern "C" __global__ __aicore__ void reduce_kernel(GM_ADDR x, GM_ADDR sums, GM_ADDR mx, GM_ADDR blk, GM_ADDR ws, GM_ADDR tiling) {
    GlobalTensor<float> xg, sg, mg, bg;
    xg.SetGlobalBuffer((__gm__ float*)x, 256); sg.SetGlobalBuffer((__gm__ float*)sums, 8);
    mg.SetGlobalBuffer((__gm__ float*)mx, 8); bg.SetGlobalBuffer((__gm__ float*)blk, 32);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bs, bm, bb;
    pipe.InitBuffer(bx, 1024); pipe.InitBuffer(bs, 32); pipe.InitBuffer(bm, 32); pipe.InitBuffer(bb, 128);
    LocalTensor<float> xl = bx.Get<float>(), sl = bs.Get<float>(), ml = bm.Get<float>(), bl = bb.Get<float>();
    Duplicate(sl, 0.0f, 8);
    DataCopy(xl, xg, 256);
    WholeReduceSum(sl, xl, 64, 4, 1, 1, 8);
    WholeReduceMax(ml, xl, 64, 4, 1, 1, 8);
    BlockReduceSum(bl, xl, 4, 64, 1, 1, 8);
    DataCopy(sg, sl, 8); DataCopy(mg, ml, 8); DataCopy(bg, bl, 32);
}
""" + entry_glue("reduce_kernel", 6)


def test_repeat_form_reductions():
    so = build_kernel({"reduce.cpp": REDUCE_SRC}, "reduce.cpp")
    x = np.random.default_rng(5).permutation(256).astype(np.float32)
    outs = [(8, np.float32), (8, np.float32), (32, np.float32)]
    r = run_kernel(so, [x], outputs=outs, tiling=b"\0" * 4, block_dim=1)
    assert r.ok, r.message
    rows = x.reshape(4, 64)
    np.testing.assert_array_equal(r.outputs[0][:4], rows.sum(axis=1))
    mx = r.outputs[1].reshape(4, 2)
    np.testing.assert_array_equal(mx[:, 0], rows.max(axis=1))
    np.testing.assert_array_equal(mx[:, 1].view(np.uint32), rows.argmax(axis=1))
    np.testing.assert_array_equal(r.outputs[2], rows.reshape(32, 8).sum(axis=1))


def test_tiling_request_runs_acx_tiling(add_so):
    from ascendcraft.emulator import TilingRequest, compute_tiling

    n = 5000
    x = np.full(n, 2, np.float32)
    req = TilingRequest(shapes=[(n,), (n,)], tunables=[512], core_num=8)
    r = run_kernel(add_so, [x, x], outputs=[(n, np.float32)], tiling=req)
    assert r.ok, r.message
    assert r.block_dim == 8 and r.tiling == add_tiling(n, 512)
    assert (r.outputs[0] == 4).all()
    t = compute_tiling(add_so, req)
    assert t.ok and t.block_dim == 8 and t.tiling == r.tiling
    bad = compute_tiling(add_so, TilingRequest(shapes=[(n,)], tunables=[], core_num=8))
    assert bad.status == "error" and "tile tunable" in bad.message
