"""The timeline of a trace summary (model/periodic.py): one representative per distinct core
program, loops extrapolated only where the timeline is proven periodic, and the result equal
to simulating every record (``simulate(summary, full=True)``) - on hand-made summaries with
known structure (tile loops, L2 hits that change mid-loop, SYNC_ALL, several programs)."""

from __future__ import annotations

import numpy as np
import pytest

from ascendcraft.emulator.trace_format import RECORD_DTYPE, DType, Op, Pipe
from ascendcraft.emulator.trace_summary import TOK_LOOP_BEGIN, TOK_LOOP_END, TraceSummary
from ascendcraft.model import simulate
from ascendcraft.model.periodic import _cross_limit
from ascendcraft.model.synth import TraceBuilder

_GM_OPS = {int(o) for o in (Op.DATA_COPY_GM2UB, Op.DATA_COPY_UB2GM)}


def _tile(b: TraceBuilder, i: int, tile: int, addr: int, slot: int, wait: bool) -> None:
    """One double-buffered tile: copy in, vector op, copy out, with the queue flags."""
    if wait:
        b.wait_flag(Pipe.MTE2, Pipe.V, 0x100 | slot)
    b.copy_in(tile * 4, addr)
    b.set_flag(Pipe.MTE2, Pipe.V, 0x200 | slot)
    b.wait_flag(Pipe.V, Pipe.MTE2, 0x200 | slot)
    b.vec(Op.EXP, DType.F32, tile)
    b.set_flag(Pipe.V, Pipe.MTE2, 0x100 | slot)
    b.set_flag(Pipe.V, Pipe.MTE3, 0x300 | slot)
    b.wait_flag(Pipe.MTE3, Pipe.V, 0x300 | slot)
    b.copy_out(tile * 4, addr)


def _tagged(b: TraceBuilder) -> np.ndarray:
    """The builder's records with GM moves tagged by argument (1 = input, 2 = output) as the
    emulator tags them (the L2 model only counts tagged moves)."""
    a = b.array()
    a["pipe2"][a["op"] == int(Op.DATA_COPY_GM2UB)] = 1
    a["pipe2"][a["op"] == int(Op.DATA_COPY_UB2GM)] = 2
    return a


def _summary(cores: list[list[tuple]], block_dim: int | None = None) -> TraceSummary:
    """A summary from per-core parts: ``("flat", records)`` or ``("loop", count, body_fn)``
    where ``body_fn(i)`` gives iteration i's records (equal but for GM addresses)."""
    masked: dict[bytes, int] = {}
    sym_rows: list[np.ndarray] = []
    tokens, table, foot = [], [], []

    def sid(r: np.ndarray) -> int:
        m = r.copy()
        m["seq"], m["core"], m["addr"] = 0, 0, 0
        key = m.item()  # the fields (tobytes would include numpy's uninitialised padding)
        if key not in masked:
            masked[key] = len(sym_rows)
            sym_rows.append(m)
        return masked[key]

    for core, parts in enumerate(cores):
        start, seq = len(tokens), 0
        for part in parts:
            recs = [part[1]] if part[0] == "flat" else [part[2](i) for i in range(part[1])]
            if part[0] == "loop":
                tokens += [TOK_LOOP_BEGIN, part[1]]
            for j, rec in enumerate(recs):
                ids = [sid(r) for r in rec]
                if j == 0:
                    tokens += ids
                else:
                    assert ids == [sid(r) for r in recs[0]], "loop iterations must be equal"
                for r in rec:
                    if int(r["op"]) in _GM_OPS:
                        f = r.copy()
                        f["core"], f["seq"] = core, seq
                        foot.append(f)
                    seq += 1
            if part[0] == "loop":
                tokens.append(TOK_LOOP_END)
        table.append((core, 0, start, len(tokens) - start, seq))
    sym = np.array(sym_rows, RECORD_DTYPE)
    is_gm = np.isin(sym["op"], list(_GM_OPS))
    raw = sym.view(np.uint8).reshape(-1, 64).copy()
    raw[:, 14] = is_gm
    from ascendcraft.emulator.trace_summary import PROGRAM_DTYPE

    return TraceSummary.from_buffers(
        block_dim or len(cores), raw.tobytes(), np.array(foot, RECORD_DTYPE).tobytes() if foot else b"",
        np.array(tokens, np.uint32).tobytes(), np.array(table, PROGRAM_DTYPE).tobytes())


