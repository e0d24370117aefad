"""``check``: build every candidate of a task, verify it against PyTorch, time the best.

Each candidate is checked at its default tunables (or the feasible assignment nearest to
them) on reduced shapes, several seeds and signed inputs, then timed at the task's full
shape. The result is a typed :class:`Report`; ``to_dict()`` is what ``check --json`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..backends import get_backend
from ..dsl.kernel import prepare
from ..dsl.parser import DslError
from ..evaluate import Evaluator
from ..search.nearest import LIMIT, nearest_feasible
from ..search.space import Candidate, TunableSpec
from ..status import Status
from ..tasks import limits
from ..tasks.task import Task
from .candidates import propose
from .errors import UserError
from .llm import ProposerConfig
from .threads import limit_torch_threads
from .timing import time_key, timed_us, timing_kind

#: fields of the best candidate's timing repeated at the top of the report (after its time)
BEST_FIELDS = ("eager_us", "speedup", "roofline_us", "roofline_frac", "bound", "pipes", "timing",
               "kind", "model_version")


@dataclass(frozen=True)
class CheckConfig:
    """``soc``: the SoC to check and time on. ``full``: check at the task's full shapes
    (memory permitting). ``shape_given``: the shape was chosen by the user, so check at it
    (memory permitting) instead of at shapes reduced from the task's. ``timing``: time the
    correct kernels. ``candidates``: check these instead of the proposer chain's.
    ``proposer``: which proposer writes them (an LLM's candidates that fail go back for
    repair rounds); ``run_dir``: where an LLM session keeps its exchanges.
    ``backend``: where kernels are built, run and timed (``backends.BACKENDS``)."""

    soc: str
    backend: str = "emulator"
    full: bool = False
    shape_given: bool = False
    timing: bool = True
    candidates: tuple[Candidate, ...] | None = None
    proposer: ProposerConfig = field(default_factory=ProposerConfig)
    run_dir: Path | None = None


@dataclass
class CandidateCheck:
    """One candidate's verdict. ``params`` is None when it was never run (its DSL does not
    check, or no assignment of its tunables fits)."""

    candidate: str
    status: Status
    correct: bool
    message: str = ""
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    params: dict[str, int] | None = None
    timing: dict[str, Any] = field(default_factory=dict)
    origin: str = ""

    @property
    def time_us(self) -> float | None:
        return timed_us(self.timing)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"candidate": self.candidate, "origin": self.origin,
                             "status": self.status.value, "correct": self.correct,
                             "message": self.message}
        if self.params is not None:
            d.update(max_abs_err=self.max_abs_err, max_rel_err=self.max_rel_err,
                     params=self.params, **self.timing)
        return d


@dataclass
class Report:
    """What ``check`` found for a task: every candidate's verdict and the best one's time."""

    op: str
    category: str
    dtype: str
    soc: str
    shapes: list[list[list[int]]]  # the shape sets checked
    timing_shapes: list[list[int]]
    candidates: list[CandidateCheck]
    note: str | None = None  # why the shapes checked are not the ones asked for
    llm: dict[str, Any] | None = None  # the LLM session's accounts and verdicts
    llm_lines: list[str] = field(default_factory=list, repr=False)  # ...as text

    @property
    def best(self) -> CandidateCheck | None:
        """The fastest correct candidate (the first correct one if none was timed)."""
        good = [c for c in self.candidates if c.correct]
        return min(good, key=lambda c: c.time_us or float("inf")) if good else None

    @property
    def correct(self) -> bool:
        return self.best is not None

    def to_dict(self) -> dict[str, Any]:
        best = self.best
        d: dict[str, Any] = {
            "op": self.op, "category": self.category, "correct": best is not None,
            "max_abs_err": best.max_abs_err if best else None,
            "max_rel_err": best.max_rel_err if best else None,
            "shapes": self.shapes, "timing_shapes": self.timing_shapes, "dtype": self.dtype,
            "soc": self.soc, "candidates": [c.to_dict() for c in self.candidates],
        }
        if best:
            kind = timing_kind(best.timing)
            for k in ((time_key(kind),) if kind else ()) + BEST_FIELDS:
                if k in best.timing:
                    d[k] = best.timing[k]
            d["best"] = best.candidate
            d["best_origin"] = best.origin
        if self.note:
            d["note"] = self.note
        if self.llm is not None:
            d["llm"] = self.llm
        return d


def check(task: Task, config: CheckConfig) -> Report:
    """Check every candidate of ``task`` (the proposer chain's unless the config names some).
    A user error (no proposer serves the task, ``full`` beyond this machine's memory) raises
    :class:`UserError`; a bad candidate is a failed verdict, never an exception."""
    at_task_shape, note = _shapes_to_check(task, config)
    shape_sets = [list(task.shapes)] if at_task_shape else None
    if not config.full:  # reduced shapes: small tensors (see .threads)
        limit_torch_threads()
    ev = Evaluator(task, backend=get_backend(config.backend, config.soc), full=config.full,
                   shape_sets=shape_sets)
    llm: tuple[dict[str, Any] | None, list[str]] = (None, [])
    if config.candidates is None and config.proposer.uses_llm:
        verdicts, llm = _check_with_llm(task, config, ev)
    else:
        candidates = config.candidates if config.candidates is not None else propose(task)
        verdicts = [_check_one(ev, c, config.timing) for c in candidates]
    return Report(
        op=task.name, category=task.category, dtype=str(task.dtype).replace("torch.", ""),
        soc=ev.soc.name,
        shapes=[[list(s) for s in ss] for ss in ev.shape_sets],
        timing_shapes=[list(s) for s in task.shapes], candidates=verdicts, note=note,
        llm=llm[0], llm_lines=llm[1],
    )


def _check_with_llm(task: Task, config: CheckConfig,
                    ev: Evaluator) -> tuple[list[CandidateCheck], tuple[dict[str, Any], list[str]]]:
    """The builtin and/or LLM candidates checked; each failing LLM candidate goes back with
    its exact error for the session's repair rounds, and its repairs are checked in turn."""
    from ..search.llm.prompt import Failure
    from .llm import finish_report, initial_candidates, open_session, repair_until_settled

    def feasible(c: Candidate, params: dict[str, int]) -> str | None:
        try:
            return ev.feasible(prepare(c.name, c.source), params)
        except DslError as e:
            return str(e)

    def failure(v: CandidateCheck) -> Failure | None:
        if v.correct:
            return None
        return Failure.of(v.status, v.message, v.params, v.max_abs_err, v.max_rel_err,
                          [[list(s) for s in ss] for ss in ev.shape_sets])

    session = open_session(task, config.soc, config.proposer, config.run_dir, feasible)
    verdicts = repair_until_settled(session, initial_candidates(task, config.proposer, session),
                                    lambda c: _check_one(ev, c, config.timing), failure)
    timed = [(v.candidate, v.origin, v.time_us) for v in verdicts if v.correct and v.time_us]
    best = min(timed, key=lambda b: b[2]) if timed else None
    kind = timing_kind(next((v.timing for v in verdicts if v.candidate == best[0]), {})) if best else ""
    return verdicts, finish_report(session, winner=(*best, kind) if best else None, bests=timed)


def _check_one(ev: Evaluator, cand: Candidate, timing: bool) -> CandidateCheck:
    try:
        prep = prepare(cand.name, cand.source)
    except DslError as e:
        return CandidateCheck(cand.name, Status.DSL_ERROR, False, str(e), origin=cand.origin)
    params = first_feasible(ev, prep)
    if params is None:
        return CandidateCheck(cand.name, Status.INFEASIBLE, False, ev.feasible(prep, {}),
                              origin=cand.origin)
    out = ev.evaluate(prep, params, timing=timing)
    return CandidateCheck(cand.name, Status.parse(out.status), out.correct, out.message,
                          out.max_abs_err, out.max_rel_err,
                          {**prep.program.defaults(), **params}, dict(out.timing), cand.origin)


def first_feasible(ev: Evaluator, prep: Any, limit: int = LIMIT) -> dict[str, int] | None:
    """The tunables to change from the defaults ({} if the defaults fit), per
    :func:`~ascendcraft.search.nearest.nearest_feasible`; None if nothing tried fits."""
    tunables = [TunableSpec(t.name, tuple(t.domain.values()), t.default) for t in prep.program.tunables]
    params = nearest_feasible(tunables, lambda p: ev.feasible(prep, p), limit)
    if params is None:
        return None
    defaults = prep.program.defaults()
    return {k: v for k, v in params.items() if defaults.get(k) != v}


def _shapes_to_check(task: Task, config: CheckConfig) -> tuple[bool, str | None]:
    """Whether to check at the task's own (full) shapes, and a note when that was given up:
    a check at a shape whose tensors exceed the memory ceiling is never attempted — with a
    given shape the check runs at reduced shapes derived from it, ``full`` is refused."""
    if not (config.shape_given or config.full):
        return False, None
    need, ceiling = limits.check_bytes(task), limits.memory_ceiling()
    if need <= ceiling:
        return config.shape_given, None
    what = f"checking {task.name} at its full shapes {task.shapes}"
    fmt = limits.fmt_bytes
    if config.full:
        raise UserError(f"--full: {what} needs about {fmt(need)}, above this machine's "
                        f"ceiling of {fmt(ceiling)} (a quarter of its memory); drop --full "
                        f"to check at reduced shapes (timing is modeled at the full shape anyway)")
    return False, (f"{what} would need about {fmt(need)} (ceiling {fmt(ceiling)}): "
                   f"checked at reduced shapes derived from --shape instead; timing is modeled "
                   f"at the full shape")
