"""Emulator: the vector additions (Gather, ArithProgression, CreateVecIndex, int64 GM scalars,
f32<->i32 Cast modes, user workspace) and the cube unit (ND2NZ, LoadData, Mmad, Fixpipe, AIC/AIV
core types), checked against numpy. The contract is ascendcraft/emulator/CUBE_API.md."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from ascendcraft.emulator import build_kernel, run_kernel
from ascendcraft.emulator.build import entry_glue
from ascendcraft.emulator.runner import buffer_capacities
from ascendcraft.emulator.trace_format import DType, Op, Pipe, RecordKind
from ascendcraft.soc import load_soc

pytestmark = pytest.mark.skipif(
    __import__("shutil").which("g++") is None, reason="g++ is needed to build emulator kernels"
)

# ------------------------------------------------------------------------------------------
# vector additions
# ------------------------------------------------------------------------------------------

VEC_SRC = r"""
#include "kernel_operator.h"
using namespace AscendC;
struct VTiling { uint32_t n; uint32_t mode; int32_t wsElems; uint32_t pad; };

extern "C" __global__ __aicore__ void vecadd(GM_ADDR src, GM_ADDR offs, GM_ADDR tgt, GM_ADDR gout, GM_ADDR ap,
                                             GM_ADDR idx, GM_ADDR cast, GM_ADDR misc, GM_ADDR workspace, GM_ADDR tiling) {
    VTiling t = *(const VTiling*)tiling;
    const uint32_t n = t.n;  // multiple of 64
    TPipe pipe;
    TBuf<TPosition::VECCALC> bSrc, bOff, bDst, bF, bI, bF2, bH, bI16;
    pipe.InitBuffer(bSrc, n * 4); pipe.InitBuffer(bOff, n * 4); pipe.InitBuffer(bDst, n * 4);
    pipe.InitBuffer(bF, n * 4); pipe.InitBuffer(bI, n * 4); pipe.InitBuffer(bF2, n * 4);
    pipe.InitBuffer(bH, n * 2); pipe.InitBuffer(bI16, n * 2);
    GlobalTensor<float> srcG, goutG, apG, castG, miscG;
    GlobalTensor<uint32_t> offG;
    GlobalTensor<int64_t> tgtG;
    GlobalTensor<int32_t> idxG;
    srcG.SetGlobalBuffer((__gm__ float*)src, n); offG.SetGlobalBuffer((__gm__ uint32_t*)offs, n);
    tgtG.SetGlobalBuffer((__gm__ int64_t*)tgt, 4); goutG.SetGlobalBuffer((__gm__ float*)gout, n);
    apG.SetGlobalBuffer((__gm__ float*)ap, 3 * n); idxG.SetGlobalBuffer((__gm__ int32_t*)idx, 2 * n);
    castG.SetGlobalBuffer((__gm__ float*)cast, 7 * n); miscG.SetGlobalBuffer((__gm__ float*)misc, 8);
    LocalTensor<float> s = bSrc.Get<float>(), d = bDst.Get<float>(), f = bF.Get<float>(), f2 = bF2.Get<float>();
    LocalTensor<uint32_t> o = bOff.Get<uint32_t>();
    LocalTensor<int32_t> iv = bI.Get<int32_t>();
    LocalTensor<half> h = bH.Get<half>();
    LocalTensor<int16_t> i16 = bI16.Get<int16_t>();
    DataCopy(s, srcG, n);
    DataCopy(o, offG, n);
    if (t.mode == 1) { Gather(d, s, o, (uint32_t)0, n); return; }               // misaligned offsets (set by test)
    if (t.mode == 2) { ArithProgression(f, 1.0f, -1.0f, (int32_t)n); return; }  // negative diff
    if (t.mode == 3) { Cast(iv, s, RoundMode::CAST_NONE, n); return; }          // CAST_NONE not allowed f32->i32
    if (t.mode == 4) { Gather(s, s, o, (uint32_t)0, n); return; }               // overlap
    // Gather (byte offsets, base address 4 B)
    Gather(d, s, o, (uint32_t)4, n);
    DataCopy(goutG, d, n);
    // ArithProgression, three dtypes
    ArithProgression(f, 0.5f, 0.25f, (int32_t)n);
    DataCopy(apG, f, n);
    ArithProgression(iv, (int32_t)-7, (int32_t)3, (int32_t)n);
    DataCopy(apG[n], iv.ReinterpretCast<float>(), n);
    ArithProgression(h, (half)1.0f, (half)0.5f, (int32_t)n);
    Cast(f2, h, RoundMode::CAST_NONE, n);
    DataCopy(apG[2 * n], f2, n);
    // CreateVecIndex int32 and int16
    CreateVecIndex(iv, (int32_t)5, n);
    DataCopy(idxG, iv, n);
    CreateVecIndex(i16, (int16_t)-3, n);
    Cast(f2, i16, RoundMode::CAST_NONE, n);
    Cast(iv, f2, RoundMode::CAST_TRUNC, n);
    DataCopy(idxG[n], iv, n);
    // Cast f32 -> i32 (floor, round) and back
    Cast(iv, s, RoundMode::CAST_FLOOR, n);
    Cast(f2, iv, RoundMode::CAST_NONE, n);
    DataCopy(castG, f2, n);
    Cast(iv, s, RoundMode::CAST_ROUND, n);
    Cast(f2, iv, RoundMode::CAST_RINT, n);
    DataCopy(castG[n], f2, n);
    // int64 GM scalars and the user workspace
    GlobalTensor<float> ws;
    ws.SetGlobalBuffer((__gm__ float*)GetUserWorkspace(workspace), t.wsElems);
    for (int i = 0; i < 4; i++) {
        int64_t v = tgtG.GetValue(i);
        miscG.SetValue(i, (float)v);
        ws.SetValue(i, (float)(v * 2));
    }
    for (int i = 0; i < 4; i++) miscG.SetValue(4 + i, ws.GetValue(i));
}

