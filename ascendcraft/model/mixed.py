"""Timeline of a mixed launch (``KERNEL_TYPE_MIX_AIC_1_2``): per AI Core, its AIC and two AIVs
simulated together, every CrossCoreWaitFlag a dependency edge on the CrossCoreSetFlag it consumes.

Why together: the point of a mixed kernel is that the vector cores' epilogue of block i overlaps
the cube's block i+1; simulating the launches one after the other (as two launches are) would
hide exactly that, and simulating the cores independently would ignore the waits. Each core
runs the ordinary event loop (:mod:`.periodic`) in its own thread; a wait blocks that thread
until the set it consumes has been simulated on the other core, so one pass gives the exact
max-plus schedule. The flag semantics are Huawei's (API reference "CrossCoreSetFlag(ISASI)",
atlasascendc_api_07_0273, mode 2): the AIC's k-th set of an id releases the k-th wait on it of
each AIV; the AIC's k-th wait releases when both AIVs made their k-th set. A set takes effect
when its pipe has finished everything issued before it; a wait holds the core's instruction
issue. Each hand-off costs ``soc.sync_all_us`` ([assumption]: no public figure for a flag's
latency; the cross-core barrier's assumed cost is used, an upper bound for one AI Core).

Nothing is flattering here: the workspace writes (Fixpipe) and reads (MTE2) are ordinary GM
moves charged on the HBM channel; each core's HBM share is the one it has in the two-launch form
(HBM / G for an AIC of G cube cores, HBM / 2G for an AIV), and since the three run at once the AI
Core's time is also at least its bytes' time on one AI Core's share (HBM / G, the AIVs' channel
time counted at that share), so the launch never moves more than the chip's bandwidth; the L2 replay puts
all cores of the launch in one wave (they run concurrently), so a vector read of a block the
cube wrote a few steps later in its own program is a miss, not a hit. Groups beyond the
physical cube cores run in waves. SyncAll inside a mixed kernel is refused (not modeled).
"""

from __future__ import annotations

import threading
from collections import defaultdict

import numpy as np

from ascendcraft.emulator.trace_format import RECORD_DTYPE, RecordKind
from ascendcraft.emulator.trace_summary import TraceSummary
from ascendcraft.soc import Soc as SocSpec
from ascendcraft.soc import load_soc

from . import periodic
from .op_costs import GM_PATH
from .record_costs import _luts, _ProgramRun
from .timeline import (
    PIPE_NAMES,
    ModelResult,
    _by_core,
    _gm_stats,
    _program_ids,
    full_simulation_forced,
    l2_reuse,
)

CORES_PER_GROUP = 3
"""An AI Core of a mixed launch: its AIC and its two AIVs (910B: 1:2)."""
WAIT_TIMEOUT_S = 600.0
"""A core simulation waiting longer than this for another (never expected) is an error."""


class ModelDeadlock(ValueError):
    """The cores of an AI Core wait on flags nothing will set (the emulator refuses such a
    run first; a hand-made trace can still get here)."""


class _AiCoreFlags:
    """The cross-core flag counters of one AI Core, shared by its three core simulations."""

    def __init__(self, latency_ns: float) -> None:
        self.latency = latency_ns
        self.cv = threading.Condition()
        self.sets: dict[tuple[int, int], list[float]] = defaultdict(list)  # (role, flag) -> set times
        self.used: dict[tuple[int, int], int] = defaultdict(int)  # (role, flag) -> waits done
        self.alive = CORES_PER_GROUP
        self.waiting: dict[int, tuple[int, int]] = {}  # role -> (flag, k) it waits for
        self.failed: str | None = None

    def link(self, role: int) -> _Link:
        return _Link(self, role)

    def ready(self, role: int, flag: int, k: int) -> float | None:
        """When role's k-th wait on ``flag`` can pass (None: not set yet)."""
        if role == 0:  # the AIC: once both AIVs made their k-th set
            a, b = self.sets.get((1, flag), []), self.sets.get((2, flag), [])
            return max(a[k], b[k]) if len(a) > k and len(b) > k else None
        got = self.sets.get((0, flag), [])  # an AIV: the AIC's k-th set
        return got[k] if len(got) > k else None

    def check_stuck(self) -> None:
        """Under the lock: every unfinished core waits on a flag that is not set -> deadlock."""
        if self.failed is None and self.alive and len(self.waiting) == self.alive and all(
                self.ready(r, f, k) is None for r, (f, k) in self.waiting.items()):
            r, (f, _) = next(iter(self.waiting.items()))
            self.failed = f"CrossCoreWaitFlag({f}) on {'the AIC' if r == 0 else 'AIV ' + str(r - 1)} waits for a " \
                          "set no core makes"
            self.cv.notify_all()

    def done(self) -> None:
        with self.cv:
            self.alive -= 1
            self.check_stuck()
            self.cv.notify_all()

    def fail(self, why: str) -> None:
        with self.cv:
            self.failed = self.failed or why
            self.cv.notify_all()


