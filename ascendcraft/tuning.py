"""`ascendcraft tune`: the evaluator behind the search driver's Objective interface.

The objective holds only a description of the task (op name or task file, shape/dtype
overrides), not the task object, so it pickles cheaply to Ray workers, which rebuild the
task and cache parsed candidates per process.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .dsl.parser import DslError
from .evaluate import Evaluator, Prepared, prepare
from .search.space import CandidateSpec, TrialOutcome, TunableSpec


@dataclass(frozen=True)
class TaskRef:
    """How to rebuild a task in any process."""

    op: str | None = None
    task_file: str | None = None
    shape: str | None = None
    dtype: str | None = None

    def load(self):
        from .tasks.registry import get_task
        from .tasks.taskfile import load_task_file

        task = load_task_file(self.task_file) if self.task_file else get_task(self.op)
        if self.shape or self.dtype:
            first = next(s for s in task.inputs if s.is_tensor)
            task = task.with_shape(self.shape or tuple(first.shape), self.dtype)
        return task


@dataclass
class KernelObjective:
    """Objective for the search driver: feasibility before build, then evaluate + model."""

    ref: TaskRef
    soc: str = "Ascend910B2"
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __getstate__(self) -> dict:
        return {"ref": self.ref, "soc": self.soc, "_cache": {}}

    def _ev(self) -> Evaluator:
        if "ev" not in self._cache:
            # one seed per trial during the search; the winner is re-validated on fresh seeds
            self._cache["ev"] = Evaluator(self.ref.load(), self.soc, seeds=(0,))
        return self._cache["ev"]

    def _prep(self, c: CandidateSpec) -> Prepared:
        key = ("prep", c.name)
        if key not in self._cache:
            self._cache[key] = prepare(c.name, c.source)
        return self._cache[key]

    def feasible(self, candidate: CandidateSpec, params: dict[str, int]) -> str | None:
        try:
            return self._ev().feasible(self._prep(candidate), params)
        except DslError as e:
            return str(e)

    def evaluate(self, candidate: CandidateSpec, params: dict[str, int], timeout_s: float) -> TrialOutcome:
        ev = self._ev()
        ev.timeout_s = timeout_s
        try:
            out = ev.evaluate(self._prep(candidate), params)
        except DslError as e:
            return TrialOutcome("check_error", None, "modeled", str(e))
        return _outcome(out)

    def revalidate(self, candidate: CandidateSpec, params: dict[str, int]) -> TrialOutcome:
        out = self._ev().evaluate(self._prep(candidate), params, timing=False, seeds=(101, 202))
        return _outcome(out, keep_time=False)


def _outcome(out, keep_time: bool = True) -> TrialOutcome:
    metrics: dict[str, Any] = {"max_abs_err": out.max_abs_err, "max_rel_err": out.max_rel_err}
    metrics.update({k: v for k, v in out.timing.items() if k != "timing"})
    status = out.status
    t = out.timing.get("modeled_us")
    if status == "ok" and keep_time and t is None:
        return TrialOutcome("crash", None, "modeled", f"timing failed: {out.timing.get('error')}", metrics)
    return TrialOutcome(status, t if status == "ok" else None, "modeled", out.message, metrics)


def candidate_specs(cands) -> list[CandidateSpec]:
    out = []
    for c in cands:
        try:
            p = prepare(c.name, c.source).program
        except DslError:
            continue  # reported by check; the search only gets candidates that parse
        out.append(CandidateSpec(c.name, c.source, tuple(
            TunableSpec(t.name, tuple(t.domain.values()), t.default) for t in p.tunables)))
    return out


def run_dir_for(task, out: str | None) -> Path:
    """The run directory: ``--out``, or a new ``results/runs/<task>-<time>``."""
    return Path(out) if out else Path("results") / "runs" / f"{task.name}-{time.strftime('%Y%m%d-%H%M%S')}"


def run_identity(task, ref: TaskRef, soc: str) -> dict[str, Any]:
    """What this run's trials measure (the driver adds the candidates' source hashes): a
    resume with any difference would mix incomparable times, so it is refused."""
    from importlib import metadata

    from .model import MODEL_VERSION
    from .search.identity import source_hash
    from .tasks.task import dtype_name

    try:
        version = metadata.version("ascendcraft")
    except metadata.PackageNotFoundError:
        version = "unknown"
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
        "ascendcraft_version": version,
        "model_version": MODEL_VERSION,
    }


def tune(task, args: argparse.Namespace, candidates, run_dir: Path | None = None) -> dict[str, Any]:
    """Run the search for one task and return the summary dict printed by --json.

    A signal stopping the run raises :class:`~ascendcraft.search.driver.SearchInterrupted`
    after the partial summary is written; its ``summary`` attribute holds this dict."""
    from .search.driver import SearchInterrupted, run_search

    ref = TaskRef(op=args.op, task_file=args.task, shape=args.shape, dtype=args.dtype)
    run_dir = run_dir or run_dir_for(task, args.out)
    specs = candidate_specs(candidates)
    try:
        result = run_search(
            KernelObjective(ref, args.soc), specs, budget=args.budget, sampler=args.sampler,
            seed=args.seed, storage=args.storage, study_name=args.study, resume=args.resume,
            workers=args.workers, run_dir=run_dir, timeout_per_trial_s=args.timeout_per_trial,
            progress=not args.json, identity=run_identity(task, ref, args.soc),
        )
    except SearchInterrupted as stop:
        stop.summary = _summary(task, stop.result, run_dir)
        raise
    summary = _summary(task, result, run_dir)
    if not args.json:
        txt = run_dir / "summary.txt"
        if txt.exists():
            print(txt.read_text())
        b = summary["best"]
        if b["correct"]:
            print(f"winner: {b['candidate']} {b['params']} — modeled {b['modeled_us']:.1f} us, "
                  f"{(b['speedup'] or 0):.2f}x vs eager model, {(b['roofline_frac'] or 0) * 100:.0f}% of roofline "
                  f"(modeled, not measured)")
        else:
            print("no correct kernel found")
        print(f"run directory: {run_dir}")
    return summary


def _summary(task, result, run_dir: Path) -> dict[str, Any]:
    d = result.to_dict()
    best = d.get("best") or {}
    outcome = best.get("outcome") or {}
    metrics = outcome.get("metrics") or {}
    return {
        "op": task.name,
        "trials": d.get("evaluated"),
        "failed": d.get("failed"),
        "infeasible": d.get("infeasible"),
        "best": {
            "candidate": best.get("candidate"),
            "params": best.get("params"),
            "correct": bool(best) and outcome.get("status") == "ok",
            "modeled_us": outcome.get("time_us"),
            "eager_us": metrics.get("eager_us"),
            "speedup": metrics.get("speedup"),
            "roofline_frac": metrics.get("roofline_frac"),
        },
        "timing": "modeled",
        # every candidate's default parameters, evaluated first: the winner is never slower
        # than the fastest correct one
        "defaults": {name: {"params": e.get("params"), "status": e.get("status"),
                            "modeled_us": e.get("time_us")}
                     for name, e in (d.get("defaults") or {}).items()},
        "partial": d.get("partial"),
        "run_dir": str(run_dir),
    }