def _stream(tiles: int, tile: int, base: int, step: int, core: int = 0) -> list[tuple]:
    """A core that streams ``tiles`` tiles (2 slots: the loop body is two tiles)."""
    def first() -> np.ndarray:
        b = TraceBuilder(core)
        _tile(b, 0, tile, base, 0, False)
        _tile(b, 1, tile, base + step, 1, False)
        return _tagged(b)

    def body(i: int) -> np.ndarray:
        b = TraceBuilder(core)
        _tile(b, 2 * i + 2, tile, base + (2 * i + 2) * step, 0, True)
        _tile(b, 2 * i + 3, tile, base + (2 * i + 3) * step, 1, True)
        return _tagged(b)

    return [("flat", first()), ("loop", (tiles - 2) // 2, body)]


def _agree(sm: TraceSummary, soc: str = "Ascend910B2"):
    fast = simulate(sm, soc)
    full = simulate(sm, soc, full=True)
    assert fast.time_us == pytest.approx(full.time_us, rel=1e-9, abs=1e-9)
    assert fast.core_us == pytest.approx(full.core_us, rel=1e-9)
    for k, v in full.pipe_busy_us.items():
        assert fast.pipe_busy_us[k] == pytest.approx(v, rel=1e-9, abs=1e-9), k
    assert fast.hbm_busy_us == pytest.approx(full.hbm_busy_us, rel=1e-9)
    assert (fast.n_records, fast.n_programs, fast.gm_bytes, fast.bound) == \
        (full.n_records, full.n_programs, full.gm_bytes, full.bound)
    assert (fast.l2_hit_bytes, fast.l2_read_bytes) == (full.l2_hit_bytes, full.l2_read_bytes)
    return fast, full


@pytest.mark.parametrize("tile", [64, 2048, 16384])
def test_tile_loop_is_extrapolated_and_exact(tile):
    sm = _summary([_stream(2000, tile, 0, tile * 4)])
    fast, full = _agree(sm)
    assert fast.extrapolated > 900  # of 999 loop iterations
    assert full.extrapolated == 0


def test_equal_cores_are_one_program_and_chip_effects_stay():
    # 8 cores: 6 stream 400 tiles, 2 (the tail) 100; HBM is shared by all 8 of the wave
    cores = [_stream(400 if c < 6 else 100, 4096, c * (1 << 24), 16384, c) for c in range(8)]
    sm = _summary(cores)
    assert len(sm.programs) == 2
    fast, full = _agree(sm)
    assert fast.n_programs == 2
    assert fast.core_us[7] < fast.core_us[0]
    one = simulate(_summary(cores[:1]))  # alone, a core has all the bandwidth
    assert one.time_us < fast.core_us[0] + fast.launch_us


def test_l2_hits_that_change_mid_loop():
    # core 0 reads tiles 0..599 twice: the second pass hits L2 for the tiles the first pass
    # read and misses after them (the second loop runs on to tile 1199)
    step = 8192
    first = _stream(600, 2048, 0, step)
    second = _stream(1200, 2048, 0, step)
    sm = _summary([first + second])
    fast, full = _agree(sm)
    assert 0 < fast.l2_hit_bytes < fast.l2_read_bytes
    assert fast.extrapolated > 500


def test_sync_all_inside_a_loop_is_simulated_and_exact():
    def body(i: int) -> np.ndarray:
        b = TraceBuilder()
        b.copy_in(8192, i * 8192)
        b.vec(Op.ADD, DType.F32, 2048)
        b.sync_all()
        return _tagged(b)

    sm = _summary([[("loop", 50, body)] for _ in range(4)])
    fast, full = _agree(sm)
    assert fast.extrapolated == 0


def test_unperiodic_loops_fall_back_to_full_simulation():
    # iterations whose GM alignment alternates in a non-repeating pattern cannot be one
    # loop; a loop over distinct tiles with equal costs but a growing gap still agrees
    rng = np.random.default_rng(1)
    parts = []
    for n in rng.integers(1, 5, size=40):
        b = TraceBuilder()
        for _ in range(int(n)):
            b.copy_in(96, int(rng.integers(0, 1 << 20)) * 32 + 1)  # unaligned
            b.vec(Op.MUL, DType.F32, 24)
        parts.append(("flat", _tagged(b)))
    _agree(_summary([parts]))


def test_cross_limit():
    x = np.array([0.0, 100.0])
    assert _cross_limit(x, x - 1.0, np.array([1.0, 1.0]), 10.0) > 1 << 40  # one rate
    # the faster component is ahead: the gap only grows
    assert _cross_limit(np.array([200.0, 0.0]), np.array([198.0, -1.0]), np.array([2.0, 1.0]), 10.0) > 1 << 40
    # the faster one is behind by 100 and gains 1 per period: 89 periods keep it 10 away
    assert _cross_limit(np.array([0.0, 100.0]), np.array([-2.0, 99.0]), np.array([2.0, 1.0]), 10.0) == 89
    # too close now: no extrapolation
    assert _cross_limit(np.array([0.0, 5.0]), np.array([-2.0, 4.0]), np.array([2.0, 1.0]), 10.0) == 0


def test_summary_records_round_trip():
    sm = _summary([_stream(20, 512, 4096, 2048, c) for c in range(3)])
    rec = sm.records()
    assert len(rec) == sm.n_records == len(sm)
    assert rec["core"].tolist() == sorted(rec["core"].tolist())
    gm = np.isin(rec["op"], list(_GM_OPS))
    assert (rec["addr"][gm & (rec["core"] == 1)][:4] == [4096, 4096, 6144, 6144]).all()
    with pytest.raises(ValueError, match="block_dim"):
        simulate(sm, "Ascend910B2", block_dim=4)