class _Link:
    """One core's view (role 0 = AIC, 1 / 2 = AIV sub-block 0 / 1): :class:`periodic.CrossCore`."""

    def __init__(self, flags: _AiCoreFlags, role: int) -> None:
        self.f = flags
        self.role = role

    def set(self, flag: int, t: float) -> None:
        with self.f.cv:
            self.f.sets[(self.role, flag)].append(t)
            self.f.cv.notify_all()

    def wait(self, flag: int) -> float:
        f = self.f
        with f.cv:
            k = f.used[(self.role, flag)]
            while (t := f.ready(self.role, flag, k)) is None:
                if f.failed is None:
                    f.waiting[self.role] = (flag, k)
                    f.check_stuck()
                    if f.failed is None:
                        f.cv.wait(WAIT_TIMEOUT_S)
                    f.waiting.pop(self.role, None)
                if f.failed is not None:
                    raise ModelDeadlock(f"mixed launch: {f.failed} (the kernel would hang on the device)")
            f.used[(self.role, flag)] = k + 1
            return t + f.latency


def simulate_mixed(trace: np.ndarray | TraceSummary, soc: SocSpec | str | None, groups: int) -> ModelResult:
    """Modeled time of one mixed launch of ``groups`` AI Cores whose trace numbers the cores AIC
    g -> g, AIV s of g -> groups + 2g + s (the emulator's ``core_type="mix"``)."""
    soc = load_soc(soc)
    if groups <= 0:
        raise ValueError("a mixed launch needs at least one AI Core")
    n = CORES_PER_GROUP * groups
    if isinstance(trace, TraceSummary) and full_simulation_forced():
        trace = trace.records()
    prog = _Programs(trace, soc, n)
    if np.any(prog.kinds == int(RecordKind.SYNC_ALL)):
        raise ValueError("SyncAll inside a mixed launch is not modeled")
    members = [(g, groups + 2 * g, groups + 2 * g + 1) for g in range(groups)]
    wave = soc.cube_cores
    cache: dict[tuple, tuple[list[float], list[_ProgramRun]]] = {}
    group_end = np.zeros(groups)
    kernel_ns = 0.0
    crit: list[_ProgramRun] = []
    crit_t = -1.0
    core_ns = np.zeros(n)
    for w0 in range(0, groups, wave):
        in_wave = range(w0, min(groups, w0 + wave))
        wave_end = 0.0
        for g in in_wave:
            cores = members[g]
            # each core's HBM share as in the two-launch form (an AIC of G cube cores, an AIV of 2G)
            active = (len(in_wave), 2 * len(in_wave), 2 * len(in_wave))
            key = (tuple(prog.ids[c] for c in cores), active)
            if key not in cache:
                cache[key] = _run_group(prog, cores, active, soc)
            ends, runs = cache[key]
            # ... and the three share one AI Core's channel (HBM / G): its bytes take at least
            # their time at that share (the AIVs' channel time counts half: theirs is half the share)
            channel = runs[0].hbm_busy_ns + 0.5 * (runs[1].hbm_busy_ns + runs[2].hbm_busy_ns)
            if channel > max(ends):
                ends = [max(e, channel) if i == 0 else e for i, e in enumerate(ends)]
            for c, e in zip(cores, ends, strict=True):
                core_ns[c] = kernel_ns + e
            group_end[g] = max(ends)
            wave_end = max(wave_end, group_end[g])
            if group_end[g] > crit_t:
                crit_t, crit = group_end[g], runs
        kernel_ns += wave_end
    launch = soc.launch_us(groups)
    total_us = launch + kernel_ns / 1e3
    busy_ns = [max(r.busy_ns[i] for r in crit) for i in range(len(PIPE_NAMES))]
    busy = {name: busy_ns[i] / 1e3 for i, name in enumerate(PIPE_NAMES)}
    util = {k: (b / total_us if total_us > 0 else 0.0) for k, b in busy.items()}
    mem = [int(p) for p in (2, 3, 4, 6)]  # MTE1, MTE2, MTE3, FIX
    res = {
        "memory": max(max(r.busy_ns[p] - r.overhead_ns[p] for p in mem for r in crit),
                      max(r.hbm_busy_ns for r in crit)) / 1e3,
        "vector": max(r.busy_ns[1] - r.overhead_ns[1] for r in crit[1:]) / 1e3,
        "cube": (crit[0].busy_ns[5] - crit[0].overhead_ns[5]) / 1e3,
        "scalar": max(r.busy_ns[0] - r.overhead_ns[0] for r in crit) / 1e3,
        "latency": launch + max(max(r.overhead_ns) for r in crit) / 1e3,
    }
    gm_bytes, l2_hit, l2_read = prog.gm_stats
    return ModelResult(
        soc=soc.name, time_us=total_us, kernel_us=kernel_ns / 1e3, launch_us=launch, block_dim=groups,
        pipe_busy_us=busy, pipe_util=util, hbm_busy_us=max(r.hbm_busy_ns for r in crit) / 1e3,
        bound=max(res, key=lambda k: res[k]), resources_us=res, core_us=core_ns / 1e3, gm_bytes=gm_bytes,
        n_records=prog.n_records, n_programs=len(set(prog.ids)), label="modeled",
        warnings=[], l2_hit_bytes=l2_hit, l2_read_bytes=l2_read,
        extrapolated=sum(r.extrapolated for runs in (v[1] for v in cache.values()) for r in runs),
    )


