"""The record of a search: each candidate's two studies, written through at every step.

The sampler asks and is told on an in-memory study (an SQLite round trip through Optuna's
ORM costs milliseconds, and a sampler re-reads the study at every ask); every step is
written through to the persistent study, the record: a proposal resolved on the spot
(infeasible, duplicate) in one write, an evaluated trial as RUNNING when submitted and
finished when it returns. The sampler's view differs in one respect: a failed evaluation is
told as PRUNED with a violated constraint (samplers ignore FAIL trials and would keep
proposing around them); the record keeps it as FAIL with its status.

A resume rebuilds the in-memory studies from the persistent ones (:meth:`Record.load`):
trials a killed driver left RUNNING are told FAIL (``status=interrupted``) and re-enqueued
with the same parameters; a trial still owed a re-run carries the study attribute
``requeue:<number>`` until its re-run is recorded, so a resume that dies early loses
nothing either.
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import optuna
from optuna.distributions import IntDistribution
from optuna.storages import BaseStorage
from optuna.trial import FrozenTrial, Trial, TrialState

from ..status import Status
from .report import TrialLog, row_from_attrs
from .result import WallTimes
from .space import Candidate, TrialOutcome
from .storage import finish_trial

# study attribute ``requeue:<number>`` = True: a resume must re-run that interrupted trial
# (on the study, not the trial: finished trials are immutable in Optuna)
REQUEUE_PREFIX = "requeue:"
STAND_IN_ATTR = "default_stand_in"
"""User attribute of the trial evaluated in place of an infeasible default."""
Key = tuple[int, ...]


class CandidateState:
    """Driver-side state of one candidate and its two studies.

    ``study`` lives in memory and is what the sampler sees (ask/tell there costs well under a
    millisecond); ``pstudy`` is the persistent record in the run's storage, written through at
    every step in as few round trips as Optuna allows (see :meth:`Record.persist`)."""

    def __init__(
        self, index: int, spec: Candidate, study: optuna.Study, pstudy: optuna.Study
    ) -> None:
        self.index = index
        self.spec = spec
        self.study = study
        self.pstudy = pstudy
        self.pstore: BaseStorage = pstudy._storage
        self.pid: int = pstudy._study_id
        self.names = [t.name for t in spec.tunables]
        self.domains = [t.ordered() for t in spec.tunables]
        self.dists = {t.name: IntDistribution(0, len(d) - 1) for t, d in zip(spec.tunables, self.domains, strict=True)}
        self.size = spec.space_size()
        self.done: dict[Key, tuple[int, TrialOutcome]] = {}  # evaluated -> (number, outcome)
        self.in_flight: dict[Key, int] = {}  # key -> token
        self.parked: dict[Key, list[Live]] = {}  # duplicates of in-flight keys
        self.infeasible: dict[Key, str] = {}
        self.feasible: set[Key] = set()  # checked and feasible: never checked again
        self.waiting = 0
        self.misses = 0
        self.exhausted = False
        self.best: tuple[float, Key] | None = None
        self.default_key: Key = self.key(spec.default_params())
        # evaluated in place of an infeasible default: the feasible point nearest to it
        self.stand_in: Key | None = None
        self.stand_in_sought = False

    def key(self, params: dict[str, int]) -> Key:
        return tuple(int(params[n]) for n in self.names)

    def decode(self, idx: dict[str, Any]) -> dict[str, int]:
        return {n: int(d[int(idx[n])]) for n, d in zip(self.names, self.domains, strict=True)}

    def encode(self, params: dict[str, int]) -> dict[str, int]:
        return {n: d.index(int(params[n])) for n, d in zip(self.names, self.domains, strict=True)}

    def n(self) -> int:
        return len(self.done) + len(self.in_flight)

    def note_ok(self, key: Key, outcome: TrialOutcome) -> None:
        if outcome.ok and (self.best is None or outcome.time_us < self.best[0]):
            self.best = (float(outcome.time_us), key)


@dataclass
class Live:
    """A trial asked from the in-memory study and recorded RUNNING in the persistent one."""

    trial: Trial
    trial_id: int  # persistent
    number: int  # persistent: the number every record and report uses


class Record:
    """Writes a search's steps to the persistent studies and the trial log, and rebuilds a
    candidate's state from them on resume. ``times`` collects what the storage (and the
    sampler's tell) cost."""

    def __init__(self, times: WallTimes, log: TrialLog) -> None:
        self.times = times
        self.log = log

    # ---- writing ------------------------------------------------------------------------
    def persist(self, c: CandidateState, trial: Trial, state: TrialState, value: float | None = None,
                user_attrs: dict[str, Any] | None = None) -> Live:
        """Record the in-memory ``trial`` in the persistent study in one round trip: RUNNING
        (finished later by :meth:`finish`) or already finished."""
        t0 = time.perf_counter()
        mem = c.study._storage.get_trial(trial._trial_id)
        now = datetime.now()
        template = FrozenTrial(
            number=0, state=state, value=value, datetime_start=mem.datetime_start or now,
            datetime_complete=now if state.is_finished() else None, params=dict(mem.params),
            distributions=dict(mem.distributions),
            user_attrs={**mem.user_attrs, **(user_attrs or {})},
            system_attrs=dict(mem.system_attrs), intermediate_values={}, trial_id=0,
        )
        trial_id = c.pstore.create_new_trial(c.pid, template_trial=template)
        old = mem.user_attrs.get("requeued_from")
        if old is not None:  # the re-run is on record: the interrupted trial is settled
            c.pstore.set_study_user_attr(c.pid, f"{REQUEUE_PREFIX}{old}", False)
        cached = getattr(c.pstore, "_trial_id_to_study_id_and_number", {}).get(trial_id)
        number = cached[1] if cached else c.pstore.get_trial_number_from_id(trial_id)
        self.times.storage_s += time.perf_counter() - t0
        return Live(trial, trial_id, number)

    def finish(self, c: CandidateState, live: Live, state: TrialState, value: float | None,
               attrs: dict[str, Any]) -> None:
        """Finish a RUNNING trial in both studies."""
        t0 = time.perf_counter()
        finish_trial(c.pstore, live.trial_id, attrs, state, None if value is None else [value])
        t1 = time.perf_counter()
        tell_memory(c.study, live.trial, state, value)
        self.times.storage_s += t1 - t0
        self.times.sampler_s += time.perf_counter() - t1

    def resolve(self, c: CandidateState, trial: Trial, state: TrialState, value: float | None,
                attrs: dict[str, Any]) -> int:
        """A proposal resolved without evaluation (infeasible, duplicate): one write."""
        live = self.persist(c, trial, state, value, attrs)
        t0 = time.perf_counter()
        tell_memory(c.study, trial, state, value)
        self.times.sampler_s += time.perf_counter() - t0
        self.log.write(row_from_attrs(c.spec.name, live.number, state.name, attrs))
        return live.number

    def tell(self, c: CandidateState, live: Live, params: dict[str, int], outcome: TrialOutcome,
             eval_s: float, worker: str, *, evaluated: bool, duplicate_of: int | None = None) -> None:
        """An evaluation's outcome (or a duplicate's copy of it), in both studies and the log."""
        attrs = trial_attrs(params, outcome, eval_s, worker, evaluated, duplicate_of)
        state, value = state_value(outcome)
        self.finish(c, live, state, value, attrs)
        self.log.write(row_from_attrs(c.spec.name, live.number, state.name, attrs))

    def interrupted(self, c: CandidateState, live: Live, params: dict[str, int], signal_name: str) -> None:
        """A trial in flight when a signal stopped the run: FAIL, flagged for re-queueing."""
        why = f"interrupted by {signal_name} while running; re-queued by a resume"
        attrs = {"status": Status.INTERRUPTED.value, "message": why,
                 "result": {"evaluated": False, "params": params}}
        self.finish(c, live, TrialState.FAIL, None, attrs)
        c.pstore.set_study_user_attr(c.pid, f"{REQUEUE_PREFIX}{live.number}", True)
        self.log.write(row_from_attrs(c.spec.name, live.number, TrialState.FAIL.name, attrs))

    # ---- resume -------------------------------------------------------------------------
    def load(self, c: CandidateState, trials: list[FrozenTrial]) -> None:
        """Rebuild the candidate's state (and its in-memory study) from storage; re-queue
        trials a dead run left RUNNING (or WAITING) and those a signal interrupted."""
        finished = []
        pending = {int(k[len(REQUEUE_PREFIX):]) for k, v in c.pstudy.user_attrs.items()
                   if k.startswith(REQUEUE_PREFIX) and v}
        for t in trials:
            if t.state in (TrialState.WAITING, TrialState.RUNNING) or t.number in pending:
                self._requeue(c, t)
            if t.state.is_finished():
                finished.append(t)
                ua = t.user_attrs
                params = (ua.get("result") or {}).get("params")
                if params is None or set(params) != set(c.names):
                    continue
                key = c.key(params)
                if ua.get(STAND_IN_ATTR):
                    c.stand_in, c.stand_in_sought = key, True
                if was_evaluated(ua):
                    outcome = outcome_from_attrs(ua)
                    c.done[key] = (t.number, outcome)
                    c.note_ok(key, outcome)
                elif ua.get("status") == Status.INFEASIBLE:
                    c.infeasible[key] = str(ua.get("infeasible", ""))
        # the sampler's view: every finished trial whose parameters fit the current space
        fits = [t for t in finished if set(t.params) <= set(c.dists)
                and all(c.dists[n]._contains(v) for n, v in t.params.items())]
        c.study.add_trials([sampler_view(t) for t in fits])
        c.exhausted = c.waiting == 0 and len(set(c.done) | set(c.infeasible)) >= c.size

    def _requeue(self, c: CandidateState, t: FrozenTrial) -> None:
        """Re-run a trial that never finished: one a dead driver left RUNNING/WAITING (it is
        marked interrupted here), or one a signal stopped (marked already).  Its ``requeue:N``
        study flag is cleared only once the re-run is recorded (:meth:`persist`), so a resume
        that dies before that re-queues it again."""
        params = dict(t.params) or dict(t.system_attrs.get("fixed_params") or {})
        complete = set(params) == set(c.names)
        if not t.state.is_finished():
            state = "running" if t.state == TrialState.RUNNING else "queued"
            msg = f"the driver died while this trial was {state}"
            res = dict(t.user_attrs.get("result") or {})
            res["evaluated"] = False  # it may have been, but never finished: it is re-run
            attrs = {"status": Status.INTERRUPTED.value, "result": res,
                     "message": msg + ("; re-queued" if complete else "")}
            for k, v in attrs.items():
                c.pstore.set_trial_user_attr(t._trial_id, k, v)
            c.pstore.set_trial_state_values(t._trial_id, TrialState.FAIL)
        c.pstore.set_study_user_attr(c.pid, f"{REQUEUE_PREFIX}{t.number}", complete)
        if complete:
            extra = {k: True for k in ("default", STAND_IN_ATTR) if t.user_attrs.get(k)}
            if STAND_IN_ATTR in extra:
                c.stand_in, c.stand_in_sought = c.key(c.decode(params)), True
            c.study.enqueue_trial(params, user_attrs={"requeued_from": t.number, **extra})
            c.waiting += 1


