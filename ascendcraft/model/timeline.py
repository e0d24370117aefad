"""Trace-driven timeline model: a discrete-event simulation of each core's pipes.

Why a simulation and not a formula: overlap between data movement and compute (double
buffering) must *emerge* from the queue events the kernel actually issued, so that a
candidate that forgets to pipeline is modeled as slow. Nothing here knows about queue
depth or tiles.

Per core, records are processed in program order:

* the scalar unit S issues every record (``issue_cycles`` each) and runs ahead;
* an INSTR on pipe P starts at max(issue time, P free) and occupies P for its cost; pipes
  run in order internally and concurrently with each other;
* GM transfers additionally occupy the core's share of chip HBM bandwidth
  (HBM x sustained fraction / active cores), a per-core channel shared by MTE2, MTE3 and
  FIX; a transfer ends at max(path time, HBM-channel time). A core can therefore never
  move GM data faster than its share, which keeps modeled time >= the HBM roofline;
  GM reads that the tile-reuse L2 model (:func:`l2_reuse`) finds resident use the core's
  share of the L2 bandwidth instead;
* SET_FLAG stores, under (src pipe, dst pipe, event), the time everything issued earlier on
  the source pipe has completed; WAIT_FLAG pops that time (FIFO per key) and holds the
  waiting pipe (or S) until then;
* GetValue waits for V (scalar read of UB); PipeBarrier<ALL> drains every pipe; PIPE_X
  barriers are no-ops because pipes are already in order; SYNC_ALL ends a segment: every
  core restarts after the slowest core reaches it (+ ``sync_all_us``).

Cores with identical programs (records equal ignoring seq/core/addr) are simulated once.
Blocks beyond the physical core count run in waves. Launch overhead is added once.

The emulator's :class:`~ascendcraft.emulator.trace_summary.TraceSummary` (the default trace)
is simulated by :mod:`.periodic`: the same event loop, over each distinct program's loops,
extrapolating a loop once its timeline is proven periodic.
"""

from __future__ import annotations

import hashlib
import os
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from ascendcraft.emulator.trace_format import RECORD_DTYPE, Op, Pipe, RecordKind
from ascendcraft.emulator.trace_summary import FULL_TRACE_ENV, TraceSummary
from ascendcraft.soc import Soc as SocSpec
from ascendcraft.soc import load_soc

from . import periodic
from .op_costs import GM_PATH
from .record_costs import _luts, _ProgramRun

PIPE_NAMES = ["S", "V", "MTE1", "MTE2", "MTE3", "M", "FIX"]
_INF = float("inf")
# byte columns of a record that do not change a core's cost: seq, core, padding, addr
_MASK = np.r_[0:6, 14:16, 56:64]
_CUBE_PIPES = (int(Pipe.M), int(Pipe.MTE1), int(Pipe.FIX))
_MEM_PIPES = (int(Pipe.MTE1), int(Pipe.MTE2), int(Pipe.MTE3), int(Pipe.FIX))


@dataclass
class ModelResult:
    """Modeled time of one kernel launch and where it went (all times in microseconds)."""

    soc: str
    time_us: float
    kernel_us: float
    launch_us: float
    block_dim: int
    pipe_busy_us: dict[str, float]
    pipe_util: dict[str, float]
    hbm_busy_us: float
    bound: str
    resources_us: dict[str, float]
    core_us: np.ndarray
    gm_bytes: int
    n_records: int
    n_programs: int
    label: str = "modeled"
    warnings: list[str] = field(default_factory=list)
    l2_hit_bytes: int = 0
    l2_read_bytes: int = 0
    extrapolated: int = 0
    """Loop iterations the timeline extrapolated instead of simulating (summary traces)."""

    @property
    def l2_hit_frac(self) -> float:
        """Fraction of the GM bytes read (of GM-tagged moves) that the L2 model served."""
        return self.l2_hit_bytes / self.l2_read_bytes if self.l2_read_bytes else 0.0


