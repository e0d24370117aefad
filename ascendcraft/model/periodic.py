"""The timeline of one core program given as a trace summary: the event loop of
:mod:`.timeline` run over the program's loops, each loop simulated only until its timeline
is proven periodic, the rest of its iterations extrapolated.

Why it is exact: every step of the event loop is a max or a sum of times and fixed costs,
so the model state (scalar time, pipe free times, pending flag times, live HBM-channel
intervals) after a loop iteration is a max-plus function of the state before it. When, after
iterations j-2q, j-q and j, the state has the same structure and advanced by the same
vector D twice (each component at its own rate), and every pair of components advancing at
different rates is further apart than everything one period can add (the sum of its
costs), no comparison the event loop makes can change its outcome in the next period - so
the next period advances by D again, and so on for k periods, until a converging pair could
come that close (k is cut there) or the L2 hits of the loop's GM reads change. Then the
state jumps by k·D, the accumulated busy times by k times their per-period increments.
Loops without such a proof within their iterations are simulated in full. The only error is
floating-point: increments agree to ``TOL_NS`` (1e-6 ns) per period, so an extrapolation of
k periods is off by at most k·1e-6 ns per time (1 ms of modeled time at 10^9 periods).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ascendcraft.emulator.trace_format import RecordKind
from ascendcraft.emulator.trace_summary import Loop, expand
from ascendcraft.soc import Soc as SocSpec

from .record_costs import _ALL, _book, _luts, _ProgramRun, record_costs

TOL_NS = 1e-6
"""Per-period increments closer than this (ns) are equal."""
QMAX = 4
"""Longest period tried, in loop iterations (double buffering alternates 2 slots)."""
MIN_LOOP_RECORDS = 64
"""A loop of fewer records in all is simulated in full (a proof would cost more)."""
MIN_LOOP_COUNT = 2 * QMAX
"""... and so is a loop of fewer iterations (a proof needs at least three)."""
MAX_STATE = 256
"""Loops are not snapshot while more HBM intervals / flag keys than this are live."""
FLAT_MAX = 1 << 16
"""Loops simulated in full are run as one flat list of symbols up to this many records."""

_SYNC = int(RecordKind.SYNC_ALL)
_INSTR = int(RecordKind.INSTR)
_CROSS = (int(RecordKind.CROSS_SET), int(RecordKind.CROSS_WAIT))


class CrossCore(Protocol):
    """The other cores of a mixed launch's AI Core, as one core's simulation sees them
    (:mod:`.mixed`): ``set`` publishes the time a CrossCoreSetFlag takes effect, ``wait``
    returns when the flag a CrossCoreWaitFlag consumes was set (blocking until it is)."""

    def set(self, flag: int, t: float) -> None: ...

    def wait(self, flag: int) -> float: ...


@dataclass
class SymbolCosts:
    """Per distinct record (symbol) of a summary: what the event loop needs, for one
    number of active cores."""

    kind: list[int]
    pipe: list[int]
    pipe2: list[int]
    event: list[int]
    is_get: list[bool]
    is_gm: list[bool]
    dur: list[float]
    h0: list[float]  # HBM-channel time when no byte comes from L2
    h1: list[float]  # ... when all of it does
    ovh: np.ndarray
    bound: np.ndarray  # the most one occurrence can add to any time: issue + dur + HBM
    issue: float


def symbol_costs(symbols: np.ndarray, is_gm: np.ndarray, soc: SocSpec, active: int) -> SymbolCosts:
    """Costs of a summary's symbols (see :func:`~.timeline.record_costs`)."""
    luts = _luts(soc)
    dur, h0, ovh = record_costs(symbols, soc, active, luts)
    _, h1, _ = record_costs(symbols, soc, active, luts, np.full(len(symbols), 255, np.uint8))
    issue = soc.issue_cycles * soc.cycle_ns
    return SymbolCosts(
        kind=symbols["kind"].tolist(), pipe=symbols["pipe"].tolist(), pipe2=symbols["pipe2"].tolist(),
        event=symbols["event"].tolist(), is_get=(symbols["op"] == 100).tolist(),
        is_gm=np.asarray(is_gm, bool).tolist(), dur=dur.tolist(), h0=h0.tolist(), h1=h1.tolist(),
        ovh=ovh, bound=issue + dur + np.maximum(h0, h1), issue=issue)


