"""What a search returns: the winner, every candidate's best, counts and where the time went."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..status import Status
from .space import Candidate, TrialOutcome
from .storage import redact


@dataclass
class WallTimes:
    """Where the wall time went; ``overhead_s`` is the tuner's own work."""

    wall_s: float = 0.0
    evaluate_s: float = 0.0  # summed over workers, measured inside objective.evaluate
    wait_s: float = 0.0  # driver blocked on the executor
    revalidate_s: float = 0.0
    executor_startup_s: float = 0.0  # e.g. Ray start-up; one-off, not in overhead
    executor_close_s: float = 0.0  # e.g. Ray shut-down; one-off, not in overhead
    setup_s: float = 0.0  # opening storage/studies, resume bookkeeping
    report_s: float = 0.0  # trials.jsonl, plots, T4, summary
    overhead_s: float = 0.0  # wall - wait - revalidate - executor start/close (incl. setup/report)
    overhead_frac: float = 0.0  # overhead_s / wall_s
    overhead_per_trial_ms: float = 0.0  # in-loop overhead (sampler + storage) per evaluated trial
    # components of the in-loop overhead (driver side, not overlapped with waiting)
    sampler_s: float = 0.0  # Optuna ask/tell on the in-memory studies (the samplers' work)
    storage_s: float = 0.0  # writes to the persistent storage
    feasible_s: float = 0.0  # Objective.feasible (static checks before any build)
    submit_s: float = 0.0  # handing jobs to the executor (e.g. Ray serialisation)
    warmup_s: float = 0.0  # the objective's first checks, overlapping the executor's start-up
    warmup_wait_s: float = 0.0  # ...and the part of it the run had to wait for (in overhead)
    revise_s: float = 0.0  # in the reviser (e.g. an LLM's rounds); one-off, not in overhead
    loop_s: float = 0.0  # wall time of the search loop (after executor start-up)
    workers: int = 1  # executor capacity

    def settle(self, wall_s: float, evaluated: int) -> None:
        """The derived figures, from the wall time and the parts measured along the way."""
        self.wall_s = wall_s
        one_off = self.executor_startup_s + self.executor_close_s + self.revise_s
        self.overhead_s = max(0.0, wall_s - self.wait_s - self.revalidate_s - one_off)
        self.overhead_frac = self.overhead_s / wall_s if wall_s > 0 else 0.0
        in_loop = max(0.0, self.overhead_s - self.setup_s - self.report_s - self.warmup_wait_s)
        self.overhead_per_trial_ms = 1000 * in_loop / max(1, evaluated)


@dataclass
class CandidateBest:
    """A candidate's fastest correct trial (and, for the winner, its re-validation)."""

    candidate: str
    params: dict[str, int]
    outcome: TrialOutcome
    trial_number: int
    revalidation: TrialOutcome | None = None


@dataclass
class SearchResult:
    """What a search found: the winner (``best``, re-validated on fresh inputs), every
    candidate's best, the counts by outcome and where the wall time went."""

    run_dir: Path
    study_name: str
    storage_url: str | None
    sampler: str
    budget: int
    evaluated: int
    failed: dict[str, int]
    infeasible: int
    duplicates: int
    interrupted: int
    best: CandidateBest | None
    per_candidate: dict[str, CandidateBest | None]
    trials_per_candidate: dict[str, int]
    revalidated: list[dict[str, Any]]
    exhausted: bool
    times: WallTimes = field(default_factory=WallTimes)
    # every candidate's default parameters, evaluated first: {candidate: {"params", "status",
    # "time_us", "trial_number", "message"}} (status "not evaluated" if the budget ran out)
    defaults: dict[str, dict[str, Any]] = field(default_factory=dict)
    # set when a signal stopped the run early: "interrupted by SIGINT" (the summary is partial)
    partial: str | None = None
    # every candidate searched: those given, then those a reviser added
    candidates: list[Candidate] = field(default_factory=list)
    revise_error: str | None = None  # why the reviser was dropped, if it was

    def best_default(self) -> tuple[str, float] | None:
        """The fastest correct default: (candidate, time_us), or None."""
        ok = [(float(d["time_us"]), name) for name, d in self.defaults.items()
              if d.get("status") == Status.OK and d.get("time_us") is not None]
        if not ok:
            return None
        t, name = min(ok)
        return name, t

    def to_dict(self) -> dict[str, Any]:
        def best(b: CandidateBest | None) -> dict[str, Any] | None:
            if b is None:
                return None
            return {
                "candidate": b.candidate,
                "params": b.params,
                "trial_number": b.trial_number,
                "outcome": b.outcome.to_dict(),
                "revalidation": b.revalidation.to_dict() if b.revalidation else None,
            }

        return {
            "run_dir": str(self.run_dir),
            "study_name": self.study_name,
            "storage_url": redact(self.storage_url),
            "sampler": self.sampler,
            "budget": self.budget,
            "evaluated": self.evaluated,
            "failed": self.failed,
            "infeasible": self.infeasible,
            "duplicates": self.duplicates,
            "interrupted": self.interrupted,
            "exhausted": self.exhausted,
            "best": best(self.best),
            "per_candidate": {k: best(v) for k, v in self.per_candidate.items()},
            "trials_per_candidate": self.trials_per_candidate,
            "revalidated": self.revalidated,
            "defaults": self.defaults,
            "partial": self.partial,
            "revise_error": self.revise_error,
            "times": self.times.__dict__,
        }
