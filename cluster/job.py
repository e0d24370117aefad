"""One job, as every executor runs it: an evaluation that never raises, under a CPU budget.

An exception from the objective, a broken return value or an unknown status becomes a
``crash`` outcome with the reason. The job's time limit is on **CPU time**: the seconds
the evaluation's process and every process below it (the emulator's children, the
compiler) spend computing, so a trial on a machine shared with other CPU-heavy work is not
called a timeout because it waited for a core. A job that neither computes nor waits for a
core (it sleeps, or waits for something that never comes) is stopped by a backstop: its
wall time less the time its processes spent waiting for a CPU, past ``WALL_FACTOR`` times
the limit (:mod:`.cputime`).

A job stopped by a limit — this budget, or a limit of the objective's own children that
comes back as a ``timeout`` outcome — is **run once more** before it is called a timeout,
and the timeout says which phase it was in when the objective can tell
(an optional ``phase() -> str`` method: ``build``, ``check run``, ``timing run``).
"""

from __future__ import annotations

import signal
import threading
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..search.protocols import Objective
from ..search.space import Candidate, TrialOutcome, checked_outcome, crash_outcome
from ..status import Status
from .cputime import TreeClock

ATTEMPTS = 2
"""Runs of a job stopped by a limit before it is a timeout (the first, and one retry)."""
WALL_FACTOR = 2.0
"""Backstop: a job whose wall time, less its waits for a CPU, passes this many times its
limit is stopped (it is not computing)."""
SLOWDOWN_CAP = 10.0
"""The most a busy machine is assumed to stretch a job: the driver gives up on a worker
that has not answered after this many times the job's limits (:func:`answer_within_s`)."""
TICK_S = 0.5
"""How often a running job's CPU time is read."""


class JobTimeout(BaseException):
    """Raised into an evaluation that ran past its limit; a BaseException so the objective's
    own ``except Exception`` cannot swallow it."""


def timeout_outcome(timeout_s: float, how: str) -> TrialOutcome:
    return TrialOutcome(Status.TIMEOUT, None, "", f"exceeded {timeout_s:g}s ({how})")


def safe_evaluate(objective: Objective, candidate: Candidate, params: dict[str, int],
                  timeout_s: float) -> TrialOutcome:
    """``objective.evaluate`` that never raises (except :class:`JobTimeout`)."""
    try:
        return checked_outcome(objective.evaluate(candidate, params, timeout_s))
    except JobTimeout:
        raise
    except Exception as exc:  # noqa: BLE001 - any objective failure is a trial result
        tb = traceback.format_exc(limit=3)
        return crash_outcome(f"{type(exc).__name__}: {exc}\n{tb}".strip())


def trial_resources(objective: Objective, candidate: Candidate,
                    params: dict[str, int]) -> dict[str, float]:
    """What the objective says this trial needs besides a CPU (its optional
    ``resources(candidate, params)``, answered from its backend), e.g. ``{"NPU": 1}`` to
    profile on an Ascend device; {} when it says nothing."""
    fn = getattr(objective, "resources", None)
    if not callable(fn):
        return {}
    return {str(k): float(v) for k, v in dict(fn(candidate, dict(params)) or {}).items()}


def phase_of(objective: Objective) -> str:
    """What the objective is doing now (its optional ``phase()``), or "evaluation"."""
    fn = getattr(objective, "phase", None)
    try:
        text = fn() if callable(fn) else None
    except Exception:  # noqa: BLE001 - a name for a message, never a failure
        text = None
    return str(text) if text else "evaluation"


