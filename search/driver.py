"""The search engine: Optuna ask/tell over every candidate's tunables, under one budget.

Design (see DESIGN.md §9):

* **One study per candidate**, all in one storage under a common prefix
  (``<study_name>::<candidate>``).  Each study has a fixed, unconditional search space, which
  multivariate TPE, CMA-ES, GP and the grid sampler all need (a single study with a
  categorical ``candidate`` parameter would make every tunable conditional, and TPE would
  also decide the allocation implicitly, noisily and irreversibly).  The split of the budget
  between candidates is made here, explicitly, by :meth:`_Search._pick`; resume simply
  reopens every study of the prefix.
* **Two copies of each study**: the sampler asks and is told on an in-memory study (fast:
  an SQLite round trip through Optuna's ORM costs milliseconds, and a sampler re-reads the
  study at every ask), and every step is written through to the persistent study, the
  record: a proposal resolved on the spot (infeasible, duplicate) in one write, an evaluated
  trial as RUNNING when submitted and finished when it returns.  Resume rebuilds the
  in-memory studies from the persistent ones.  The sampler's view differs in one respect: a
  failed evaluation (build error, wrong result...) is told as PRUNED with a violated
  constraint, like an infeasible point, since samplers ignore FAIL trials and would keep
  proposing around them; the record keeps it as FAIL with its category.
* A tunable is encoded as the **index** into its sorted domain (``IntDistribution(0, n-1)``),
  so samplers see that tile 64 neighbours 128; decoded values are stored in the trial's user
  attribute ``params``.
* **Budget** = trials actually evaluated (feasible, handed to ``objective.evaluate``; a timeout
  or crash counts).  Infeasible proposals are told as PRUNED with a violated constraint (TPE
  then learns to avoid the region) and user attrs ``status=infeasible``, ``infeasible=<why>``;
  duplicates of an earlier (candidate, params) are told with the earlier outcome
  (``duplicate_of``; a duplicate of a trial still in flight waits for it); neither is
  evaluated nor counted.  After ``MISS_CAP`` such proposals in a row the driver enqueues the
  feasible unseen point nearest (in index space) to the candidate's incumbent instead; when
  none is left the candidate is exhausted, and when all are the run ends below the budget
  (``SearchResult.exhausted``).
* **Adaptive allocation**: first every candidate's defaults (enqueued; reported in
  ``SearchResult.defaults`` so the winner can be compared with them), then round-robin until
  each has ``n_init`` evaluations (default 3), then each slot goes to the candidate with the
  highest UCB score ``best_all / best_c + exploration * sqrt(ln N / n_c)`` where ``best_c`` is
  the candidate's best time so far (0 if none is ok), ``n_c`` its evaluations including those
  in flight and ``N`` their sum.  Candidates with re-queued trials go first; exhausted
  candidates (every feasible point seen) drop out.
* **Resume**: trials a killed driver left RUNNING are told FAIL (``status=interrupted``) and
  re-enqueued with the same params (``requeued_from``); finished trials are kept, and the run
  continues until exactly ``budget`` evaluated trials exist in storage.  A trial still owed a
  re-run carries the study attribute ``requeue:<number>`` until its re-run is recorded, so a
  resume that dies early loses nothing either.
* **What a run is**: the run directory's ``run.json`` and every study record the task, shapes,
  dtype, SoC, versions and candidate source hashes (:mod:`ascendcraft.search.identity`); a
  resume that differs in any of them, that finds no trials, or whose store is empty or
  damaged is refused with :class:`SearchSetupError` (a damaged store is never replaced).
* **Signals**: SIGINT/SIGTERM stop the run at a safe point (:mod:`ascendcraft.search.stop`):
  trials in flight are told FAIL (``status=interrupted``, ``requeue:<number>`` set), no more
  re-validation, ``trials.jsonl`` and a summary marked partial are written, and
  :class:`SearchInterrupted` is raised.
"""

from __future__ import annotations

import copy
import json
import math
import os
import random
import socket
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import product
from pathlib import Path
from typing import Any

import optuna
from ascendcraft.cluster.executor import (
    Executor,
    LocalExecutor,
    RayExecutor,
    checked_outcome,
    crash_outcome,
)
from ascendcraft.search import identity as run_identity
from ascendcraft.search.space import (
    FAILED_STATUSES,
    CandidateSpec,
    Objective,
    TrialOutcome,
    validate_candidates,
)
from ascendcraft.search.stop import Stop, StopSignals
from optuna.distributions import IntDistribution
from optuna.samplers import BaseSampler
from optuna.storages import BaseStorage, RDBStorage
from optuna.trial import FrozenTrial, Trial, TrialState

SAMPLERS = ("tpe", "random", "grid", "cmaes", "gp")
# study attribute ``requeue:<number>`` = True: a resume must re-run that interrupted trial
# (on the study, not the trial: finished trials are immutable in Optuna)
REQUEUE_PREFIX = "requeue:"
MISS_CAP = 2  # consecutive infeasible/duplicate proposals before enumerating unseen points
ENUM_LIMIT = 50_000  # enumerate the whole space below this size, sample it above
Key = tuple[int, ...]


class SearchSetupError(ValueError):
    """The run cannot start as asked (run directory, storage, resume); the message is one
    paragraph for the user."""


class SearchInterrupted(KeyboardInterrupt):
    """SIGINT/SIGTERM stopped the run after its bookkeeping: in-flight trials were recorded
    as interrupted (a resume re-runs them) and the partial summary was written."""

    def __init__(self, signal_name: str, result: SearchResult) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name
        self.result = result


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
    loop_s: float = 0.0  # wall time of the search loop (after executor start-up)
    workers: int = 1  # executor capacity


