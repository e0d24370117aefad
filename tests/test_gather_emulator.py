"""The emulator's GM check is per tensor: a computed GM access (a gather at a data-dependent
index) is checked against the kernel argument its GlobalTensor was bound to, so an index that
lands exactly on another tensor's memory is a one-line failed run naming the argument, not a
read of the neighbour. ``Trap()`` (what the lowering calls on an index out of range) is a
failed run too."""

from __future__ import annotations

import shutil
import struct

import numpy as np
import pytest

from ascendcraft.emulator import build_kernel, run_kernel
from ascendcraft.emulator.build import entry_glue

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed to build emulator kernels")

SRC = r"""
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void neighbour(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR ws, GM_ADDR tiling) {
    const uint32_t mode = *(const uint32_t*)tiling;
    GlobalTensor<float> xg, yg, zg;
    xg.SetGlobalBuffer((__gm__ float*)x, 64);
    yg.SetGlobalBuffer((__gm__ float*)y, 64);
    zg.SetGlobalBuffer((__gm__ float*)z, 64);
    // the element distance from x to y: an index a hostile or broken index tensor could hold
    const int64_t toY = (int64_t)(((__gm__ float*)y) - ((__gm__ float*)x));
    if (mode == 0) zg.SetValue(0, xg.GetValue(63) + yg.GetValue(0));   // in bounds
    if (mode == 1) zg.SetValue(0, xg.GetValue(toY));                   // y's first element, via x
    if (mode == 2) zg.SetValue(0, xg.GetValue((uint64_t)-1));          // a negative index
    if (mode == 3) { if (xg.GetValue(0) > -1.0f) Trap(); }
}
""" + entry_glue("neighbour", 5)


@pytest.fixture(scope="module")
def so():
    return build_kernel({"neighbour.cpp": SRC}, "neighbour.cpp")


def _run(so, mode: int):
    x, y = np.arange(64, dtype=np.float32), np.full(64, 7.0, dtype=np.float32)
    return run_kernel(so, [x, y], outputs=[(64, np.float32)], tiling=struct.pack("<I", mode), block_dim=1)


def test_in_bounds_reads_work(so) -> None:
    r = _run(so, 0)
    assert r.ok and r.outputs[0][0] == 70.0, r.message


@pytest.mark.parametrize("mode", [1, 2])
def test_a_computed_index_cannot_read_another_tensor(so, mode: int) -> None:
    r = _run(so, mode)
    assert r.status == "error" and "\n" not in r.message, r.message
    assert "GlobalTensor::GetValue" in r.message and "argument #0" in r.message, r.message


def test_trap_is_a_failed_run(so) -> None:
    r = _run(so, 3)
    assert r.status == "error" and "Trap()" in r.message, r.message