def symbol_counts(items: tuple, n_symbols: int) -> np.ndarray:
    """Occurrences of every symbol in a parsed program."""
    out = np.zeros(n_symbols, np.int64)

    def walk(its: tuple, mult: int) -> None:
        lits: list[int] = []
        for x in its:
            if isinstance(x, Loop):
                walk(x.body, mult * x.count)
            else:
                lits.append(x)
        if lits:
            np.add.at(out, np.asarray(lits, np.int64), mult)

    walk(items, 1)
    return out


@dataclass
class _Snapshot:
    shape: tuple
    dyn: np.ndarray  # times that steer the event loop
    acc: np.ndarray  # accumulated busy times (increments only)


class _Core:
    """Event-loop state of one core (the variables of timeline._run_program)."""

    def __init__(self, c: SymbolCosts, hits: np.ndarray | None, gm_pipes: list[int],
                 cross: CrossCore | None = None) -> None:
        self.c = c
        self.cross = cross  # mixed launches: the AI Core's other cores
        self.hits_np = hits
        self.hits = hits.tolist() if hits is not None else None
        self.gm_pipes = gm_pipes
        self.free = [0.0] * 8
        self.busy = [0.0] * 8
        self.s = 0.0
        self.hs: list[float] = []
        self.he: list[float] = []
        self.lo = 0
        self.hbusy = 0.0
        self.seg_start = 0.0
        self.segments: list[float] = []
        self.pending: dict[tuple[int, int, int], deque] = {}
        self.unmatched = 0
        self.log: list | None = None  # record_timeline: (record, pipe, start ns, end ns, HBM-channel ns)
        self.g = 0  # GM moves done (index into hits)
        self.extrapolated = 0  # loop iterations not simulated
        self._groups: dict[int, list] = {}
        self._info: dict[int, tuple[bool, float]] = {}

    # ---------------------------------------------------------------- structure
    def groups(self, items: tuple) -> list:
        """Items as a plan: lists of symbols to run as they are (consecutive symbols and
        small loops, expanded) and the loops worth a periodicity proof (cached per body)."""
        got = self._groups.get(id(items))
        if got is None:
            got, run = [], []
            for x in items:
                if isinstance(x, Loop) and not self.flat(x):
                    if run:
                        got.append(run)
                        run = []
                    got.append(x)
                elif isinstance(x, Loop):
                    run.extend(expand(x.body).tolist() * x.count)
                else:
                    run.append(x)
            if run:
                got.append(run)
            self._groups[id(items)] = got
        return got

    def flat(self, loop: Loop) -> bool:
        """Is ``loop`` run as a flat list (too small to prove periodic, and short)?"""
        small = (loop.count < MIN_LOOP_COUNT or loop.count * loop.records < MIN_LOOP_RECORDS
                 or self.info(loop)[0])
        return small and loop.count * loop.records <= FLAT_MAX

    def info(self, loop: Loop) -> tuple[bool, float, list[bool], bool]:
        """(body has a SYNC_ALL, the most one iteration can add to a time, which pipes' free
        times the body reads or writes, whether it books the HBM channel)."""
        got = self._info.get(id(loop))
        if got is None:
            counts = symbol_counts(loop.body, len(self.c.kind))
            used = np.flatnonzero(counts)
            kind = np.asarray(self.c.kind)[used]
            pipe = np.asarray(self.c.pipe)[used]
            sync = bool(np.any(kind == _SYNC) or np.any(np.isin(kind, _CROSS)))  # never extrapolated
            gm = bool(np.any(np.asarray(self.c.h0)[used] > 0))
            pipes = [False] * 8
            for p in pipe.tolist():
                pipes[p] = True
            if np.any(np.asarray(self.c.is_get)[used]):
                pipes[1] = True  # GetValue waits for V
            if gm:
                for p in self.gm_pipes:
                    pipes[p] = True
            if sync or pipes[_ALL] or np.any((kind == int(RecordKind.BARRIER)) & (pipe == _ALL)):
                pipes = [True] * 8  # drains or waits on every pipe
            got = self._info[id(loop)] = (sync, float(counts @ self.c.bound), pipes, gm)
        return got

    # ---------------------------------------------------------------- execution
    def run_items(self, items: tuple) -> None:
        for x in self.groups(items):
            if isinstance(x, Loop):
                self.run_loop(x)
            else:
                self.run_flat(x)

    def run_loop(self, loop: Loop) -> None:
        sync, cost, pipes, gm = self.info(loop)
        if sync or loop.count < MIN_LOOP_COUNT or loop.count * loop.records < MIN_LOOP_RECORDS:
            for _ in range(loop.count):
                self.run_items(loop.body)
            return
        hist: list[_Snapshot] = []
        first = 0  # state size at the first snapshot: a state that keeps growing is never periodic
        i = 0
        while i < loop.count:
            self.run_items(loop.body)
            i += 1
            if i == loop.count:
                break
            if first < 0:
                continue
            if len(self.hs) + len(self.pending) > MAX_STATE:
                continue  # a long live history (an idle GM pipe behind S): not worth a proof
            hist.append(self.snapshot())
            size = len(hist[-1].dyn)
            first = first or size
            if size > 2 * first + 64:  # e.g. flags set and never waited for: simulate the rest
                first = -1
                continue
            if len(hist) > 2 * QMAX + 1:
                del hist[0]
            k = self.extrapolate(hist, loop.count - i, loop.gm_moves, cost, pipes, gm)
            if k:
                i += k
                self.extrapolated += k
                hist.clear()

    def run_flat(self, ids) -> None:
        """The event loop over a run of symbols (see the timeline module's docstring)."""
        c = self.c
        kind, pipe, pipe2, ev, is_get, is_gm = c.kind, c.pipe, c.pipe2, c.event, c.is_get, c.is_gm
        dur, h0, h1, issue = c.dur, c.h0, c.h1, c.issue
        hits, g = self.hits, self.g
        free, busy, s = self.free, self.busy, self.s
        hs, he, lo, hbusy = self.hs, self.he, self.lo, self.hbusy
        gm_pipes, pending = self.gm_pipes, self.pending
        log = self.log
        prune = bool(gm_pipes)
        for i in ids:
            k = kind[i]
            s += issue
            if k == 0:  # INSTR
                p = pipe[i]
                d = dur[i]
                h = h0[i]
                if is_gm[i]:
                    if hits is not None:
                        f = hits[g]
                        if f:
                            f /= 255.0
                            h = (1.0 - f) * h + f * h1[i]
                    g += 1
                if p == 0:
                    if is_get[i] and free[1] > s:
                        s = free[1]
                    s += d
                    busy[0] += d
                    continue
                st = free[p]
                if s > st:
                    st = s
                end = st + d
                if h > 0.0:
                    if prune:
                        lo_t = min([free[x] for x in gm_pipes])
                        while lo < len(he) and he[lo] <= lo_t:
                            lo += 1
                        if lo > 4096:
                            del hs[:lo], he[:lo]
                            lo = 0
                    hend = _book(hs, he, lo, st, h)
                    hbusy += h
                    if hend > end:
                        end = hend
                free[p] = end
                if log is not None:
                    log.append((i, p, st, end, h))
                busy[p] += end - st
            elif k == 1:  # SET_FLAG
                p = pipe[i]
                t = s if p == 0 or free[p] < s else free[p]
                if p == _ALL:
                    t = max(max(free), s)
                key = (p, pipe2[i], ev[i])
                q = pending.get(key)
                if q is None:
                    q = pending[key] = deque()
                q.append(t)
            elif k == 2:  # WAIT_FLAG
                q = pending.get((pipe2[i], pipe[i], ev[i]))
                if not q:
                    self.unmatched += 1
                    continue
                t = q.popleft()
                p = pipe[i]
                if p == 0:
                    if t > s:
                        s = t
                elif p == _ALL:
                    for j in range(8):
                        if free[j] < t:
                            free[j] = t
                elif free[p] < t:
                    free[p] = t
            elif k == 3:  # BARRIER
                if pipe[i] == _ALL:
                    t = max(max(free), s)
                    free[:] = [t] * 8
                    s = t
            elif k == 4:  # SYNC_ALL
                t = max(max(free), s)
                self.segments.append(t - self.seg_start)
                free[:] = [t] * 8
                s = t
                self.seg_start = t
            elif k == 5:  # CROSS_SET: takes effect when everything issued earlier on its pipe is done
                if self.cross is None:
                    raise ValueError("a CrossCoreSetFlag record in a launch not simulated as mixed")
                p = pipe[i]
                self.cross.set(ev[i], s if p == 0 or free[p] < s else free[p])
            elif k == 6:  # CROSS_WAIT: the scalar unit issues nothing after it before the flag
                if self.cross is None:
                    raise ValueError("a CrossCoreWaitFlag record in a launch not simulated as mixed")
                t = self.cross.wait(ev[i])
                if t > s:
                    s = t
        self.g, self.s, self.lo, self.hbusy = g, s, lo, hbusy

    # ---------------------------------------------------------------- periodicity
    def snapshot(self) -> _Snapshot:
        """The state after an iteration; HBM intervals no future transfer can reach are dropped
        (a transfer on pipe g starts at or after max(S time, g's free time), and neither ever
        decreases)."""
        if self.gm_pipes and self.he:
            s = self.s
            j = bisect_right(self.he, min(max(s, self.free[x]) for x in self.gm_pipes))
            if j:
                del self.hs[:j], self.he[:j]
                self.lo = max(0, self.lo - j)
        keys = sorted(self.pending)
        shape = (tuple((k, len(self.pending[k])) for k in keys), len(self.hs), self.lo,
                 len(self.segments), self.unmatched)
        dyn = [self.s, *self.free]
        for k in keys:
            dyn.extend(self.pending[k])
        dyn.extend(self.hs)
        dyn.extend(self.he)
        return _Snapshot(shape, np.array(dyn), np.array([*self.busy, self.hbusy]))

    def extrapolate(self, hist: list[_Snapshot], remaining: int, per: int, cost: float,
                    pipes: list[bool], gm: bool) -> int:
        """Iterations skipped (0: periodicity not proven yet). Times the loop body neither
        reads nor writes (free times of pipes it does not use; HBM intervals if it moves no GM
        data) stay constant and take no part in its comparisons."""
        a = hist[-1]
        for q in range(1, QMAX + 1):
            if len(hist) < 2 * q + 1 or remaining < q:
                break
            b, c = hist[-1 - q], hist[-1 - 2 * q]
            if not a.shape == b.shape == c.shape:
                continue
            d = a.dyn - b.dyn
            dacc = a.acc - b.acc
            if not (np.allclose(d, b.dyn - c.dyn, rtol=0, atol=TOL_NS)
                    and np.allclose(dacc, b.acc - c.acc, rtol=0, atol=TOL_NS)):
                continue
            k = remaining // q
            k = min(k, self._hits_periods(q * per, k))
            live = np.ones(len(d), bool)
            live[1:9] = pipes
            if not gm:
                live[len(d) - 2 * a.shape[1]:] = False
            if np.any(d[~live] != 0.0):
                continue
            k = min(k, _cross_limit(a.dyn[live], b.dyn[live], d[live], q * cost))
            if k <= 0:
                return 0
            self._shift(a, d * k, dacc * k)
            self.g += k * q * per
            return k * q
        return 0

    def _hits_periods(self, span: int, k: int) -> int:
        """Periods after the current GM position whose L2 hits repeat the last two periods'."""
        if self.hits_np is None or span == 0:
            return k
        g = self.g
        h = self.hits_np[g - 2 * span: g + k * span].reshape(-1, span)
        same = np.all(h == h[0], axis=1)
        bad = np.flatnonzero(~same)
        return k if not len(bad) else int(bad[0]) - 2

    def _shift(self, snap: _Snapshot, d: np.ndarray, dacc: np.ndarray) -> None:
        v = (snap.dyn + d).tolist()
        self.s = v[0]
        self.free[:] = v[1:9]
        pos = 9
        for k in sorted(self.pending):
            q = self.pending[k]
            n = len(q)
            self.pending[k] = deque(v[pos:pos + n])
            pos += n
        n = len(self.hs)
        self.hs[:] = v[pos:pos + n]
        self.he[:] = v[pos + n:pos + 2 * n]
        acc = (snap.acc + dacc).tolist()
        self.busy[:] = acc[:8]
        self.hbusy = acc[8]


