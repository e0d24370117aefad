"""What a tuning run directory says about its winner, read back for export.

``ascendcraft tune`` leaves ``run.json`` (what was tuned: op, shapes, dtype, SoC, versions),
``summary.json`` (the winner: candidate, tunables, outcome with its timing kind and metrics,
re-validation) and ``candidates/<name>.dsl`` (every candidate's DSL). A run is exported
only when its winner is correct and was re-validated.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ascendcraft.search.report import candidate_filename
from ascendcraft.tasks.registry import get_task
from ascendcraft.tasks.task import Task, TaskError, dtype_name

from .store import LibraryError


@dataclass(frozen=True)
class TunedKernel:
    """The winner of one run, with everything the library keeps about it."""

    run_dir: Path
    op: str
    soc: str
    dtype: str
    shapes: tuple[tuple[int, ...], ...]  # the task's full shapes, one per input (scalars: ())
    candidate: str
    source: str  # the DSL
    params: dict[str, int]
    timing_kind: str
    time_us: float
    metrics: dict[str, Any] = field(default_factory=dict)
    revalidation: dict[str, Any] = field(default_factory=dict)
    identity: dict[str, Any] = field(default_factory=dict)
    study: str = ""
    trial_number: int | None = None

    @property
    def shape_key(self) -> str:
        return shape_key(self.dtype, self.shapes)

    @property
    def entry_id(self) -> str:
        return f"{self.op}/{self.soc}/{self.shape_key}"

    def task(self) -> Task:
        return task_at(self.op, self.shapes, self.dtype)


def shape_key(dtype: str, shapes: tuple[tuple[int, ...], ...] | list) -> str:
    """``fp32-4096x32768`` (inputs joined by ``_``, a scalar input as ``s``)."""
    return dtype + "-" + "_".join("x".join(map(str, s)) if len(s) else "s" for s in shapes)


def task_at(op: str, shapes: tuple[tuple[int, ...], ...] | list, dtype: str) -> Task:
    """The registry task ``op`` at these full shapes and dtype (as ``tune --shape --dtype``)."""
    try:
        task = get_task(op)
        first = next(i for i, s in enumerate(task.inputs) if s.is_tensor)
        want = [tuple(s) for s in shapes]
        if [tuple(s) for s in task.shapes] != want or dtype_name(task.dtype) != dtype:
            task = task.with_shape(want[first], dtype)
    except (KeyError, TaskError, ValueError, StopIteration) as e:
        raise LibraryError(f"op {op!r} at {shapes} {dtype}: {str(e).strip(chr(39))}") from None
    if [tuple(s) for s in task.shapes] != [tuple(s) for s in shapes]:
        raise LibraryError(f"op {op!r}: shapes {shapes} cannot be rebuilt from the first input's "
                           f"shape (got {task.shapes})")
    return task


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise LibraryError(f"{path.parent} is not a finished tuning run: it has no {path.name}") from None
    except (OSError, ValueError) as e:
        raise LibraryError(f"{path} cannot be read: {e}") from None
    if not isinstance(data, dict):
        raise LibraryError(f"{path} does not hold a JSON object")
    return data


def read_run(run_dir: str | Path) -> TunedKernel:
    """The correct, re-validated winner of the run in ``run_dir``; LibraryError saying why
    not when there is none (unfinished run, no correct kernel, a task file run)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise LibraryError(f"run directory {run_dir} does not exist")
    ident = _json(run_dir / "run.json").get("identity") or {}
    summary = _json(run_dir / "summary.json")
    what = str(ident.get("task", ""))
    if not what.startswith("op "):
        raise LibraryError(f"{run_dir}: only runs of built-in ops can be exported (this run tuned "
                           f"{what or 'an unknown task'}; its reference is not part of the run)")
    best = summary.get("best")
    if not best or (best.get("outcome") or {}).get("status") != "ok":
        raise LibraryError(f"{run_dir}: the run found no correct kernel, nothing to export")
    reval = best.get("revalidation") or {}
    if reval.get("status") != "ok":
        raise LibraryError(f"{run_dir}: the winner {best.get('candidate')} did not pass re-validation "
                           f"({reval.get('status', 'not re-validated')}), not exported")
    outcome = best["outcome"]
    if outcome.get("time_us") is None or not outcome.get("timing"):
        raise LibraryError(f"{run_dir}: the winner has no time")
    name = str(best["candidate"])
    dsl = run_dir / "candidates" / candidate_filename(name)
    try:
        source = dsl.read_text()
    except OSError:
        raise LibraryError(f"{run_dir}: the winner's DSL {dsl.name} is missing from candidates/") from None
    soc = str(ident.get("soc") or (outcome.get("metrics") or {}).get("soc") or "")
    if not soc:
        raise LibraryError(f"{run_dir}: run.json does not name the SoC")
    return TunedKernel(
        run_dir=run_dir, op=what[3:].strip(), soc=soc, dtype=str(ident.get("dtype")),
        shapes=tuple(tuple(int(d) for d in s) for s in ident.get("shapes", [])),
        candidate=name, source=source, params={k: int(v) for k, v in (best.get("params") or {}).items()},
        timing_kind=str(outcome["timing"]), time_us=float(outcome["time_us"]),
        metrics=dict(outcome.get("metrics") or {}), revalidation=dict(reval), identity=dict(ident),
        study=str(summary.get("study_name") or ""), trial_number=best.get("trial_number"),
    )
