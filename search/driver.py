"""The search loop: Optuna ask/tell over every candidate's tunables, under one budget.

The driver is handed an :class:`~.protocols.Objective` (what to evaluate) and an
:class:`~.protocols.Executor` (where); it never imports the evaluator, the machines or Ray.
Its parts, one module each: the sampler table (:mod:`.samplers`), the study store
(:mod:`.storage`), the two studies per candidate and resume (:mod:`.record`), the split of
the budget between candidates (:mod:`.allocation`), the run directory (:mod:`.rundir`),
what a run measured (:mod:`.identity`), signals (:mod:`.stop`), the result
(:mod:`.result`) and the reports (:mod:`.report`, :mod:`.t4`).

* **One study per candidate**, all in one storage under a common prefix
  (``<study_name>::<candidate>``).  Each study has a fixed, unconditional search space, which
  multivariate TPE, CMA-ES, GP and the grid sampler all need (a single study with a
  categorical ``candidate`` parameter would make every tunable conditional, and TPE would
  also decide the allocation implicitly, noisily and irreversibly).  The split of the budget
  between candidates is made explicitly (:mod:`.allocation`); resume simply reopens every
  study of the prefix.  Each study exists twice, in memory for the sampler and persistent
  for the record (:mod:`.record`).
* A tunable is encoded as the **index** into its sorted domain (``IntDistribution(0, n-1)``),
  so samplers see that tile 64 neighbours 128; decoded values are stored in the trial's user
  attribute ``result.params``.
* **Budget** = trials actually evaluated (feasible, handed to the executor; a timeout or
  crash counts).  Infeasible proposals are told as PRUNED with a violated constraint (TPE
  then learns to avoid the region) and user attrs ``status=infeasible``, ``infeasible=<why>``;
  duplicates of an earlier (candidate, params) are told with the earlier outcome
  (``duplicate_of``; a duplicate of a trial still in flight waits for it); neither is
  evaluated nor counted.  After ``MISS_CAP`` such proposals in a row the driver enqueues the
  feasible unseen point nearest (in index space) to the candidate's incumbent instead; when
  none is left the candidate is exhausted, and when all are the run ends below the budget
  (``SearchResult.exhausted``).
* Every candidate's **defaults** are evaluated first (reported in ``SearchResult.defaults`` so
  the winner can be compared with them); defaults that do not fit at the task's shape are
  replaced by the feasible point nearest to them (:mod:`.nearest`, at most
  ``STAND_IN_CHECKS`` joint points checked), evaluated next and reported as the default's
  stand-in; at the end the fastest results are **re-validated**
  on fresh inputs and the first that passes wins.
* **Statuses** are :class:`ascendcraft.status.Status` values, stored as plain strings in the
  trials' user attributes (``status``); the message stays with them up to the report.
* **What a run is**: the run directory's ``run.json`` and every study record the task, shapes,
  dtype, SoC, versions and candidate source hashes (:mod:`.identity`); a resume that differs
  in any of them, that finds no trials, or whose store is empty or damaged is refused with
  :class:`~.errors.SearchSetupError` (a damaged store is never replaced).
* **Signals**: SIGINT/SIGTERM stop the run at a safe point (:mod:`.stop`): trials in flight
  are told FAIL (``status=interrupted``, ``requeue:<number>`` set), no more re-validation,
  ``trials.jsonl`` and a summary marked partial are written, and
  :class:`~.errors.SearchInterrupted` is raised.
"""

from __future__ import annotations

import os
import random
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import optuna
from optuna.samplers import BaseSampler
from optuna.storages import BaseStorage
from optuna.trial import TrialState

