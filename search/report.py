"""The run directory: candidate sources, the trial log, the summary and the plots.

The Optuna storage is the source of truth; everything here is derived from it, so a resumed
run rewrites ``trials.jsonl`` and the summary from storage at the end.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from .space import Candidate

if TYPE_CHECKING:
    from .result import SearchResult


def candidate_filename(name: str) -> str:
    """A flat, safe file name for a candidate (``softmax/rows`` -> ``softmax__rows.dsl``)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name.replace("/", "__")) + ".dsl"


def write_candidates(run_dir: Path, candidates: Sequence[Candidate]) -> None:
    """Write every candidate's DSL into ``candidates/`` so a run dir is self-contained."""
    out = run_dir / "candidates"
    out.mkdir(parents=True, exist_ok=True)
    for c in candidates:
        (out / candidate_filename(c.name)).write_text(c.source)


class TrialLog:
    """Appends one JSON line per finished trial as the run goes (useful if it dies)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: Any = None

    def write(self, row: dict[str, Any]) -> None:
        if self._fh is None:
            self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - kept open
        self._fh.write(json.dumps(row, default=repr) + "\n")
        self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __del__(self) -> None:
        self.close()


def row_from_attrs(
    candidate: str,
    number: int,
    state: str,
    ua: dict[str, Any],
    *,
    start: Any = None,
    complete: Any = None,
    revalidated: Any = None,
) -> dict[str, Any]:
    """One trial as a flat dict (the line format of ``trials.jsonl``)."""
    res = ua.get("result") or {}
    wall = (complete - start).total_seconds() if start and complete else None
    return {
        "candidate": candidate,
        "number": number,
        "state": state,
        "status": ua.get("status"),
        "params": res.get("params"),
        "time_us": res.get("time_us"),
        "timing": res.get("timing"),
        "message": ua.get("message", ""),
        "metrics": res.get("metrics", {}),
        "evaluated": bool(res.get("evaluated", False)),
        "eval_s": res.get("eval_s"),
        "wall_s": wall,
        "worker": res.get("worker"),
        "datetime_start": start.isoformat() if start else None,
        "datetime_complete": complete.isoformat() if complete else None,
        "duplicate_of": ua.get("duplicate_of"),
        "requeued_from": ua.get("requeued_from"),
        "infeasible": ua.get("infeasible"),
        "revalidated": revalidated,
    }


def trial_row(candidate: str, t: FrozenTrial, revalidated: Any = None) -> dict[str, Any]:
    return row_from_attrs(candidate, t.number, t.state.name, t.user_attrs, start=t.datetime_start,
                          complete=t.datetime_complete, revalidated=revalidated)


def collect_rows(studies: Sequence[tuple[str, optuna.Study]]) -> list[dict[str, Any]]:
    """Every finished trial of every candidate, in the order they finished."""
    rows = []
    finished = (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)
    for name, study in studies:
        attrs = study.user_attrs
        for t in study.get_trials(deepcopy=False, states=finished):
            rows.append(trial_row(name, t, attrs.get(f"revalidated:{t.number}")))
    rows.sort(key=lambda r: (r["datetime_complete"] or "", r["candidate"], r["number"]))
    for i, r in enumerate(rows):
        r["seq"] = i
    return rows


def write_trials(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    tmp = path.with_suffix(".jsonl.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, default=repr) + "\n")
    tmp.replace(path)


def _fmt(x: float | None, spec: str = ".3f") -> str:
    return "-" if x is None else format(x, spec)


def _speedup(outcome_time: float | None, metrics: dict[str, Any]) -> float | None:
    eager = metrics.get("eager_us")
    if outcome_time and isinstance(eager, (int, float)) and eager > 0:
        return float(eager) / float(outcome_time)
    return None


def _roofline(metrics: dict[str, Any]) -> float | None:
    frac = metrics.get("roofline_frac")
    return float(frac) if isinstance(frac, (int, float)) else None


def summary_text(result: SearchResult, candidates: Sequence[Candidate]) -> str:
    """The human table: best per candidate, the winner, where the time went."""
    header = f"{'candidate':<28} {'trials':>6} {'best us':>10} {'speedup':>8} {'roofline':>9} {'timing':>9}  params"
    lines = [f"study {result.study_name}  sampler {result.sampler}  budget {result.budget}", "", header,
             "-" * len(header)]
    if result.partial:
        lines[:0] = [f"PARTIAL RESULT: {result.partial} after {result.evaluated}/{result.budget} "
                     f"evaluated trials; trials in flight were recorded as interrupted, and "
                     f"--resume re-runs them and completes the budget", ""]
    for c in candidates:
        b = result.per_candidate.get(c.name)
        n = result.trials_per_candidate.get(c.name, 0)
        if b is None:
            lines.append(f"{c.name:<28} {n:>6} {'-':>10} {'-':>8} {'-':>9} {'-':>9}  (no correct result)")
            continue
        sp = _speedup(b.outcome.time_us, b.outcome.metrics)
        rf = _roofline(b.outcome.metrics)
        mark = " *" if result.best and result.best.candidate == c.name else ""
        lines.append(
            f"{c.name:<28} {n:>6} {_fmt(b.outcome.time_us):>10} "
            f"{(_fmt(sp, '.2f') + 'x') if sp else '-':>8} {(_fmt(100 * rf, '.1f') + '%') if rf is not None else '-':>9} "
            f"{b.outcome.timing:>9}  {json.dumps(b.params)}{mark}"
        )
    lines.append("")
    if result.best:
        b = result.best
        sp = _speedup(b.outcome.time_us, b.outcome.metrics)
        rf = _roofline(b.outcome.metrics)
        lines.append(f"winner: {b.candidate}  {json.dumps(b.params)}")
        lines.append(
            f"  time {_fmt(b.outcome.time_us)} us ({b.outcome.timing})"
            + (f", {sp:.2f}x vs eager" if sp else "")
            + (f", {100 * rf:.1f}% of roofline" if rf is not None else "")
            + ", re-validated on fresh inputs"
        )
        m = b.outcome.metrics
        if m.get("cube_peak_frac") is not None:
            tf = f" ({m['tflops']:.0f} TFLOPS)" if m.get("tflops") else ""
            lines.append(f"  cube unit: {100 * m['cube_peak_frac']:.1f}% of the SoC's cube peak{tf}, modeled")
    elif result.partial:
        lines.append("winner: none yet (stopped before any configuration passed re-validation)")
    else:
        lines.append("winner: none (no configuration passed re-validation)")
    lines += defaults_lines(result)
    failed = ", ".join(f"{k} {v}" for k, v in sorted(result.failed.items())) or "none"
    lines.append("")
    lines.append(
        f"evaluated {result.evaluated}/{result.budget}; failed: {failed}; infeasible {result.infeasible}; "
        f"duplicates {result.duplicates}; interrupted {result.interrupted}"
        + ("; search space exhausted" if result.exhausted else "")
        + ("; stopped at its time limit" if result.time_limited else "")
    )
    t = result.times
    lines.append(
        f"wall {t.wall_s:.2f}s: evaluate {t.evaluate_s:.2f}s, revalidate {t.revalidate_s:.2f}s, "
        f"executor start-up/close {t.executor_startup_s + t.executor_close_s:.2f}s, "
        + (f"reviser (proposer rounds) {t.revise_s:.2f}s, " if t.revise_s else "")
        + f"tuner overhead {t.overhead_s:.2f}s "
        f"({100 * t.overhead_frac:.1f}% of wall, {t.overhead_per_trial_ms:.1f} ms/trial)"
    )
    lines.append(
        f"  overhead: setup {t.setup_s:.2f}s, objective warm-up {t.warmup_wait_s:.2f}s, "
        f"sampler {t.sampler_s:.2f}s, storage {t.storage_s:.2f}s, "
        f"feasibility checks {t.feasible_s:.2f}s, submit {t.submit_s:.2f}s, reports {t.report_s:.2f}s"
    )
    if result.revise_error:
        lines.append(f"  the reviser failed and was dropped: {result.revise_error[:200]}")
    if result.revalidated:
        lines.append("")
        lines.append("re-validation:")
        for r in result.revalidated:
            lines.append(f"  {r['candidate']} {json.dumps(r['params'])}: {r['status']} {r['message'][:100]}")
    return "\n".join(lines) + "\n"


def defaults_lines(result: SearchResult) -> list[str]:
    """Every candidate's default parameters (evaluated first) against the winner."""
    if not result.defaults:
        return []
    lines = ["", "defaults (evaluated first):"]
    for name, d in result.defaults.items():
        msg = str(d.get("message") or "")
        msg = msg if len(msg) <= 80 else msg[:79] + "…"
        what = (f"{d['time_us']:.3f} us" if d.get("status") == "ok" and d.get("time_us") is not None
                else f"{d.get('status')}" + (f" ({msg})" if msg else ""))
        lines.append(f"  {name:<26} {json.dumps(d.get('params'))}: {what}")
        if d.get("infeasible_default"):
            lines.append(f"  {'':<26} (nearest feasible: the defaults do not fit: "
                         f"{str(d['infeasible_default'])[:80]})")
    best = result.best_default()
    if best is None:
        lines.append("  no default is correct")
    elif result.best is not None and result.best.outcome.time_us:
        w = float(result.best.outcome.time_us)
        lines.append(f"  best default {best[1]:.3f} us ({best[0]}) -> winner {w:.3f} us: "
                     f"{best[1] / w:.2f}x" + ("" if w <= best[1] else "  (WORSE than a default)"))
    return lines


