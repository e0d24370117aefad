"""Trace contract (C++ record layout == RECORD_DTYPE), record contents, queue flags, trace-only mode."""

from __future__ import annotations

import ctypes
import shutil
import struct
import subprocess
import time
from collections import Counter

import numpy as np
import pytest

from ascendcraft.emulator import _server, build_kernel, run_kernel
from ascendcraft.emulator.build import INCLUDE_DIR
from ascendcraft.emulator.trace_format import RECORD_DTYPE, DType, Op, Pipe, RecordKind

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed to build emulator kernels")

from test_emulator_kernels import ADD_SRC, add_tiling  # noqa: E402

LAYOUT_SRC = r"""
#include <cstdio>
#include <cstddef>
#include "kernel_operator.h"
#define F(name) std::printf(#name " %zu %zu\n", offsetof(acx::TraceRecord, name), sizeof(((acx::TraceRecord*)0)->name));
int main() {
    std::printf("itemsize %zu 0\n", sizeof(acx::TraceRecord));
    F(seq) F(core) F(pipe) F(kind) F(op) F(dtype) F(dtype2) F(pipe2) F(flags)
    F(repeats) F(blocks) F(event) F(m) F(n) F(k) F(bytes) F(elems) F(addr)
    std::printf("options %zu 0\nstats %zu 0\n", sizeof(AcxRunOptions), sizeof(AcxRunStats));
    return 0;
}
"""


def _enum_lines() -> str:
    out = []
    for enum_cls, prefix in ((Op, "OP_"), (DType, "DT_"), (Pipe, "P_"), (RecordKind, "RK_")):
        for m in enum_cls:
            out.append(f'std::printf("enum {prefix}{m.name} %d {m.value}\\n", (int)acx::{prefix}{m.name});')
    return "\n".join(out)


def test_record_layout_matches_trace_format(tmp_path):
    src = tmp_path / "layout.cpp"
    src.write_text(LAYOUT_SRC.replace("return 0;", _enum_lines() + "\n    return 0;"))
    exe = tmp_path / "layout"
    subprocess.run(["g++", "-std=c++17", f"-I{INCLUDE_DIR}", str(src), "-o", str(exe)], check=True)
    lines = subprocess.check_output([str(exe)], text=True).splitlines()
    enums = [ln.split()[1:] for ln in lines if ln.startswith("enum ")]
    assert len(enums) == len(Op) + len(DType) + len(Pipe) + len(RecordKind)
    for name, c_value, py_value in enums:
        assert c_value == py_value, name
    rows = dict((ln.split()[0], tuple(map(int, ln.split()[1:]))) for ln in lines if not ln.startswith("enum "))
    assert rows.pop("itemsize")[0] == RECORD_DTYPE.itemsize == 64
    assert rows.pop("options")[0] == ctypes.sizeof(_server.AcxRunOptions)
    assert rows.pop("stats")[0] == ctypes.sizeof(_server.AcxRunStats)
    assert set(rows) == set(RECORD_DTYPE.names)
    for name, (off, size) in rows.items():
        dt, o = RECORD_DTYPE.fields[name][:2]
        assert (off, size) == (o, dt.itemsize), name


@pytest.fixture(scope="module")
def add_so():
    return build_kernel({"add.cpp": ADD_SRC}, "add.cpp")


def _add(so, n, tile, block_dim, **kw):
    kw.setdefault("trace", "records")  # every record (the default trace is a summary)
    x = np.ones(n, np.float32)
    return run_kernel(so, [x, x], outputs=[(n, np.float32)], tiling=add_tiling(n, tile), block_dim=block_dim, **kw)