from ..status import Status
from . import identity as run_identity
from . import report
from .allocation import MISS_CAP, nearest_unseen, pick
from .errors import SearchInterrupted, SearchSetupError
from .nearest import nearest_feasible
from .protocols import (
    CandidateView,
    Executor,
    Objective,
    ProgressSink,
    Reviser,
    SearchProgress,
    SearchView,
)
from .record import (
    STAND_IN_ATTR,
    CandidateState,
    Key,
    Live,
    Record,
    jsonable,
    state_value,
    trial_attrs,
    was_evaluated,
)
from .result import CandidateBest, SearchResult, WallTimes
from .rundir import DriverLock, make_run_dir
from .samplers import SAMPLERS, make_sampler
from .space import (
    CACHED_METRIC,
    Candidate,
    TrialOutcome,
    checked_outcome,
    crash_outcome,
    validate_candidates,
)
from .stop import Stop, StopSignals
from .storage import open_storage, redact, store_error
from .warmup import WarmUp, waited_part

SamplerFactory = Callable[[int, Candidate], BaseSampler]

#: Revisions of an idle search in a row that added candidates none of which got evaluated
#: before the driver stops asking (a reviser cannot keep a finished search alive).
IDLE_REVISIONS = 3

#: Joint assignments checked at most when looking for an infeasible default's stand-in
#: (after every single-tunable change): feasibility checks run in the driver's loop.
STAND_IN_CHECKS = 400