extern "C" int acx_tiling(const int64_t* dims, const int32_t* ranks, int32_t n_tensors, const int64_t* tunables,
                          int32_t n_tunables, const double* scalars, int32_t n_scalars, uint32_t core_num, uint8_t* out,
                          uint32_t out_cap, uint32_t* block_dim, uint64_t* workspace_bytes, char* err, int32_t errlen) {
    VTiling t{(uint32_t)dims[0], (uint32_t)tunables[0], 16, 0};
    *block_dim = 1;
    *workspace_bytes = t.wsElems * sizeof(float);
    memcpy(out, &t, sizeof t);
    return sizeof t;
}
""" + entry_glue("vecadd", 10)


@pytest.fixture(scope="module")
def vec_so():
    return build_kernel({"vec.cpp": VEC_SRC}, "vec.cpp")


def _vec_inputs(n: int, rng: np.random.Generator):
    src = (rng.standard_normal(n) * 10).astype(np.float32)
    src[:6] = [2.5, -2.5, 0.5, -1.5, 3.49, -0.51]
    idx = rng.integers(0, n - 1, n)
    offs = (idx * 4).astype(np.uint32)  # byte offsets; base address adds 4 B (one element)
    tgt = np.array([3, -1, 2**40 + 5, 7], np.int64)
    return src, offs, tgt, idx


def test_vector_additions_numerics(vec_so):
    from ascendcraft.emulator import TilingRequest

    n = 256
    rng = np.random.default_rng(0)
    src, offs, tgt, idx = _vec_inputs(n, rng)
    outs = [
        (n, np.float32),
        (3 * n, np.float32),
        (2 * n, np.int32),
        (7 * n, np.float32),
        (8, np.float32),
    ]
    r = run_kernel(
        vec_so, [src, offs, tgt], outputs=outs, tiling=TilingRequest(shapes=[(n,)], tunables=[0]),
        trace="records",
    )
    assert r.ok, r.message
    assert r.workspace_bytes == 64
    gout, ap, ids, cast, misc = r.outputs
    np.testing.assert_array_equal(gout, src[idx + 1])
    i = np.arange(n)
    np.testing.assert_allclose(ap[:n], 0.5 + 0.25 * i, rtol=0, atol=1e-5)
    np.testing.assert_array_equal(ap[n : 2 * n].view(np.int32), -7 + 3 * i)
    # fp16: the documented SetValue/Adds algorithm, element type arithmetic
    want = np.zeros(n, np.float16)
    want[:8] = (1.0 + 0.5 * np.arange(8)).astype(np.float16)
    for j in range(8, min(n, 64)):
        want[j] = np.float16(want[j - 8] + np.float16(4.0))
    for j in range(64, n):
        want[j] = np.float16(want[j - 64] + np.float16(32.0))
    np.testing.assert_array_equal(ap[2 * n :], want.astype(np.float32))
    np.testing.assert_array_equal(ids[:n], 5 + i)
    np.testing.assert_array_equal(ids[n:], -3 + i)
    np.testing.assert_array_equal(cast[:n], np.floor(src))
    np.testing.assert_array_equal(cast[n : 2 * n], np.sign(src) * np.floor(np.abs(src) + 0.5))
    np.testing.assert_array_equal(misc[:4], tgt.astype(np.float32))
    np.testing.assert_array_equal(misc[4:], (2 * tgt).astype(np.float32))
    tr = r.trace
    ops = set(tr["op"][tr["kind"] == int(RecordKind.INSTR)].tolist())
    assert {int(Op.GATHER), int(Op.CREATE_VEC_INDEX), int(Op.ADDS)} <= ops
    g = tr[tr["op"] == int(Op.GATHER)][0]
    assert g["pipe"] == int(Pipe.V) and g["repeats"] == n * 4 // 256 and g["elems"] == n
    gv = tr[(tr["op"] == int(Op.GET_VALUE)) & (tr["dtype"] == int(DType.I64))]
    assert len(gv) == 4 and (gv["pipe"] == int(Pipe.S)).all()


@pytest.mark.parametrize(
    "mode,fragments",
    [
        (1, ["Gather", "not a multiple of sizeof(fp32)"]),
        (2, ["ArithProgression", "diffValue", ">= 0"]),
        (3, ["Cast", "CAST_NONE", "fp32 -> int32", "CAST_RINT"]),
        (4, ["Gather", "overlap"]),
    ],
)
def test_vector_additions_errors(vec_so, mode, fragments):
    n = 64
    src = np.zeros(n, np.float32)
    offs = np.full(n, 6, np.uint32)  # 6 B: not a multiple of 4
    outs = [
        (n, np.float32),
        (3 * n, np.float32),
        (2 * n, np.int32),
        (7 * n, np.float32),
        (8, np.float32),
    ]
    r = run_kernel(
        vec_so,
        [src, offs, np.zeros(4, np.int64)],
        outputs=outs,
        tiling=struct.pack("<IIiI", n, mode, 16, 0),
        block_dim=1,
        workspace_bytes=64,
    )
    assert r.status == "error", r.message
    for f in fragments:
        assert f in r.message, r.message


def test_soc_buffers_from_spec():
    b = buffer_capacities(load_soc("Ascend910B2"))
    assert b == {
        "ub": 192 * 1024,
        "l1": 512 * 1024,
        "l0a": 64 * 1024,
        "l0b": 64 * 1024,
        "l0c": 128 * 1024,
        "bt": 1024,
    }
    assert buffer_capacities(load_soc("Ascend310P3"))["l0c"] == 256 * 1024
    assert buffer_capacities() == b  # the default SoC's
    assert buffer_capacities({"l0c": 8192}) == {**b, "l0c": 8192}
    with pytest.raises(ValueError, match="unknown buffer 'ub_bytes'"):
        buffer_capacities({"ub_bytes": 1})  # a misspelt key is refused, never ignored


# ------------------------------------------------------------------------------------------
# cube: a matmul kernel written to the recipe of CUBE_API.md
# ------------------------------------------------------------------------------------------

MM_SRC = r"""
#include "kernel_operator.h"
using namespace AscendC;
struct MmTiling {
    uint32_t M, N, K, mB, nB, kB, kL0, dtype, outHalf, transB, order, depthL1, gemv;
};
__aicore__ inline uint32_t CeilDiv(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
__aicore__ inline uint32_t CeilAlign(uint32_t a, uint32_t b) { return CeilDiv(a, b) * b; }

template <class T, class OutT>
class MatmulKernel {
public:
    using AccT = typename std::conditional<std::is_same<T, int8_t>::value, int32_t, float>::type;
    static constexpr uint32_t C0 = 32 / sizeof(T);
    __aicore__ inline void Init(GM_ADDR a, GM_ADDR b, GM_ADDR c, const MmTiling& t) {
        t_ = t;
        aGm.SetGlobalBuffer((__gm__ T*)a, (uint64_t)t.M * t.K);
        bGm.SetGlobalBuffer((__gm__ T*)b, (uint64_t)t.K * t.N);
        cGm.SetGlobalBuffer((__gm__ OutT*)c, (uint64_t)t.M * t.N);
        m16 = CeilAlign(t.mB, 16); n16 = CeilAlign(t.nB, 16);
        kc0 = CeilAlign(t.kB, C0 > 16 ? C0 : 16);
        pipe.InitBuffer(qA1, t.depthL1, m16 * kc0 * sizeof(T));
        pipe.InitBuffer(qB1, t.depthL1, kc0 * n16 * sizeof(T));
        pipe.InitBuffer(qA2, 2, m16 * t.kL0 * sizeof(T));
        pipe.InitBuffer(qB2, 2, t.kL0 * n16 * sizeof(T));
        pipe.InitBuffer(qC, 1, m16 * n16 * sizeof(AccT));
    }
    __aicore__ inline void Process() {
        uint32_t bm = CeilDiv(t_.M, t_.mB), bn = CeilDiv(t_.N, t_.nB), total = bm * bn;
        for (uint32_t blk = GetBlockIdx(); blk < total; blk += GetBlockNum()) {
            uint32_t im, in;
            if (t_.order == 0) { im = blk / bn; in = blk % bn; }                 // row-major
            else { im = blk % bm; in = (blk / bm + blk) % bn; }                // strided: little sharing
            Block(im * t_.mB, in * t_.nB);
        }
    }

private:
    __aicore__ inline void Block(uint32_t row0, uint32_t col0) {
        uint32_t mb = t_.M - row0 < t_.mB ? t_.M - row0 : t_.mB;
        uint32_t nb = t_.N - col0 < t_.nB ? t_.N - col0 : t_.nB;
        uint32_t M16 = CeilAlign(mb, 16), N16 = CeilAlign(nb, 16);
        LocalTensor<AccT> c1 = qC.AllocTensor<AccT>();
        for (uint32_t k0 = 0; k0 < t_.K; k0 += t_.kB) {
            uint32_t kb = t_.K - k0 < t_.kB ? t_.K - k0 : t_.kB;
            uint32_t K16 = CeilAlign(kb, 16);
            LocalTensor<T> a1 = qA1.AllocTensor<T>();
            LocalTensor<T> b1 = qB1.AllocTensor<T>();
            Nd2NzParams pa;
            pa.ndNum = 1; pa.nValue = mb; pa.dValue = kb; pa.srcNdMatrixStride = 0; pa.srcDValue = t_.K;
            pa.dstNzC0Stride = M16; pa.dstNzNStride = 1; pa.dstNzMatrixStride = 0;
            const bool nd = mb == 1 && t_.gemv;  // GEMV: A's single row contiguous in L1 and L0A
            if (nd) pa.dstNzC0Stride = 1;
            DataCopy(a1, aGm[(uint64_t)row0 * t_.K + k0], pa);
            Nd2NzParams pb;
            if (t_.transB) {  // B given as N x K
                pb.ndNum = 1; pb.nValue = nb; pb.dValue = kb; pb.srcNdMatrixStride = 0; pb.srcDValue = t_.K;
                pb.dstNzC0Stride = N16; pb.dstNzNStride = 1; pb.dstNzMatrixStride = 0;
                DataCopy(b1, bGm[(uint64_t)col0 * t_.K + k0], pb);
            } else {
                pb.ndNum = 1; pb.nValue = kb; pb.dValue = nb; pb.srcNdMatrixStride = 0; pb.srcDValue = t_.N;
                pb.dstNzC0Stride = K16; pb.dstNzNStride = 1; pb.dstNzMatrixStride = 0;
                DataCopy(b1, bGm[(uint64_t)k0 * t_.N + col0], pb);
            }
            qA1.EnQue(a1); qB1.EnQue(b1);
            a1 = qA1.DeQue<T>(); b1 = qB1.DeQue<T>();
            for (uint32_t kk = 0; kk < kb; kk += t_.kL0) {
                uint32_t kl = kb - kk < t_.kL0 ? kb - kk : t_.kL0;
                uint32_t KL = CeilAlign(kl, C0), KL16 = CeilAlign(kl, 16);
                LocalTensor<T> a2 = qA2.AllocTensor<T>();
                LocalTensor<T> b2 = qB2.AllocTensor<T>();
                LoadData2DParams la;
                if (nd) {
                    la.repeatTimes = CeilDiv(kl * sizeof(T), 512); la.srcStride = 1;
                    LoadData(a2, a1[kk], la);
                } else {
                    la.repeatTimes = KL / C0; la.srcStride = M16 / 16; la.ifTranspose = false;
                    for (uint32_t i = 0; i < M16 / 16; ++i)
                        LoadData(a2[i * KL * 16], a1[((kk / C0) * (M16 / 16) + i) * 16 * C0], la);
                }
                LoadData2DParams lb;
                if (t_.transB) {
                    lb.repeatTimes = (KL / C0) * (N16 / 16); lb.srcStride = 1; lb.ifTranspose = false;
                    LoadData(b2, b1[(kk / C0) * N16 * C0], lb);
                } else {
                    lb.repeatTimes = N16 / 16; lb.srcStride = K16 / 16; lb.ifTranspose = true;
                    for (uint32_t i = 0; i < KL16 / 16; ++i)
                        LoadData(b2[i * N16 * 16], b1[(kk / 16 + i) * 256], lb);
                }
                qA2.EnQue(a2); qB2.EnQue(b2);
                a2 = qA2.DeQue<T>(); b2 = qB2.DeQue<T>();
                MmadParams mp;
                mp.m = (mb == 1 && !nd) ? 2 : mb;  // m = 1 would switch Mmad to GEMV (ND A)
                mp.n = nb; mp.k = kl; mp.cmatrixInitVal = (k0 == 0 && kk == 0);
                Mmad(c1, a2, b2, mp);
                qA2.FreeTensor(a2); qB2.FreeTensor(b2);
            }
            qA1.FreeTensor(a1); qB1.FreeTensor(b1);
        }
        qC.EnQue(c1);
        c1 = qC.DeQue<AccT>();
        FixpipeParamsV220 fp;
        fp.nSize = nb; fp.mSize = mb; fp.srcStride = M16; fp.dstStride = t_.N; fp.ndNum = 1;
        fp.quantPre = sizeof(OutT) == 2 ? (std::is_same<OutT, half>::value ? QuantMode_t::F322F16 : QuantMode_t::F322BF16)
                                        : QuantMode_t::NoQuant;
        Fixpipe<OutT, AccT, CFG_ROW_MAJOR>(cGm[(uint64_t)row0 * t_.N + col0], c1, fp);
        qC.FreeTensor(c1);
    }
    MmTiling t_;
    uint32_t m16, n16, kc0;
    TPipe pipe;
    TQue<TPosition::A1, 2> qA1;
    TQue<TPosition::B1, 2> qB1;
    TQue<TPosition::A2, 2> qA2;
    TQue<TPosition::B2, 2> qB2;
    TQue<TPosition::CO1, 1> qC;
    GlobalTensor<T> aGm, bGm;
    GlobalTensor<OutT> cGm;
};

template <class T, class OutT>
__aicore__ inline void Run(GM_ADDR a, GM_ADDR b, GM_ADDR c, const MmTiling& t) {
    MatmulKernel<T, OutT> op;
    op.Init(a, b, c, t);
    op.Process();
}

extern "C" __global__ __aicore__ void matmul(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    MmTiling t = *(const MmTiling*)tiling;
    if (t.dtype == 0) {
        if (t.outHalf) Run<half, half>(a, b, c, t); else Run<half, float>(a, b, c, t);
    } else if (t.dtype == 1) {
        if (t.outHalf) Run<bfloat16_t, bfloat16_t>(a, b, c, t); else Run<bfloat16_t, float>(a, b, c, t);
    } else if (t.dtype == 2) {
        Run<float, float>(a, b, c, t);
    } else {
        Run<int8_t, int32_t>(a, b, c, t);
    }
}
""" + entry_glue("matmul", 5)


def mm_tiling(
    M, N, K, mB=64, nB=64, kB=64, kL0=32, dtype=0, out_half=0, trans_b=0, order=0, depth=2, gemv=0
) -> bytes:
    return struct.pack(
        "<13I", M, N, K, mB, nB, kB, kL0, dtype, out_half, trans_b, order, depth, gemv
    )


@pytest.fixture(scope="module")
def mm_so():
    return build_kernel({"mm.cpp": MM_SRC}, "mm.cpp")


def _bf16(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """bf16 bits (round to nearest even) and their float32 values."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return bits, (bits.astype(np.uint32) << 16).view(np.float32)


CASES = [  # M, N, K, tiles
    (64, 64, 64, dict(mB=64, nB=64, kB=64, kL0=32)),
    (128, 96, 160, dict(mB=64, nB=48, kB=64, kL0=32)),
    (70, 50, 90, dict(mB=32, nB=32, kB=48, kL0=32)),  # ragged everywhere
    (17, 33, 200, dict(mB=16, nB=48, kB=96, kL0=64)),  # ragged M, N, K; a 1-row block (m=2 trick)
    (17, 33, 200, dict(mB=16, nB=48, kB=96, kL0=64, gemv=1)),  # ... the 1-row block via GEMV (ND A)
    (1, 40, 300, dict(mB=16, nB=32, kB=128, kL0=64, gemv=1)),  # pure GEMV
]


@pytest.mark.parametrize("M,N,K,tiles", CASES)
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_matmul_matches_numpy(mm_so, M, N, K, tiles, dtype):
    rng = np.random.default_rng(M * 7 + N + K)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    if dtype == "fp16":
        ga, gb = a.astype(np.float16), b.astype(np.float16)
        fa, fb = ga.astype(np.float64), gb.astype(np.float64)
    else:
        ga, fa32 = _bf16(a)
        gb, fb32 = _bf16(b)
        fa, fb = fa32.astype(np.float64), fb32.astype(np.float64)
    want = fa @ fb
    t = mm_tiling(M, N, K, dtype=0 if dtype == "fp16" else 1, **tiles)
    r = run_kernel(
        mm_so, [ga, gb], outputs=[(M * N, np.float32)], tiling=t, block_dim=3, core_type="aic"
    )
    assert r.ok, r.message
    np.testing.assert_allclose(r.outputs[0].reshape(M, N), want, rtol=1e-5, atol=1e-4)


def test_matmul_fp16_output_fp32_and_int8_transposed_b(mm_so):
    M, N, K = 48, 80, 72
    rng = np.random.default_rng(5)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    t = mm_tiling(M, N, K, mB=32, nB=48, kB=48, kL0=32, out_half=1)
    r = run_kernel(mm_so, [a, b], outputs=[(M * N, np.float16)], tiling=t, block_dim=2)
    assert r.ok, r.message
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32).astype(np.float16)
    np.testing.assert_array_equal(r.outputs[0].reshape(M, N), want)
    # fp32 inputs: B supplied transposed (N x K), no fractal transpose on the L1 -> L0B path
    a32 = rng.standard_normal((M, K)).astype(np.float32)
    bt32 = rng.standard_normal((N, K)).astype(np.float32)
    t = mm_tiling(M, N, K, mB=32, nB=32, kB=40, kL0=16, dtype=2, trans_b=1)
    r = run_kernel(mm_so, [a32, bt32], outputs=[(M * N, np.float32)], tiling=t, block_dim=4)
    assert r.ok, r.message
    np.testing.assert_allclose(
        r.outputs[0].reshape(M, N),
        a32.astype(np.float64) @ bt32.T.astype(np.float64),
        rtol=1e-5,
        atol=1e-5,
    )
    # int8 inputs, int32 accumulation and output (K0 = 32), B supplied transposed
    a8 = rng.integers(-8, 8, (M, K)).astype(np.int8)
    bt8 = rng.integers(-8, 8, (N, K)).astype(np.int8)
    t = mm_tiling(M, N, K, mB=32, nB=48, kB=64, kL0=32, dtype=3, trans_b=1)
    r = run_kernel(mm_so, [a8, bt8], outputs=[(M * N, np.int32)], tiling=t, block_dim=2)
    assert r.ok, r.message
    np.testing.assert_array_equal(
        r.outputs[0].reshape(M, N), a8.astype(np.int64) @ bt8.T.astype(np.int64)
    )


