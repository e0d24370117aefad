"""The morning report of a campaign: ``report.md`` and PNG plots in ``<out>/plots``.

Read from the record (:mod:`.state`) and each unit's ``trials.jsonl``, so it can be
written at any time — after an interruption it covers what ran so far. Every time in it is
what the backend reported, labelled with its kind (``modeled`` by the emulator and the
performance model, with the model's version; ``measured`` only from an NPU).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from ..app.timing import time_key
from ..version import MODEL_VERSION, package_version
from .state import CampaignState, UnitState

BINS = 24
"""Bars of the trials-per-second plot."""


def read_rows(run_dir: Path) -> list[dict[str, Any]]:
    """The trial rows of one unit's run (``trials.jsonl``; none if it has not run)."""
    path = run_dir / "trials.jsonl"
    rows: list[dict[str, Any]] = []
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return rows
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:  # a line cut short by a kill
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def _best(u: UnitState) -> tuple[float | None, float | None, float | None, str]:
    """(best time, fastest correct default, eager, kind) of a unit, from its summary."""
    s = u.summary or {}
    kind = str(s.get("timing") or "")
    key = time_key(kind)
    best = s.get("best") or {}
    t = best.get(key) if best.get("correct") else None
    defaults = [d.get(key) for d in (s.get("defaults") or {}).values()
                if d.get("status") == "ok" and isinstance(d.get(key), (int, float))]
    return t, (min(defaults) if defaults else None), best.get("eager_us"), kind


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def _fmt(x: float | None, spec: str = ".1f", suffix: str = "") -> str:
    return "—" if x is None else f"{x:{spec}}{suffix}"


def _failures(rows: Sequence[dict[str, Any]]) -> list[tuple[str, int, str]]:
    """(status, count, the commonest message) of a unit's failed trials."""
    failed = [r for r in rows if r.get("evaluated") and r.get("status") not in ("ok", "infeasible")]
    out = []
    for status, n in Counter(str(r.get("status")) for r in failed).most_common():
        msgs = Counter(" ".join(str(r.get("message") or "").split())[:160]
                       for r in failed if str(r.get("status")) == status)
        out.append((status, n, msgs.most_common(1)[0][0] if msgs else ""))
    return out


def _completions(out: Path, st: CampaignState) -> list[float]:
    """Unix times at which the campaign's evaluated trials completed."""
    times = []
    for u in st.units.values():
        for r in read_rows(out / "runs" / u.key):
            stamp = r.get("datetime_complete")
            if r.get("evaluated") and stamp:
                try:
                    times.append(datetime.fromisoformat(stamp).timestamp())
                except ValueError:
                    continue
    return sorted(times)