class Budget:
    """The CPU budget of one run of a job and its backstop for a job that waits.

    On the main thread a periodic SIGALRM reads the budget and raises :class:`JobTimeout`
    into the evaluation once it is spent (it interrupts sleeps and waits too); elsewhere
    the job runs to completion and is judged afterwards."""

    def __init__(self, limit_s: float) -> None:
        self.limit_s = limit_s
        self.clock = TreeClock()
        self.t0 = time.monotonic()
        self.why = ""

    def spent(self) -> str:
        """Why the budget is spent ("" while it is not)."""
        if self.limit_s <= 0:
            return ""
        self.clock.sample()
        cpu, wall, waited = self.clock.cpu_s, time.monotonic() - self.t0, self.clock.waited_s
        if cpu > self.limit_s:
            return f"used {cpu:.1f} s of CPU, over the trial's limit of {self.limit_s:g} s"
        if wall - waited > WALL_FACTOR * self.limit_s:
            return (f"no result after {wall:.1f} s with {cpu:.1f} s of CPU and {waited:.1f} s "
                    f"waiting for one: it is not computing (stopped at {WALL_FACTOR:g}x its "
                    f"{self.limit_s:g} s limit)")
        return ""

    @contextmanager
    def enforced(self) -> Iterator[bool]:
        """Interrupt the evaluation when the budget is spent (main thread, Unix)."""
        usable = (hasattr(signal, "setitimer") and self.limit_s > 0
                  and threading.current_thread() is threading.main_thread())
        if not usable:
            yield False
            return

        active = [True]

        def _tick(signum: int, frame: Any) -> None:
            if not active[0]:  # a signal left pending as the section ended
                return
            why = self.spent()
            if why:
                self.why = why
                active[0] = False
                signal.setitimer(signal.ITIMER_REAL, 0)
                raise JobTimeout()

        previous = signal.signal(signal.SIGALRM, _tick)
        first = max(0.05, min(TICK_S, self.limit_s / 4))
        signal.setitimer(signal.ITIMER_REAL, first, TICK_S)
        try:
            yield True
        finally:
            active[0] = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


def _attempt(objective: Objective, candidate: Candidate, params: dict[str, int],
             limit_s: float) -> tuple[TrialOutcome, float]:
    """One run under its budget: (outcome, CPU seconds used)."""
    budget = Budget(limit_s)
    phase = "evaluation"
    try:
        with budget.enforced() as armed:
            try:
                outcome = safe_evaluate(objective, candidate, params, limit_s)
            except JobTimeout:
                phase = phase_of(objective)  # where the evaluation was when it was stopped
                raise
        if not armed:
            why = budget.spent()
            if why:
                outcome = TrialOutcome(Status.TIMEOUT, None, "",
                                       f"{why} (ran to completion; result discarded)")
    except JobTimeout:
        outcome = TrialOutcome(Status.TIMEOUT, None, "", f"{phase}: {budget.why}")
    budget.clock.sample()
    return outcome, budget.clock.cpu_s


def answer_within_s(limit_s: float) -> float:
    """How long a job may take before its executor stops waiting for it: every run it may
    make at its limit, on a machine up to ``SLOWDOWN_CAP`` times slower than idle. The job
    stops itself long before that; this catches a worker that no longer answers."""
    return ATTEMPTS * limit_s * SLOWDOWN_CAP


def run_job(objective: Objective, candidate: Candidate, params: dict[str, int],
            limit_s: float) -> TrialOutcome:
    """Evaluate under the CPU budget ``limit_s``; a run stopped by a limit is run once more
    before it is a timeout. Never raises. ``metrics["cpu_s"]`` holds the CPU seconds the
    (last) run used; a job that needed the retry says so in ``metrics["retried"]`` (with the
    first run's reason), whether the second run succeeded or timed out too."""
    first: TrialOutcome | None = None
    for _ in range(ATTEMPTS):
        outcome, cpu_s = _attempt(objective, candidate, params, limit_s)
        outcome.metrics = {**outcome.metrics, "cpu_s": round(cpu_s, 3)}
        if outcome.status is not Status.TIMEOUT:
            if first is not None:
                outcome.metrics["retried"] = f"first run timed out: {first.message}"[:500]
            return outcome
        if first is None:
            first = outcome
        else:  # the message stays the objective's (it names the phase); the record says why
            outcome.metrics["retried"] = f"timed out on both runs; the first: {first.message}"[:500]
    return outcome
