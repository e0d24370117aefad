"""Broken kernels must produce a named, one-line error (or crash/timeout status) - never kill Python."""

from __future__ import annotations

import shutil
import struct

import numpy as np
import pytest

from ascendcraft.emulator import BuildError, ToolchainError, build_kernel, run_kernel
from ascendcraft.emulator.build import entry_glue

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed to build emulator kernels")

BROKEN_SRC = r"""
#include "kernel_operator.h"
using namespace AscendC;

static int Recurse(int d) { volatile char buf[1024]; buf[0] = (char)d; buf[1023] = 0; return Recurse(d + 1) + buf[7]; }

extern "C" __global__ __aicore__ void broken(GM_ADDR x, GM_ADDR z, GM_ADDR ws, GM_ADDR tiling) {
    uint32_t mode = *(const uint32_t*)tiling;
    GlobalTensor<float> xg, zg;
    xg.SetGlobalBuffer((__gm__ float*)x, 256);
    zg.SetGlobalBuffer((__gm__ float*)z, 256);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    TQue<TPosition::VECOUT, 1> q2;
    TBuf<TPosition::VECCALC> tb;
    if (mode == 2) {  // UB over-allocation: 2 x 90 KiB + 16 KiB > 192 KiB
        pipe.InitBuffer(q, 2, 90 * 1024);
        pipe.InitBuffer(tb, 16384);
    }
    pipe.InitBuffer(q, 1, 1024);
    pipe.InitBuffer(q2, 1, 1024);
    pipe.InitBuffer(tb, 1024);
    LocalTensor<float> t = tb.Get<float>();
    switch (mode) {
        case 1: { LocalTensor<float> a = q.AllocTensor<float>(); DataCopy(a, xg, 25); q.FreeTensor(a); break; }
        case 3: { Add(t, t, t, 300); break; }                       // 300 floats in a 256-float buffer
        case 4: { DataCopy(t, xg[200], 64); break; }                // reads floats 200..263 of 256
        case 5: { LocalTensor<float> a = q.DeQue<float>(); q.FreeTensor(a); break; }
        case 6: { LocalTensor<float> a = q.AllocTensor<float>(); LocalTensor<float> b = q.AllocTensor<float>(); break; }
        case 7: { volatile uint64_t i = 0; while (true) i = i + 1; }
        case 8: { *(volatile int*)nullptr = 1; break; }
        case 9: { LocalTensor<float> a = q.AllocTensor<float>(); Duplicate(a, 1.0f, 8); break; }  // never freed
        case 10: { LocalTensor<bfloat16_t> b = tb.Get<bfloat16_t>(); Add(b, b, b, 64); break; }
        case 11: { Exp(t[3], t[3], 8); break; }                     // UB address 12: not 32 B aligned
        case 12: { WholeReduceSum(t, t, 64, 300, 1, 1, 8); break; }
        case 13: { LocalTensor<float> w = tb.Get<float>(8); ReduceSum(t, t, w, 256 - 8); break; }  // needs 8, ok
        case 14: { if (GetBlockIdx() == 0) SyncAll(); break; }
        case 15: { Recurse(0); break; }
        case 16: { q.EnQue(t); break; }                              // a TBuf tensor is not a queue buffer
        case 17: { LocalTensor<float> a = q.AllocTensor<float>(); q2.FreeTensor(a); break; }
        case 18: { WaitFlag<HardEvent::MTE2_V>(1); break; }
        case 19: { DataCopy(zg[250], t, 8); break; }                 // writes floats 250..257 of 256
        case 20: { LocalTensor<float> w = tb.Get<float>(8); ReduceSum(t, t, w, 256); break; }  // 4 repeats -> needs 8: ok
        case 21: { LocalTensor<float> w = tb.Get<float>(8); ReduceMax(t, t, w, 256); break; }  // needs 8 (2 per repeat): ok
        case 22: { TBuf<TPosition::VECCALC> tb2; pipe.InitBuffer(tb2, 2048); LocalTensor<float> big = tb2.Get<float>();
                   LocalTensor<float> w = tb.Get<float>(8); ReduceMax(t, big, w, 512); break; }  // needs 16 > 8
        case 23: { DataCopyPad(t, xg, DataCopyExtParams{1, 10, 0, 0, 0}, DataCopyPadExtParams<float>{false, 0, 0, 0.0f}); break; }
        case 24: { DataCopyPad(t, xg, DataCopyExtParams{5000, 32, 0, 0, 0}, DataCopyPadExtParams<float>{false, 0, 0, 0.0f}); break; }
        default: break;
    }
}
""" + entry_glue("broken", 4)