def _cross_limit(x: np.ndarray, xprev: np.ndarray, d: np.ndarray, bound: float) -> int:
    """Periods for which every pair of times advancing at different rates stays more than
    ``bound`` apart (and was so a period ago, on the same side): the comparisons of the event
    loop keep their outcomes. 0 if some pair is that close now."""
    rate = d[:, None] - d[None, :]
    diff = rate > TOL_NS
    if not diff.any():
        return 1 << 62
    gap = (x[:, None] - x[None, :])[diff]
    gap_prev = (xprev[:, None] - xprev[None, :])[diff]
    r = rate[diff]
    if np.any(np.abs(gap) <= bound) or np.any(np.abs(gap_prev) <= bound) or np.any(
            np.sign(gap) != np.sign(gap_prev)):
        return 0
    closing = gap < 0  # r > 0: the gap grows; a negative gap closes
    if not closing.any():
        return 1 << 62
    # strictly more than ``bound`` apart after k periods: k < (|gap| - bound) / rate
    return int(np.min(np.ceil((np.abs(gap[closing]) - bound) / r[closing]))) - 1


def run_summary_program(items: tuple, costs: SymbolCosts, soc: SocSpec,
                        hits: np.ndarray | None, cross: CrossCore | None = None) -> _ProgramRun:
    """Timeline of one core program (parsed summary tokens) with ``hits`` (L2 fraction in
    1/255 per GM move, in program order; None: no L2 hits); ``cross``: the other cores of its
    AI Core in a mixed launch."""
    counts = symbol_counts(items, len(costs.kind))
    used = np.flatnonzero(counts)
    gm_pipes = sorted({costs.pipe[i] for i in used.tolist() if costs.h0[i] > 0.0})
    core = _Core(costs, hits, gm_pipes, cross)
    core.run_items(items)
    if hits is not None and core.g != len(hits):
        raise ValueError(f"trace summary: the program made {core.g} GM moves, {len(hits)} have hits")
    return _finish(core, costs, used, counts)


