"""A bench's per-task results, read back from its directory: the campaign record
(``campaign.json``: each unit's state, summary, trials and wall time), each unit's
``trials.jsonl`` (the winner's bound, the failures, the best-so-far curve) and the suite
(``suite.json``). Nothing is re-tuned, so a report can be regenerated at any time — after
a kill it covers what ran so far.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..app.errors import UserError
from ..app.timing import time_key
from ..campaign import state as record
from ..campaign.plan import best_curve
from ..campaign.report import read_rows
from .metrics import TaskResult
from .suite import Entry

NOT_BUILT = ("dsl_error", "build_error", "infeasible", "interrupted")
"""Trial statuses that say nothing was compiled (a timeout counts unless it was the build's)."""


def _built(row: dict[str, Any]) -> bool:
    status = str(row.get("status") or "")
    if status in NOT_BUILT or not row.get("evaluated"):
        return False
    return not (status == "timeout" and str(row.get("message") or "").startswith("build"))


def _commonest_failure(rows: Sequence[dict[str, Any]]) -> str:
    failed = [r for r in rows if r.get("evaluated") and r.get("status") != "ok"]
    if not failed:
        return ""
    (status, n), = Counter(str(r.get("status")) for r in failed).most_common(1)
    msg = next((str(r.get("message") or "") for r in failed if str(r.get("status")) == status), "")
    return f"{n} × {status}: {' '.join(msg.split())[:300]}"


def _winner_row(rows: Sequence[dict[str, Any]], best: dict[str, Any]) -> dict[str, Any]:
    """The trial row of the summary's winner (same candidate and parameters)."""
    for r in rows:
        if (r.get("status") == "ok" and r.get("candidate") == best.get("candidate")
                and r.get("params") == best.get("params")):
            return r
    return {}


def task_result(entry: Entry, unit: record.UnitState | None, rows: Sequence[dict[str, Any]]
                ) -> TaskResult:
    """One entry's result from its unit's record and trial rows."""
    if entry.refused:
        return TaskResult(entry.name, entry.category, False, False, state="refused",
                          why=f"refused by the frontend: {entry.refused}")
    if unit is None or unit.state == "pending":
        return TaskResult(entry.name, entry.category, False, False, state="not run",
                          why="not run yet (the bench was stopped before it)")
    if unit.state == "failed":
        return TaskResult(entry.name, entry.category, False, False, trials=unit.trials,
                          wall_s=unit.time_s, state="failed", why=unit.error)
    s = unit.summary or {}
    kind = str(s.get("timing") or "")
    best = s.get("best") or {}
    correct = bool(best.get("correct"))
    win = _winner_row(rows, best) if correct else {}
    metrics = win.get("metrics") or {}
    eager = best.get("eager_us") or metrics.get("eager_us")
    if eager is None:  # no winner: eager is the task's, the same in every timed trial
        eager = next(((r.get("metrics") or {}).get("eager_us") for r in rows
                      if (r.get("metrics") or {}).get("eager_us")), None)
    compiled = any(_built(r) for r in rows)
    why = "" if correct else (_commonest_failure(rows) or "no trial ran")
    if not compiled and not why:
        why = "no candidate built"
    return TaskResult(
        name=entry.name, category=entry.category, compiled=compiled, correct=correct,
        best_us=best.get(time_key(kind)) if correct else None, eager_us=eager,
        roofline_frac=best.get("roofline_frac") if correct else None,
        bound=metrics.get("bound"), candidate=best.get("candidate") if correct else None,
        params=best.get("params") if correct else None, trials=unit.trials,
        wall_s=unit.time_s, timing=kind,
        state="done" if unit.state == "done" else "stopped mid-run",
        why=why, curve=tuple(best_curve(rows)))


def load_record(out: Path) -> record.CampaignState:
    """The campaign record of bench directory ``out``; a missing or damaged one is a
    :class:`UserError`."""
    try:
        st = record.load(out)
    except ValueError as e:
        raise UserError(str(e)) from None
    if st is None:
        raise UserError(f"{out} holds no bench run ({record.FILE} is missing)")
    return st


def read_results(out: Path, entries: Sequence[Entry], soc: str
                 ) -> tuple[record.CampaignState, list[TaskResult]]:
    """The campaign record of bench directory ``out`` and one result per suite entry."""
    st = load_record(out)
    results = []
    for e in entries:
        key = e.key(soc)
        unit = st.units.get(key)
        results.append(task_result(e, unit, read_rows(out / "runs" / key)))
    return st, results
