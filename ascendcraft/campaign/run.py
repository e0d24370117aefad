"""``campaign``: many ops tuned under one time budget on one executor, stoppable and
resumable, ending in a morning report.

Each unit (one op on one SoC) is an ordinary ``tune`` run in ``<out>/runs/<unit>``, with
its own study (SQLite in that directory, or the user's shared store, e.g. PostgreSQL on a
cluster); the campaign decides how many trials and how much time each run gets
(:mod:`.plan`), keeps its place in ``campaign.json`` (:mod:`.state`) and writes the report
(:mod:`.report`). The executor is started once and lent to every run (starting Ray, or
joining a cluster, costs seconds). SIGINT/SIGTERM stop the run at a safe point: the
current unit's trials in flight are recorded as interrupted (its driver re-queues them on
resume), the record and a partial report are written, and :class:`CampaignInterrupted`
is raised; ``--resume`` continues where it stopped.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..app.errors import UserError
from ..app.task import TaskRef
from ..app.tuning import TuneConfig, TuneInterrupted, tune
from ..cluster import ExecutorConfig, SharedExecutor, make_executor
from ..search.protocols import Executor
from ..search.stop import Stop, StopSignals
from ..search.storage import open_storage
from . import plan
from . import state as record
from .report import read_rows, write_report
from .state import CampaignState, UnitState


@dataclass(frozen=True)
class CampaignConfig:
    """What to tune and for how long. ``ops``: built-in op names; ``task_files``: task
    files (either or both); ``socs``: every unit is one op on one SoC. ``hours``: the
    night. ``budget_per_op``: the most trials one unit gets. ``storage``: an SQLAlchemy URL
    every unit's study goes to (default: SQLite in each unit's run directory)."""

    out: Path
    hours: float
    ops: tuple[str, ...] = ()
    task_files: tuple[str, ...] = ()
    socs: tuple[str, ...] = ("Ascend910B2",)
    budget_per_op: int = 100
    storage: str | None = None
    resume: bool = False
    seed: int = 0
    sampler: str = "tpe"
    timeout_per_trial_s: float = 120.0
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)
    fixed_budget: bool = False
    """Every unit gets its whole ``budget_per_op`` in one run without a time limit, in order
    (``hours`` is not used): a benchmark, whose results must not depend on the machine's
    speed that night."""


@dataclass
class CampaignResult:
    """Where the report is, and the record it was written from."""

    out: Path
    report: Path
    state: CampaignState


class CampaignInterrupted(KeyboardInterrupt):
    """A signal stopped the campaign; the record and a partial report are written."""

    def __init__(self, signal_name: str, result: CampaignResult) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name
        self.result = result


def unit_key(name: str, soc: str) -> str:
    """A unit's name and directory: ``<op>@<soc>`` with anything unusual replaced."""
    return re.sub(r"[^A-Za-z0-9_.@-]", "_", f"{name}@{soc}")


def plan_units(config: CampaignConfig) -> dict[str, UnitState]:
    """The units a campaign's configuration names, in order."""
    units: dict[str, UnitState] = {}
    for soc in config.socs:
        for op in config.ops:
            units.setdefault(unit_key(op, soc), UnitState(unit_key(op, soc), op, None, soc))
        for f in config.task_files:
            key = unit_key(Path(f).stem, soc)
            units.setdefault(key, UnitState(key, None, str(Path(f).resolve()), soc))
    if not units:
        raise UserError("a campaign needs ops (--ops) or task files (--tasks)")
    return units