@dataclass
class CandidateBest:
    candidate: str
    params: dict[str, int]
    outcome: TrialOutcome
    trial_number: int
    revalidation: TrialOutcome | None = None


@dataclass
class SearchResult:
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

    def best_default(self) -> tuple[str, float] | None:
        """The fastest correct default: (candidate, time_us), or None."""
        ok = [(float(d["time_us"]), name) for name, d in self.defaults.items()
              if d.get("status") == "ok" and d.get("time_us") is not None]
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
            "storage_url": _redact(self.storage_url),
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
            "times": self.times.__dict__,
        }


class _GridSampler(optuna.samplers.GridSampler):
    """GridSampler for ask/tell: its after_trial calls ``study.stop()``, which only works inside
    ``optimize`` (and fails on enqueued trials); the driver detects exhaustion itself."""

    def after_trial(self, study: Any, trial: FrozenTrial, state: TrialState, values: Any) -> None:
        return None


def make_sampler(name: str, seed: int, candidate: CandidateSpec) -> BaseSampler:
    """The sampler for one candidate's study, by name."""
    samplers = optuna.samplers
    if name == "tpe":
        return samplers.TPESampler(
            multivariate=True,
            constant_liar=True,
            seed=seed,
            n_startup_trials=5,  # kernel budgets are small: model early
        )
    if name == "random":
        return samplers.RandomSampler(seed=seed)
    if name == "grid":
        space = {t.name: list(range(len(t.ordered()))) for t in candidate.tunables}
        return _GridSampler(space, seed=seed)
    if name == "cmaes":
        return samplers.CmaEsSampler(
            seed=seed,
            n_startup_trials=3,
            with_margin=True,  # integer (index) parameters
            independent_sampler=samplers.RandomSampler(seed=seed),
        )
    if name == "gp":
        return samplers.GPSampler(seed=seed, n_startup_trials=5)
    raise ValueError(f"unknown sampler {name!r}; choose one of {', '.join(SAMPLERS)}")


def open_storage(storage: str | BaseStorage | None, run_dir: Path) -> tuple[BaseStorage, str | None]:
    """An Optuna storage for a URL (SQLite file in the run dir by default).

    A URL that names no usable database, a server that does not answer, and a store that is
    empty or damaged raise :class:`SearchSetupError`: a damaged store is never replaced."""
    if isinstance(storage, BaseStorage):
        return storage, None
    url = storage or f"sqlite:///{(run_dir / 'study.db').resolve()}"
    if url.startswith("sqlite") and _sqlite_file(url) is None:
        raise SearchSetupError(
            f"storage {url} is an in-memory SQLite database, which keeps nothing (and is not "
            f"shared between connections); give a file, e.g. sqlite:///study.db, or leave the "
            f"storage out for one in the run directory")
    db_file = _sqlite_file(url)
    if db_file is not None and db_file.is_file() and db_file.stat().st_size == 0:
        raise SearchSetupError(
            f"study store {db_file} is empty (0 bytes): it was truncated or damaged, and is not "
            f"replaced; move it away (or delete it) to start a new run there")
    try:
        if url.startswith("sqlite"):
            rdb = RDBStorage(url, engine_kwargs={"connect_args": {"timeout": 60}})
            _tune_sqlite(rdb)
        else:
            rdb = RDBStorage(sqlalchemy_url(url), engine_kwargs={"pool_pre_ping": True})
    except Exception as e:  # noqa: BLE001 - SQLAlchemy, driver imports, Optuna schema checks
        raise store_error(url, e) from None
    return rdb, url


def _sqlite_file(url: str) -> Path | None:
    """The database file of a ``sqlite:///path`` URL (None for memory or other databases)."""
    if not url.startswith("sqlite:///"):
        return None
    path = url[len("sqlite:///"):].split("?", 1)[0]
    return Path(path) if path and path != ":memory:" else None


def store_error(url: str | None, exc: BaseException) -> SearchSetupError:
    """One paragraph for a storage that cannot be used, by what went wrong."""
    import sqlalchemy.exc as sa

    where = _redact(url) or "the given storage"
    text = " ".join(str(getattr(exc, "orig", None) or exc).split())
    text = text.split(" (Background on this error", 1)[0].split(" [SQL:", 1)[0][:300]
    db_file = _sqlite_file(url or "")
    if isinstance(exc, (sa.NoSuchModuleError, sa.ArgumentError, ImportError)):
        why = (f"is not a usable database URL ({text}); give an SQLAlchemy URL such as "
               f"sqlite:///study.db or postgresql://user@host/db")
    elif db_file is not None and db_file.is_file() and isinstance(exc, sa.DatabaseError):
        why = (f"cannot be read as a study store ({text}): the file is damaged or is not an "
               f"SQLite database; it is not replaced - move it away to start a new run")
    elif db_file is not None and isinstance(exc, sa.OperationalError):
        why = f"cannot be opened ({text})"
    elif isinstance(exc, (sa.OperationalError, sa.InterfaceError)):
        why = f"cannot be reached ({text}); is the database server running and the URL right?"
    else:
        why = f"cannot be used as a study store ({type(exc).__name__}: {text})"
    return SearchSetupError(f"storage {where} {why}")


