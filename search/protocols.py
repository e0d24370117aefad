"""What the search driver is handed: what to evaluate, where to evaluate it, and
(optionally) who may add candidates while it runs.

The driver knows neither the evaluator nor the machines: it asks an :class:`Objective`
whether a point is feasible and hands evaluations to an :class:`Executor`. The application
layer wires concrete ones (:mod:`ascendcraft.app.objective`, :mod:`ascendcraft.cluster`),
tests wire toy ones. A :class:`Reviser` (the LLM proposer's repair and optimisation rounds)
is shown a :class:`SearchView` after each batch of finished trials and may add candidates
to the same search, or retire ones that cannot work.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from .space import Candidate, TrialOutcome


@runtime_checkable
class Objective(Protocol):
    """Evaluates one candidate with one assignment of its tunables.

    ``evaluate`` must never raise for a bad kernel (it returns a failed outcome) and the
    object must be picklable: it is shipped to Ray workers.
    """

    def feasible(self, candidate: Candidate, params: dict[str, int]) -> str | None:
        """Cheap static check (capacity, alignment) before any build: the reason, or None."""
        ...

    def evaluate(self, candidate: Candidate, params: dict[str, int], timeout_s: float) -> TrialOutcome:
        """Build, run, verify and time the kernel."""
        ...

    def revalidate(self, candidate: Candidate, params: dict[str, int]) -> TrialOutcome:
        """Re-check correctness on fresh inputs (end of run)."""
        ...


@dataclass
class Finished:
    """A finished job: the driver's token, the outcome, and seconds spent inside evaluate."""

    token: int
    outcome: TrialOutcome
    eval_s: float
    worker: str = ""


@runtime_checkable
class Executor(Protocol):
    """Where evaluations run. The driver starts it, keeps at most ``capacity`` jobs in
    flight, polls for finished ones and closes it when the search loop ends. Every job ends
    as a :class:`Finished` whose outcome says what happened (an exception, a timeout or a
    dead worker is a failed outcome, never an exception in the driver)."""

    @property
    def capacity(self) -> int:
        """Most jobs the driver should keep in flight."""
        ...

    def start(self) -> None:
        """Acquire resources (e.g. start Ray); idempotent."""
        ...

    def submit(self, token: int, objective: Objective, candidate: Candidate,
               params: dict[str, int], timeout_s: float) -> None: ...

    def poll(self, timeout_s: float | None = None) -> list[Finished]:
        """Block until at least one job finished (or ``timeout_s`` passed); return them."""
        ...

    def in_flight(self) -> int: ...

    def close(self) -> None:
        """Cancel what is still running and release what ``start`` acquired."""
        ...


@dataclass(frozen=True)
class SearchProgress:
    """Where a search stands, for whoever shows it (``final``: the loop has ended)."""

    done: int
    budget: int
    best_us: float | None
    best_candidate: str | None
    failed: int
    infeasible: int
    final: bool = False


class ProgressSink(Protocol):
    """Shows progress (the CLI's terminal line); the search itself prints nothing."""

    def update(self, progress: SearchProgress) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class CandidateView:
    """One candidate as a reviser sees it: its evaluated trials in the order they finished
    (``(params, outcome)``), how many are in flight, whether it is out of points."""

    candidate: Candidate
    trials: tuple[tuple[dict[str, int], TrialOutcome], ...]
    in_flight: int
    exhausted: bool

    def best(self) -> tuple[dict[str, int], TrialOutcome] | None:
        """The fastest correct trial so far."""
        ok = [(p, o) for p, o in self.trials if o.ok]
        return min(ok, key=lambda po: float(po[1].time_us or 0.0)) if ok else None


@dataclass(frozen=True)
class SearchView:
    """Where a search stands, for a :class:`Reviser`. ``idle``: nothing is left to try, the
    search ends unless candidates are added."""

    evaluated: int
    in_flight: int
    budget: int
    candidates: tuple[CandidateView, ...]
    idle: bool = False

    @property
    def remaining(self) -> int:
        """Trials of the budget not yet spent nor in flight."""
        return max(0, self.budget - self.evaluated - self.in_flight)


@dataclass(frozen=True)
class Revision:
    """What a reviser wants: candidates to add (tuned like the others, within the same
    budget) and names of candidates to give no more trials."""

    add: tuple[Candidate, ...] = ()
    retire: tuple[str, ...] = ()


class Reviser(Protocol):
    """Adds candidates while a search runs (called by the driver between batches)."""

    def revise(self, view: SearchView) -> Revision: ...
