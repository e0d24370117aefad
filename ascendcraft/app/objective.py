"""The tuning objective: the evaluator behind the search driver's Objective protocol.

It holds a description of the task (:class:`~.task.TaskRef`), not the task, so it pickles
cheaply to Ray workers, which load the task and parse each candidate once per process. It
sits above the search layer because it speaks the search's types (candidates, trial
outcomes) on the evaluator's behalf; the driver only knows the protocol.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..backends import get_backend
from ..backends.factory import backend_resources
from ..dsl.kernel import prepare
from ..dsl.parser import DslError
from ..evaluate import Evaluator
from ..search.space import Candidate, TrialOutcome
from ..status import Status
from .task import TaskRef
from .threads import limit_torch_threads
from .timing import timed_us, timing_kind

#: seeds of the correctness check during the search (one per trial: speed) and of the
#: winner's re-validation on fresh inputs at the end
SEARCH_SEEDS = (0,)
REVALIDATION_SEEDS = (101, 202)


@dataclass
class KernelObjective:
    """Feasibility before any build, then build, check and time in the evaluator."""

    ref: TaskRef
    soc: str
    backend: str = "emulator"
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __getstate__(self) -> dict:
        return {"ref": self.ref, "soc": self.soc, "backend": self.backend, "_cache": {}}

    def _evaluator(self, timeout_s: float | None = None) -> Evaluator:
        """This process's evaluator, kept for every trial (its check inputs, references,
        eager baseline and builds are shared by them); a trial's time limit is set on it."""
        ev = self._cache.get("ev")
        if ev is None:
            limit_torch_threads()  # in the worker that runs the trials
            ev = Evaluator(self.ref.load(), backend=get_backend(self.backend, self.soc),
                           seeds=SEARCH_SEEDS)
            self._cache["ev"] = ev
        if timeout_s is not None:
            ev.timeout_s = timeout_s
        return ev

    def _prepared(self, c: Candidate) -> Any:
        key = ("prep", c.name)
        if key not in self._cache:
            self._cache[key] = prepare(c.name, c.source)
        return self._cache[key]

    def feasible(self, candidate: Candidate, params: dict[str, int]) -> str | None:
        try:
            return self._evaluator().feasible(self._prepared(candidate), params)
        except DslError as e:
            return str(e)

    def evaluate(self, candidate: Candidate, params: dict[str, int], timeout_s: float) -> TrialOutcome:
        ev = self._evaluator(timeout_s)
        try:
            prep = self._prepared(candidate)
        except DslError as e:
            return TrialOutcome(Status.DSL_ERROR, None, "", str(e))
        return trial_outcome(ev.evaluate(prep, params))

    def phase(self) -> str:
        """What this process's evaluation is doing now (build, check run, timing run): the
        executor names it when it stops a trial at its limit."""
        ev = self._cache.get("ev")
        return getattr(ev, "phase", "") if ev is not None else ""

    def resources(self, candidate: Candidate, params: dict[str, int]) -> dict[str, float]:
        """What a trial needs besides a CPU, as the backend says (``trial_resources``, e.g.
        ``{"NPU": 1}`` for one that profiles on an Ascend device; none for the emulator),
        without making the backend here (the scheduling driver may have no device)."""
        return backend_resources(self.backend)

    def revalidate(self, candidate: Candidate, params: dict[str, int]) -> TrialOutcome:
        out = self._evaluator().evaluate(self._prepared(candidate), params, timing=False,
                                         seeds=REVALIDATION_SEEDS)
        return trial_outcome(out, keep_time=False)


def trial_outcome(out: Any, keep_time: bool = True) -> TrialOutcome:
    """The evaluator's outcome as the search's: status and message as they are, the time and
    its kind from the timing fields, every figure in ``metrics``. A correct kernel whose
    timing failed is a failed trial (the search needs a time to compare) with the timing's
    own status when the evaluator gives one (``timing_status``), else ``crash``."""
    fields = dict(out.timing or {})
    kind = timing_kind(fields)
    metrics: dict[str, Any] = {"max_abs_err": out.max_abs_err, "max_rel_err": out.max_rel_err}
    metrics.update({k: v for k, v in fields.items() if k not in ("timing", "kind")})
    status = Status.parse(out.status)
    t = timed_us(fields)
    if status is Status.OK and keep_time and t is None:
        # the evaluator says why timing failed (e.g. trace_limit) where it can
        why = Status.parse(out.timing_status or Status.CRASH)
        return TrialOutcome(why, None, kind, f"timing failed: {fields.get('error')}", metrics)
    return TrialOutcome(status, t if status is Status.OK else None, kind, out.message, metrics)