def sqlalchemy_url(url: str) -> str:
    """SQLAlchemy 2.1 maps ``postgresql://`` to psycopg 3; use psycopg2 when only it is there."""
    import importlib.util

    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix) and importlib.util.find_spec("psycopg") is None \
                and importlib.util.find_spec("psycopg2") is not None:
            return "postgresql+psycopg2://" + url[len(prefix):]
    return url


def _tune_sqlite(rdb: RDBStorage) -> None:
    """WAL + synchronous=NORMAL: commits stay atomic and survive a killed process, at a
    fraction of the fsync cost (only a power cut may lose the last trials)."""
    from sqlalchemy import event

    def on_connect(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    event.listen(rdb.engine, "connect", on_connect)
    rdb.engine.dispose()  # reconnect so pooled connections get the pragmas


def _redact(url: str | None) -> str | None:
    if url and "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url


def _jsonable(obj: Any) -> Any:
    return json.loads(json.dumps(obj, default=repr))


class _Cand:
    """Driver-side state of one candidate and its two studies.

    ``study`` lives in memory and is what the sampler sees (ask/tell there costs well under a
    millisecond); ``pstudy`` is the persistent record in the run's storage, written through at
    every step in as few round trips as Optuna allows (see :meth:`_Search._persist`)."""

    def __init__(
        self, index: int, spec: CandidateSpec, study: optuna.Study, pstudy: optuna.Study
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
        self.parked: dict[Key, list[_Live]] = {}  # duplicates of in-flight keys
        self.infeasible: dict[Key, str] = {}
        self.feasible: set[Key] = set()  # checked and feasible: never checked again
        self.waiting = 0
        self.misses = 0
        self.exhausted = False
        self.best: tuple[float, Key] | None = None
        self.default_key: Key = self.key(spec.default_params())

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
class _Live:
    """A trial asked from the in-memory study and recorded RUNNING in the persistent one."""

    trial: Trial
    trial_id: int  # persistent
    number: int  # persistent: the number every record and report uses


class _Progress:
    """One carriage-return line on stderr, only when stderr is a terminal."""

    def __init__(self, enabled: bool, budget: int) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.budget = budget
        self._last = 0.0

    def update(self, done: int, best: str, infeasible: int, failed: int, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < 0.2:
            return
        self._last = now
        width = 30
        filled = int(width * done / max(1, self.budget))
        bar = "#" * filled + "-" * (width - filled)
        sys.stderr.write(
            f"\r[{bar}] {done}/{self.budget} best {best}  failed {failed}  infeasible {infeasible} "
        )
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self.enabled = False


class _DriverLock:
    """Refuse to run two live drivers on one run dir (resume assumes the old one is dead)."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / "driver.lock"

    def acquire(self) -> None:
        host = socket.gethostname()
        if self.path.exists():
            try:
                info = json.loads(self.path.read_text())
            except (OSError, ValueError):
                info = {}
            pid = int(info.get("pid", 0) or 0)
            if info.get("host") == host and pid and pid != os.getpid() and _pid_alive(pid):
                raise SearchSetupError(
                    f"another run (pid {pid}, started {_ago(info.get('since'))}) is using "
                    f"{self.path.parent}; wait for it or stop it before resuming"
                )
        self.path.write_text(json.dumps({"pid": os.getpid(), "host": host, "since": time.time()}))

    def release(self) -> None:
        try:
            info = json.loads(self.path.read_text())
            if info.get("pid") == os.getpid():
                self.path.unlink()
        except (OSError, ValueError):
            pass


def waited_part(start: float, end: float, ready: float) -> float:
    """How much of the interval [start, end] lies after ``ready``: never more than
    ``end - start``, whatever the order of the three readings."""
    return max(0.0, end - max(ready, start))


def _ago(since: Any) -> str:
    try:
        return f"{max(0.0, time.time() - float(since)):.0f} s ago"
    except (TypeError, ValueError):
        return "at an unknown time"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is dead for our purpose
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


class _WarmUp(threading.Thread):
    """Checks every candidate's defaults (the first proposals) in the background while the
    executor starts: the first check pays the objective's one-off set-up (e.g. importing
    torch), which then overlaps Ray's start-up instead of following it.  Its verdicts are
    reused, so nothing is checked twice."""

    def __init__(self, objective: Objective, candidates: Sequence[CandidateSpec],
                 plots: bool) -> None:
        super().__init__(name="ascendcraft-warm-up", daemon=True)
        self.objective = objective
        self.candidates = list(candidates)
        self.plots = plots
        self.verdicts: dict[str, str | None] = {}
        self.t_start = self.t_end = 0.0  # perf_counter readings, taken in this thread

    @property
    def elapsed(self) -> float:
        return self.t_end - self.t_start

    def run(self) -> None:
        self.t_start = time.perf_counter()
        try:
            self._check_all()
        finally:
            self.t_end = time.perf_counter()

    def _check_all(self) -> None:
        for c in self.candidates:
            try:
                reason = self.objective.feasible(c, c.default_params())
            except Exception:  # noqa: BLE001 - the main loop checks again and reports it
                continue
            self.verdicts[c.name] = str(reason) if reason else None
        if self.plots:  # the end-of-run plots need matplotlib: import it now too
            try:
                from ascendcraft.search.report import _plt

                _plt()
            except Exception:  # noqa: BLE001 - the report imports it again and says why
                pass


class _Search:
    def __init__(
        self,
        objective: Objective,
        candidates: Sequence[CandidateSpec],
        *,
        budget: int,
        sampler: str | Callable[[int, CandidateSpec], BaseSampler],
        seed: int,
        storage: BaseStorage,
        storage_url: str | None,
        study_name: str,
        resume: bool,
        run_dir: Path,
        timeout_per_trial_s: float,
        executor: Executor,
        progress: bool,
        n_init: int,
        exploration: float,
        revalidate_top: int,
        defaults_first: bool = True,
        warm: _WarmUp | None = None,
        record: dict[str, Any] | None = None,
        stop: StopSignals | None = None,
    ) -> None:
        self.objective = objective
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
        self.tokens: dict[int, tuple[_Cand, _Live, Key, dict[str, int]]] = {}
        self._next_token = 0
        self.infeasible_count = 0
        self.failed_count = 0
        self.progress = _Progress(progress, budget)
        self.stop = stop or StopSignals()
        self.revalidated: list[dict[str, Any]] = []
        self.winner: CandidateBest | None = None
        from ascendcraft.search.report import TrialLog

        self.log = TrialLog(run_dir / "trials.jsonl")
        existing = set(optuna.get_all_study_names(storage))
        self.record = record if record is not None else run_identity.run_record(None, candidates)
        self._check_identity(existing, resume)
        self.cands: list[_Cand] = []
        for i, spec in enumerate(candidates):
            name = f"{study_name}::{spec.name}"
            smp = make_sampler(sampler, seed + i, spec) if isinstance(sampler, str) else sampler(seed + i, spec)
            pstudy = optuna.create_study(
                study_name=name, storage=storage, direction="minimize", load_if_exists=True,
                sampler=optuna.samplers.RandomSampler(),  # never asked: the record only
            )
            study = optuna.create_study(
                study_name=name, storage=optuna.storages.InMemoryStorage(), sampler=smp,
                direction="minimize",
            )
            c = _Cand(i, spec, study, pstudy)
            domains = {t.name: list(d) for t, d in zip(spec.tunables, c.domains, strict=True)}
            stored_trials = pstudy.get_trials(deepcopy=False) if name in existing else []
            if stored_trials:
                stored = pstudy.user_attrs.get("domains")
                if stored is not None and stored != domains:
                    raise SearchSetupError(
                        f"candidate {spec.name!r} changed its tunables since the study began")
                self._load(c, stored_trials)
            else:
                pstudy.set_user_attr("candidate", spec.name)
                pstudy.set_user_attr("run", study_name)
                pstudy.set_user_attr("domains", domains)
                pstudy.set_user_attr(run_identity.STUDY_ATTR, self.record)
                if defaults_first:
                    study.enqueue_trial(c.encode(spec.default_params()),
                                        user_attrs={"default": True})
                    c.waiting = 1
            self.cands.append(c)

    def _check_identity(self, existing: set[str], resume: bool) -> None:
        """Refuse to start over a run's trials, to resume nothing, or to resume a run that
        measured something else (see :mod:`ascendcraft.search.identity`)."""
        prefix = f"{self.study_name}::"
        st = self.storage
        ids = {n[len(prefix):]: st.get_study_id_from_name(n) for n in sorted(existing)
               if n.startswith(prefix)}
        n_trials = sum(st.get_n_trials(i) for i in ids.values())
        where = f"storage {_redact(self.storage_url)}" if self.storage_url else "the given storage"
        try:
            from_file = run_identity.read_run_file(self.run_dir)
        except ValueError as e:
            raise SearchSetupError(f"cannot tell what this run measured: {e}") from None
        if not resume:
            if n_trials:
                raise SearchSetupError(
                    f"study {self.study_name!r} already has {n_trials} trials in {where}: "
                    f"continue it with --resume (resume=True), or start a new run elsewhere "
                    f"(another --out or --study)")
            return
        if n_trials == 0:
            hint = (f"; {self.run_dir / run_identity.RUN_FILE} records a run, so check that "
                    f"--storage/--study are the ones it used" if from_file else "")
            raise SearchSetupError(
                f"nothing to resume: study {self.study_name!r} has no trials in {where}{hint}")
        stored = None
        for sid in ids.values():
            stored = st.get_study_user_attrs(sid).get(run_identity.STUDY_ATTR)
            if stored:
                break
        if stored is None and from_file is None:
            raise SearchSetupError(
                f"cannot resume study {self.study_name!r}: its trials carry no record of the task, "
                f"shapes, SoC and candidates they measured (made by an older ascendcraft), so "
                f"they could be mixed with different ones; start a new run")
        diffs: list[str] = []
        for old in (stored, from_file):
            if old is None:
                continue
            old = dict(old)
            # a candidate with a study in storage belongs to the run even if unrecorded
            old["candidates"] = {**{n: "?" for n in ids}, **dict(old.get("candidates") or {})}
            diffs += [d for d in run_identity.differences(old, self.record) if d not in diffs]
        if diffs:
            raise SearchSetupError(
                f"cannot resume study {self.study_name!r}: it was recorded with a different "
                f"setup ({'; '.join(diffs)}); resume with the options it was started with, or "
                f"start a new run (another --out)")

    # ---- persistence --------------------------------------------------------------------
    def _persist(self, c: _Cand, trial: Trial, state: TrialState, value: float | None = None,
                 user_attrs: dict[str, Any] | None = None) -> _Live:
        """Record the in-memory ``trial`` in the persistent study in one round trip: RUNNING
        (finished later by :meth:`_finish_live`) or already finished."""
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
        return _Live(trial, trial_id, number)

    def _finish_live(self, c: _Cand, live: _Live, state: TrialState, value: float | None,
                     attrs: dict[str, Any]) -> None:
        t0 = time.perf_counter()
        for k, v in attrs.items():
            c.pstore.set_trial_user_attr(live.trial_id, k, v)
        c.pstore.set_trial_state_values(live.trial_id, state, None if value is None else [value])
        t1 = time.perf_counter()
        _tell_memory(c.study, live.trial, state, value)
        self.times.storage_s += t1 - t0
        self.times.sampler_s += time.perf_counter() - t1

    def _finish_now(self, c: _Cand, trial: Trial, state: TrialState, value: float | None,
                    attrs: dict[str, Any]) -> int:
        """A proposal resolved without evaluation (infeasible, duplicate): one write."""
        live = self._persist(c, trial, state, value, attrs)
        t0 = time.perf_counter()
        _tell_memory(c.study, trial, state, value)
        self.times.sampler_s += time.perf_counter() - t0
        self.log.write(self._live_row(c, live.number, state.name, attrs))
        return live.number

    # ---- resume -------------------------------------------------------------------------
    def _load(self, c: _Cand, trials: list[FrozenTrial]) -> None:
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
                if _evaluated(ua):
                    outcome = _outcome_from_attrs(ua)
                    c.done[key] = (t.number, outcome)
                    c.note_ok(key, outcome)
                elif ua.get("status") == "infeasible":
                    c.infeasible[key] = str(ua.get("infeasible", ""))
        # the sampler's view: every finished trial whose parameters fit the current space
        fits = [t for t in finished if set(t.params) <= set(c.dists)
                and all(c.dists[n]._contains(v) for n, v in t.params.items())]
        c.study.add_trials([_sampler_view(t) for t in fits])
        c.exhausted = c.waiting == 0 and len(set(c.done) | set(c.infeasible)) >= c.size

    def _requeue(self, c: _Cand, t: FrozenTrial) -> None:
        """Re-run a trial that never finished: one a dead driver left RUNNING/WAITING (it is
        marked interrupted here), or one a signal stopped (marked already).  Its ``requeue:N``
        study flag is cleared only once the re-run is recorded (:meth:`_persist`), so a resume
        that dies before that re-queues it again."""
        params = dict(t.params) or dict(t.system_attrs.get("fixed_params") or {})
        complete = set(params) == set(c.names)
        if not t.state.is_finished():
            state = "running" if t.state == TrialState.RUNNING else "queued"
            msg = f"the driver died while this trial was {state}"
            res = dict(t.user_attrs.get("result") or {})
            res["evaluated"] = False  # it may have been, but never finished: it is re-run
            attrs = {"status": "interrupted", "result": res,
                     "message": msg + ("; re-queued" if complete else "")}
            for k, v in attrs.items():
                c.pstore.set_trial_user_attr(t._trial_id, k, v)
            c.pstore.set_trial_state_values(t._trial_id, TrialState.FAIL)
        c.pstore.set_study_user_attr(c.pid, f"{REQUEUE_PREFIX}{t.number}", complete)
        if complete:
            extra = {"default": True} if t.user_attrs.get("default") else {}
            c.study.enqueue_trial(params, user_attrs={"requeued_from": t.number, **extra})
            c.waiting += 1

    # ---- allocation ---------------------------------------------------------------------
    def _pick(self) -> _Cand | None:
        active = [c for c in self.cands if not c.exhausted]
        if not active:
            return None
        for c in active:
            if c.waiting > 0:
                return c
        warm = [c for c in active if c.n() < self.n_init]
        if warm:
            return min(warm, key=lambda c: (c.n(), c.index))
        bests = [c.best[0] for c in self.cands if c.best is not None]
        g = min(bests) if bests else None
        total = max(2, sum(c.n() for c in active))

        def score(c: _Cand) -> tuple[float, int]:
            r = (g / c.best[0]) if (g is not None and c.best is not None) else 0.0
            return r + self.exploration * math.sqrt(math.log(total) / max(1, c.n())), -c.index

        return max(active, key=score)

    # ---- proposal -----------------------------------------------------------------------
    def _feasible(self, c: _Cand, params: dict[str, int]) -> str | None:
        t0 = time.perf_counter()
        try:
            reason = self.objective.feasible(c.spec, dict(params))
        except Exception as exc:  # noqa: BLE001 - a broken check rejects, it doesn't kill the run
            reason = f"feasible() raised {type(exc).__name__}: {exc}"
        self.times.feasible_s += time.perf_counter() - t0
        return str(reason) if reason else None

    def _propose(self, c: _Cand) -> tuple[_Live, Key, dict[str, int]] | None:
        """Ask until a feasible, unseen point comes out; None once the candidate is exhausted."""
        while True:
            if c.waiting == 0 and c.misses >= MISS_CAP:
                point = self._enumerate_unseen(c)
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
                self._finish_now(c, trial, TrialState.FAIL, None,
                                 {"status": "infeasible", "infeasible": why, "message": why})
                continue
            key = c.key(params)
            if key in c.done:  # known outcomes first: no check, no evaluation
                c.misses += 1
                number, outcome = c.done[key]
                self._finish_now(c, trial, *_state_value(outcome),
                                 self._attrs(params, outcome, 0.0, "", False, number))
                continue
            reason = c.infeasible.get(key)
            if reason is None and key not in c.feasible:
                reason = self._feasible(c, params)
                if reason is None:
                    c.feasible.add(key)
            if reason is not None:
                c.infeasible[key] = reason
                self.infeasible_count += 1
                c.misses += 1
                trial.set_constraint("feasible", 1.0)
                self._finish_now(c, trial, TrialState.PRUNED, None,
                                 {"status": "infeasible", "message": reason, "infeasible": reason,
                                  "result": {"evaluated": False, "params": params}})
                if c.waiting == 0 and len(set(c.done) | set(c.infeasible) | set(c.in_flight)) >= c.size:
                    c.exhausted = True
                    return None
                continue
            live = self._persist(c, trial, TrialState.RUNNING)
            if key in c.in_flight:
                c.misses += 1
                c.parked.setdefault(key, []).append(live)
                continue
            c.misses = 0
            return live, key, params

    def _enumerate_unseen(self, c: _Cand) -> dict[str, int] | None:
        """A feasible point not tried yet, nearest (in index space) to the incumbent."""
        seen = set(c.done) | set(c.in_flight) | set(c.infeasible) | set(c.parked)
        if len(seen) >= c.size:
            return None
        ref_params = dict(zip(c.names, c.best[1], strict=True)) if c.best else c.spec.default_params()
        ref = [c.encode(ref_params)[n] for n in c.names]

        def params_of(idx: tuple[int, ...]) -> dict[str, int]:
            return {n: d[i] for n, d, i in zip(c.names, c.domains, idx, strict=True)}

        if c.size <= ENUM_LIMIT:
            points = list(product(*(range(len(d)) for d in c.domains)))
            self.rng.shuffle(points)
            points.sort(key=lambda p: sum(abs(a - b) for a, b in zip(p, ref, strict=True)))
            tries = iter(points)
        else:
            tries = (tuple(self.rng.randrange(len(d)) for d in c.domains) for _ in range(2000))
        for idx in tries:
            params = params_of(idx)
            key = c.key(params)
            if key in seen:
                continue
            reason = self._feasible(c, params)
            if reason is None:
                c.feasible.add(key)
                return params
            c.infeasible[key] = reason
            seen.add(key)
        return None

    # ---- telling ------------------------------------------------------------------------
    @staticmethod
    def _attrs(params: dict[str, int], outcome: TrialOutcome, eval_s: float, worker: str,
               evaluated: bool, duplicate_of: int | None = None) -> dict[str, Any]:
        # Few attributes on purpose: every one is a storage round trip.
        attrs: dict[str, Any] = {
            "status": outcome.status,
            "message": outcome.message[:4000],
            "result": _jsonable(
                {"evaluated": evaluated, "params": params, "time_us": outcome.time_us,
                 "timing": outcome.timing, "metrics": outcome.metrics,
                 "eval_s": round(eval_s, 6), "worker": worker}
            ),
        }
        if duplicate_of is not None:
            attrs["duplicate_of"] = duplicate_of
        return attrs

    def _tell(self, c: _Cand, live: _Live, params: dict[str, int], outcome: TrialOutcome,
              eval_s: float, worker: str, *, evaluated: bool,
              duplicate_of: int | None = None) -> None:
        attrs = self._attrs(params, outcome, eval_s, worker, evaluated, duplicate_of)
        state, value = _state_value(outcome)
        self._finish_live(c, live, state, value, attrs)
        self.log.write(self._live_row(c, live.number, state.name, attrs))

    def _live_row(self, c: _Cand, number: int, state: str, attrs: dict[str, Any]) -> dict[str, Any]:
        """The trials.jsonl line, built without reading the storage back (that costs ms)."""
        from ascendcraft.search.report import row_from_attrs

        return row_from_attrs(c.spec.name, number, state, attrs)

    def _on_finished(self, token: int, outcome: TrialOutcome, eval_s: float, worker: str) -> None:
        c, live, key, params = self.tokens.pop(token)
        c.in_flight.pop(key, None)
        self.times.evaluate_s += eval_s
        c.done[key] = (live.number, outcome)
        c.note_ok(key, outcome)
        if not outcome.ok:
            self.failed_count += 1
        self._tell(c, live, params, outcome, eval_s, worker, evaluated=True)
        for dup in c.parked.pop(key, []):
            self._tell(c, dup, params, outcome, 0.0, "", evaluated=False, duplicate_of=live.number)

    # ---- main loop ----------------------------------------------------------------------
    def evaluated(self) -> int:
        return sum(len(c.done) for c in self.cands)

    def _best_text(self) -> str:
        bests = [(c.best[0], c.spec.name) for c in self.cands if c.best]
        if not bests:
            return "-"
        t, name = min(bests)
        return f"{t:.3g}us ({name})"

    def _take_warm_up(self, ready: float) -> None:
        """Wait for the warm-up checks (see :class:`_WarmUp`) and keep their verdicts.

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
        self.times.workers = int(getattr(ex, "capacity", 1) or 1)
        while True:
            self.stop.check()
            while self.evaluated() + ex.in_flight() < self.budget and ex.in_flight() < ex.capacity:
                self.stop.check()
                c = self._pick()
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
                break
            tw = time.perf_counter()
            try:
                with self.stop.interruptible():
                    finished = ex.poll(1.0)
            finally:
                self.times.wait_s += time.perf_counter() - tw
            for f in finished:
                self._on_finished(f.token, f.outcome, f.eval_s, f.worker)
            self.progress.update(self.evaluated(), self._best_text(), self.infeasible_count, self.failed_count)
        self.times.loop_s = time.perf_counter() - t_loop
        self.progress.update(self.evaluated(), self._best_text(), self.infeasible_count, self.failed_count, force=True)
        self.progress.close()

    # ---- end of run ---------------------------------------------------------------------
    def revalidate(self) -> tuple[list[dict[str, Any]], CandidateBest | None]:
        """Re-check the fastest results on fresh inputs; the first that passes wins.  What is
        done stays in ``self.revalidated``/``self.winner`` if a signal cuts this short."""
        ranked: list[tuple[float, _Cand, Key, int, TrialOutcome]] = []
        for c in self.cands:
            for key, (number, outcome) in c.done.items():
                if outcome.ok:
                    ranked.append((float(outcome.time_us), c, key, number, outcome))
        ranked.sort(key=lambda r: (r[0], r[1].index, r[2]))
        report = self.revalidated
        limit = max(self.revalidate_top, 3 * self.revalidate_top)
        for i, (_t, c, key, number, outcome) in enumerate(ranked):
            if i >= limit or (self.winner is not None and i >= self.revalidate_top):
                break
            params = dict(zip(c.names, key, strict=True))
            t0 = time.perf_counter()
            try:
                with self.stop.interruptible():
                    raw = self.objective.revalidate(c.spec, dict(params))
                if isinstance(raw, TrialOutcome) and raw.status == "ok" and raw.time_us is None:
                    # a re-check need not time the kernel again: keep the search's time
                    raw = TrialOutcome("ok", outcome.time_us, outcome.timing, raw.message, raw.metrics)
                check = checked_outcome(raw)
            except Exception as exc:  # noqa: BLE001 - a failed re-check disqualifies, no more
                check = crash_outcome(f"revalidate raised {type(exc).__name__}: {exc}")
            self.times.revalidate_s += time.perf_counter() - t0
            # finished trials are immutable in Optuna: the verdict goes on the study
            c.pstudy.set_user_attr(f"revalidated:{number}", _jsonable(check.to_dict()))
            report.append({"candidate": c.spec.name, "params": params, "trial_number": number,
                           "time_us": outcome.time_us, "status": check.status, "message": check.message})
            if self.winner is None and check.status == "ok":
                self.winner = CandidateBest(c.spec.name, params, outcome, number, check)
        return report, self.winner

    def mark_interrupted(self, signal_name: str) -> None:
        """Record every trial still in flight (and the duplicates parked on them) as
        interrupted, flagged for a resume to re-queue with the same parameters."""
        for c, live, key, params in list(self.tokens.values()):
            for trial in [live, *c.parked.pop(key, [])]:
                why = f"interrupted by {signal_name} while running; re-queued by a resume"
                attrs = {"status": "interrupted", "message": why,
                         "result": {"evaluated": False, "params": params}}
                self._finish_live(c, trial, TrialState.FAIL, None, attrs)
                c.pstore.set_study_user_attr(c.pid, f"{REQUEUE_PREFIX}{trial.number}", True)
                self.log.write(self._live_row(c, trial.number, TrialState.FAIL.name, attrs))
            c.in_flight.pop(key, None)
        self.tokens.clear()


def _tell_memory(study: optuna.Study, trial: Trial, state: TrialState, value: float | None) -> None:
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


def _sampler_view(t: FrozenTrial) -> FrozenTrial:
    """A stored trial as the sampler's study sees it (see :func:`_tell_memory`)."""
    if t.state != TrialState.FAIL or t.user_attrs.get("status") not in FAILED_STATUSES:
        return t
    t = copy.copy(t)
    t.state = TrialState.PRUNED
    t.system_attrs = {**t.system_attrs, "constraints:failed": 1.0}
    return t


def _state_value(outcome: TrialOutcome) -> tuple[TrialState, float | None]:
    if outcome.ok:
        return TrialState.COMPLETE, float(outcome.time_us)
    return TrialState.FAIL, None


def _evaluated(ua: dict[str, Any]) -> bool:
    return bool((ua.get("result") or {}).get("evaluated"))


def _outcome_from_attrs(ua: dict[str, Any]) -> TrialOutcome:
    res = ua.get("result") or {}
    return TrialOutcome(
        status=str(ua.get("status", "crash")),
        time_us=res.get("time_us"),
        timing=str(res.get("timing", "modeled")),
        message=str(ua.get("message", "")),
        metrics=dict(res.get("metrics") or {}),
    )


def run_search(
    objective: Objective,
    candidates: Sequence[CandidateSpec],
    *,
    budget: int,
    sampler: str | Callable[[int, CandidateSpec], BaseSampler] = "tpe",
    seed: int = 0,
    storage: str | BaseStorage | None = None,
    study_name: str | None = None,
    resume: bool = False,
    workers: int | None = None,
    run_dir: str | os.PathLike[str],
    timeout_per_trial_s: float = 120.0,
    executor: Executor | None = None,
    progress: bool = True,
    n_init: int = 3,
    exploration: float = 0.5,
    revalidate_top: int = 3,
    plots: bool = True,
    defaults_first: bool = True,
    identity: dict[str, Any] | None = None,
) -> SearchResult:
    """Tune every candidate's tunables with at most ``budget`` evaluations in total.

    ``storage`` is any SQLAlchemy URL (default: ``sqlite:///<run_dir>/study.db``) or an Optuna
    storage; ``study_name`` defaults to the run dir's name.  With ``resume=True`` an earlier
    run of the same storage/study is continued (see the module docstring).  ``executor``
    defaults to :class:`LocalExecutor` for one worker and :class:`RayExecutor` otherwise.
    ``defaults_first=False`` leaves every point to the sampler (benchmarks comparing samplers).
    ``identity`` describes what the trials measure (task, shapes, dtype, SoC, versions); it
    and the candidates' source hashes are recorded, and a resume with any difference is
    refused (:mod:`ascendcraft.search.identity`).

    Setup problems (run directory, storage, resume) raise :class:`SearchSetupError`.  SIGINT
    or SIGTERM stop the run at a safe point: in-flight trials are recorded as interrupted, the
    partial summary is written and :class:`SearchInterrupted` is raised.
    """
    if budget < 0:
        raise ValueError("budget must be >= 0")
    candidates = list(candidates)
    validate_candidates(candidates)
    if isinstance(sampler, str) and sampler not in SAMPLERS:
        raise ValueError(f"unknown sampler {sampler!r}; choose one of {', '.join(SAMPLERS)}")
    t_start = time.perf_counter()
    run_path = Path(run_dir)
    _make_run_dir(run_path)
    study_name = study_name or run_path.resolve().name
    lock = _DriverLock(run_path)
    lock.acquire()
    own_executor = executor is None
    if executor is None:
        n = int(workers or os.cpu_count() or 1)
        executor = LocalExecutor() if n <= 1 else RayExecutor(n)
    stop = StopSignals()
    stop.install()
    search: _Search | None = None
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.ERROR)  # e.g. GridSampler re-visit notes
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            from ascendcraft.search import report

            record = run_identity.run_record(identity, candidates)
            store, url = open_storage(storage, run_path)
            try:
                search = _Search(
                    objective, candidates, budget=budget, sampler=sampler, seed=seed, storage=store,
                    storage_url=url, study_name=study_name, resume=resume, run_dir=run_path,
                    timeout_per_trial_s=timeout_per_trial_s, executor=executor,
                    progress=progress, n_init=n_init, exploration=exploration,
                    revalidate_top=revalidate_top, defaults_first=defaults_first,
                    warm=_WarmUp(objective, candidates, plots), record=record, stop=stop,
                )
            except SearchSetupError:
                raise
            except Exception as e:  # noqa: BLE001 - reading a damaged store fails here
                import sqlalchemy.exc

                if isinstance(e, sqlalchemy.exc.SQLAlchemyError):
                    raise store_error(url, e) from None
                raise
            run_identity.write_run_file(run_path, record, study=study_name, storage=_redact(url))
            report.write_candidates(run_path, candidates)
            search.times.setup_s = time.perf_counter() - t_start
            interrupted = False
            try:
                search.run()
            except Stop:
                interrupted = True
            finally:
                search.progress.close()
                if own_executor:
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
            if interrupted:
                result.partial = f"interrupted by {stop.name}"
                result.exhausted = False
            rows = report.collect_rows([(c.spec.name, c.pstudy) for c in search.cands])
            report.write_trials(run_path / "trials.jsonl", rows)
            _finish_times(result, t_start, search)
            if not interrupted:  # plots and the T4 export describe finished runs only
                studies = [(c.spec.name, c.pstudy) for c in search.cands]
                report.write_report(run_path, result, rows, studies, plots=plots)
                from ascendcraft.search import t4

                t4.write_t4(run_path, rows, candidates)
            search.times.report_s = time.perf_counter() - t_report
            _finish_times(result, t_start, search)
            report.write_summary(run_path, result, candidates)
            if interrupted:
                raise SearchInterrupted(stop.name, result)
            return result
    finally:
        if search is not None:
            search.log.close()
        stop.restore()
        optuna.logging.set_verbosity(verbosity)
        lock.release()


def _make_run_dir(path: Path) -> None:
    """Create the run directory and prove it is writable, before any work."""
    if path.exists() and not path.is_dir():
        raise SearchSetupError(f"run directory {path} exists and is not a directory; "
                               f"give --out a directory (new or from an earlier run)")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".write-test-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise SearchSetupError(f"cannot use {path} as the run directory: "
                               f"{e.strerror or e}{f' ({e.filename})' if e.filename else ''}") from None