def test_known_kernel_records(add_so):
    r = _add(add_so, 1024, 256, 1)  # one core, 4 tiles, double-buffered queues
    assert r.ok, r.message
    t = r.trace
    # per tile: 3 copies, Add, 6 SET_FLAG, 3 WAIT_FLAG; tiles 3-4 reuse buffers: +3 alloc waits each
    assert len(t) == 4 * 13 + 6
    assert (t["seq"] == np.arange(len(t))).all() and (t["core"] == 0).all()
    kinds = Counter(RecordKind(k).name for k in t["kind"])
    assert kinds == {"INSTR": 16, "SET_FLAG": 24, "WAIT_FLAG": 18}
    adds = t[t["op"] == Op.ADD]
    assert len(adds) == 4
    assert (adds["pipe"] == Pipe.V).all() and (adds["dtype"] == DType.F32).all()
    assert (adds["repeats"] == 4).all() and (adds["elems"] == 256).all() and (adds["bytes"] == 1024).all()
    loads = t[t["op"] == Op.DATA_COPY_GM2UB]
    assert len(loads) == 8 and (loads["pipe"] == Pipe.MTE2).all() and (loads["bytes"] == 1024).all()
    assert sorted(set(loads["addr"].tolist())) == [0, 1024, 2048, 3072]
    assert (loads["flags"] == 3).all()  # 512 B and 32 B aligned
    stores = t[t["op"] == Op.DATA_COPY_UB2GM]
    assert len(stores) == 4 and (stores["pipe"] == Pipe.MTE3).all() and (stores["blocks"] == 1).all()


def test_queue_flags_pair_up(add_so):
    t = _add(add_so, 1024, 256, 1).trace
    sets = t[t["kind"] == RecordKind.SET_FLAG]
    waits = t[t["kind"] == RecordKind.WAIT_FLAG]
    # VECIN queue: EnQue sets MTE2->V, DeQue waits on V for MTE2; VECOUT: V->MTE3
    assert ((sets["pipe"] == Pipe.MTE2) & (sets["pipe2"] == Pipe.V)).sum() == 8
    assert ((sets["pipe"] == Pipe.V) & (sets["pipe2"] == Pipe.MTE3)).sum() == 4
    assert ((sets["pipe"] == Pipe.V) & (sets["pipe2"] == Pipe.MTE2)).sum() == 8  # FreeTensor of inputs
    assert ((sets["pipe"] == Pipe.MTE3) & (sets["pipe2"] == Pipe.V)).sum() == 4  # FreeTensor of output
    # every wait matches an earlier set with swapped pipes and the same event key
    pending: Counter = Counter()
    for rec in t:
        key = (int(rec["pipe"]), int(rec["pipe2"]), int(rec["event"]))
        if rec["kind"] == RecordKind.SET_FLAG:
            pending[key] += 1
        elif rec["kind"] == RecordKind.WAIT_FLAG:
            src = (key[1], key[0], key[2])
            assert pending[src] > 0, rec
            pending[src] -= 1
    assert len(waits) == 18


def test_explicit_flags_and_barriers():
    from test_emulator_kernels import SOFTMAX_SRC

    so = build_kernel({"softmax.cpp": SOFTMAX_SRC}, "softmax.cpp")
    x = np.zeros((2, 64), np.float32)
    r = run_kernel(so, [x], outputs=[((2, 64), np.float32)], tiling=struct.pack("<2I", 2, 64), block_dim=1,
                   trace="records")
    assert r.ok, r.message
    t = r.trace
    vs = t[(t["kind"] == RecordKind.SET_FLAG) & (t["pipe"] == Pipe.V) & (t["pipe2"] == Pipe.S)]
    vw = t[(t["kind"] == RecordKind.WAIT_FLAG) & (t["pipe"] == Pipe.S) & (t["pipe2"] == Pipe.V)]
    assert len(vs) == len(vw) == 4
    assert (t["kind"] == RecordKind.BARRIER).sum() == 4
    gv = t[t["op"] == Op.GET_VALUE]
    assert len(gv) == 4 and (gv["pipe"] == Pipe.S).all()
    pads = t[t["op"] == Op.DATA_COPY_PAD_GM2UB]
    assert len(pads) == 2 and (pads["bytes"] == 256).all() and list(pads["addr"]) == [0, 256]