def _run_program(rec: np.ndarray, soc: SocSpec, active: int, luts: dict,
                 l2_hit: np.ndarray | None = None) -> _ProgramRun:
    """The event loop over one core's records (the loop itself: :class:`.periodic._Core`)."""
    return periodic.run_records(rec, soc, active, luts, l2_hit)


# --------------------------------------------------------------------------------------
# whole trace
# --------------------------------------------------------------------------------------


def _by_core(trace: np.ndarray) -> np.ndarray:
    core = trace["core"]
    if len(trace) > 1:
        dc = np.diff(core.astype(np.int64))
        ordered = bool(np.all(dc >= 0))
        if ordered:
            same = dc == 0
            ordered = bool(np.all(np.diff(trace["seq"].astype(np.int64))[same] > 0))
        if not ordered:
            trace = trace[np.lexsort((trace["seq"], core))]
    return trace


def _program_ids(trace: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                 l2_hit: np.ndarray | None = None) -> list[int]:
    """Program id per core: cores whose records are byte-identical ignoring seq, core, addr
    and padding (and whose L2 hits agree) share an id. Cores are grouped by length, hashed
    (blake2b over a masked byte view), and a hash match is confirmed byte for byte, so ids
    are exact."""
    raw = trace.view(np.uint8).reshape(len(trace), RECORD_DTYPE.itemsize)
    ids: list[int] = []
    reps: dict[tuple[int, bytes], list[tuple[int, np.ndarray]]] = {}
    n_ids = 0
    for a, b in zip(starts, ends, strict=True):
        m = raw[a:b].copy()
        m[:, _MASK] = 0
        if l2_hit is not None:
            m[:, 14] = l2_hit[a:b]  # a masked padding byte carries the hit flag
        key = (int(b - a), hashlib.blake2b(m, digest_size=16).digest())
        for pid, rep in reps.get(key, []):
            if np.array_equal(rep, m):
                ids.append(pid)
                break
        else:
            pid = n_ids
            n_ids += 1
            reps.setdefault(key, []).append((pid, m))
            ids.append(pid)
    return ids


_GM_READS = [int(o) for o in (Op.DATA_COPY_GM2UB, Op.DATA_COPY_PAD_GM2UB, Op.DATA_COPY_GM2L1)]
_GM_WRITES = [int(o) for o in (Op.DATA_COPY_UB2GM, Op.DATA_COPY_PAD_UB2GM, Op.FIXPIPE_L0C2GM,
                               Op.INIT_GLOBAL_MEMORY)]


