"""Several runs of one kernel in one fork-server request (``run_batch``): the same results
as one request per run, each run limited as a single run is, and the first failure ends the
batch with its own status and message."""

from __future__ import annotations

import shutil
import struct
import time

import numpy as np
import pytest
from test_emulator_errors import BROKEN_SRC

from ascendcraft.emulator import build_kernel, run_kernel
from ascendcraft.emulator.runner import BatchRun, run_batch

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed to build emulator kernels")

SCALE_SRC = r"""
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void scale(GM_ADDR x, GM_ADDR z, GM_ADDR ws, GM_ADDR tiling) {
    uint32_t n = ((const uint32_t*)tiling)[0];
    float k = ((const float*)tiling)[1];
    uint32_t per = n / GetBlockNum();
    GlobalTensor<float> xg, zg;
    xg.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * per, per);
    zg.SetGlobalBuffer((__gm__ float*)z + GetBlockIdx() * per, per);
    TPipe pipe;
    TBuf<TPosition::VECCALC> tb;
    pipe.InitBuffer(tb, per * sizeof(float));
    LocalTensor<float> t = tb.Get<float>();
    DataCopy(t, xg, per);
    Muls(t, t, k, per);
    DataCopy(zg, t, per);
}
""" + __import__("ascendcraft.emulator.build", fromlist=["entry_glue"]).entry_glue("scale", 4)


@pytest.fixture(scope="module")
def scale_so():
    return build_kernel({"scale.cpp": SCALE_SRC}, "scale.cpp")


@pytest.fixture(scope="module")
def broken_so():
    return build_kernel({"broken.cpp": BROKEN_SRC}, "broken.cpp")


def _scale_run(n: int, k: float, seed: int) -> BatchRun:
    x = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
    return BatchRun([x], [np.full(n, np.nan, np.float32)], struct.pack("<If", n, k), block_dim=4)


def test_batch_gives_what_single_runs_give(scale_so):
    runs = [_scale_run(n, k, s) for s, (n, k) in enumerate([(256, 2.0), (1024, -0.5), (64, 3.0)])]
    got = run_batch(scale_so, runs, timeout_s=20)
    assert [r.status for r in got] == ["ok"] * 3
    for run, res in zip(runs, got, strict=True):
        single = run_kernel(scale_so, run.gm_arrays, outputs=run.outputs, tiling=run.tiling,
                            block_dim=4, trace=False, timeout_s=20)
        assert single.ok
        np.testing.assert_array_equal(res.outputs[0], single.outputs[0])
        np.testing.assert_allclose(res.outputs[0], run.gm_arrays[0] * struct.unpack("<If", run.tiling)[1])


def _mode(mode: int) -> BatchRun:
    return BatchRun([np.arange(256, dtype=np.float32)], [(256, np.float32)], struct.pack("<I", mode), block_dim=1)


@pytest.mark.parametrize(("mode", "status", "fragment"), [
    (3, "error", "Add"),          # an emulator error: the child goes on to report it
    (8, "crash", "SIGSEGV"),      # the child dies: its crash detail still comes back
])
def test_first_failure_ends_the_batch(broken_so, mode, status, fragment):
    got = run_batch(broken_so, [_mode(0), _mode(mode), _mode(0)], timeout_s=20)
    assert [r.status for r in got] == ["ok", status]
    assert fragment in got[1].message


def test_each_run_of_a_batch_has_its_own_cpu_limit(broken_so):
    t0 = time.perf_counter()
    got = run_batch(broken_so, [_mode(0), _mode(0), _mode(7), _mode(0)], timeout_s=1,
                    wall_timeout_s=20)
    assert [r.status for r in got] == ["ok", "ok", "timeout"]
    assert "CPU-time limit" in got[2].message
    assert time.perf_counter() - t0 < 30  # one run's limit (+1 s), not four


def test_server_serves_single_runs_after_a_crashed_batch(broken_so):
    run_batch(broken_so, [_mode(8), _mode(0)], timeout_s=20)
    assert run_kernel(broken_so, [np.arange(256, dtype=np.float32)], outputs=[(256, np.float32)],
                      tiling=struct.pack("<I", 0), block_dim=1, timeout_s=20).ok
