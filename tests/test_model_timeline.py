"""Timeline model: documented behaviour on synthetic traces with the emulator's event pattern."""

import numpy as np
import pytest

from ascendcraft.emulator.trace_format import DType, Op, Pipe
from ascendcraft.model import min_bytes, roofline_us, simulate
from ascendcraft.model.synth import TraceBuilder, elementwise_trace, single_instr_trace
from ascendcraft.soc import load_soc


def _add_roofline(n, soc="Ascend910B2"):
    return roofline_us(min_bytes([((n,), "float32")] * 3), n, soc)


@pytest.mark.parametrize("op,dtype,cpr", [(Op.EXP, DType.F32, 2), (Op.EXP, DType.F16, 4),
                                          (Op.ADD, DType.F32, 2), (Op.ADDS, DType.F16, 1),
                                          (Op.DIV, DType.F32, 4), (Op.MUL_ADD_DST, DType.F32, 6),
                                          (Op.WHOLE_REDUCE_SUM, DType.F32, 3),
                                          (Op.WHOLE_REDUCE_MAX, DType.F16, 7)])
@pytest.mark.parametrize("repeats", [1, 10, 200])
def test_single_instruction_reproduces_table(op, dtype, cpr, repeats):
    soc = load_soc("Ascend910B2")
    r = simulate(single_instr_trace(op, dtype, repeats), soc)
    cyc = soc.vector_cycle_ns / 1e3
    assert r.pipe_busy_us["V"] == pytest.approx((repeats * cpr + soc.vector_call_overhead_cycles) * cyc)
    assert r.kernel_us == pytest.approx(r.pipe_busy_us["V"] + soc.issue_cycles * soc.cycle_ns / 1e3)
    assert r.time_us == pytest.approx(r.kernel_us + soc.launch_us(1))


@pytest.mark.parametrize("tiles,cores", [(2, 1), (4, 1), (16, 1), (8, 48), (3, 8)])
def test_double_buffering_helps_with_two_or_more_tiles(tiles, cores):
    t = 8192
    d1 = simulate(elementwise_trace(t * tiles * cores, t, 1, cores)).time_us
    d2 = simulate(elementwise_trace(t * tiles * cores, t, 2, cores)).time_us
    assert d2 < d1 * 0.995


@pytest.mark.parametrize("cores", [1, 48])
def test_double_buffering_no_gain_with_one_tile(cores):
    t = 8192
    d1 = simulate(elementwise_trace(t * cores, t, 1, cores)).time_us
    d2 = simulate(elementwise_trace(t * cores, t, 2, cores)).time_us
    assert d2 == pytest.approx(d1, rel=1e-9)


def test_tile_size_sweep_is_u_shaped():
    n = 1 << 20  # one core, 1 M fp32, depth 2
    tiles = [64, 256, 1024, 4096, 16384, 65536, 262144, 1 << 20]
    times = [simulate(elementwise_trace(n, t, 2, 1)).kernel_us for t in tiles]
    best = int(np.argmin(times))
    assert 0 < best < len(tiles) - 1
    assert times[0] > 5 * times[best]  # tiny tiles: per-transfer latency / issue
    assert times[-1] > 1.2 * times[best]  # one huge tile: no overlap
    assert all(a > b for a, b in zip(times[:best], times[1:best + 1], strict=False))  # falls, then rises
    assert all(a < b for a, b in zip(times[best:-1], times[best + 1:], strict=False))


@pytest.mark.parametrize("tile", [8192, 16384])
def test_large_add_near_hbm_roofline(tile):
    n = 1 << 27
    r = simulate(elementwise_trace(n, tile, 2, 48))
    frac = _add_roofline(n) / r.time_us
    assert 0.85 <= frac <= 1.0
    assert r.bound == "memory"


def test_roofline_never_exceeded():
    rng = np.random.default_rng(0)
    for _ in range(25):
        soc = str(rng.choice(["Ascend910B1", "Ascend910B2", "Ascend910B4", "Ascend310P3"]))
        cores = int(rng.choice([1, 2, 8, 40, 48, 96]))
        tile = int(rng.choice([256, 2048, 16384, 65536]))
        n = int(rng.integers(1, 64)) * tile * cores + int(rng.integers(0, 4096))
        r = simulate(elementwise_trace(n, tile, int(rng.choice([1, 2])), cores), soc)
        assert _add_roofline(n, soc) <= r.time_us


def test_310p3_slower_than_910b2():
    tr = elementwise_trace(1 << 24, 8192, 2, 8)
    assert simulate(tr, "Ascend310P3").time_us > simulate(tr, "Ascend910B2").time_us


def test_identical_cores_deduplicated_and_order_independent():
    tr = elementwise_trace((1 << 22) + 1000, 4096, 2, 48)
    r = simulate(tr)
    assert r.n_programs == 2
    shuffled = tr[np.random.default_rng(1).permutation(len(tr))]
    assert simulate(shuffled).time_us == pytest.approx(r.time_us)
    assert r.core_us.shape == (48,) and r.core_us[-1] < r.core_us[0]