def l2_reuse(trace: np.ndarray, soc: SocSpec, ncores: int) -> np.ndarray:
    """Per record the fraction of a GM read served by L2, in 1/255 units (uint8; ``trace``
    sorted by core).

    Tile-reuse model: a GM move's footprint is its key (GM argument, start offset, bytes,
    bursts, burst stride) - exactly the tile an AscendC kernel copies. L2 is an LRU over
    these footprints with the SoC's L2 capacity, cold at launch. Accesses are replayed in an
    approximate global order: the cores of one wave (``ncores`` consecutive blocks) advance in
    lock step - step j holds access j of every core - and waves run one after another. A read
    of a footprint resident before its step hits fully; g reads of the same absent footprint
    in one step share one HBM fetch (each is a 1 - 1/g hit). Every read and write makes its
    footprint resident (write-allocate). Partial overlaps never hit (conservative). Moves
    without a GM argument tag (``pipe2 == 0``, e.g. synthetic traces) never hit."""
    n = len(trace)
    hits = np.zeros(n, np.uint8)
    if n == 0 or not soc.l2_gbps:
        return hits
    instr = trace["kind"] == int(RecordKind.INSTR)
    tagged = instr & (trace["pipe2"] > 0)
    is_r = tagged & np.isin(trace["op"], _GM_READS)
    if not is_r.any():
        return hits
    is_w = tagged & np.isin(trace["op"], _GM_WRITES)
    idx = np.flatnonzero(is_r | is_w)
    # quick exit: no footprint read twice and none read after being written -> no hits
    with np.errstate(over="ignore"):
        h = (trace["addr"][idx] * np.uint64(0x9E3779B97F4A7C15)
             ^ trace["bytes"][idx] * np.uint64(0xC2B2AE3D27D4EB4F)
             ^ (trace["blocks"][idx].astype(np.uint64) << np.uint64(40))
             ^ (trace["k"][idx].astype(np.uint64) << np.uint64(20))
             ^ (trace["pipe2"][idx].astype(np.uint64) << np.uint64(56)))
    hs = np.sort(h)
    if not (hs[1:] == hs[:-1]).any():
        return hits  # every footprint (read or written) occurs once
    t = trace[idx]
    r = is_r[idx]
    core = t["core"].astype(np.int64)
    j = np.arange(len(idx)) - _run_starts(core)
    step = (core // max(1, ncores)) * (int(j.max()) + 1) + j
    order = _stable_order(step, core)
    st = step[order]
    # footprint keys as small ints (one per distinct (argument, offset, bytes, bursts, stride)):
    # by the 64-bit hash, confirmed field by field (a collision takes the slow exact way)
    cols = np.stack([t["pipe2"].astype(np.uint64), t["addr"], t["bytes"],
                     t["blocks"].astype(np.uint64), t["k"].astype(np.uint64)], axis=1)
    uniq, key = np.unique(h, return_inverse=True)
    key = key.ravel()
    rep = np.zeros(len(uniq), np.int64)
    rep[key] = np.arange(len(key))
    if not np.array_equal(cols[rep[key]], cols):
        uniq, key = np.unique(np.ascontiguousarray(cols).view(np.dtype((np.void, 40))).ravel(),
                              return_inverse=True)
        key = key.ravel()
    size = np.zeros(len(uniq), np.int64)
    size[key] = t["bytes"].astype(np.int64)
    cap = soc.l2_mib * float(1 << 20)
    back = np.empty_like(order)  # the inverse permutation
    back[order] = np.arange(len(order))
    if size.sum() <= cap:  # nothing is ever evicted: residency is "accessed in an earlier step"
        hits[idx] = _hits_without_eviction(key[order], st, r[order], len(uniq))[back]
        return hits
    got = _hits_by_reuse_distance(key[order], st, r[order], size, cap)
    if got is not None:
        hits[idx] = got[back]
        return hits
    out = [0] * len(idx)
    keys = key.tolist()
    sizes = size.tolist()
    rl = r.tolist()
    bounds = [0, *(np.flatnonzero(np.diff(st)) + 1).tolist(), len(order)]
    order_l = order.tolist()
    lru: OrderedDict[int, int] = OrderedDict()
    used = 0
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        seg = order_l[a:b]
        absent: dict[int, int] = {}
        for p in seg:
            if rl[p] and keys[p] not in lru:
                absent[keys[p]] = absent.get(keys[p], 0) + 1
        for p in seg:
            kp = keys[p]
            if rl[p]:
                g = absent.get(kp)
                out[p] = 255 if g is None else int(round(255 * (1 - 1 / g)))
            if kp in lru:
                lru.move_to_end(kp)
            else:
                lru[kp] = sizes[kp]
                used += sizes[kp]
        while used > cap and lru:
            used -= lru.popitem(last=False)[1]
    hits[idx] = out
    return hits


def _run_starts(sorted_values: np.ndarray) -> np.ndarray:
    """Per element of a sorted array, the index of the first element equal to it (what
    ``searchsorted(a, a, "left")`` gives, in linear time)."""
    n = len(sorted_values)
    if n == 0:
        return np.zeros(0, np.int64)
    heads = np.flatnonzero(np.concatenate([[True], sorted_values[1:] != sorted_values[:-1]]))
    return np.repeat(heads, np.diff(np.concatenate([heads, [n]])))


def _stable_order(major: np.ndarray, minor: np.ndarray) -> np.ndarray:
    """``np.lexsort((minor, major))`` (ties in position order) of non-negative integers, as
    one stable sort of a combined key when it fits in 63 bits."""
    if len(major) == 0:
        return np.zeros(0, np.int64)
    span = int(minor.max()) + 1
    if int(major.max()) < (1 << 62) // span:
        return np.argsort(major.astype(np.int64) * span + minor.astype(np.int64), kind="stable")
    return np.lexsort((minor, major))


def _hits_by_reuse_distance(key: np.ndarray, step: np.ndarray, read: np.ndarray, size: np.ndarray,
                            cap: float, work: int = 64) -> np.ndarray | None:
    """:func:`l2_reuse`'s LRU without replaying it (accesses in replay order).

    With eviction to fit at each step's end, a footprint K last accessed at position a is
    still resident when step t starts iff size(K) + B <= cap, B = bytes of the distinct
    footprints accessed after a up to the end of step t - 1 (those are all more recent than K,
    so none is evicted before it). B lies between the bytes first seen in that range and all
    bytes accessed in it (prefix sums); where those bounds do not decide, B is counted
    exactly. None if that would take more than ``work`` x the accesses (replay instead)."""
    n = len(key)
    srt = np.argsort(key, kind="stable")
    same = key[srt][1:] == key[srt][:-1]
    prev = np.full(n, -1)
    prev[srt[1:][same]] = srt[:-1][same]
    # groups: the accesses of one footprint in one step (they see the same residency)
    grp = _stable_order(key, step)
    head = np.ones(n, bool)
    head[1:] = (key[grp][1:] != key[grp][:-1]) | (step[grp][1:] != step[grp][:-1])
    gid = np.empty(n, np.int64)
    gid[grp] = np.cumsum(head) - 1
    first = grp[head]  # per group: its first access
    ga = prev[first]  # the footprint's last access before the step (-1: none)
    ge = _run_starts(step)[first]  # end (exclusive) of the earlier steps (``step`` is sorted)
    gsz = size[key[first]].astype(np.float64)
    sz = size[key].astype(np.float64)
    cum = np.concatenate([[0.0], np.cumsum(sz)])
    new_bytes = np.concatenate([[0.0], np.cumsum(np.where(prev < 0, sz, 0.0))])
    ok = ga >= 0
    lo = np.where(ok, ga + 1, 0)
    resident = ok & (gsz + cum[ge] - cum[lo] <= cap)
    reads = np.bincount(gid[read], minlength=len(first))
    unsure = np.flatnonzero(ok & ~resident & (gsz + new_bytes[ge] - new_bytes[lo] <= cap) & (reads > 0))
    if int(np.sum(ge[unsure] - lo[unsure])) > work * n + (1 << 20):
        return None
    for g in unsure.tolist():  # the bounds do not decide: count the distinct bytes exactly
        resident[g] = gsz[g] + float(size[np.unique(key[lo[g]:ge[g]])].sum()) <= cap
    out = np.zeros(n, np.uint8)
    hit = read & resident[gid]
    out[hit] = 255
    cold = read & ~resident[gid]
    if cold.any():
        shared = reads[gid[cold]].astype(np.float64)  # g reads of an absent footprint share a fetch
        out[cold] = np.round(255 * (1 - 1 / shared)).astype(np.uint8)
    return out


def _hits_without_eviction(key: np.ndarray, step: np.ndarray, read: np.ndarray, n_keys: int) -> np.ndarray:
    """:func:`l2_reuse` when L2 holds every footprint (accesses in replay order): a read hits
    fully if its footprint was accessed in an earlier step; g reads of a footprint in the step
    of its first access share one fetch (1 - 1/g each)."""
    first = np.full(n_keys, np.iinfo(np.int64).max)
    np.minimum.at(first, key, step)
    out = np.zeros(len(key), np.uint8)
    later = read & (step > first[key])
    out[later] = 255
    cold = read & (step == first[key])
    if cold.any():
        pair = key[cold] * (int(step.max()) + 1) + step[cold]
        _, inv, g = np.unique(pair, return_inverse=True, return_counts=True)
        out[cold] = np.round(255 * (1 - 1 / g[inv.ravel()].astype(np.float64))).astype(np.uint8)
    return out


def physical_cores(trace: np.ndarray, soc: SocSpec) -> int:
    """Cores one wave can use: cube cores if the kernel uses the cube side, else vector cores.
    (``trace`` may be every record or a summary's distinct records.)"""
    if len(trace) and np.isin(trace["pipe"], _CUBE_PIPES).any():
        return soc.cube_cores
    return soc.vector_cores


def full_simulation_forced() -> bool:
    """``$ASCENDCRAFT_FULL_SIM=1``: a summary is expanded and simulated record by record."""
    return os.environ.get(FULL_TRACE_ENV, "") not in ("", "0")


def simulate(trace: np.ndarray | TraceSummary, soc: SocSpec | str | None = None,
             block_dim: int | None = None, *, full: bool | None = None) -> ModelResult:
    """Modeled time of one launch of the kernel that produced ``trace`` on ``soc``.

    ``trace`` is every record (a ``RECORD_DTYPE`` array) or the emulator's
    :class:`TraceSummary`. A summary is simulated once per distinct core program, and the
    iterations of its loops only until the timeline proves them periodic (see
    :mod:`ascendcraft.model.periodic`); ``full=True`` (or ``$ASCENDCRAFT_FULL_SIM=1``)
    expands it and simulates every record instead - the reference the fast path agrees with.
    ``block_dim`` defaults to the number of cores present in the trace; every block index
    0..block_dim-1 must appear (the emulator runs all of them)."""
    soc = load_soc(soc)
    if isinstance(trace, TraceSummary):
        if full if full is not None else full_simulation_forced():
            return _simulate_records(trace.records(), soc, block_dim or trace.block_dim)
        return _simulate_summary(trace, soc, block_dim)
    return _simulate_records(trace, soc, block_dim)


@dataclass(frozen=True)
class TimelineRow:
    """One pipe instruction of a core as the model ran it (microseconds)."""

    pipe: str
    op: str
    bytes: int
    start_us: float
    end_us: float
    hbm_us: float  # HBM-channel time booked (0 off the GM paths)
    l2_frac: float  # share of its read the L2 model served


def core_timeline(trace: np.ndarray | TraceSummary, soc: SocSpec | str | None = None,
                  block_dim: int | None = None, core: int = 0) -> list[TimelineRow]:
    """Every pipe instruction of block ``core`` of a launch, in program order, with where the
    full simulation ran it (the first wave's core count shares HBM). For reading a schedule:
    the busy totals of :func:`simulate` do not say which copy waited for which."""
    soc = load_soc(soc)
    rec = trace.records() if isinstance(trace, TraceSummary) else np.asarray(trace)
    rec = _by_core(rec.astype(RECORD_DTYPE) if rec.dtype != RECORD_DTYPE else rec)
    bd = int(block_dim) if block_dim is not None else int(rec["core"].max()) + 1 if len(rec) else 1
    ncores = physical_cores(rec, soc)
    hits = l2_reuse(rec, soc, ncores)
    core_ids = rec["core"].astype(np.int64)
    a, b = np.searchsorted(core_ids, core, side="left"), np.searchsorted(core_ids, core, side="right")
    if a == b:
        raise ValueError(f"block {core} has no records in this trace")
    mine, h = rec[a:b], hits[a:b]
    log = periodic.record_timeline(mine, soc, min(bd, ncores), _luts(soc), h if h.any() else None)
    return [TimelineRow(Pipe(p).name, Op(int(mine["op"][i])).name, int(mine["bytes"][i]), st / 1e3, end / 1e3,
                        hb / 1e3, float(h[i]) / 255.0) for i, p, st, end, hb in log]


def _simulate_records(trace: np.ndarray, soc: SocSpec, block_dim: int | None) -> ModelResult:
    trace = np.asarray(trace)
    if trace.dtype != RECORD_DTYPE:
        trace = trace.astype(RECORD_DTYPE)
    trace = _by_core(trace)
    cores_present = np.unique(trace["core"]) if len(trace) else np.zeros(0, np.int64)
    bd = int(block_dim) if block_dim is not None else max(1, len(cores_present))
    if len(cores_present) and int(cores_present[-1]) >= bd:
        raise ValueError(f"trace has core {int(cores_present[-1])} but block_dim is {bd}")
    if bd <= 0:
        raise ValueError("block_dim must be >= 1")
    core_ids = trace["core"].astype(np.int64)
    starts = np.searchsorted(core_ids, np.arange(bd), side="left")
    ends = np.searchsorted(core_ids, np.arange(bd), side="right")
    ncores = physical_cores(trace, soc)
    hits = l2_reuse(trace, soc, ncores)
    hit_any = bool(hits.any())
    prog_ids = _program_ids(trace, starts, ends, hits if hit_any else None)
    luts = _luts(soc)
    first = {}
    for c, pid in enumerate(prog_ids):
        first.setdefault(pid, c)

    def run(pid: int, active: int) -> _ProgramRun:
        c = first[pid]
        return _run_program(trace[starts[c]:ends[c]], soc, active, luts,
                            hits[starts[c]:ends[c]] if hit_any else None)

    has_sync = bool(np.any(trace["kind"] == int(RecordKind.SYNC_ALL))) if len(trace) else False
    gm_mask = (trace["kind"] == int(RecordKind.INSTR)) & np.isin(trace["op"], [int(o) for o in GM_PATH])
    return _chip(soc, bd, ncores, prog_ids, run, has_sync, _gm_stats(trace, hits, gm_mask), len(trace))


def _simulate_summary(sm: TraceSummary, soc: SocSpec, block_dim: int | None) -> ModelResult:
    bd = int(block_dim) if block_dim is not None else sm.block_dim
    if bd != sm.block_dim or bd <= 0 or np.any(sm.core_program[:bd] < 0):
        raise ValueError(f"the trace summary covers blocks of block_dim {sm.block_dim}, not all of {bd}")
    fp = sm.footprints
    ncores = physical_cores(sm.symbols, soc)
    hits = l2_reuse(fp, soc, ncores)
    hit_any = bool(hits.any())
    core_ids = fp["core"].astype(np.int64)
    starts = np.searchsorted(core_ids, np.arange(bd), side="left")
    ends = np.searchsorted(core_ids, np.arange(bd), side="right")
    keys: dict[tuple[int, bytes], int] = {}
    prog_ids: list[int] = []
    first: dict[int, int] = {}
    for c in range(bd):  # a program: its records and (where L2 serves reads) its hits
        key = (int(sm.core_program[c]), hits[starts[c]:ends[c]].tobytes() if hit_any else b"")
        pid = keys.setdefault(key, len(keys))
        first.setdefault(pid, c)
        prog_ids.append(pid)
    costs: dict = {}

    def run(pid: int, active: int) -> _ProgramRun:
        c = first[pid]
        if active not in costs:
            costs[active] = periodic.symbol_costs(sm.symbols, sm.is_gm, soc, active)
        return periodic.run_summary_program(sm.parsed(int(sm.core_program[c])), costs[active], soc,
                                   hits[starts[c]:ends[c]] if hit_any else None)

    has_sync = bool(np.any(sm.symbols["kind"] == int(RecordKind.SYNC_ALL)))
    gm_mask = (fp["kind"] == int(RecordKind.INSTR)) & np.isin(fp["op"], [int(o) for o in GM_PATH])
    return _chip(soc, bd, ncores, prog_ids, run, has_sync, _gm_stats(fp, hits, gm_mask), sm.n_records)


def _gm_stats(rec: np.ndarray, hits: np.ndarray, gm_mask: np.ndarray) -> tuple[int, int, int]:
    """(GM bytes moved, GM bytes read that L2 served, GM bytes read) of GM-tagged moves."""
    reads = (rec["kind"] == int(RecordKind.INSTR)) & (rec["pipe2"] > 0) & np.isin(rec["op"], _GM_READS)
    return (int(rec["bytes"][gm_mask].sum()), int((rec["bytes"][reads] * (hits[reads] / 255.0)).sum()),
            int(rec["bytes"][reads].sum()))


def _chip(soc: SocSpec, bd: int, ncores: int, prog_ids: list[int], run, has_sync: bool,
          gm: tuple[int, int, int], n_records: int) -> ModelResult:
    """Chip-wide combination of the core programs: waves of ``ncores`` blocks, each wave's
    cores sharing HBM (``run(program, active cores)``), SYNC_ALL segments aligned across the
    cores of a wave, launch overhead once; the critical core's pipes describe the kernel."""
    warnings: list[str] = []
    runs: dict[tuple[int, int], _ProgramRun] = {}
    core_ns = np.zeros(bd)
    kernel_ns = 0.0
    crit: _ProgramRun | None = None
    crit_t = -1.0
    if has_sync and bd > ncores:
        warnings.append(f"SYNC_ALL with block_dim {bd} > {ncores} physical cores deadlocks on hardware")
    for w0 in range(0, bd, ncores):
        wave = range(w0, min(bd, w0 + ncores))
        active = len(wave)
        wave_runs = []
        for c in wave:
            key = (prog_ids[c], active)
            if key not in runs:
                runs[key] = run(prog_ids[c], active)
            wave_runs.append(runs[key])
        nseg = max(len(r.segments_ns) for r in wave_runs)
        if any(len(r.segments_ns) != nseg for r in wave_runs):
            warnings.append("cores reach different numbers of SYNC_ALL barriers")
        seg_max = [max(r.segments_ns[j] if j < len(r.segments_ns) else 0.0 for r in wave_runs)
                   for j in range(nseg)]
        sync_ns = soc.sync_all_us * 1e3
        before_last = sum(seg_max[:-1]) + sync_ns * (nseg - 1)
        for c, r in zip(wave, wave_runs, strict=False):
            core_ns[c] = kernel_ns + before_last + r.segments_ns[-1]
            if sum(r.segments_ns) > crit_t:  # critical core: the longest single program
                crit_t, crit = sum(r.segments_ns), r
        kernel_ns += before_last + seg_max[-1]
    unmatched = sum(r.unmatched_waits for r in runs.values())
    if unmatched:
        warnings.append(f"{unmatched} WAIT_FLAG records had no earlier matching SET_FLAG")

    launch = soc.launch_us(bd)
    kernel_us = kernel_ns / 1e3
    total = launch + kernel_us
    assert crit is not None
    busy = {n: crit.busy_ns[i] / 1e3 for i, n in enumerate(PIPE_NAMES)}
    util = {n: (b / total if total > 0 else 0.0) for n, b in busy.items()}
    ovh = crit.overhead_ns
    res = {
        "memory": max([crit.busy_ns[p] - ovh[p] for p in _MEM_PIPES] + [crit.hbm_busy_ns]) / 1e3,
        "vector": (crit.busy_ns[int(Pipe.V)] - ovh[int(Pipe.V)]) / 1e3,
        "cube": (crit.busy_ns[int(Pipe.M)] - ovh[int(Pipe.M)]) / 1e3,
        "scalar": (crit.busy_ns[0] - ovh[0]) / 1e3,
        "latency": launch + (max(ovh) + soc.sync_all_us * 1e3 * (len(crit.segments_ns) - 1)) / 1e3,
    }
    bound = max(res, key=lambda k: res[k])
    gm_bytes, l2_hit, l2_read = gm
    return ModelResult(
        soc=soc.name, time_us=total, kernel_us=kernel_us, launch_us=launch, block_dim=bd,
        pipe_busy_us=busy, pipe_util=util, hbm_busy_us=crit.hbm_busy_ns / 1e3, bound=bound,
        resources_us=res, core_us=core_ns / 1e3, gm_bytes=gm_bytes, n_records=n_records,
        n_programs=len(set(prog_ids)), warnings=warnings, l2_hit_bytes=l2_hit, l2_read_bytes=l2_read,
        extrapolated=sum(r.extrapolated for r in runs.values()),
    )