def _run_group(prog: _Programs, cores: tuple[int, ...], active: tuple[float, ...],
               soc: SocSpec) -> tuple[list[float], list[_ProgramRun]]:
    """The AI Core's three cores simulated together (a thread each); their end times (ns)."""
    flags = _AiCoreFlags(soc.sync_all_us * 1e3)
    runs: list[_ProgramRun | None] = [None] * len(cores)
    errors: list[BaseException] = []

    def one(role: int) -> None:
        try:
            runs[role] = prog.run(cores[role], active[role], flags.link(role))
        except BaseException as e:  # noqa: BLE001 - handed to the caller below
            errors.append(e)
            flags.fail(f"{type(e).__name__}: {e}")
        finally:
            flags.done()

    threads = [threading.Thread(target=one, args=(r,), daemon=True) for r in range(len(cores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        first = next((e for e in errors if not isinstance(e, ModelDeadlock)), errors[0])
        raise first
    done = [r for r in runs if r is not None]
    return [sum(r.segments_ns) for r in done], done


class _Programs:
    """Per trace core: its program id, GM bytes and how to simulate it (records or summary)."""

    def __init__(self, trace: np.ndarray | TraceSummary, soc: SocSpec, n: int) -> None:
        self.soc = soc
        if isinstance(trace, TraceSummary):
            if trace.block_dim != n or np.any(trace.core_program[:n] < 0):
                raise ValueError(f"the trace summary covers {trace.block_dim} cores, a mixed launch has {n}")
            self.sm: TraceSummary | None = trace
            rec = trace.footprints
            self.kinds = trace.symbols["kind"]
            self.n_records = trace.n_records
        else:
            rec = _by_core(np.asarray(trace).astype(RECORD_DTYPE, copy=False))
            self.sm = None
            self.kinds = rec["kind"]
            self.n_records = len(rec)
        core = rec["core"].astype(np.int64)
        if len(core) and int(core.max()) >= n:
            raise ValueError(f"trace has core {int(core.max())} but the mixed launch has {n} cores")
        self.rec = rec
        self.starts = np.searchsorted(core, np.arange(n), side="left")
        self.ends = np.searchsorted(core, np.arange(n), side="right")
        self.hits = l2_reuse(rec, soc, n)  # one wave: every core of the launch runs at once
        self.hit_any = bool(self.hits.any())
        gm_mask = (rec["kind"] == int(RecordKind.INSTR)) & np.isin(rec["op"], [int(o) for o in GM_PATH])
        self.gm_stats = _gm_stats(rec, self.hits, gm_mask)
        moved = np.where(gm_mask, rec["bytes"].astype(np.float64), 0.0)
        self.gm_bytes = [float(moved[a:b].sum()) for a, b in zip(self.starts, self.ends, strict=True)]
        if self.sm is not None:
            keys: dict[tuple[int, bytes], int] = {}
            self.ids = [keys.setdefault((int(self.sm.core_program[c]), self._hits(c).tobytes() if self.hit_any
                                         else b""), len(keys)) for c in range(n)]
        else:
            self.ids = _program_ids(rec, self.starts, self.ends, self.hits if self.hit_any else None)
        self._costs: dict[float, periodic.SymbolCosts] = {}
        self._lock = threading.Lock()
        self._luts = _luts(soc)

    def _hits(self, c: int) -> np.ndarray:
        return self.hits[self.starts[c]:self.ends[c]]

    def run(self, c: int, active: float, cross: periodic.CrossCore) -> _ProgramRun:
        hits = self._hits(c) if self.hit_any else None
        if self.sm is None:
            return periodic.run_records(self.rec[self.starts[c]:self.ends[c]], self.soc, active, self._luts,
                                        hits, cross)
        with self._lock:  # the summary's caches are not shared across threads unguarded
            if active not in self._costs:
                self._costs[active] = periodic.symbol_costs(self.sm.symbols, self.sm.is_gm, self.soc, active)
            costs = self._costs[active]
            items = self.sm.parsed(int(self.sm.core_program[c]))
        return periodic.run_summary_program(items, costs, self.soc, hits, cross)