def write_report(out: Path, st: CampaignState) -> Path:
    """Write ``report.md`` and the plots; returns the report's path."""
    plots = out / "plots"
    plots.mkdir(exist_ok=True)
    units = list(st.units.values())
    rows = {u.key: read_rows(out / "runs" / u.key) for u in units}
    done = _completions(out, st)
    figures = _plots(plots, units, done)
    kinds = {k for u in units for k in [_best(u)[3]] if k}
    kind = "/".join(sorted(kinds)) or "modeled"
    label = f"{kind}, performance model {MODEL_VERSION}" if "modeled" in kinds or not kinds else kind
    evaluated = sum(u.trials for u in units)
    ran = [u for u in units if u.runs]
    wins = [u for u in units if _best(u)[0] is not None]
    status = st.stopped or ("complete" if st.finished else "not finished")
    lines = [
        "# Campaign report", "",
        f"- status: {status}; {len(st.starts)} start(s), the first "
        f"{_when(st.starts[0]) if st.starts else '—'}",
        f"- time: {st.used_s / 3600:.2f} h used of {st.hours:g} h; budget per op "
        f"{st.budget_per_op} trials",
        f"- units (op @ SoC): {len(units)}; ran {len(ran)}; a correct kernel for {len(wins)}; "
        f"failed {sum(1 for u in units if u.state == 'failed')}",
        f"- evaluated trials: {evaluated}; {evaluated / st.used_s:.2f} per second overall"
        if st.used_s > 0 else f"- evaluated trials: {evaluated}",
        f"- times are {label} (ascendcraft {package_version()}); never measured without an NPU"
        if "measured" not in kinds else f"- times are {label}",
        "",
        "## What won", "",
        "| unit | state | trials | minutes | winner | params | best µs | defaults µs | × defaults "
        "| eager µs | × eager |",
        "|---|---|---:|---:|---|---|---:|---:|---:|---:|---:|",
    ]
    for u in units:
        t, d, e, _ = _best(u)
        best = (u.summary or {}).get("best") or {}
        params = ", ".join(f"{k}={v}" for k, v in (best.get("params") or {}).items()) if t else ""
        lines.append(
            f"| {u.key} | {u.state} | {u.trials} | {u.time_s / 60:.1f} | "
            f"{best.get('candidate') or '—' if t else '—'} | {params or '—'} | {_fmt(t)} | "
            f"{_fmt(d)} | {_fmt(_ratio(d, t), '.2f', '×')} | {_fmt(e)} | "
            f"{_fmt(_ratio(e, t), '.2f', '×')} |")
    lines += ["", "## What failed and why", ""]
    any_failure = False
    for u in units:
        if u.state == "failed":
            lines.append(f"- **{u.key}** did not run: {u.error}")
            any_failure = True
        for status_, n, msg in _failures(rows[u.key]):
            lines.append(f"- {u.key}: {n} × {status_}" + (f" — e.g. {msg}" if msg else ""))
            any_failure = True
    if not any_failure:
        lines.append("Nothing failed.")
    lines += ["", "## Plots", ""] + [f"![{title}](plots/{name})" for name, title in figures]
    path = out / "report.md"
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(path)
    return path


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts).astimezone().strftime("%Y-%m-%d %H:%M %Z")


def _plots(where: Path, units: Sequence[UnitState], done: Sequence[float]) -> list[tuple[str, str]]:
    """time_per_op.png, speedup.png, throughput.png; the (file, title) of each written."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    out = []
    names = [u.key for u in units]
    height = max(3.0, 0.22 * len(units) + 1.2)
    fig, ax = plt.subplots(figsize=(8, height))
    ax.barh(names, [u.time_s / 60 for u in units], color="tab:blue")
    ax.invert_yaxis()
    ax.set_xlabel("minutes")
    ax.set_title("Time per op")
    ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    fig.savefig(where / "time_per_op.png", dpi=90)
    plt.close(fig)
    out.append(("time_per_op.png", "time per op"))

    won = [(u.key, *_best(u)[:3]) for u in units if _best(u)[0] is not None]
    if won:
        fig, ax = plt.subplots(figsize=(8, max(3.0, 0.22 * len(won) + 1.2)))
        y = range(len(won))
        ax.barh([i - 0.2 for i in y], [_ratio(d, t) or 0 for _, t, d, _ in won], height=0.4,
                label="over the defaults")
        ax.barh([i + 0.2 for i in y], [_ratio(e, t) or 0 for _, t, _, e in won], height=0.4,
                label="over eager (modeled)")
        ax.set_yticks(list(y), [k for k, *_ in won], fontsize=7)
        ax.invert_yaxis()
        ax.axvline(1.0, color="grey", lw=0.8)
        ax.set_xlabel(f"speed-up of the winner (modeled, model {MODEL_VERSION})")
        ax.legend(loc="lower right", fontsize=8)
        fig.tight_layout()
        fig.savefig(where / "speedup.png", dpi=90)
        plt.close(fig)
        out.append(("speedup.png", "speed-up over the defaults and over eager"))

    if len(done) >= 2:
        t0, t1 = done[0], done[-1]
        width = max(1.0, (t1 - t0) / BINS)
        counts = [0] * (int((t1 - t0) / width) + 1)
        for t in done:
            counts[int((t - t0) / width)] += 1
        fig, ax = plt.subplots(figsize=(8, 3.5))
        ax.bar([i * width / 60 for i in range(len(counts))], [c / width for c in counts],
               width=width / 60, align="edge", color="tab:green")
        ax.set_xlabel("minutes since the first trial completed (all starts of the campaign)")
        ax.set_ylabel("evaluated trials / s")
        ax.set_title("Trials per second over the night")
        fig.tight_layout()
        fig.savefig(where / "throughput.png", dpi=90)
        plt.close(fig)
        out.append(("throughput.png", "trials per second over the night"))
    return out
