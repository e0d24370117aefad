"""Emulator: mixed launches (core_type="mix", KERNEL_TYPE_MIX_AIC_1_2) — each block is one AI Core
of an AIC and two AIVs synchronised by CrossCoreSetFlag / CrossCoreWaitFlag (mode 2): a cube stage
writes block i into a GM ring while the vector cores apply an epilogue to earlier blocks. Checked
against numpy, with the flags' failure modes (a deadlock, a misused flag) as clear failed runs."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from ascendcraft.emulator import build_kernel, run_kernel
from ascendcraft.emulator.build import entry_glue
from ascendcraft.emulator.trace_format import RecordKind
from ascendcraft.soc import load_soc

pytestmark = pytest.mark.skipif(
    __import__("shutil").which("g++") is None, reason="g++ is needed to build emulator kernels"
)

# C = relu(A @ B) + 0.5 with A M x K, B K x N (fp16, K <= 64), blocks BM x BN; the AIC of AI Core g
# computes blocks g, g + G, ... into ring slot j % RING (fp32), flag 0 = "slot ready" (AIC -> AIVs),
# flag 1 = "slot free" (both AIVs -> AIC); AIV s takes its half of the block's rows.
MIX_SRC = r"""
#include "kernel_operator.h"
using namespace AscendC;
struct MixTiling { uint32_t M, N, K, BM, BN, ring, mode, pad; };
__aicore__ inline uint32_t CeilDiv(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
__aicore__ inline uint32_t CeilAlign(uint32_t a, uint32_t b) { return CeilDiv(a, b) * b; }

class MixKernel {
public:
    __aicore__ inline void Init(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR ws, const MixTiling& t) {
        t_ = t;
        aGm.SetGlobalBuffer((__gm__ half*)a, (uint64_t)t.M * t.K);
        bGm.SetGlobalBuffer((__gm__ half*)b, (uint64_t)t.K * t.N);
        cGm.SetGlobalBuffer((__gm__ float*)c, (uint64_t)t.M * t.N);
        wsGm.SetGlobalBuffer((__gm__ float*)ws, (uint64_t)GetBlockNum() * t.ring * t.BM * t.BN);
        nb_ = CeilDiv(t.M, t.BM) * CeilDiv(t.N, t.BN);
        if ASCEND_IS_AIC {
            pipe.InitBuffer(qA1, 1, t.BM * 64 * sizeof(half));
            pipe.InitBuffer(qB1, 1, 64 * t.BN * sizeof(half));
            pipe.InitBuffer(qA2, 1, t.BM * 64 * sizeof(half));
            pipe.InitBuffer(qB2, 1, 64 * t.BN * sizeof(half));
            pipe.InitBuffer(qC, 1, t.BM * t.BN * sizeof(float));
        } else {
            pipe.InitBuffer(qV, 2, t.BM * t.BN * sizeof(float));
        }
    }
    __aicore__ inline void Process() {
        const uint32_t g = ASCEND_IS_AIC ? GetBlockIdx() : GetBlockIdx() / GetSubBlockNum();
        const uint32_t G = GetBlockNum();
        uint32_t j = 0;
        for (uint32_t blk = g; blk < nb_; blk += G, ++j) {
            if ASCEND_IS_AIC {
                if (j >= t_.ring && t_.mode != 3) CrossCoreWaitFlag(1);
                if (t_.mode == 2) CrossCoreWaitFlag(5);  // never set by anyone
                CubeBlock(blk, j % t_.ring);
                CrossCoreSetFlag<2, PIPE_FIX>(0);
            } else {
                CrossCoreWaitFlag(0);
                VecBlock(blk, j % t_.ring);
                if (t_.mode != 1) CrossCoreSetFlag<2, PIPE_MTE2>(1);
            }
        }
        if ASCEND_IS_AIC {  // the frees of the last blocks: leave no flag pending
            if (t_.mode == 0 || t_.mode == 1)
                for (uint32_t i = 0; i < (j < t_.ring ? j : t_.ring); ++i) CrossCoreWaitFlag(1);
        }
    }

private:
    __aicore__ inline void Origin(uint32_t blk, uint32_t& row0, uint32_t& col0, uint32_t& mb, uint32_t& nb) {
        const uint32_t bn = CeilDiv(t_.N, t_.BN);
        row0 = blk / bn * t_.BM; col0 = blk % bn * t_.BN;
        mb = t_.M - row0 < t_.BM ? t_.M - row0 : t_.BM;
        nb = t_.N - col0 < t_.BN ? t_.N - col0 : t_.BN;
    }
    __aicore__ inline uint64_t Slot(uint32_t slot) {
        const uint32_t g = ASCEND_IS_AIC ? GetBlockIdx() : GetBlockIdx() / GetSubBlockNum();
        return ((uint64_t)g * t_.ring + slot) * t_.BM * t_.BN;
    }
    __aicore__ inline void CubeBlock(uint32_t blk, uint32_t slot) {
        uint32_t row0, col0, mb, nb;
        Origin(blk, row0, col0, mb, nb);
        const uint32_t M16 = CeilAlign(mb, 16), N16 = CeilAlign(nb, 16), K16 = CeilAlign(t_.K, 16);
        LocalTensor<half> a1 = qA1.AllocTensor<half>(), b1 = qB1.AllocTensor<half>();
        Nd2NzParams pa;
        pa.ndNum = 1; pa.nValue = mb; pa.dValue = t_.K; pa.srcNdMatrixStride = 0; pa.srcDValue = t_.K;
        pa.dstNzC0Stride = M16; pa.dstNzNStride = 1; pa.dstNzMatrixStride = 0;
        DataCopy(a1, aGm[(uint64_t)row0 * t_.K], pa);
        Nd2NzParams pb;
        pb.ndNum = 1; pb.nValue = t_.K; pb.dValue = nb; pb.srcNdMatrixStride = 0; pb.srcDValue = t_.N;
        pb.dstNzC0Stride = K16; pb.dstNzNStride = 1; pb.dstNzMatrixStride = 0;
        DataCopy(b1, bGm[col0], pb);
        qA1.EnQue(a1); qB1.EnQue(b1);
        a1 = qA1.DeQue<half>(); b1 = qB1.DeQue<half>();
        LocalTensor<half> a2 = qA2.AllocTensor<half>(), b2 = qB2.AllocTensor<half>();
        LoadData2DParams la;
        la.repeatTimes = K16 / 16; la.srcStride = M16 / 16; la.ifTranspose = false;
        for (uint32_t i = 0; i < M16 / 16; ++i) LoadData(a2[i * K16 * 16], a1[i * 256], la);
        LoadData2DParams lb;
        lb.repeatTimes = N16 / 16; lb.srcStride = K16 / 16; lb.ifTranspose = true;
        for (uint32_t i = 0; i < K16 / 16; ++i) LoadData(b2[i * N16 * 16], b1[i * 256], lb);
        qA2.EnQue(a2); qB2.EnQue(b2);
        a2 = qA2.DeQue<half>(); b2 = qB2.DeQue<half>();
        LocalTensor<float> c1 = qC.AllocTensor<float>();
        MmadParams mp;
        mp.m = mb == 1 ? 2 : mb; mp.n = nb; mp.k = t_.K; mp.cmatrixInitVal = true;
        Mmad(c1, a2, b2, mp);
        qA2.FreeTensor(a2); qB2.FreeTensor(b2); qA1.FreeTensor(a1); qB1.FreeTensor(b1);
        qC.EnQue(c1);
        c1 = qC.DeQue<float>();
        FixpipeParamsV220 fp;
        fp.nSize = nb; fp.mSize = mb; fp.srcStride = M16; fp.dstStride = t_.BN; fp.ndNum = 1;
        fp.quantPre = QuantMode_t::NoQuant;
        Fixpipe<float, float, CFG_ROW_MAJOR>(wsGm[Slot(slot)], c1, fp);
        qC.FreeTensor(c1);
    }
    __aicore__ inline void VecBlock(uint32_t blk, uint32_t slot) {
        uint32_t row0, col0, mb, nb;
        Origin(blk, row0, col0, mb, nb);
        const uint32_t half_rows = CeilDiv(mb, 2), s = GetSubBlockIdx();
        const uint32_t r0 = s * half_rows, rows = s == 0 ? half_rows : mb - half_rows;
        if (rows == 0) return;
        const uint32_t wp = CeilAlign(nb, 8);  // UB row pitch (32 B)
        LocalTensor<float> x = qV.AllocTensor<float>();
        DataCopyExtParams in{(uint16_t)rows, nb * 4, (t_.BN - nb) * 4, 0, 0};  // UB rows padded to 32 B (wp)
        DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
        DataCopyPad(x, wsGm[Slot(slot) + (uint64_t)r0 * t_.BN], in, pad);
        qV.EnQue(x);
        x = qV.DeQue<float>();
        Relu(x, x, (int32_t)(rows * wp));
        Adds(x, x, 0.5f, (int32_t)(rows * wp));
        SetFlag<HardEvent::V_MTE3>(0);
        WaitFlag<HardEvent::V_MTE3>(0);
        DataCopyExtParams out{(uint16_t)rows, nb * 4, 0, (t_.N - nb) * 4, 0};
        DataCopyPad(cGm[(uint64_t)(row0 + r0) * t_.N + col0], x, out);
        qV.FreeTensor(x);
    }
    MixTiling t_;
    uint32_t nb_ = 0;
    TPipe pipe;
    TQue<TPosition::A1, 1> qA1;
    TQue<TPosition::B1, 1> qB1;
    TQue<TPosition::A2, 1> qA2;
    TQue<TPosition::B2, 1> qB2;
    TQue<TPosition::CO1, 1> qC;
    TQue<TPosition::VECIN, 2> qV;
    GlobalTensor<half> aGm, bGm;
    GlobalTensor<float> cGm, wsGm;
};

extern "C" __global__ __aicore__ void mixmm(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR ws, GM_ADDR workspace,
                                            GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    MixTiling t = *(const MixTiling*)tiling;
    MixKernel op;
    op.Init(a, b, c, ws, t);
    op.Process();
}
""" + entry_glue("mixmm", 6)


@pytest.fixture(scope="module")
def mix_so():
    return build_kernel({"mix.cpp": MIX_SRC}, "mix.cpp")


def _run(so, M, N, K, BM, BN, ring, groups, mode=0, rng_seed=0, core_type="mix", trace=False):
    rng = np.random.default_rng(rng_seed)
    a = (rng.standard_normal((M, K)) * 2).astype(np.float16)  # signed data
    b = (rng.standard_normal((K, N))).astype(np.float16)
    t = struct.pack("<8I", M, N, K, BM, BN, ring, mode, 0)
    r = run_kernel(so, [a, b], outputs=[(M * N, np.float32), (groups * ring * BM * BN, np.float32)], tiling=t,
                   block_dim=groups, core_type=core_type, trace=trace, timeout_s=30)
    want = np.maximum(a.astype(np.float64) @ b.astype(np.float64), 0) + 0.5
    return r, want


@pytest.mark.parametrize("M,N,K,BM,BN,ring,groups", [
    (64, 64, 32, 32, 32, 2, 2),     # 4 blocks, 2 per AI Core, ring of 2
    (100, 70, 48, 32, 32, 2, 3),    # ragged M and N (a 4-row tail block, 6-column tail)
    (96, 96, 64, 32, 32, 1, 2),     # ring of 1: cube and vector strictly alternate
    (33, 40, 16, 16, 32, 3, 4),     # odd block rows: AIV 1 gets one row less; one row on its own
])
def test_mixed_matmul_epilogue_matches_numpy(mix_so, M, N, K, BM, BN, ring, groups):
    r, want = _run(mix_so, M, N, K, BM, BN, ring, groups)
    assert r.ok, r.message
    np.testing.assert_allclose(r.outputs[0].reshape(M, N), want, rtol=1e-5, atol=1e-4)


def test_mixed_trace_has_both_core_types_and_cross_core_records(mix_so):
    groups = 2
    r, _ = _run(mix_so, 64, 64, 32, 32, 32, 2, groups, trace="records")
    assert r.ok, r.message
    tr = r.trace
    cores = set(np.unique(tr["core"]).tolist())
    assert cores == {0, 1, groups + 0, groups + 1, groups + 2, groups + 3}  # AIC g; AIV at n + 2g + s
    sets = tr[tr["kind"] == int(RecordKind.CROSS_SET)]
    waits = tr[tr["kind"] == int(RecordKind.CROSS_WAIT)]
    # per AIC: 2 blocks set "ready"; per AIV: 2 "free" sets; waits: AIV 2 each, AIC the 2 final frees
    assert len(sets) == groups * 2 + 2 * groups * 2
    assert len(waits) == 2 * groups * 2 + groups * 2
    assert set(sets["pipe2"].tolist()) == {2}  # mode 2


@pytest.mark.parametrize("mode,fragment", [
    (1, "deadlock: CrossCoreWaitFlag(1)"),   # the AIVs never free a slot: the AIC waits forever
    (2, "deadlock: CrossCoreWaitFlag(5)"),   # a flag no core ever sets
    (3, "more than 15 sets pending"),        # the AIC never waits for frees: the counter overflows
])
def test_mixed_flag_misuse_is_a_failed_run_not_a_hang(mix_so, mode, fragment):
    # mode 3: 40 blocks on 1 AI Core; the AIVs' frees pile up past the documented 15
    M, N = (64, 64) if mode != 3 else (32 * 20, 64)
    r, _ = _run(mix_so, M, N, 32, 32, 32, 2 if mode != 3 else 64, 1, mode=mode)
    assert not r.ok
    assert fragment in r.message, r.message
    assert "would hang" in r.message or mode == 3


def test_mixed_kernel_refuses_a_single_core_type_launch(mix_so):
    r, _ = _run(mix_so, 64, 64, 32, 32, 32, 2, 2, core_type="aic")
    assert not r.ok
    assert "core_type=mix" in r.message


# ------------------------------------------------------------------------------------------
# the model: one launch, the cube and vector timelines overlapped through the flags
# ------------------------------------------------------------------------------------------


def test_model_overlaps_cube_and_vector_and_agrees_with_the_full_simulation(mix_so):
    from ascendcraft.model.mixed import simulate_mixed

    M, N, K, BM, BN, groups = 512, 256, 64, 64, 64, 2  # 32 blocks: 16 per AI Core
    runs = {}
    for ring in (1, 2):
        r, _ = _run(mix_so, M, N, K, BM, BN, ring, groups, trace=True)
        assert r.ok, r.message
        fast = simulate_mixed(r.trace, "Ascend910B2", groups)
        full = simulate_mixed(r.trace.records(), "Ascend910B2", groups)
        assert abs(fast.time_us - full.time_us) <= 1e-6 * full.time_us + 1e-6
        runs[ring] = fast
    one, two = runs[1], runs[2]
    lat = load_soc("Ascend910B2").sync_all_us  # the assumed cost of one flag hand-off
    blocks = (M // BM) * (N // BN) // groups
    for m in (one, two):  # one launch: at least the longer side
        assert m.kernel_us >= max(m.resources_us["cube"], m.resources_us["vector"])
    # a ring of 1 strictly alternates: two hand-offs per block are on the critical path
    assert one.kernel_us >= 2 * blocks * lat
    # a ring of 2 lets the cube write block i + 1 while the vector cores work on block i
    assert two.time_us < one.time_us
    assert two.kernel_us < 2 * blocks * lat
    assert two.kernel_us == pytest.approx(two.core_us.max())  # the launch ends with its last core
    assert len(two.core_us) == 3 * groups


def test_model_names_a_deadlock_in_a_hand_made_trace(mix_so):
    from ascendcraft.model.mixed import ModelDeadlock, simulate_mixed

    r, _ = _run(mix_so, 64, 64, 32, 32, 32, 2, 1, trace="records")
    assert r.ok, r.message
    tr = r.trace
    drop = (tr["core"] == 0) & (tr["kind"] == int(RecordKind.CROSS_SET))  # the AIC never signals
    with pytest.raises(ModelDeadlock, match="would hang"):
        simulate_mixed(tr[~drop], "Ascend910B2", 1)