def test_matmul_trace_pipes_and_queue_events(mm_so):
    M = N = K = 64
    a = np.ones((M, K), np.float16)
    b = np.ones((K, N), np.float16)
    t = mm_tiling(M, N, K, mB=64, nB=64, kB=64, kL0=32)
    r = run_kernel(mm_so, [a, b], outputs=[(M * N, np.float32)], tiling=t, block_dim=1,
                   trace="records")
    assert r.ok, r.message
    assert (r.outputs[0] == K).all()
    tr = r.trace
    ins = tr[tr["kind"] == int(RecordKind.INSTR)]
    by_op = {
        int(o): ins[ins["op"] == int(o)]
        for o in (
            Op.DATA_COPY_GM2L1,
            Op.LOAD_DATA_L1_L0A,
            Op.LOAD_DATA_L1_L0B,
            Op.MMAD,
            Op.FIXPIPE_L0C2GM,
        )
    }
    assert (by_op[int(Op.DATA_COPY_GM2L1)]["pipe"] == int(Pipe.MTE2)).all()
    nd = by_op[int(Op.DATA_COPY_GM2L1)][0]
    assert (
        nd["blocks"] == 64 and nd["bytes"] == 64 * 64 * 2 and nd["k"] == K * 2 and nd["pipe2"] == 1
    )
    assert (by_op[int(Op.LOAD_DATA_L1_L0A)]["pipe"] == int(Pipe.MTE1)).all()
    assert (by_op[int(Op.LOAD_DATA_L1_L0B)]["pipe"] == int(Pipe.MTE1)).all()
    mm = by_op[int(Op.MMAD)]
    assert len(mm) == 2 and (mm["pipe"] == int(Pipe.M)).all()
    assert mm[0]["m"] == 64 and mm[0]["n"] == 64 and mm[0]["k"] == 32
    assert mm[0]["dtype"] == int(DType.F16) and mm[0]["dtype2"] == int(DType.F32)
    fx = by_op[int(Op.FIXPIPE_L0C2GM)]
    assert len(fx) == 1 and fx[0]["pipe"] == int(Pipe.FIX) and fx[0]["bytes"] == M * N * 4
    assert fx[0]["m"] == M and fx[0]["n"] == N and fx[0]["pipe2"] == 3
    # queue events: A1/B1 MTE2 -> MTE1, A2/B2 MTE1 -> M, CO1 M -> FIX
    sets = tr[tr["kind"] == int(RecordKind.SET_FLAG)]
    pairs = {(int(s["pipe"]), int(s["pipe2"])) for s in sets}
    assert {
        (int(Pipe.MTE2), int(Pipe.MTE1)),
        (int(Pipe.MTE1), int(Pipe.M)),
        (int(Pipe.M), int(Pipe.FIX)),
    } <= pairs
    # trace-only gives the same records
    r2 = run_kernel(
        mm_so,
        [(M * K, np.float16), (K * N, np.float16)],
        outputs=[(M * N, np.float32)],
        tiling=t,
        block_dim=1,
        trace_only=True,
        trace="records",
    )
    assert r2.ok and np.array_equal(r2.trace, tr)