class _Search:
    """One run of the loop: the candidates' states, the executor, the record."""

    def __init__(
        self,
        objective: Objective,
        candidates: Sequence[Candidate],
        *,
        budget: int,
        sampler: str | SamplerFactory,
        seed: int,
        storage: BaseStorage,
        storage_url: str | None,
        study_name: str,
        resume: bool,
        run_dir: Path,
        timeout_per_trial_s: float,
        executor: Executor,
        progress: ProgressSink | None,
        n_init: int,
        exploration: float,
        revalidate_top: int,
        defaults_first: bool = True,
        warm: WarmUp | None = None,
        record: dict[str, Any] | None = None,
        stop: StopSignals | None = None,
        deadline: float | None = None,
        reviser: Reviser | None = None,
    ) -> None:
        self.objective = objective
        self.deadline = deadline  # perf_counter() after which no trial is started
        self.time_limited = False
        self.warm = warm
        self.budget = budget
        self.sampler_name = sampler if isinstance(sampler, str) else getattr(sampler, "__name__", "custom")
        self.storage = storage
        self.storage_url = storage_url
        self.study_name = study_name
        self.run_dir = run_dir
        self.timeout_s = timeout_per_trial_s
        self.executor = executor
        self.n_init = n_init
        self.exploration = exploration
        self.revalidate_top = revalidate_top
        self.rng = random.Random(seed)
        self.times = WallTimes()
        self.tokens: dict[int, tuple[CandidateState, Live, Key, dict[str, int]]] = {}
        self._next_token = 0
        self.infeasible_count = 0
        self.failed_count = 0
        self.cached_count = 0
        self.progress = progress
        self.stop = stop or StopSignals()
        self.revalidated: list[dict[str, Any]] = []
        self.winner: CandidateBest | None = None
        self.log = report.TrialLog(run_dir / "trials.jsonl")
        self.record = Record(self.times, self.log)
        existing = set(optuna.get_all_study_names(storage))
        self.identity = record if record is not None else run_identity.run_record(None, candidates)
        run_identity.check_resume(storage, storage_url, study_name, run_dir, self.identity,
                                  existing, resume)
        self.sampler = sampler
        self.seed = seed
        self.defaults_first = defaults_first
        self.reviser = reviser
        self.revise_error: str | None = None
        self._idle_revisions = 0
        self.cands: list[CandidateState] = []
        for spec in candidates:
            self._add_candidate(spec, existing)

    def _add_candidate(self, spec: Candidate, existing: set[str]) -> CandidateState:
        """The candidate's two studies (reopened on resume); a new one's defaults, then its
        proposer's seeds, are the first trials it gets."""
        i = len(self.cands)
        storage, study_name, sampler = self.storage, self.study_name, self.sampler
        name = f"{study_name}::{spec.name}"
        smp = make_sampler(sampler, self.seed + i, spec) if isinstance(sampler, str) else sampler(self.seed + i, spec)
        pstudy = optuna.create_study(
            study_name=name, storage=storage, direction="minimize", load_if_exists=True,
            sampler=optuna.samplers.RandomSampler(),  # never asked: the record only
        )
        study = optuna.create_study(
            study_name=name, storage=optuna.storages.InMemoryStorage(), sampler=smp,
            direction="minimize",
        )
        c = CandidateState(i, spec, study, pstudy)
        domains = {t.name: list(d) for t, d in zip(spec.tunables, c.domains, strict=True)}
        stored_trials = pstudy.get_trials(deepcopy=False) if name in existing else []
        if stored_trials:
            stored = pstudy.user_attrs.get("domains")
            if stored is not None and stored != domains:
                raise SearchSetupError(
                    f"candidate {spec.name!r} changed its tunables since the study began")
            self.record.load(c, stored_trials)
        else:
            pstudy.set_user_attr("candidate", spec.name)
            pstudy.set_user_attr("run", study_name)
            pstudy.set_user_attr("domains", domains)
            pstudy.set_user_attr(run_identity.STUDY_ATTR, self.identity)
            if self.defaults_first:
                defaults = spec.default_params()
                study.enqueue_trial(c.encode(defaults), user_attrs={"default": True})
                c.waiting = 1
                for seed in spec.seeds:
                    params = {**defaults, **seed}
                    if params != defaults:
                        study.enqueue_trial(c.encode(params), user_attrs={"seed": True})
                        c.waiting += 1
        self.cands.append(c)
        return c

    # ---- revision -----------------------------------------------------------------------
    def _view(self, idle: bool) -> SearchView:
        views = []
        for c in self.cands:
            trials = tuple((dict(zip(c.names, key, strict=True)), outcome)
                           for key, (_n, outcome) in c.done.items())
            views.append(CandidateView(c.spec, trials, len(c.in_flight), c.exhausted))
        return SearchView(self.evaluated(), self.executor.in_flight(), self.budget, tuple(views),
                          idle)

    def _revise(self, idle: bool) -> bool:
        """Show the reviser where the search stands; add what it proposes. True when
        candidates were added. A reviser that fails is dropped (the search goes on without
        it, the error is reported); one that keeps adding candidates to an idle search
        without any of them being evaluated is no longer asked."""
        if self.reviser is None or self.evaluated() + self.executor.in_flight() >= self.budget:
            return False
        if idle and self._idle_revisions >= IDLE_REVISIONS:
            return False
        view = self._view(idle)
        t0 = time.perf_counter()
        try:
            with self.stop.interruptible():
                revision = self.reviser.revise(view)
            new = [c for c in revision.add if c.name not in {s.spec.name for s in self.cands}]
            if new:
                validate_candidates(new)
        except Stop:
            raise
        except Exception as exc:  # noqa: BLE001 - a broken reviser must not end the search
            self.revise_error = f"{type(exc).__name__}: {exc}"
            self.reviser = None
            return False
        finally:
            self.times.revise_s += time.perf_counter() - t0
        for c in self.cands:
            if c.spec.name in revision.retire:
                c.exhausted = True
        existing = set(optuna.get_all_study_names(self.storage))
        for spec in new:
            self._add_candidate(spec, existing)
        if new:
            self.identity = run_identity.run_record(
                {k: v for k, v in self.identity.items() if k != "candidates"},
                [c.spec for c in self.cands])
            run_identity.write_run_file(self.run_dir, self.identity, study=self.study_name,
                                        storage=redact(self.storage_url))
            report.write_candidates(self.run_dir, new)
        self._idle_revisions = self._idle_revisions + 1 if idle and new else 0
        return bool(new)

    # ---- proposal -----------------------------------------------------------------------
    def _feasible(self, c: CandidateState, params: dict[str, int]) -> str | None:
        t0 = time.perf_counter()
        try:
            reason = self.objective.feasible(c.spec, dict(params))
        except Exception as exc:  # noqa: BLE001 - a broken check rejects, it doesn't kill the run
            reason = f"feasible() raised {type(exc).__name__}: {exc}"
        self.times.feasible_s += time.perf_counter() - t0
        return str(reason) if reason else None

    def _checked(self, c: CandidateState, params: dict[str, int]) -> str | None:
        """``_feasible`` once per point: the verdict is kept in ``c.feasible`` / ``c.infeasible``."""
        key = c.key(params)
        if key in c.infeasible:
            return c.infeasible[key]
        if key in c.feasible:
            return None
        reason = self._feasible(c, params)
        if reason is None:
            c.feasible.add(key)
        else:
            c.infeasible[key] = reason
        return reason

    def _enqueue_stand_in(self, c: CandidateState) -> None:
        """Queue the feasible point nearest to an infeasible default (once per candidate), so
        the search starts where the template's author meant it to, not where the sampler
        happens to land."""
        if c.stand_in_sought:
            return
        c.stand_in_sought = True
        point = nearest_feasible(c.spec.tunables, lambda params: self._checked(c, params), STAND_IN_CHECKS)
        if point is None:
            return
        key = c.key(point)
        c.stand_in = key
        if key not in c.done and key not in c.in_flight:
            c.study.enqueue_trial(c.encode(point), user_attrs={STAND_IN_ATTR: True})
            c.waiting += 1

    def _propose(self, c: CandidateState) -> tuple[Live, Key, dict[str, int]] | None:
        """Ask until a feasible, unseen point comes out; None once the candidate is exhausted."""
        rec = self.record
        while True:
            if c.waiting == 0 and c.misses >= MISS_CAP:
                point = nearest_unseen(c, self.rng, self._checked)
                c.misses = 0
                if point is None:
                    c.exhausted = True
                    return None
                c.study.enqueue_trial(c.encode(point), user_attrs={"enumerated": True})
                c.waiting += 1
            t0 = time.perf_counter()
            trial = c.study.ask(c.dists)
            self.times.sampler_s += time.perf_counter() - t0
            if c.waiting > 0:
                c.waiting -= 1
            try:
                params = c.decode(trial.params)
            except (KeyError, IndexError, ValueError):
                why = "parameter outside the candidate's domain"
                rec.resolve(c, trial, TrialState.FAIL, None,
                            {"status": Status.INFEASIBLE.value, "infeasible": why, "message": why})
                continue
            key = c.key(params)
            if key in c.done:  # known outcomes first: no check, no evaluation
                c.misses += 1
                number, outcome = c.done[key]
                rec.resolve(c, trial, *state_value(outcome),
                            trial_attrs(params, outcome, 0.0, "", False, number))
                continue
            reason = self._checked(c, params)
            if reason is not None:
                self.infeasible_count += 1
                c.misses += 1
                trial.set_constraint("feasible", 1.0)
                rec.resolve(c, trial, TrialState.PRUNED, None,
                            {"status": Status.INFEASIBLE.value, "message": reason, "infeasible": reason,
                             "result": {"evaluated": False, "params": params}})
                if key == c.default_key:
                    self._enqueue_stand_in(c)
                if c.waiting == 0 and len(set(c.done) | set(c.infeasible) | set(c.in_flight)) >= c.size:
                    c.exhausted = True
                    return None
                continue
            live = rec.persist(c, trial, TrialState.RUNNING)
            if key in c.in_flight:
                c.misses += 1
                c.parked.setdefault(key, []).append(live)
                continue
            c.misses = 0
            return live, key, params

    # ---- telling ------------------------------------------------------------------------
    def _on_finished(self, token: int, outcome: TrialOutcome, eval_s: float, worker: str) -> None:
        c, live, key, params = self.tokens.pop(token)
        c.in_flight.pop(key, None)
        self.times.evaluate_s += eval_s
        c.done[key] = (live.number, outcome)
        c.note_ok(key, outcome)
        if not outcome.ok:
            self.failed_count += 1
        if outcome.metrics.get(CACHED_METRIC):
            self.cached_count += 1
        self.record.tell(c, live, params, outcome, eval_s, worker, evaluated=True)
        for dup in c.parked.pop(key, []):
            self.record.tell(c, dup, params, outcome, 0.0, "", evaluated=False, duplicate_of=live.number)

    # ---- main loop ----------------------------------------------------------------------
    def evaluated(self) -> int:
        return sum(len(c.done) for c in self.cands)

    def _out_of_time(self, started: int, first_batch: int) -> bool:
        """Past the time limit; never before the first batch (the defaults first) has been
        started, so that every run has a result however short its limit."""
        if self.deadline is None or time.perf_counter() < self.deadline or started < first_batch:
            return False
        self.time_limited = True
        return True

    def _show_progress(self, final: bool = False) -> None:
        if self.progress is None:
            return
        bests = [(c.best[0], c.spec.name, c.done[c.best[1]][1].timing) for c in self.cands if c.best]
        best_us, best_name, kind = min(bests) if bests else (None, None, "")
        self.progress.update(SearchProgress(self.evaluated(), self.budget, best_us, best_name,
                                            self.failed_count, self.infeasible_count, final,
                                            kind, self.cached_count))

    def _take_warm_up(self, ready: float) -> None:
        """Wait for the warm-up checks (see :class:`~.warmup.WarmUp`) and keep their verdicts.

        ``warmup_wait_s`` is the part of the warm-up after ``ready`` (executor started): both
        figures come from the warm-up's own two clock readings, so the wait can never exceed
        the warm-up; joining the thread itself is in-loop overhead."""
        if self.warm is None:
            return
        self.warm.join()
        self.times.warmup_s = self.warm.elapsed
        self.times.warmup_wait_s = waited_part(self.warm.t_start, self.warm.t_end, ready)
        for c in self.cands:
            key = c.default_key
            if c.spec.name not in self.warm.verdicts or key in c.done or key in c.infeasible:
                continue
            reason = self.warm.verdicts[c.spec.name]
            if reason:
                c.infeasible[key] = reason
            else:
                c.feasible.add(key)

    def run(self) -> None:
        ex = self.executor
        self._show_progress()  # 0/budget at once, while the workers start
        if self.warm is not None:
            # started here, not earlier: opening the storage is pure Python and would only
            # contend for the GIL, while Ray's start-up mostly waits for its processes
            self.warm.start()
        t0 = time.perf_counter()
        with self.stop.interruptible():
            ex.start()
        t1 = time.perf_counter()
        self.times.executor_startup_s = t1 - t0
        with self.stop.interruptible():
            self._take_warm_up(t1)  # any wait here is the tuner's overhead
        t_loop = time.perf_counter()
        self._show_progress()  # the estimate of the time left starts here
        self.times.workers = int(getattr(ex, "capacity", 1) or 1)
        while True:
            self.stop.check()
            while self.evaluated() + ex.in_flight() < self.budget and ex.in_flight() < ex.capacity \
                    and not self._out_of_time(self.evaluated() + ex.in_flight(), ex.capacity):
                self.stop.check()
                c = pick(self.cands, self.n_init, self.exploration)
                if c is None:
                    break
                proposal = self._propose(c)
                if proposal is None:
                    continue
                live, key, params = proposal
                token = self._next_token
                self._next_token += 1
                self.tokens[token] = (c, live, key, params)
                c.in_flight[key] = token
                ts = time.perf_counter()
                try:
                    ex.submit(token, self.objective, c.spec, params, self.timeout_s)
                except Exception as exc:  # noqa: BLE001 - e.g. objective not picklable
                    self._on_finished(token, crash_outcome(f"submit failed: {type(exc).__name__}: {exc}"), 0.0, "")
                self.times.submit_s += time.perf_counter() - ts
            if ex.in_flight() == 0:
                if self._revise(idle=True):  # nothing left to try: unless candidates join
                    continue
                break
            tw = time.perf_counter()
            try:
                with self.stop.interruptible():
                    finished = ex.poll(1.0)
            finally:
                self.times.wait_s += time.perf_counter() - tw
            for f in finished:
                self._on_finished(f.token, f.outcome, f.eval_s, f.worker)
            if finished:
                self._revise(idle=False)
            self._show_progress()
        self.times.loop_s = time.perf_counter() - t_loop
        self._show_progress(final=True)
        self.close_progress()

    def close_progress(self) -> None:
        if self.progress is not None:
            self.progress.close()
            self.progress = None

    # ---- end of run ---------------------------------------------------------------------
    def revalidate(self) -> tuple[list[dict[str, Any]], CandidateBest | None]:
        """Re-check the fastest results on fresh inputs; the first that passes wins.  What is
        done stays in ``self.revalidated``/``self.winner`` if a signal cuts this short."""
        ranked: list[tuple[float, CandidateState, Key, int, TrialOutcome]] = []
        for c in self.cands:
            for key, (number, outcome) in c.done.items():
                if outcome.ok:
                    ranked.append((float(outcome.time_us), c, key, number, outcome))
        ranked.sort(key=lambda r: (r[0], r[1].index, r[2]))
        done = self.revalidated
        limit = max(self.revalidate_top, 3 * self.revalidate_top)
        for i, (_t, c, key, number, outcome) in enumerate(ranked):
            if i >= limit or (self.winner is not None and i >= self.revalidate_top):
                break
            params = dict(zip(c.names, key, strict=True))
            t0 = time.perf_counter()
            try:
                with self.stop.interruptible():
                    raw = self.objective.revalidate(c.spec, dict(params))
                if isinstance(raw, TrialOutcome) and raw.status == Status.OK and raw.time_us is None:
                    # a re-check need not time the kernel again: keep the search's time
                    raw = TrialOutcome(Status.OK, outcome.time_us, outcome.timing, raw.message, raw.metrics)
                check = checked_outcome(raw)
            except Exception as exc:  # noqa: BLE001 - a failed re-check disqualifies, no more
                check = crash_outcome(f"revalidate raised {type(exc).__name__}: {exc}")
            self.times.revalidate_s += time.perf_counter() - t0
            # finished trials are immutable in Optuna: the verdict goes on the study
            c.pstudy.set_user_attr(f"revalidated:{number}", jsonable(check.to_dict()))
            done.append({"candidate": c.spec.name, "params": params, "trial_number": number,
                         "time_us": outcome.time_us, "status": check.status.value,
                         "message": check.message})
            if self.winner is None and check.status is Status.OK:
                self.winner = CandidateBest(c.spec.name, params, outcome, number, check)
        return done, self.winner

    def mark_interrupted(self, signal_name: str) -> None:
        """Record every trial still in flight (and the duplicates parked on them) as
        interrupted, flagged for a resume to re-queue with the same parameters."""
        for c, live, key, params in list(self.tokens.values()):
            for trial in [live, *c.parked.pop(key, [])]:
                self.record.interrupted(c, trial, params, signal_name)
            c.in_flight.pop(key, None)
        self.tokens.clear()


