"""Performance model of the cube unit: Mmad / L1->L0 / FIX costs from the SoC spec, a 4096^3
fp16 matmul traced by the emulator near cube peak, L2 reuse that depends on block order, and a
cube kernel followed by a vector epilogue launch (two launches sharing GM)."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import struct
from pathlib import Path

import numpy as np
import pytest

from ascendcraft.emulator import build_kernel, run_kernel
from ascendcraft.emulator.build import entry_glue
from ascendcraft.emulator.trace_format import DType, Op, Pipe, RecordKind
from ascendcraft.model import min_bytes, roofline_us, simulate
from ascendcraft.model.synth import TraceBuilder, elementwise_trace
from ascendcraft.soc import load_soc

_spec = importlib.util.spec_from_file_location(
    "_cube_kernels", Path(__file__).with_name("test_emulator_cube.py")
)
_ck = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_ck)
MM_SRC, mm_tiling = _ck.MM_SRC, _ck.mm_tiling

needs_gxx = pytest.mark.skipif(__import__("shutil").which("g++") is None, reason="g++ is needed")


@pytest.fixture(scope="module")
def mm_so():
    return build_kernel({"mm.cpp": MM_SRC}, "mm.cpp")


# ------------------------------------------------------------------------------------------
# single-instruction costs
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype,macs,k0",
    [(DType.F16, 4096, 16), (DType.BF16, 4096, 16), (DType.F32, 1024, 8), (DType.I8, 8192, 32)],
)
@pytest.mark.parametrize("m,k,n", [(128, 64, 256), (256, 256, 128), (16, 16, 16), (70, 50, 33)])
def test_mmad_cost_table(dtype, macs, k0, m, k, n):
    soc = load_soc("Ascend910B2")
    b = TraceBuilder(0)
    b.mmad(m, k, n, dtype)
    r = simulate(b.array(), soc)
    pad = math.ceil(m / 16) * 16 * math.ceil(k / k0) * k0 * math.ceil(n / 16) * 16
    want_cycles = soc.mmad_fixed_cycles + pad / macs
    assert soc.macs_per_cycle(dtype.name) == macs
    assert r.pipe_busy_us["M"] == pytest.approx(want_cycles * soc.cycle_ns / 1e3)
    if (m, k, n) == (128, 64, 256) and dtype == DType.F16:  # facts sheet: ~24 + m*k*n/4096 cycles
        assert want_cycles == 24 + 128 * 64 * 256 / 4096
    assert r.resources_us["cube"] == pytest.approx(pad / macs * soc.cycle_ns / 1e3)


def test_l1_to_l0_and_fix_paths():
    soc = load_soc("Ascend910B2")
    b = TraceBuilder(0)
    b._add(Pipe.MTE1, RecordKind.INSTR, Op.LOAD_DATA_L1_L0A, DType.F16, blocks=32, nbytes=32 * 512)
    b._add(Pipe.MTE1, RecordKind.INSTR, Op.LOAD_DATA_L1_L0B, DType.F16, blocks=64, nbytes=64 * 512)
    b._add(
        Pipe.FIX,
        RecordKind.INSTR,
        Op.FIXPIPE_L0C2GM,
        DType.F16,
        flags=3,
        blocks=128,
        nbytes=128 * 256 * 2,
        elems=128 * 256,
        m=128,
        n=256,
        k=4096 * 2,
    )
    r = simulate(b.array(), soc)
    mte1 = (
        32 * 512 / soc.local_bytes_per_cycle["L1L0A"]
        + 64 * 512 / soc.local_bytes_per_cycle["L1L0B"]
    )
    assert r.pipe_busy_us["MTE1"] == pytest.approx(mte1 * soc.cycle_ns / 1e3)
    fix = soc.paths["L0C2GM"].time_ns(128 * 256 * 2) / 1e3
    assert r.pipe_busy_us["FIX"] == pytest.approx(fix)


def test_cube_roofline_uses_cube_peak():
    soc = load_soc("Ascend910B2")
    flops = 2.0 * 4096**3
    rl = roofline_us(3 * 4096 * 4096 * 2, flops, soc, unit="cube", dtype="float16")
    assert rl == pytest.approx(flops / soc.cube_peak_flops("float16") * 1e6)
    assert soc.cube_peak_flops("float16") / 1e12 == pytest.approx(353.9, rel=1e-3)
    assert soc.cube_peak_flops("float32") == soc.cube_peak_flops("float16") / 4  # fp32: 1024 MACs/cycle


def test_synthetic_traces_without_gm_tags_never_hit_l2():
    r = simulate(elementwise_trace(1 << 20, 8192, 2, 8))
    assert r.l2_hit_bytes == 0 and r.l2_read_bytes == 0


# ------------------------------------------------------------------------------------------
# traced matmuls
# ------------------------------------------------------------------------------------------


def _trace_mm(so, M, N, K, cores, **tiles):
    r = run_kernel(
        so,
        [(M * K, np.float16), (K * N, np.float16)],
        outputs=[(M * N, np.float16)],
        tiling=mm_tiling(M, N, K, out_half=1, **tiles),
        block_dim=cores,
        trace_only=True,
        timeout_s=300,
        trace="records",
    )
    assert r.ok, r.message
    return r.trace


@needs_gxx
def test_matmul_4096_fp16_reaches_cube_peak(mm_so):
    soc = load_soc("Ascend910B2")
    M = N = K = 4096
    tr = _trace_mm(mm_so, M, N, K, soc.cube_cores, mB=128, nB=256, kB=128, kL0=64)
    r = simulate(tr, soc, block_dim=soc.cube_cores)
    flops = 2.0 * M * N * K
    rl = roofline_us(
        min_bytes([((M, K), "float16"), ((K, N), "float16"), ((M, N), "float16")]),
        flops,
        soc,
        unit="cube",
        dtype="float16",
    )
    frac = rl / r.time_us
    assert frac >= 0.70, (frac, r.time_us, rl, r.resources_us, r.l2_hit_frac)
    assert r.bound == "cube"
    assert r.l2_hit_frac > 0.9  # A row blocks / B column blocks are re-read from L2
    # without L2 reuse (a SoC whose L2 serves nothing) the same trace is memory-bound and slower
    no_l2 = dataclasses.replace(soc, l2_gbps=None)
    r0 = simulate(tr, no_l2, block_dim=soc.cube_cores)
    assert r0.time_us > 1.3 * r.time_us and r0.bound == "memory"


@needs_gxx
def test_block_order_changes_l2_reuse(mm_so):
    soc = dataclasses.replace(
        load_soc("Ascend910B2"), l2_mib=4.0
    )  # small L2: reuse must be concurrent
    M = N = K = 2048
    tiles = dict(mB=128, nB=256, kB=128, kL0=64)
    row = simulate(_trace_mm(mm_so, M, N, K, 24, order=0, **tiles), soc, block_dim=24)
    strided = simulate(_trace_mm(mm_so, M, N, K, 24, order=1, **tiles), soc, block_dim=24)
    # row-major: the 24 concurrent blocks span 3 A row tiles and 8 B column tiles (11 distinct
    # tiles per step of 48 reads); strided: 16 + 8 distinct tiles -> fewer concurrent hits
    assert row.l2_hit_frac > 0.65
    assert strided.l2_hit_frac < row.l2_hit_frac - 0.1
    assert row.time_us < 0.95 * strided.time_us
    # with the full 192 MiB L2 everything after the first touch hits, whatever the order
    full = simulate(
        _trace_mm(mm_so, M, N, K, 24, order=1, **tiles), load_soc("Ascend910B2"), block_dim=24
    )
    assert full.l2_hit_frac > 0.9


# ------------------------------------------------------------------------------------------
# cube kernel + vector epilogue: two launches sharing GM
# ------------------------------------------------------------------------------------------

RELU_SRC = r"""
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void relu_epilogue(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    uint32_t total = *(const uint32_t*)tiling;  // multiple of 8 * block_dim
    uint32_t per = total / GetBlockNum();
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float*)x + per * GetBlockIdx(), per);
    yg.SetGlobalBuffer((__gm__ float*)y + per * GetBlockIdx(), per);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> qi;
    TQue<TPosition::VECOUT, 1> qo;
    pipe.InitBuffer(qi, 1, per * 4);
    pipe.InitBuffer(qo, 1, per * 4);
    LocalTensor<float> a = qi.AllocTensor<float>();
    DataCopy(a, xg, per);
    qi.EnQue(a);
    a = qi.DeQue<float>();
    LocalTensor<float> b = qo.AllocTensor<float>();
    Relu(b, a, per);
    qo.EnQue(b);
    qi.FreeTensor(a);
    b = qo.DeQue<float>();
    DataCopy(yg, b, per);
    qo.FreeTensor(b);
}
""" + entry_glue("relu_epilogue", 4)


@needs_gxx
def test_cube_then_vector_epilogue(mm_so):
    M, N, K = 64, 96, 80
    rng = np.random.default_rng(9)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = run_kernel(
        mm_so,
        [a, b],
        outputs=[(M * N, np.float32)],
        tiling=mm_tiling(M, N, K, mB=32, nB=48, kB=48, kL0=32),
        block_dim=4,
        trace="records",
    )
    assert c.ok, c.message
    relu_so = build_kernel({"relu.cpp": RELU_SRC}, "relu.cpp")
    v = run_kernel(
        relu_so,
        [c.outputs[0]],
        outputs=[(M * N, np.float32)],
        tiling=struct.pack("<I", M * N),
        block_dim=8,
        trace="records",
    )
    assert v.ok, v.message
    want = np.maximum(a.astype(np.float64) @ b.astype(np.float64), 0)
    np.testing.assert_allclose(v.outputs[0].reshape(M, N), want, rtol=1e-5, atol=1e-4)
    # the cube launch only uses cube pipes, the epilogue only vector ones; each is timed alone
    assert not np.isin(c.trace["pipe"], [int(Pipe.V), int(Pipe.MTE3)]).any()
    assert not np.isin(v.trace["pipe"], [int(Pipe.M), int(Pipe.MTE1), int(Pipe.FIX)]).any()
    soc = load_soc("Ascend910B2")
    tc, tv = simulate(c.trace, soc, block_dim=4), simulate(v.trace, soc, block_dim=8)
    assert tc.time_us > soc.launch_us(4) and tv.time_us > soc.launch_us(8)
    assert tc.pipe_busy_us["M"] > 0 and tv.pipe_busy_us["V"] > 0
