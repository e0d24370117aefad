"""``tune``: search every candidate's tunables with Optuna and keep the fastest correct one.

The application layer wires the pieces the search driver only knows by protocol: the
tuning objective (:mod:`.objective`) and an executor made from configuration
(:func:`ascendcraft.cluster.make_executor`). The result is a typed :class:`Summary`;
``to_dict()`` is what ``tune --json`` prints, ``text`` the table ``summary.txt`` holds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cluster import ExecutorConfig, make_executor
from ..search import driver, report
from ..search.errors import SearchInterrupted
from ..search.identity import source_hash
from ..search.protocols import ProgressSink
from ..search.result import SearchResult
from ..tasks.task import Task, dtype_name
from ..version import MODEL_VERSION, package_version
from .candidates import propose, searchable
from .llm import ProposerConfig
from .objective import KernelObjective
from .task import TaskRef
from .timing import time_key


@dataclass(frozen=True)
class TuneConfig:
    """How to search. ``budget``: evaluated trials across all candidates. ``run_dir``: where
    the study, reports and candidate sources go (default ``results/runs/<task>-<time>``).
    ``storage``: an SQLAlchemy URL (default: SQLite in the run directory); ``study``: the
    study name (default: the run directory's name). ``resume``: continue the run in
    ``run_dir`` (same task, shapes, SoC and candidates). ``executor``: where trials run.
    ``proposer``: who writes the candidates (an LLM's join the same study, and its repair
    and optimisation rounds add more while the search runs)."""

    soc: str
    budget: int = 60
    sampler: str = "tpe"
    seed: int = 0
    storage: str | None = None
    study: str | None = None
    resume: bool = False
    run_dir: Path | None = None
    timeout_per_trial_s: float = 120.0
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)
    proposer: ProposerConfig = field(default_factory=ProposerConfig)


@dataclass
class BestKernel:
    """The winner (``correct``: it passed re-validation on fresh inputs), or what is known
    when there is none."""

    candidate: str | None = None
    params: dict[str, int] | None = None
    correct: bool = False
    time_us: float | None = None
    eager_us: float | None = None
    speedup: float | None = None
    roofline_frac: float | None = None


@dataclass
class DefaultResult:
    """A candidate's default assignment, evaluated first (the winner is never slower than
    the fastest correct one)."""

    params: dict[str, int] | None
    status: str
    time_us: float | None


@dataclass
class Summary:
    """What ``tune`` found. ``timing``: the kind of the times (as the backend that timed them
    says), None when nothing was timed."""

    op: str
    trials: int
    failed: dict[str, int]
    infeasible: int
    best: BestKernel
    timing: str | None
    defaults: dict[str, DefaultResult]
    partial: str | None
    run_dir: Path
    text: str = field(default="", repr=False)  # the summary table (summary.txt)
    llm: dict[str, Any] | None = None  # the LLM session's accounts and verdicts

    def to_dict(self) -> dict[str, Any]:
        key = time_key(self.timing or "")
        b = self.best
        return {
            "op": self.op,
            "trials": self.trials,
            "failed": self.failed,
            "infeasible": self.infeasible,
            "best": {"candidate": b.candidate, "params": b.params, "correct": b.correct,
                     key: b.time_us, "eager_us": b.eager_us, "speedup": b.speedup,
                     "roofline_frac": b.roofline_frac},
            "timing": self.timing,
            "defaults": {name: {"params": d.params, "status": d.status, key: d.time_us}
                         for name, d in self.defaults.items()},
            "partial": self.partial,
            "run_dir": str(self.run_dir),
            **({"best_origin": self.llm.get("winner_origin"), "llm": self.llm}
               if self.llm is not None else {}),
        }


class TuneInterrupted(KeyboardInterrupt):
    """A signal stopped the run after its bookkeeping; ``summary`` is the partial one
    (already written to the run directory) and a resume completes the budget."""

    def __init__(self, signal_name: str, summary: Summary) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name
        self.summary = summary


def run_dir_for(task_name: str, out: str | Path | None) -> Path:
    """The run directory: ``out``, or a new ``results/runs/<task>-<time>``."""
    if out:
        return Path(out)
    return Path("results") / "runs" / f"{task_name}-{time.strftime('%Y%m%d-%H%M%S')}"


def run_identity(task: Task, ref: TaskRef, soc: str) -> dict[str, Any]:
    """What this run's trials measure (the driver adds the candidates' source hashes): a
    resume with any difference would mix incomparable times, so it is refused."""
    if ref.task_file:
        what, digest = f"task file {Path(ref.task_file).name}", source_hash(task.source)
    else:
        what, digest = f"op {ref.op}", None
    return {
        "task": what,
        "task_sha256": digest,
        "shapes": [list(s) for s in task.shapes],
        "dtype": dtype_name(task.dtype),
        "soc": soc,
        "ascendcraft_version": package_version(),
        "model_version": MODEL_VERSION,
    }


def tune(ref: TaskRef, config: TuneConfig, *, progress: ProgressSink | None = None) -> Summary:
    """Tune the task ``ref`` names. Setup problems raise
    :class:`~ascendcraft.search.errors.SearchSetupError`; no proposer for the task raises
    :class:`~.errors.UserError`; a signal raises :class:`TuneInterrupted` after the partial
    summary is written."""
    task = ref.load()
    run_dir = config.run_dir or run_dir_for(task.name, None)
    objective = KernelObjective(ref, config.soc)
    session = reviser = None
    if config.proposer.uses_llm:
        from .llm import SearchableReviser, initial_candidates, open_session

        session = open_session(task, config.soc, config.proposer, run_dir, objective.feasible)
        candidates = searchable(initial_candidates(task, config.proposer, session))
        reviser = SearchableReviser(session, searchable)
    else:
        candidates = searchable(propose(task))
    try:
        result = driver.run_search(
            objective, candidates,
            executor=make_executor(config.executor), budget=config.budget,
            sampler=config.sampler, seed=config.seed, storage=config.storage,
            study_name=config.study, resume=config.resume, run_dir=run_dir,
            timeout_per_trial_s=config.timeout_per_trial_s, progress=progress,
            identity=run_identity(task, ref, config.soc), reviser=reviser,
        )
    except SearchInterrupted as stop:
        raise TuneInterrupted(stop.signal_name,
                              summarise(task, stop.result, run_dir, candidates, session)) from None
    return summarise(task, result, run_dir, candidates, session)


def summarise(task: Task, result: SearchResult, run_dir: Path, candidates: list,
              session: Any = None) -> Summary:
    """The summary of a search result (the winner's figures come from its outcome); with an
    LLM ``session``, its accounts and verdicts under the table (and in ``summary.txt``)."""
    best = BestKernel()
    timing = None
    if result.best is not None:
        b = result.best
        m = b.outcome.metrics
        best = BestKernel(b.candidate, b.params, b.outcome.ok, b.outcome.time_us,
                          m.get("eager_us"), m.get("speedup"), m.get("roofline_frac"))
        timing = b.outcome.timing or None
    if timing is None:  # no winner: the kind of any time the run produced
        timing = next((b.outcome.timing for b in result.per_candidate.values()
                       if b is not None and b.outcome.timing), None)
    defaults = {name: DefaultResult(e.get("params"), str(e.get("status")), e.get("time_us"))
                for name, e in result.defaults.items()}
    searched = result.candidates or candidates
    text = report.summary_text(result, searched)
    llm = None
    if session is not None:
        from .llm import search_verdicts

        llm, lines = search_verdicts(session, result, searched, run_dir)
        text = text.rstrip("\n") + "\n\n" + "\n".join(lines) + "\n"
        (run_dir / "summary.txt").write_text(text, encoding="utf-8")
    return Summary(
        op=task.name, trials=result.evaluated, failed=dict(result.failed),
        infeasible=result.infeasible, best=best, timing=timing, defaults=defaults,
        partial=result.partial, run_dir=run_dir, text=text, llm=llm,
    )