def run_search(
    objective: Objective,
    candidates: Sequence[Candidate],
    *,
    executor: Executor,
    budget: int,
    run_dir: str | os.PathLike[str],
    sampler: str | SamplerFactory = "tpe",
    seed: int = 0,
    storage: str | BaseStorage | None = None,
    study_name: str | None = None,
    resume: bool = False,
    timeout_per_trial_s: float = 120.0,
    progress: ProgressSink | None = None,
    n_init: int = 3,
    exploration: float = 0.5,
    revalidate_top: int = 3,
    plots: bool = True,
    defaults_first: bool = True,
    identity: dict[str, Any] | None = None,
    time_limit_s: float | None = None,
    reviser: Reviser | None = None,
) -> SearchResult:
    """Tune every candidate's tunables with at most ``budget`` evaluations in total.

    ``executor`` runs the evaluations: the driver starts it and closes it when the search
    loop ends (before re-validation, which runs here).  ``storage`` is any SQLAlchemy URL
    (default: ``sqlite:///<run_dir>/study.db``) or an Optuna storage; ``study_name`` defaults
    to the run dir's name.  With ``resume=True`` an earlier run of the same storage/study is
    continued (see the module docstring).  ``progress`` is told where the search stands
    after every finished batch.  ``defaults_first=False`` leaves every point to the sampler
    (benchmarks comparing samplers).  ``identity`` describes what the trials measure (task,
    shapes, dtype, SoC, versions); it and the candidates' source hashes are recorded, and a
    resume with any difference is refused (:mod:`.identity`).  ``time_limit_s``: no trial
    is started once this many seconds have passed since the call, except the first batch of
    a run (as many trials as the executor runs at once; those in flight finish,
    re-validation and the reports follow; ``SearchResult.time_limited`` says so).
    ``reviser`` is shown the
    search after every batch of finished trials and may add candidates to it (an LLM's
    repair and optimisation rounds): they share the budget, their defaults and seeds go
    first, and the record, ``run.json`` and the reports include them.

    Setup problems (run directory, storage, resume) raise :class:`~.errors.SearchSetupError`.
    SIGINT or SIGTERM stop the run at a safe point: in-flight trials are recorded as
    interrupted, the partial summary is written and :class:`~.errors.SearchInterrupted` is
    raised.
    """
    if budget < 0:
        raise ValueError("budget must be >= 0")
    candidates = list(candidates)
    validate_candidates(candidates)
    if isinstance(sampler, str) and sampler not in SAMPLERS:
        raise ValueError(f"unknown sampler {sampler!r}; choose one of {', '.join(SAMPLERS)}")
    t_start = time.perf_counter()
    deadline = None if time_limit_s is None else t_start + max(0.0, float(time_limit_s))
    run_path = Path(run_dir)
    make_run_dir(run_path)
    study_name = study_name or run_path.resolve().name
    lock = DriverLock(run_path)
    lock.acquire()
    stop = StopSignals()
    stop.install()
    search: _Search | None = None
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.ERROR)  # e.g. GridSampler re-visit notes
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            record = run_identity.run_record(identity, candidates)
            store, url = open_storage(storage, run_path)
            try:
                search = _Search(
                    objective, candidates, budget=budget, sampler=sampler, seed=seed, storage=store,
                    storage_url=url, study_name=study_name, resume=resume, run_dir=run_path,
                    timeout_per_trial_s=timeout_per_trial_s, executor=executor,
                    progress=progress, n_init=n_init, exploration=exploration,
                    revalidate_top=revalidate_top, defaults_first=defaults_first,
                    warm=WarmUp(objective, candidates, plots), record=record, stop=stop,
                    deadline=deadline,
                    reviser=reviser,
                )
            except SearchSetupError:
                raise
            except Exception as e:  # noqa: BLE001 - reading a damaged store fails here
                import sqlalchemy.exc

                if isinstance(e, sqlalchemy.exc.SQLAlchemyError):
                    raise store_error(url, e) from None
                raise
            run_identity.write_run_file(run_path, record, study=study_name, storage=redact(url))
            report.write_candidates(run_path, candidates)
            search.times.setup_s = time.perf_counter() - t_start
            interrupted = False
            try:
                search.run()
            except Stop:
                interrupted = True
            finally:
                search.close_progress()
                tc = time.perf_counter()
                executor.close()
                search.times.executor_close_s = time.perf_counter() - tc
            if interrupted:
                search.mark_interrupted(stop.name)
            else:
                try:
                    search.revalidate()
                except Stop:
                    interrupted = True
            search.log.close()
            t_report = time.perf_counter()
            result = _result(search, search.revalidated, search.winner)
            result.times = search.times
            if interrupted:
                result.partial = f"interrupted by {stop.name}"
                result.exhausted = False
            rows = report.collect_rows([(c.spec.name, c.pstudy) for c in search.cands])
            report.write_trials(run_path / "trials.jsonl", rows)
            search.times.settle(time.perf_counter() - t_start, result.evaluated)
            searched = result.candidates  # those given and those a reviser added
            if not interrupted:  # plots and the T4 export describe finished runs only
                studies = [(c.spec.name, c.pstudy) for c in search.cands]
                report.write_report(run_path, result, rows, studies, plots=plots)
                from . import t4

                t4.write_t4(run_path, rows, searched)
            search.times.report_s = time.perf_counter() - t_report
            search.times.settle(time.perf_counter() - t_start, result.evaluated)
            report.write_summary(run_path, result, searched)
            if interrupted:
                raise SearchInterrupted(stop.name, result)
            return result
    finally:
        if search is not None:
            search.log.close()
        stop.restore()
        optuna.logging.set_verbosity(verbosity)
        lock.release()