def _records_core(rec: np.ndarray, soc: SocSpec, active: float, luts: dict, l2_hit: np.ndarray | None,
                  cross: CrossCore | None = None) -> tuple[_Core, SymbolCosts]:
    """The event loop of one core given as every record (each its own symbol, its L2 hits in its
    HBM cost), not yet run."""
    dur, hbm, ovh = record_costs(rec, soc, active, luts, l2_hit)
    issue = soc.issue_cycles * soc.cycle_ns
    n = len(rec)
    costs = SymbolCosts(
        kind=rec["kind"].tolist(), pipe=rec["pipe"].tolist(), pipe2=rec["pipe2"].tolist(),
        event=rec["event"].tolist(), is_get=(rec["op"] == 100).tolist(), is_gm=[False] * n,
        dur=dur.tolist(), h0=hbm.tolist(), h1=hbm.tolist(), ovh=ovh, bound=issue + dur + hbm, issue=issue)
    return _Core(costs, None, sorted(set(rec["pipe"][hbm > 0].tolist())), cross), costs


def run_records(rec: np.ndarray, soc: SocSpec, active: float, luts: dict,
                l2_hit: np.ndarray | None = None, cross: CrossCore | None = None) -> _ProgramRun:
    """Timeline of one core given as every record: the full simulation."""
    core, costs = _records_core(rec, soc, active, luts, l2_hit, cross)
    n = len(rec)
    core.run_flat(range(n))
    return _finish(core, costs, np.arange(n), np.ones(n, np.int64))