def trial_attrs(params: dict[str, int], outcome: TrialOutcome, eval_s: float, worker: str,
                evaluated: bool, duplicate_of: int | None = None) -> dict[str, Any]:
    """A finished trial's user attributes. Few on purpose: every one is a storage round trip."""
    attrs: dict[str, Any] = {
        "status": outcome.status.value,
        "message": outcome.message[:4000],
        "result": jsonable(
            {"evaluated": evaluated, "params": params, "time_us": outcome.time_us,
             "timing": outcome.timing, "metrics": outcome.metrics,
             "eval_s": round(eval_s, 6), "worker": worker}
        ),
    }
    if duplicate_of is not None:
        attrs["duplicate_of"] = duplicate_of
    return attrs


def tell_memory(study: optuna.Study, trial: Trial, state: TrialState, value: float | None) -> None:
    """Tell the sampler's study.  A failed evaluation (build error, wrong result, crash...)
    is told as PRUNED with a violated constraint, as infeasible points are: samplers ignore
    FAIL trials, and TPE would keep proposing around them."""
    if value is not None:
        study.tell(trial, value, state=state)
    elif state == TrialState.FAIL:
        trial.set_constraint("failed", 1.0)
        study.tell(trial, state=TrialState.PRUNED)
    else:
        study.tell(trial, state=state)