@pytest.fixture(scope="module")
def broken_so():
    return build_kernel({"broken.cpp": BROKEN_SRC}, "broken.cpp")


def run_mode(so, mode: int, *, block_dim: int = 1, timeout_s: float = 20):
    x = np.arange(256, dtype=np.float32)
    return run_kernel(
        so, [x], outputs=[(256, np.float32)], tiling=struct.pack("<I", mode), block_dim=block_dim, timeout_s=timeout_s
    )


@pytest.mark.parametrize(
    "mode, fragments",
    [
        (1, ["DataCopy(GM->UB): length 100 B is not a multiple of 32 B (count=25, fp32); use DataCopyPad"]),
        (2, ["TPipe::InitBuffer: UB over-allocation", "200704 B needed > 196608 B available", "TQue<VECIN>#1 2 x 92160 B", "TBuf<VECCALC>#2 16384 B"]),
        (3, ["Add: out-of-bounds local access", "1200 B", "1024 B"]),
        (4, ["DataCopy(GM->UB): out-of-bounds GM access", "[800, 1056)", "1024 B"]),
        (5, ["DeQue on an empty queue"]),
        (6, ["AllocTensor: all 1 buffers of the queue are in use"]),
        (9, ["tensors still allocated at kernel end", "TQue<VECIN>#1 buffer 0 allocated"]),
        (10, ["Add: dtype bf16 is not supported"]),
        (11, ["Exp: dst UB address", "not 32 B aligned"]),
        (12, ["WholeReduceSum: repeatTimes=300 not in [0, 255]"]),
        (14, ["SyncAll: blocks {0} wait at a SyncAll"]),
        (16, ["EnQue: tensor", "not a buffer of this queue"]),
        (17, ["FreeTensor", "not owned by this queue"]),
        (18, ["WaitFlag<HardEvent::MTE2_V>(1) without a preceding SetFlag"]),
        (19, ["DataCopy(UB->GM): out-of-bounds GM access", "[1000, 1032)"]),
        (22, ["ReduceMax: work buffer has 8 fp32 elements but 16 are needed"]),
        (23, ["DataCopyPad(GM->UB): blockLen=10 B is not a multiple of sizeof(fp32)=4"]),
        (24, ["DataCopyPad(GM->UB): blockCount=5000 not in [1, 4095]"]),
    ],
)
def test_named_errors(broken_so, mode, fragments):
    r = run_mode(broken_so, mode, block_dim=2 if mode == 14 else 1)
    assert r.status == "error" and not r.ok, (r.status, r.message)
    assert "\n" not in r.message
    for f in fragments:
        assert f in r.message, r.message


@pytest.mark.parametrize("mode", [0, 13, 20, 21])
def test_valid_modes_pass(broken_so, mode):
    r = run_mode(broken_so, mode)
    assert r.ok, r.message


def test_infinite_loop_times_out(broken_so):
    r = run_mode(broken_so, 7, timeout_s=1.0)
    assert r.status == "timeout" and "timeout after 1 s" in r.message
    assert r.wall_s < 10


def test_null_pointer_write_crashes(broken_so):
    r = run_mode(broken_so, 8)
    assert r.status == "crash", r.message
    assert "SIGSEGV" in r.message and "block 0" in r.message


def test_stack_overflow_is_reported(broken_so):
    r = run_mode(broken_so, 15)
    assert r.status == "crash"
    assert "stack overflow" in r.message


def test_python_survives_and_server_recovers(broken_so):
    assert run_mode(broken_so, 8).status == "crash"
    assert run_mode(broken_so, 0).ok


def test_build_error_names_the_compiler_error():
    src = '#include "kernel_operator.h"\nusing namespace AscendC;\nvoid f() { Add(1); undefined_thing(); }\n'
    with pytest.raises(BuildError) as e:
        build_kernel({"bad.cpp": src}, "bad.cpp")
    assert "error" in str(e.value)


def test_missing_compiler_is_a_toolchain_error(monkeypatch, tmp_path):
    monkeypatch.setenv("CXX", "definitely-not-a-compiler-xyz")
    monkeypatch.setenv("ASCENDCRAFT_CACHE", str(tmp_path))
    with pytest.raises(ToolchainError, match="install"):
        build_kernel({"k.cpp": "int x;"}, "k.cpp")