def record_timeline(rec: np.ndarray, soc: SocSpec, active: float, luts: dict,
                    l2_hit: np.ndarray | None = None) -> list[tuple[int, int, float, float, float]]:
    """Where each pipe instruction of one core's records ran, as ``run_records`` simulates them:
    (record index, pipe, start ns, end ns, HBM-channel ns booked), in program order. Why: a pipe
    that idles, or a copy that a Fixpipe booked earlier stretches, shows here and not in the busy
    totals (``benchmarks/cube_breakdown.py --timeline``)."""
    core, _ = _records_core(rec, soc, active, luts, l2_hit)
    core.log = []
    core.run_flat(range(len(rec)))
    return core.log


def _finish(core: _Core, costs: SymbolCosts, used: np.ndarray, counts: np.ndarray) -> _ProgramRun:
    """The program's last segment, busy and fixed-overhead times per pipe."""
    t = max(max(core.free), core.s)
    core.segments.append(t - core.seg_start)
    n = int(counts.sum())
    instr = np.asarray(costs.kind)[used] == _INSTR
    ovh = np.bincount(np.asarray(costs.pipe)[used][instr], weights=(costs.ovh[used] * counts[used])[instr],
                      minlength=8)
    ovh[0] += costs.issue * n
    core.busy[0] += costs.issue * n
    return _ProgramRun(core.segments, core.busy, core.hbusy, ovh.tolist(), core.unmatched,
                       core.extrapolated)