# ------------------------------------------------------------------------------------------
# cube: LoadDataWithTranspose (fp32 B stored K x N)
# ------------------------------------------------------------------------------------------

# B (K x N, row-major) goes to L1 as 16-row strips whose 16 x 8 fractals are consecutive (two
# fractals side by side = one 16 x 16 square); LoadDataWithTranspose turns each square into the
# two Zn fractals of L0B (k rows 0-7 and 8-15 of one 16-column block), dstFracGap = N1 - 1 apart.
LDT_SRC = r"""
#include "kernel_operator.h"
using namespace AscendC;
struct LTiling { uint32_t M, N, K, perSquare; };

extern "C" __global__ __aicore__ void ldt(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    LTiling t = *(const LTiling*)tiling;
    const uint32_t M = t.M, N = t.N, K = t.K;
    const uint32_t M16 = (M + 15) / 16 * 16, N16 = (N + 15) / 16 * 16, K16 = (K + 15) / 16 * 16;
    const uint32_t K1 = (K + 7) / 8, n1 = N16 / 16;
    GlobalTensor<float> aGm, bGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, M * K);
    bGm.SetGlobalBuffer((__gm__ float*)b, K * N);
    cGm.SetGlobalBuffer((__gm__ float*)c, M * N);
    TPipe pipe;
    TBuf<TPosition::A1> la;
    TBuf<TPosition::B1> lb;
    TBuf<TPosition::A2> l0a;
    TBuf<TPosition::B2> l0b;
    TBuf<TPosition::CO1> l0c;
    pipe.InitBuffer(la, M16 * K16 * 4);
    pipe.InitBuffer(lb, K16 * N16 * 4);
    pipe.InitBuffer(l0a, 32768);
    pipe.InitBuffer(l0b, 32768);
    pipe.InitBuffer(l0c, M16 * N16 * 4);
    LocalTensor<float> a1 = la.Get<float>(), b1 = lb.Get<float>(), a2 = l0a.Get<float>(), b2 = l0b.Get<float>();
    LocalTensor<float> c1 = l0c.Get<float>();
    Nd2NzParams pa;
    pa.nValue = M; pa.dValue = K; pa.srcDValue = K; pa.dstNzC0Stride = M16; pa.dstNzNStride = 1;
    DataCopy(a1, aGm, pa);
    Nd2NzParams pb;  // full 16-row strips, one matrix each
    pb.ndNum = K / 16; pb.nValue = 16; pb.dValue = N; pb.srcNdMatrixStride = 16 * N; pb.srcDValue = N;
    pb.dstNzC0Stride = 16; pb.dstNzNStride = 1; pb.dstNzMatrixStride = 16 * N16;
    DataCopy(b1, bGm, pb);
    if (K % 16) {  // ragged last strip
        pb.ndNum = 1; pb.nValue = K % 16;
        DataCopy(b1[(K / 16) * 16 * N16], bGm[(K / 16) * 16 * N], pb);
    }
    SetFlag<HardEvent::MTE2_MTE1>(0);
    WaitFlag<HardEvent::MTE2_MTE1>(0);
    for (uint32_t mb = 0; mb < M16 / 16; ++mb) {
        LoadData2DParams ld; ld.repeatTimes = K1; ld.srcStride = M16 / 16;
        LoadData(a2[mb * K1 * 128], a1[mb * 128], ld);
    }
    for (uint32_t s = 0; s < K16 / 16; ++s) {
        LoadData2dTransposeParams lt;
        lt.startIndex = s * n1; lt.repeatTimes = n1; lt.srcStride = 1;
        if (t.perSquare) {  // same Zn layout, one square per call (startIndex picks it)
            for (uint32_t r = 0; r < n1; ++r) {
                LoadData2dTransposeParams one(s * n1 + r, 1, 1, 0, n1 - 1);
                LoadDataWithTranspose(b2[(s * 2 * n1 + r) * 128], b1, one);
            }
            continue;
        }
        lt.dstGap = 0; lt.dstFracGap = n1 - 1;
        LoadDataWithTranspose(b2[s * 2 * n1 * 128], b1, lt);
    }
    SetFlag<HardEvent::MTE1_M>(0);
    WaitFlag<HardEvent::MTE1_M>(0);
    MmadParams mp; mp.m = M; mp.n = N; mp.k = K;
    Mmad(c1, a2, b2, mp);
    SetFlag<HardEvent::M_FIX>(0);
    WaitFlag<HardEvent::M_FIX>(0);
    FixpipeParamsV220 fp; fp.mSize = M; fp.nSize = N; fp.srcStride = M16; fp.dstStride = N;
    Fixpipe(cGm, c1, fp);
}
""" + entry_glue("ldt", 5)