def test_barrier_all_serialises():
    def build(barrier):
        b = TraceBuilder()
        b.copy_in(64 * 1024, 0)
        if barrier:
            b.barrier(Pipe.ALL)
        b.vec(Op.EXP, DType.F32, 64 * 1024)
        return b.array()
    free = simulate(build(False))
    ser = simulate(build(True))
    issue = load_soc().issue_cycles * load_soc().cycle_ns / 1e3
    # copy issued, then the vector op starts only after the copy completes (+ its own issue)
    assert ser.kernel_us == pytest.approx(issue + free.pipe_busy_us["MTE2"] + issue
                                          + free.pipe_busy_us["V"])
    assert free.kernel_us == pytest.approx(max(issue + free.pipe_busy_us["MTE2"],
                                               2 * issue + free.pipe_busy_us["V"]))
    assert free.kernel_us < ser.kernel_us


def test_get_value_waits_for_vector():
    b = TraceBuilder()
    b.vec(Op.EXP, DType.F32, 1 << 16)
    b.get_value()
    r = simulate(b.array())
    soc = load_soc()
    issue = soc.issue_cycles * soc.cycle_ns / 1e3
    access = soc.scalar_access_cycles * soc.cycle_ns / 1e3
    assert r.kernel_us == pytest.approx(issue + r.pipe_busy_us["V"] + access)


def test_sync_all_joins_cores():
    soc = load_soc()
    parts = []
    for core, (w1, w2) in enumerate([(1 << 16, 1 << 10), (1 << 10, 1 << 16)]):
        b = TraceBuilder(core)
        b.vec(Op.EXP, DType.F32, w1)
        b.sync_all()
        b.vec(Op.EXP, DType.F32, w2)
        parts.append(b.array())
    r = simulate(np.concatenate(parts), soc)
    one = simulate(single_instr_trace(Op.EXP, DType.F32, (1 << 16) // 64), soc).kernel_us
    assert r.kernel_us > 2 * one + soc.sync_all_us - 0.01


def test_waves_beyond_physical_cores():
    n = 1 << 24
    r48 = simulate(elementwise_trace(n, 8192, 2, 48))
    r96 = simulate(elementwise_trace(2 * n, 8192, 2, 96))
    assert r96.kernel_us == pytest.approx(2 * r48.kernel_us, rel=0.02)


def test_small_kernel_is_latency_bound():
    r = simulate(elementwise_trace(1024, 1024, 2, 1))
    assert r.bound == "latency" and r.label == "modeled"


@pytest.mark.parametrize("seed", range(6))
def test_l2_reuse_distance_equals_lru_replay(seed, monkeypatch):
    """The reuse-distance computation of L2 residency gives exactly the LRU replay's hits."""
    import dataclasses

    from ascendcraft.emulator.trace_format import RECORD_DTYPE, RecordKind
    from ascendcraft.model import timeline

    rng = np.random.default_rng(seed)
    cores, per = int(rng.integers(1, 30)), int(rng.integers(20, 300))
    rec = np.zeros(cores * per, RECORD_DTYPE)
    rec["core"] = np.repeat(np.arange(cores), per)
    rec["seq"] = np.tile(np.arange(per), cores)
    rec["kind"] = int(RecordKind.INSTR)
    rec["op"] = np.where(rng.random(len(rec)) < 0.8, int(Op.DATA_COPY_GM2UB), int(Op.DATA_COPY_UB2GM))
    rec["pipe2"] = rng.integers(1, 3, len(rec))
    rec["addr"] = rng.integers(0, int(rng.integers(5, 400)), len(rec)) * 4096
    rec["bytes"] = rng.choice([1024, 4096, 65536], len(rec))
    soc = dataclasses.replace(load_soc("Ascend910B2"), l2_mib=float(rng.choice([0.01, 0.1, 1.0, 4.0])))
    ncores = int(rng.integers(1, 48))
    fast = timeline.l2_reuse(rec, soc, ncores)
    monkeypatch.setattr(timeline, "_hits_by_reuse_distance", lambda *a, **k: None)
    replay = timeline.l2_reuse(rec, soc, ncores)
    assert np.array_equal(fast, replay)
    assert (replay > 0).any()


def test_core_timeline_is_the_simulated_schedule() -> None:
    """core_timeline lists one block's pipe instructions as the full simulation ran them: in program
    order, each GM copy with its booked HBM-channel time, the last end being that core's modeled
    kernel time; with double buffering the next tile's copy-in starts before this tile's compute ends."""
    from ascendcraft.model.timeline import core_timeline

    tr = elementwise_trace(4096 * 8 * 2, 4096, 2, 2)
    r = simulate(tr, full=True)
    rows = core_timeline(tr, None, 2, 1)
    assert rows and {x.pipe for x in rows} >= {"MTE2", "V", "MTE3"}
    assert max(x.end_us for x in rows) == pytest.approx(float(r.core_us[1]), rel=1e-6)
    copies = [x for x in rows if x.pipe == "MTE2"]
    assert all(x.hbm_us > 0 and x.end_us >= x.start_us + x.hbm_us - 1e-9 for x in copies)
    compute = [x for x in rows if x.pipe == "V"]
    assert copies[1].start_us < compute[0].end_us  # ping-pong: tile 1 loads while tile 0 computes
    with pytest.raises(ValueError, match="block 5 has no records"):
        core_timeline(tr, None, 2, 5)