def write_summary(run_dir: Path, result: SearchResult, candidates: Sequence[Candidate]) -> None:
    (run_dir / "summary.json").write_text(json.dumps(result.to_dict(), indent=2, default=repr))
    (run_dir / "summary.txt").write_text(summary_text(result, candidates))


# ---- plots ----------------------------------------------------------------------------------


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def plot_convergence(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Best-so-far time against evaluated trial, every ok trial as a dot per candidate."""
    plt = _plt()
    evaluated = [r for r in rows if r["evaluated"]]
    fig, ax = plt.subplots(figsize=(7, 4))
    best = None
    xs, ys = [], []
    per_cand: dict[str, tuple[list[int], list[float]]] = {}
    for i, r in enumerate(evaluated, start=1):
        if r["status"] == "ok" and r["time_us"] is not None:
            t = float(r["time_us"])
            best = t if best is None else min(best, t)
            px, py = per_cand.setdefault(r["candidate"], ([], []))
            px.append(i)
            py.append(t)
        if best is not None:
            xs.append(i)
            ys.append(best)
    for name, (px, py) in per_cand.items():
        ax.scatter(px, py, s=12, alpha=0.6, label=name)
    if xs:
        ax.step(xs, ys, where="post", color="black", label="best so far")
        if max(ys + [v for _, py in per_cand.values() for v in py]) > 10 * min(ys):
            ax.set_yscale("log")
    else:
        ax.text(0.5, 0.5, "no correct result yet", ha="center", transform=ax.transAxes)
    ax.set_xlabel("evaluated trial")
    ax.set_ylabel("time (us)")
    ax.set_title("convergence")
    if per_cand:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def param_importances(studies: Sequence[tuple[str, optuna.Study]]) -> dict[str, dict[str, float]]:
    """Per-candidate importances; candidates with too few completed trials are left out."""
    out: dict[str, dict[str, float]] = {}
    for name, study in studies:
        complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        distinct = {tuple(sorted(t.params.items())) for t in complete}
        if len(distinct) < 3 or not complete or not complete[0].params:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                imp = optuna.importance.get_param_importances(study)
        except Exception:  # noqa: BLE001 - importance is a nicety, never a failure
            continue
        if imp:
            out[name] = {k: float(v) for k, v in imp.items()}
    return out


def plot_importance(path: Path, importances: dict[str, dict[str, float]]) -> None:
    plt = _plt()
    n = max(1, len(importances))
    fig, axes = plt.subplots(n, 1, figsize=(6, 1.2 + 1.3 * n), squeeze=False)
    if not importances:
        axes[0][0].text(0.5, 0.5, "too few completed trials for parameter importance",
                        ha="center", va="center")
        axes[0][0].set_axis_off()
    for ax, (name, imp) in zip(axes[:, 0], importances.items(), strict=False):
        keys = list(imp)[::-1]
        ax.barh(keys, [imp[k] for k in keys])
        ax.set_xlim(0, 1)
        ax.set_title(name, fontsize=9)
    fig.suptitle("parameter importance")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_pipes(path: Path, pipes: dict[str, float], title: str) -> None:
    """Utilisation of each pipe (Cube, Vector, MTE1/2/3, Scalar...) of the winner."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3))
    names = list(pipes)
    vals = [float(pipes[k]) for k in names]
    as_pct = all(0 <= v <= 1 for v in vals)
    ax.bar(names, [100 * v for v in vals] if as_pct else vals)
    ax.set_ylabel("utilisation (%)" if as_pct else "value")
    if as_pct:
        ax.set_ylim(0, 100)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_report(
    run_dir: Path,
    result: SearchResult,
    rows: Sequence[dict[str, Any]],
    studies: Sequence[tuple[str, optuna.Study]],
    *,
    plots: bool = True,
) -> list[Path]:
    """Write the plots; returns the files written."""
    if not plots:
        return []
    written = [run_dir / "convergence.png", run_dir / "importance.png"]
    plot_convergence(written[0], rows)
    plot_importance(written[1], param_importances(studies))
    best = result.best
    pipes = best.outcome.metrics.get("pipes") if best else None
    if isinstance(pipes, dict) and pipes:
        try:
            p = run_dir / "pipes.png"
            plot_pipes(p, {str(k): float(v) for k, v in pipes.items()},
                       f"pipe utilisation: {best.candidate} {json.dumps(best.params)}")
            written.append(p)
        except (TypeError, ValueError):
            pass
    return written