@pytest.mark.parametrize("M,N,K", [(20, 40, 40), (32, 48, 64), (17, 8, 9)])
def test_load_data_with_transpose_fp32_matmul(M, N, K):
    so = build_kernel({"ldt.cpp": LDT_SRC}, "ldt.cpp")
    rng = np.random.default_rng(M * N + K)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    want = a.astype(np.float64) @ b.astype(np.float64)
    n1 = (N + 15) // 16
    for per_square in (0, 1):
        t = struct.pack("<4I", M, N, K, per_square)
        r = run_kernel(so, [a, b], outputs=[(M * N, np.float32)], tiling=t, block_dim=1,
                       trace="records")
        assert r.ok, r.message
        np.testing.assert_allclose(r.outputs[0].reshape(M, N), want, rtol=1e-5, atol=1e-5)
        tr = r.trace
        ins = tr[tr["kind"] == int(RecordKind.INSTR)]
        lb = ins[ins["op"] == int(Op.LOAD_DATA_L1_L0B)]
        strips = (K + 15) // 16
        assert len(lb) == strips * (n1 if per_square else 1)
        assert all(int(x) == int(Pipe.MTE1) for x in lb["pipe"])
        assert all(int(x) == int(DType.F32) for x in lb["dtype"])
        assert int(lb["bytes"].sum()) == strips * n1 * 1024
        assert int(lb["blocks"].sum()) == strips * n1 * 2