def _opened(config: CampaignConfig) -> CampaignState:
    """The record to work on: a new one, or (``resume``) the one in ``out``, checked against
    the configuration."""
    try:
        old = record.load(config.out)
    except ValueError as e:
        raise UserError(str(e)) from None
    if not config.resume:
        if old is not None:
            raise UserError(f"{config.out} already holds a campaign; continue it with "
                            f"--resume, or give another --out")
        return CampaignState(config.hours, config.budget_per_op, plan_units(config))
    if old is None:
        raise UserError(f"nothing to resume: {config.out / record.FILE} does not exist")
    if config.ops or config.task_files:
        asked = set(plan_units(config))
        if asked != set(old.units):
            raise UserError(f"--resume with other ops or SoCs than the campaign in "
                            f"{config.out} ({len(old.units)} units); leave --ops/--tasks/--soc "
                            f"out to continue it as it was")
    old.hours, old.budget_per_op = config.hours, config.budget_per_op
    return old


def _has_trials(storage: str | None, run_dir: Path, study: str) -> bool:
    """Whether the unit's study holds trials already (then its run is resumed)."""
    if storage is None and not (run_dir / "study.db").exists():
        return False
    st, _ = open_storage(storage, run_dir)
    prefix = f"{study}::"
    return any(s.study_name.startswith(prefix) and st.get_n_trials(s._study_id) > 0
               for s in st.get_all_studies())


class _Campaign:
    def __init__(self, config: CampaignConfig, st: CampaignState, executor: SharedExecutor,
                 say: Callable[[str], None]) -> None:
        self.config, self.st, self.ex, self.say = config, st, executor, say
        self.night_s = config.hours * 3600.0
        self.signals = StopSignals()  # noted between units, acted on at the next
        self.stopped_by = ""
        self.t_mark = time.monotonic()

    # ---- time and the record -------------------------------------------------------------
    def _tick(self) -> None:
        now = time.monotonic()
        self.st.used_s += now - self.t_mark
        self.t_mark = now

    def left_s(self) -> float:
        self._tick()
        return self.night_s - self.st.used_s

    def save(self) -> None:
        self._tick()
        record.save(self.config.out, self.st)

    # ---- one unit ------------------------------------------------------------------------
    def run_unit(self, u: UnitState, grant: plan.Grant, round_no: int) -> None:
        self.signals.check()
        run_dir = self.config.out / "runs" / u.key
        study = f"{self.config.out.resolve().name}-{u.key}"
        u.state, u.round, u.budget = "running", round_no, grant.budget
        self.save()
        self.say(f"[{self.st.used_s / 60:5.1f} min] round {round_no}: {u.key} — up to "
                 f"{grant.budget} trials, "
                 + (f"{grant.seconds:.0f} s" if math.isfinite(grant.seconds) else "no time limit"))
        ref = TaskRef(op=u.op, task_file=u.task_file)
        t0 = time.monotonic()
        try:
            resume = _has_trials(self.config.storage, run_dir, study)
            cfg = TuneConfig(soc=u.soc, budget=grant.budget, sampler=self.config.sampler,
                             seed=self.config.seed, storage=self.config.storage, study=study,
                             resume=resume, run_dir=run_dir,
                             timeout_per_trial_s=self.config.timeout_per_trial_s,
                             time_limit_s=grant.seconds if math.isfinite(grant.seconds) else None,
                             plots=False, revalidate_top=1)
            with self.signals.interruptible():  # nothing of the campaign's is half-written
                summary = tune(ref, cfg, executor=self.ex.lend())
        except TuneInterrupted as stop:
            self._finish(u, time.monotonic() - t0, stop.summary.to_dict(), run_dir,
                         exhausted=False)
            u.state = "running"  # its trials in flight were re-queued: a resume goes on
            self.stopped_by = stop.signal_name
            raise Stop() from None
        except Stop:
            u.time_s += time.monotonic() - t0
            raise
        except Exception as e:  # noqa: BLE001 - one op's failure never ends the campaign
            u.time_s += time.monotonic() - t0
            u.runs += 1
            u.state, u.error = "failed", " ".join(f"{type(e).__name__}: {e}".split())[:2000]
            self.say(f"    {u.key} failed: {u.error[:300]}")
            self.save()
            return
        self._finish(u, time.monotonic() - t0, summary.to_dict(), run_dir,
                     exhausted=summary.exhausted)
        best = summary.best
        got = (f"best {best.candidate} {best.time_us:.1f} us (modeled)" if best.correct
               else "no correct kernel")
        self.say(f"    {u.key}: {summary.trials} trials, {got}")
        self.save()

    def _finish(self, u: UnitState, elapsed: float, summary: dict[str, Any], run_dir: Path,
                exhausted: bool) -> None:
        u.time_s += elapsed
        u.runs += 1
        u.summary, u.trials, u.exhausted = summary, int(summary.get("trials") or 0), exhausted
        u.improving = plan.still_improving(plan.best_curve(read_rows(run_dir)))
        u.state = "done"

    # ---- the night -----------------------------------------------------------------------
    def run(self) -> None:
        units = list(self.st.units.values())
        if self.config.fixed_budget:  # a bench: each unit its whole budget, no clock
            for u in units:
                if u.state in ("pending", "running"):
                    self.run_unit(u, plan.Grant(self.st.budget_per_op, math.inf), 1)
            self.st.finished = True
            return

        def first_due(v: UnitState) -> bool:  # not had round 1, or stopped in it
            return v.state != "failed" and (v.round == 0 or (v.round == 1 and v.state == "running"))

        for u in units:  # round 1: a fair share each, in order
            if not first_due(u):
                continue
            left = [v for v in units if first_due(v)]
            grant = plan.first_round_grant(self.left_s(), len(left), self.st.budget_per_op,
                                           self.night_s)
            self.run_unit(u, grant, 1)
        while True:  # round 2: what is left, to those still improving
            open_units = [u.key for u in units if u.state != "failed" and not u.exhausted
                          and (u.round < 2 or u.state == "running")
                          and u.trials < self.st.budget_per_op]
            left = self.left_s()
            shares = plan.second_round(open_units, [k for k in open_units
                                                    if self.st.units[k].improving], left)
            if not shares or left < plan.MIN_SHARE_S:
                break
            key = next(iter(shares))
            self.run_unit(self.st.units[key], plan.Grant(self.st.budget_per_op, shares[key]), 2)
        self.st.finished = True