def _failed_status(text: Any) -> bool:
    try:
        return Status.parse(str(text)).failed
    except ValueError:
        return False


def sampler_view(t: FrozenTrial) -> FrozenTrial:
    """A stored trial as the sampler's study sees it (see :func:`tell_memory`); an
    interrupted trial stays FAIL, which samplers ignore: it is re-run."""
    if t.state != TrialState.FAIL or not _failed_status(t.user_attrs.get("status")) \
            or t.user_attrs.get("status") == Status.INTERRUPTED:
        return t
    t = copy.copy(t)
    t.state = TrialState.PRUNED
    t.system_attrs = {**t.system_attrs, "constraints:failed": 1.0}
    return t


def state_value(outcome: TrialOutcome) -> tuple[TrialState, float | None]:
    if outcome.ok:
        return TrialState.COMPLETE, float(outcome.time_us)
    return TrialState.FAIL, None


def was_evaluated(ua: dict[str, Any]) -> bool:
    return bool((ua.get("result") or {}).get("evaluated"))


def outcome_from_attrs(ua: dict[str, Any]) -> TrialOutcome:
    """A stored trial's outcome (its user attributes, as :func:`trial_attrs` wrote them)."""
    res = ua.get("result") or {}
    return TrialOutcome.from_dict({**res, "status": ua.get("status", Status.CRASH.value),
                                   "message": ua.get("message", "")})


def jsonable(obj: Any) -> Any:
    return json.loads(json.dumps(obj, default=repr))