# ------------------------------------------------------------------------------------------
# cube: capacity, alignment, format and core-type rules
# ------------------------------------------------------------------------------------------

CUBE_ERR_SRC = r"""
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void cube_err(GM_ADDR a, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling) {
    uint32_t mode = *(const uint32_t*)tiling;
    if (mode == 13) KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    else if (mode != 9) KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    GlobalTensor<half> aGm; aGm.SetGlobalBuffer((__gm__ half*)a, 64 * 64);
    GlobalTensor<float> cGm; cGm.SetGlobalBuffer((__gm__ float*)c, 64 * 64);
    GlobalTensor<half> cHalf; cHalf.SetGlobalBuffer((__gm__ half*)c, 64 * 64);
    TPipe pipe;
    TBuf<TPosition::A1> l1;
    TBuf<TPosition::A2> l0a;
    TBuf<TPosition::B2> l0b;
    TBuf<TPosition::CO1> l0c;
    if (mode == 1) { TQue<TPosition::A2, 2> q; pipe.InitBuffer(q, 2, 40960); return; }
    if (mode == 2) { pipe.InitBuffer(l0c, 256 * 1024); return; }
    if (mode == 8) { TQue<TPosition::VECIN, 1> q; pipe.InitBuffer(q, 1, 1024); return; }
    pipe.InitBuffer(l1, 64 * 64 * 2);
    pipe.InitBuffer(l0a, 64 * 64 * 2);
    pipe.InitBuffer(l0b, 64 * 64 * 2);
    pipe.InitBuffer(l0c, 64 * 64 * 4);
    LocalTensor<half> a1 = l1.Get<half>(), a2 = l0a.Get<half>(), b2 = l0b.Get<half>();
    LocalTensor<float> c1 = l0c.Get<float>();
    LoadData2DParams ld; ld.repeatTimes = 4; ld.srcStride = 1;
    MmadParams mp; mp.m = 64; mp.n = 64; mp.k = 64;
    FixpipeParamsV220 fp; fp.mSize = 64; fp.nSize = 64; fp.srcStride = 64; fp.dstStride = 64;
    Nd2NzParams nz; nz.nValue = 64; nz.dValue = 64; nz.srcDValue = 64; nz.dstNzC0Stride = 64; nz.dstNzNStride = 1;
    switch (mode) {
        case 3: LoadData(a2[128], a1, ld); break;
        case 4: { LocalTensor<float> f1 = l1.Get<float>(), f2 = l0a.Get<float>(); ld.ifTranspose = true; LoadData(f2, f1, ld); break; }
        case 5: Mmad(c1, a1, b2, mp); break;
        case 6: mp.m = 128; Mmad(c1, a2, b2, mp); break;
        case 7: fp.nSize = 40; Fixpipe<float, float, CFG_NZ>(cGm, c1, fp); break;
        case 9: pipe.InitBuffer(l1, 1024); break;  // run as AIV
        case 10: { LocalTensor<float> bf = l0b.Get<float>(); Mmad(c1, a2, bf, mp); break; }
        case 11: nz.dValue = 80; DataCopy(a1, aGm, nz); break;
        case 12: Fixpipe<half, float, CFG_ROW_MAJOR>(cHalf, c1, fp); break;
        case 14: mp.m = 16; mp.n = 16; Mmad(c1[128], a2, b2, mp); break;
        case 15: fp.srcStride = 48; Fixpipe(cGm, c1, fp); break;
        case 16: fp.dstStride = 32; Fixpipe(cGm, c1, fp); break;
        case 17: fp.mSize = 65; fp.srcStride = 80; Fixpipe(cGm, c1, fp); break;  // L0C extent beyond the buffer
        case 18: { LocalTensor<int8_t> i1 = l1.Get<int8_t>(), i2 = l0b.Get<int8_t>();
                   LoadDataWithTranspose(i2, i1, LoadData2dTransposeParams(0, 2, 1, 0, 0)); break; }
        case 19: { LocalTensor<float> f1 = l1.Get<float>(), f2 = l0b.Get<float>();
                   LoadDataWithTranspose(f2, f1, LoadData2dTransposeParams(0, 4, 1, 0, 0)); break; }
        case 20: { LocalTensor<float> f1 = l1.Get<float>(), f2 = l0b.Get<float>();
                   LoadDataWithTranspose(f2[64], f1, LoadData2dTransposeParams(0, 2, 1, 1, 0)); break; }
        case 21: { LocalTensor<float> f1 = l1.Get<float>(), f2 = l0b.Get<float>();
                   LoadDataWithTranspose(f2, f1, LoadData2dTransposeParams(0, 4, 3, 1, 0)); break; }
        case 22: LoadDataWithTranspose(a1, b2, LoadData2dTransposeParams(0, 1, 1, 0, 0)); break;
        case 23: { LocalTensor<float> f1 = l1.Get<float>(); Fixpipe<float, float, CFG_ROW_MAJOR>(f1, c1, fp); break; }
        case 24: { LocalTensor<float> f1 = l1.Get<float>(); fp.dstStride = 128;
                   Fixpipe<float, float, CFG_NZ>(f1, c1, fp); break; }  // 64 x 64 fp32 into 8 KiB of L1
        case 25: { LocalTensor<float> f1 = l1.Get<float>(); fp.mSize = 16; fp.nSize = 16; fp.srcStride = 16; fp.dstStride = 2;
                   fp.quantPre = QuantMode_t::F322F16; Fixpipe<float, float, CFG_NZ>(f1, c1, fp); break; }
        case 26: { LocalTensor<float> f1 = l1.Get<float>(); fp.mSize = 16; fp.nSize = 16; fp.srcStride = 16; fp.dstStride = 32;
                   Fixpipe<float, float, CFG_NZ>(f1, c1, fp); WaitFlag<HardEvent::FIX_MTE1>(0); break; }
        default: break;
    }
}
""" + entry_glue("cube_err", 4)