def test_trace_only_gives_the_same_trace(add_so):
    full = _add(add_so, 3000, 256, 4)
    fast = _add(add_so, 3000, 256, 4, trace_only=True)
    assert full.ok and fast.ok, (full.message, fast.message)
    assert fast.outputs == []
    assert len(full.trace) > 100
    np.testing.assert_array_equal(full.trace, fast.trace)


def test_trace_cap_and_no_trace(add_so):
    # reaching the cap stops the run: a partial trace is never returned as if it were whole
    r = _add(add_so, 3000, 256, 4, max_trace_records=50)
    assert r.status == "trace_limit" and not r.ok and r.trace is None
    assert "trace exceeded 50 records" in r.message
    assert r.stats["records_written"] == 50
    full = _add(add_so, 3000, 256, 4)
    exact = _add(add_so, 3000, 256, 4, max_trace_records=len(full.trace))
    assert exact.ok and len(exact.trace) == len(full.trace)
    r = _add(add_so, 3000, 256, 4, trace=False)
    assert r.ok and r.trace is None


def test_trace_only_checks_still_apply(add_so):
    # GM bounds are checked against registered sizes even though nothing is allocated
    r = run_kernel(add_so, [(1000, np.float32), (1000, np.float32)], outputs=[(999, np.float32)],
                   tiling=add_tiling(1000, 256), block_dim=2, trace_only=True)
    assert r.status == "error" and "out-of-bounds GM access" in r.message


def test_trace_only_8gib_add_is_fast(add_so):
    n = 2**31  # 8 GiB per fp32 operand, never allocated
    spec = (n, np.float32)
    t0 = time.perf_counter()
    r = run_kernel(add_so, [spec, spec], outputs=[spec], tiling=add_tiling(n, 8192), block_dim=48,
                   trace_only=True, trace=False, timeout_s=120)
    dt = time.perf_counter() - t0
    assert r.ok, r.message
    calls = r.stats["api_calls"]
    print(f"\ntrace-only 2^31-element fp32 add, 48 cores: {calls} API calls in {dt:.2f} s ({calls / dt / 1e6:.1f} M calls/s)")
    tiles = 48 * -(-(n // 48 + 1) // 8192)
    assert calls >= tiles * 13
    assert dt < 30


ALIGN_SRC = r"""
#include <cstdio>
#include "kernel_operator.h"
int main() {
    // start, pitch, bursts -> flags (bit0: 512 B aligned, bit1: 32 B aligned)
    std::printf("%d %d %d %d %d\n", acx::GmAlignFlags2(0, 4092, 1), acx::GmAlignFlags2(0, 4092, 8),
                acx::GmAlignFlags2(0, 4096, 8), acx::GmAlignFlags2(0, 4000, 8),
                acx::GmAlignFlags2(512, 1024, 3));
    return 0;
}
"""


def test_a_multi_burst_move_is_as_aligned_as_its_start_and_its_pitch(tmp_path):
    """Model 2.1: a copy of rows with a 4092 B pitch is unaligned even when its first row
    starts on 512 B (the vector path judged the start alone before; the cube path did not)."""
    src = tmp_path / "align.cpp"
    src.write_text(ALIGN_SRC)
    exe = tmp_path / "align"
    subprocess.run(["g++", "-std=c++17", f"-I{INCLUDE_DIR}", str(src), "-o", str(exe)], check=True)
    one, rows_4092, rows_4096, rows_4000, rows_1024 = map(int, subprocess.check_output([str(exe)], text=True).split())
    assert one == 3 and rows_4096 == 3 and rows_1024 == 3  # a single burst: its start decides
    assert rows_4092 == 0 and rows_4000 == 2  # 4092 B: not even 32 B; 4000 B: 32 B only
    ops = (INCLUDE_DIR / "acx_ops.h").read_text()
    assert ops.count("GmAlignFlags2(") == 4  # DataCopy and DataCopyPad with bursts, both ways