def _result(search: _Search, revalidated: list[dict[str, Any]], winner: CandidateBest | None) -> SearchResult:
    failed: dict[str, int] = {}
    infeasible = duplicates = interrupted = 0
    per_candidate: dict[str, CandidateBest | None] = {}
    counts: dict[str, int] = {}
    defaults: dict[str, dict[str, Any]] = {}
    for c in search.cands:
        counts[c.spec.name] = len(c.done)
        defaults[c.spec.name] = _default_entry(c)
        finished = (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)
        for t in c.pstudy.get_trials(deepcopy=False, states=finished):
            ua = t.user_attrs
            status = ua.get("status")
            if status == Status.INFEASIBLE:
                infeasible += 1
            elif status == Status.INTERRUPTED:
                interrupted += 1
            elif "duplicate_of" in ua:
                duplicates += 1
            elif was_evaluated(ua) and status != Status.OK:
                failed[str(status)] = failed.get(str(status), 0) + 1
        if c.best is None:
            per_candidate[c.spec.name] = None
        else:
            number, outcome = c.done[c.best[1]]
            params = dict(zip(c.names, c.best[1], strict=True))
            reval = None
            for r in revalidated:
                if r["candidate"] == c.spec.name and r["trial_number"] == number:
                    reval = TrialOutcome(r["status"], None, outcome.timing, r["message"])
            per_candidate[c.spec.name] = CandidateBest(c.spec.name, params, outcome, number, reval)
    return SearchResult(
        run_dir=search.run_dir,
        study_name=search.study_name,
        storage_url=search.storage_url,
        sampler=search.sampler_name,
        budget=search.budget,
        evaluated=search.evaluated(),
        failed=failed,
        infeasible=infeasible,
        duplicates=duplicates,
        interrupted=interrupted,
        best=winner,
        per_candidate=per_candidate,
        trials_per_candidate=counts,
        revalidated=revalidated,
        exhausted=search.evaluated() < search.budget and not search.time_limited,
        defaults=defaults,
        time_limited=search.time_limited and search.evaluated() < search.budget,
        candidates=[c.spec for c in search.cands],
        revise_error=search.revise_error,
    )


def _default_entry(c: CandidateState) -> dict[str, Any]:
    """The default's outcome; for an infeasible default, its stand-in's (``params`` are then
    the stand-in's, ``infeasible_default`` says why the defaults did not fit)."""
    entry: dict[str, Any] = {"params": c.spec.default_params(), "status": "not evaluated",
                             "time_us": None, "trial_number": None, "message": ""}
    key = c.default_key
    if key in c.infeasible:
        entry.update(status=Status.INFEASIBLE.value, message=c.infeasible[key][:200])
        if c.stand_in is None:
            return entry
        entry.update(params=dict(zip(c.names, c.stand_in, strict=True)), status="not evaluated",
                     message="", infeasible_default=c.infeasible[key][:200])
        key = c.stand_in
    if key in c.done:
        number, outcome = c.done[key]
        entry.update(status=outcome.status.value, time_us=outcome.time_us, trial_number=number,
                     message=outcome.message[:200])
    return entry