@pytest.fixture(scope="module")
def err_so():
    return build_kernel({"cube_err.cpp": CUBE_ERR_SRC}, "cube_err.cpp")


@pytest.mark.parametrize(
    "mode,fragments",
    [
        (1, ["TPipe::InitBuffer", "L0A over-allocation", "81920 B needed > 65536 B available"]),
        (2, ["L0C over-allocation", "262144 B needed > 131072 B available"]),
        (3, ["LoadData(L1->L0A)", "dst", "L0A address 256 is not 512 B aligned"]),
        (4, ["LoadData(L1->L0A)", "ifTranspose", "16-bit type", "fp32"]),
        (5, ["Mmad", "fm is at position A1 (L1)", "must be in L0A"]),
        (6, ["Mmad", "out-of-bounds local access: dst needs 32768 B", "16384 B"]),
        (7, ["Fixpipe(L0C->GM, CFG_NZ)", "nSize=40 must be a multiple of 16"]),
        (8, ["InitBuffer", "UB is not available on a cube core (AIC)"]),
        (9, ["InitBuffer", "L1 is not available on a vector core (AIV)"]),
        (10, ["Mmad", "fm=fp16 filter=fp32 dst=fp32", "not supported"]),
        (11, ["DataCopy(GM->L1, Nd2NzParams)", "dValue=80 exceeds srcDValue=64"]),
        (12, ["Fixpipe", "fp32 -> fp16 with quantPre=0", "F322F16"]),
        (13, ["KERNEL_TASK_TYPE_DEFAULT", "KERNEL_TYPE_MIX_AIC_1_2", "must be launched with core_type=mix"]),
        (14, ["Mmad", "dst L0C address 512 is not 1024 B aligned"]),
        (15, ["Fixpipe", "srcStride=48 is below ceil(mSize, 16)=64"]),
        (16, ["Fixpipe", "dstStride=32 is below nSize=64"]),
        (17, ["Fixpipe", "out-of-bounds local access: src needs"]),
        (18, ["LoadDataWithTranspose(L1->L0B)", "int8", "not emulated"]),
        (19, ["LoadDataWithTranspose(L1->L0B)", "dstGap=0 dstFracGap=0", "must not overlap"]),
        (20, ["LoadDataWithTranspose(L1->L0B)", "L0B address 256 is not 512 B aligned"]),
        (21, ["LoadDataWithTranspose(L1->L0B)", "out-of-bounds local access: src needs 10240 B", "8192 B"]),
        (22, ["LoadDataWithTranspose(L1->L0A)", "dst is at position A1 (L1)"]),
        (23, ["Fixpipe(L0C->L1)", "only CFG_NZ"]),
        (24, ["Fixpipe(L0C->L1)", "out-of-bounds local access: dst needs"]),
        (25, ["Fixpipe(L0C->L1)", "fp32 -> fp32 with quantPre=1 is not supported"]),
        (26, ["WaitFlag<HardEvent::FIX_MTE1>(0) without a preceding SetFlag"]),
    ],
)
def test_cube_rule_violations_are_named_errors(err_so, mode, fragments):
    core = "aiv" if mode == 9 else "auto"
    r = run_kernel(
        err_so,
        [np.zeros(64 * 64, np.float16)],
        outputs=[(64 * 64, np.float32)],
        tiling=struct.pack("<I", mode),
        block_dim=1,
        core_type=core,
    )
    assert r.status == "error", (mode, r.status, r.message)
    for f in fragments:
        assert f in r.message, r.message
    assert r.message.endswith("[block 0]")