def _finish_times(result: SearchResult, t_start: float, search: _Search) -> None:
    times = search.times
    times.wall_s = time.perf_counter() - t_start
    one_off = times.executor_startup_s + times.executor_close_s
    times.overhead_s = max(0.0, times.wall_s - times.wait_s - times.revalidate_s - one_off)
    times.overhead_frac = times.overhead_s / times.wall_s if times.wall_s > 0 else 0.0
    in_loop = max(0.0, times.overhead_s - times.setup_s - times.report_s - times.warmup_wait_s)
    times.overhead_per_trial_ms = 1000 * in_loop / max(1, result.evaluated)
    result.times = times


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
            if status == "infeasible":
                infeasible += 1
            elif status == "interrupted":
                interrupted += 1
            elif "duplicate_of" in ua:
                duplicates += 1
            elif _evaluated(ua) and status != "ok":
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
        exhausted=search.evaluated() < search.budget,
        defaults=defaults,
    )


def _default_entry(c: _Cand) -> dict[str, Any]:
    entry: dict[str, Any] = {"params": c.spec.default_params(), "status": "not evaluated",
                             "time_us": None, "trial_number": None, "message": ""}
    if c.default_key in c.done:
        number, outcome = c.done[c.default_key]
        entry.update(status=outcome.status, time_us=outcome.time_us, trial_number=number,
                     message=outcome.message[:200])
    elif c.default_key in c.infeasible:
        entry.update(status="infeasible", message=c.infeasible[c.default_key][:200])
    return entry