def run_campaign(config: CampaignConfig, *, executor: Executor | None = None,
                 say: Callable[[str], None] = lambda line: None,
                 report: Callable[[Path, CampaignState], Path] = write_report) -> CampaignResult:
    """Run (or, with ``config.resume``, continue) a campaign and write its report (``report``:
    the morning report by default; a bench writes its own from the same record). ``say``
    gets one line per unit started and finished. A signal raises
    :class:`CampaignInterrupted` once the record and a partial report are written."""
    if not config.fixed_budget and not (config.hours > 0):
        raise UserError(f"--hours must be > 0, got {config.hours}")
    config.out.mkdir(parents=True, exist_ok=True)
    st = _opened(config)
    st.starts.append(record.now())
    st.stopped, st.finished = "", False
    shared = SharedExecutor(executor or make_executor(config.executor))
    c = _Campaign(config, st, shared, say)
    c.signals.install()
    try:
        record.save(config.out, st)
        shared.start()
        c.run()
    except Stop:
        c.stopped_by = c.stopped_by or c.signals.name or "SIGINT"
        st.stopped = f"interrupted by {c.stopped_by}"
    finally:
        c.signals.restore()
        c._tick()
        try:
            shared.close()
        finally:
            record.save(config.out, st)
    result = CampaignResult(config.out, report(config.out, st), st)
    if st.stopped:
        raise CampaignInterrupted(c.stopped_by, result)
    return result


def campaign_ops(names: Sequence[str]) -> tuple[str, ...]:
    """``--ops``: names, or ``all`` for every built-in op; an unknown name is refused."""
    from ..tasks.registry import list_tasks

    known = [t.name for t in list_tasks()]
    if list(names) == ["all"]:
        return tuple(known)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UserError(f"unknown op(s) {', '.join(unknown)}; see `ascendcraft ops`")
    return tuple(dict.fromkeys(names))