def test_cube_valid_mode_and_declared_type_conflict(err_so):
    ok = run_kernel(
        err_so,
        [np.zeros(64 * 64, np.float16)],
        outputs=[(64 * 64, np.float32)],
        tiling=struct.pack("<I", 0),
        block_dim=2,
    )
    assert ok.ok, ok.message
    bad = run_kernel(
        err_so,
        [np.zeros(64 * 64, np.float16)],
        outputs=[(64 * 64, np.float32)],
        tiling=struct.pack("<I", 0),
        block_dim=1,
        core_type="aiv",
    )
    assert bad.status == "error" and "declares a cube (AIC) kernel" in bad.message
    small = run_kernel(
        err_so,
        [np.zeros(64 * 64, np.float16)],
        outputs=[(64 * 64, np.float32)],
        tiling=struct.pack("<I", 0),
        block_dim=1,
        soc_buffers={"l0c": 8192},
    )
    assert (
        small.status == "error"
        and "L0C over-allocation: 16384 B needed > 8192 B available" in small.message
    )


CORE_SRC = r"""
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void which_core(GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling) {
    GlobalTensor<int32_t> o;
    o.SetGlobalBuffer((__gm__ int32_t*)out, 16);
    if ASCEND_IS_AIC { o.SetValue(GetBlockIdx(), 1); }
    if ASCEND_IS_AIV { o.SetValue(8 + GetBlockIdx(), 2); }
}
""" + entry_glue("which_core", 3)


def test_ascend_is_aic_aiv_follow_the_core_type():
    so = build_kernel({"core.cpp": CORE_SRC}, "core.cpp")
    res = {}
    for ct in ("auto", "aiv", "aic"):
        r = run_kernel(
            so, [], outputs=[np.zeros(16, np.int32)], tiling=b"\0" * 4, block_dim=3, core_type=ct
        )
        assert r.ok, r.message
        res[ct] = r.outputs[0]
    np.testing.assert_array_equal(res["aic"][:8], [1, 1, 1, 0, 0, 0, 0, 0])
    assert not res["aic"][8:].any()
    for ct in ("auto", "aiv"):
        assert not res[ct][:8].any()
        np.testing.assert_array_equal(res[ct][8:11], [2, 2, 2])
    with pytest.raises(ValueError, match="core_type"):
        run_kernel(
            so, [], outputs=[(16, np.int32)], tiling=b"\0" * 4, block_dim=1, core_type="cube"
        )
