"""The emulator's default trace, a summary built in the child's memory (acx_summary.h,
trace_summary.py): lossless (it expands to exactly the records a full trace holds), cores
grouped only when their whole record sequences are equal, tile loops compressed to a few
tokens, capped, and modeled like the full trace."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from ascendcraft.emulator import build_kernel, run_kernel
from ascendcraft.emulator.trace_summary import TOK_LOOP_BEGIN, TraceSummary
from ascendcraft.model import simulate
from ascendcraft.model.timeline import _by_core, _program_ids

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed to build emulator kernels")

from test_emulator_cube import MM_SRC, mm_tiling  # noqa: E402
from test_emulator_kernels import ADD_SRC, SOFTMAX_SRC, SYNC_SRC, add_tiling  # noqa: E402


@pytest.fixture(scope="module")
def add_so():
    return build_kernel({"add.cpp": ADD_SRC}, "add.cpp")


def _both(so, ins, outs, **kw):
    """(summary run, records run) of the same kernel."""
    s = run_kernel(so, ins, outputs=outs, **kw)
    r = run_kernel(so, ins, outputs=outs, trace="records", **kw)
    assert s.ok and r.ok, (s.message, r.message)
    assert isinstance(s.trace, TraceSummary) and isinstance(r.trace, np.ndarray)
    return s, r


def _same_records(summary: TraceSummary, records: np.ndarray) -> None:
    got, want = summary.records(), _by_core(records)
    assert len(got) == len(want) == len(summary) == summary.n_records
    assert bool(np.all(got == want))  # field by field: every record, seq, core and address


@pytest.mark.parametrize("n, tile, cores", [(1000, 256, 1), (300_001, 512, 7), (65_536, 64, 48)])
def test_summary_expands_to_the_full_trace(add_so, n, tile, cores):
    spec = (n, np.float32)
    s, r = _both(add_so, [spec, spec], [spec], tiling=add_tiling(n, tile), block_dim=cores, trace_only=True)
    _same_records(s.trace, r.trace)
    assert s.stats["records_written"] == r.stats["records_written"] == len(r.trace)


def test_summary_of_full_mode_cube_and_sync_kernels():
    so = build_kernel({"softmax.cpp": SOFTMAX_SRC}, "softmax.cpp")
    x = np.random.default_rng(0).standard_normal((40, 96)).astype(np.float32)
    import struct

    s, r = _both(so, [x], [((40, 96), np.float32)], tiling=struct.pack("<2I", 40, 96), block_dim=3)
    _same_records(s.trace, r.trace)
    np.testing.assert_array_equal(s.outputs[0], r.outputs[0])  # the outputs do not depend on it
    mm = build_kernel({"mm.cpp": MM_SRC}, "mm.cpp")
    M = N = K = 128
    s, r = _both(mm, [(M * K, np.float16), (K * N, np.float16)], [(M * N, np.float32)],
                 tiling=mm_tiling(M, N, K, mB=64, nB=64, kB=32, kL0=32), block_dim=4, trace_only=True)
    _same_records(s.trace, r.trace)
    sync = build_kernel({"sync.cpp": SYNC_SRC}, "sync.cpp")
    s, r = _both(sync, [], [(8, np.float32), (8 * 5, np.float32), (8, np.float32)], tiling=b"\0" * 8,
                 block_dim=5)
    _same_records(s.trace, r.trace)


def test_cores_share_a_program_exactly_when_their_records_are_equal(add_so):
    # 7 cores over 300001 elements: equal shares and a tail core; the GM addresses differ
    n = 300_001
    spec = (n, np.float32)
    s, r = _both(add_so, [spec, spec], [spec], tiling=add_tiling(n, 512), block_dim=7, trace_only=True)
    tr = _by_core(r.trace)
    core = tr["core"].astype(np.int64)
    starts = np.searchsorted(core, np.arange(7), "left")
    ends = np.searchsorted(core, np.arange(7), "right")
    ids = _program_ids(tr, starts, ends)  # the model's byte-for-byte grouping of full traces
    got = s.trace.core_program.tolist()
    assert len(set(ids)) == len(s.trace.programs) < 7
    assert all((ids[a] == ids[b]) == (got[a] == got[b]) for a in range(7) for b in range(7))


def test_a_tile_loop_is_a_few_tokens(add_so):
    n = 1 << 22  # 1 core, 16384 tiles: 11 records each
    spec = (n, np.float32)
    r = run_kernel(add_so, [spec, spec], outputs=[spec], tiling=add_tiling(n, 256), block_dim=1,
                   trace_only=True)
    assert r.ok, r.message
    sm = r.trace
    assert sm.n_records > 16384 * 10
    assert len(sm.programs[0]) < 200 and TOK_LOOP_BEGIN in sm.programs[0].tolist()
    assert len(sm.symbols) < 40 and len(sm.footprints) == 3 * 16384


def test_model_of_the_summary_equals_the_model_of_every_record(add_so):
    n = 1 << 21
    spec = (n, np.float32)
    s, r = _both(add_so, [spec, spec], [spec], tiling=add_tiling(n, 2048), block_dim=40, trace_only=True)
    fast, full = simulate(s.trace, "Ascend910B2"), simulate(r.trace, "Ascend910B2")
    assert fast.time_us == pytest.approx(full.time_us, rel=1e-9)
    assert fast.core_us == pytest.approx(full.core_us, rel=1e-9)
    assert (fast.n_records, fast.n_programs, fast.gm_bytes) == (full.n_records, full.n_programs, full.gm_bytes)
    assert fast.extrapolated > 0
    assert simulate(s.trace, "Ascend910B2", full=True).time_us == pytest.approx(full.time_us, rel=1e-12)


def test_env_switch_gives_every_record(add_so, monkeypatch):
    monkeypatch.setenv("ASCENDCRAFT_FULL_SIM", "1")
    spec = (4096, np.float32)
    r = run_kernel(add_so, [spec, spec], outputs=[spec], tiling=add_tiling(4096, 256), block_dim=2,
                   trace_only=True)
    assert r.ok and isinstance(r.trace, np.ndarray)
    with pytest.raises(ValueError, match="trace must be"):
        run_kernel(add_so, [spec, spec], outputs=[spec], tiling=add_tiling(4096, 256), block_dim=2,
                   trace="all")
