"""The bench report: ``BENCHMARK.md`` (tables), ``bench.json`` (the same figures as data)
and PNG plots in ``plots/``, written from a bench directory's record (:mod:`.results`).

Every time is what the backend reported, labelled with its kind and, when modeled, the
version of the performance model that produced it (recorded when the bench started).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..campaign.state import CampaignState
from ..version import MODEL_VERSION, package_version
from .metrics import FAST_P, GroupMetrics, TaskResult, budget_curve, by_category, finished
from .plots import write_plots
from .results import read_results
from .suite import Entry, public

REPORT = "BENCHMARK.md"
DATA = "bench.json"


def timing_label(results: Sequence[TaskResult], model_version: str) -> str:
    """What the times are: ``modeled, model 2.0`` (or ``measured``), from the results."""
    kinds = sorted({r.timing for r in results if r.timing}) or ["modeled"]
    return "/".join(f"{k}, model {model_version}" if k == "modeled" else k for k in kinds)


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.0f}%"


def _num(x: float | None, spec: str = ".2f", suffix: str = "") -> str:
    return "—" if x is None else f"{x:{spec}}{suffix}"


def _cell(text: str, roots: Sequence[Path] = ()) -> str:
    return public(" ".join(str(text).split()), *roots).replace("|", "\\|")


def below_eager_reason(r: TaskResult) -> str:
    """Why a correct task is not faster than eager, from its own figures: how close the
    kernel and the eager baseline come to the roofline, and what bounds the kernel."""
    assert r.speedup is not None and r.roofline_frac is not None
    eager_share = r.roofline_frac / r.speedup
    bound = f"{r.bound}-bound" if r.bound else "bound unknown"
    if eager_share >= 0.7 and r.roofline_frac >= 0.8 * eager_share:
        return (f"both are near the roofline (kernel {_pct(r.roofline_frac)}, eager "
                f"{_pct(eager_share)}; {bound}): little room to beat eager")
    return (f"the kernel reaches {_pct(r.roofline_frac)} of roofline ({bound}) against "
            f"eager's {_pct(eager_share)}: no candidate or tiling in {r.trials} trials "
            f"came as close to the limit")


def _group_table(groups: Sequence[GroupMetrics]) -> list[str]:
    head = ("| category | tasks | compiled | correct | "
            + " | ".join(f"fast_{p:g}" for p in FAST_P)
            + " | geomean speedup | median roofline share |")
    lines = [head, "|---|" + "---:|" * (3 + len(FAST_P) + 2)]
    for g in groups:
        name = "**all**" if g.group == "all" else g.group
        lines.append(f"| {name} | {g.tasks} | {_pct(g.compile_rate)} | {_pct(g.correct_rate)} | "
                     + " | ".join(_pct(g.fast[p]) for p in FAST_P)
                     + f" | {_num(g.geomean_speedup, '.2f', '×')} | {_pct(g.median_roofline)} |")
    return lines


def _task_table(results: Sequence[TaskResult], label: str) -> list[str]:
    lines = [f"| task | category | compiled | correct | best µs ({label}) | eager µs ({label}) "
             f"| speedup | roofline share | bound | best parameters | trials | wall s |",
             "|---|---|:-:|:-:|---:|---:|---:|---:|---|---|---:|---:|"]
    for r in results:
        params = ", ".join(f"{k}={v}" for k, v in (r.params or {}).items())
        best = f"{r.candidate}: {params}" if r.candidate and params else (r.candidate or "—")
        lines.append(
            f"| {r.name} | {r.category} | {'yes' if r.compiled else 'no'} | "
            f"{'yes' if r.correct else 'no'} | {_num(r.best_us, '.1f')} | {_num(r.eager_us, '.1f')} "
            f"| {_num(r.speedup, '.2f', '×')} | {_pct(r.roofline_frac)} | {r.bound or '—'} | "
            f"{_cell(best)} | {r.trials} | {r.wall_s:.0f} |")
    return lines


def _status(st: CampaignState) -> str:
    if st.finished and not st.stopped:
        return "complete"
    return f"not finished ({st.stopped or 'killed, or still running'}); continue it with --resume"


def write_bench_report(out: Path, meta: dict[str, Any], entries: Sequence[Entry],
                       st: CampaignState, dest: Path | None = None) -> Path:
    """Write BENCHMARK.md, bench.json and the plots of the bench in ``out`` (into ``dest``
    if given); returns the path of BENCHMARK.md."""
    dest = dest or out
    dest.mkdir(parents=True, exist_ok=True)
    suite_dir = Path(str(meta.get("suite")))
    roots = [out] + ([suite_dir] if suite_dir.is_dir() else [])
    soc = str(meta.get("soc"))
    _, results = read_results(out, entries, soc)
    model = str(meta.get("model_version") or MODEL_VERSION)
    label = timing_label(results, model)
    scored = finished(results)
    waiting = [r for r in results if r not in scored]
    groups = by_category(scored)
    budget = int(meta.get("budget") or 0)
    figures = write_plots(dest / "plots", scored, budget, label)
    overall = groups[-1]
    slow = [r for r in scored if r.speedup is not None and r.speedup <= 1.0]
    failed = [r for r in scored if not r.correct]
    lines = [
        f"# Benchmark: {meta.get('suite')} suite on {soc}", "",
        f"- command: `{meta.get('command') or 'ascendcraft bench'}`"
        + "".join(f"; resumed with `{c}`" for c in meta.get("resumed_with", [])),
        f"- ascendcraft {meta.get('ascendcraft')}"
        + (f" at commit {meta['revision']}" if meta.get("revision") else "")
        + (f"; times are {label} — never measured without an NPU" if "measured" not in label
           else f"; times are {label}"),
        f"- status: {_status(st)}; {len(st.starts)} start(s); wall time {st.used_s / 60:.1f} min "
        f"over all starts",
        f"- {len(results)} tasks; budget {budget} evaluated trials per task; proposer "
        f"{meta.get('proposer')}" + (f"; categories {', '.join(meta['categories'])}"
                                     if meta.get("categories") else "")
        + (f"; only {', '.join(meta['only'])}" if meta.get("only") else ""),
        (f"- **partial**: the figures cover the {len(scored)} of {len(results)} tasks that ran "
         f"to their budget; {len(waiting)} not finished yet (listed below)" if waiting else
         "- every task ran to its budget"),
        f"- overall: compiled {_pct(overall.compile_rate)}, correct {_pct(overall.correct_rate)}, "
        f"fast_1.0 {_pct(overall.fast[1.0])}, geometric-mean speedup "
        f"{_num(overall.geomean_speedup, '.2f', '×')}",
    ]
    if model != MODEL_VERSION:
        lines.append(f"- note: this report was regenerated with performance model "
                     f"{MODEL_VERSION}; its times were modeled by model {model}")
    lines += [
        "", "fast_p: the share of all tasks that are correct and more than p × as fast as "
        "PyTorch eager (both times from the same backend); speedup and roofline share over "
        "the correct tasks. A winner is re-validated on fresh inputs before it counts.", "",
        "## Per category", "", *_group_table(groups), "",
        "## Tasks at or below 1.0× eager", "",
    ]
    lines += ([f"- **{r.name}** ({r.category}) {r.speedup:.2f}×: {below_eager_reason(r)}"
               for r in slow if r.roofline_frac is not None] or ["None."])
    lines += ["", "## Not compiled or not correct", ""]
    lines += ([f"- **{r.name}** ({r.category}; {'compiled' if r.compiled else 'not compiled'}, "
               f"{r.state}): {_cell(r.why, roots)[:600]}" for r in failed] or ["None."])
    if waiting:
        lines += ["", "## Not finished yet", "",
                  f"{len(waiting)} task(s), continue with `--resume`: "
                  + ", ".join(f"{r.name} ({r.state})" for r in waiting)]
    lines += ["", "## Per task", "", *_task_table(results, label), "",
              "## Plots", "", *[f"![{title}](plots/{name})" for name, title in figures], ""]
    path = dest / REPORT
    _atomic(path, "\n".join(lines))
    data = {
        "suite": meta.get("suite"), "soc": soc, "command": meta.get("command"),
        "resumed_with": meta.get("resumed_with", []),
        "ascendcraft": meta.get("ascendcraft"), "revision": meta.get("revision"),
        "report_ascendcraft": package_version(),
        "model_version": model, "timing": label, "budget": budget,
        "proposer": meta.get("proposer"), "categories": meta.get("categories") or [],
        "status": _status(st), "finished": bool(st.finished and not st.stopped),
        "wall_s": st.used_s, "starts": len(st.starts),
        "groups": [g.to_dict() for g in groups],
        "tasks": [{**r.to_dict(), "why": public(r.why, *roots)} for r in results],
        "budget_curve": budget_curve(scored, budget),
        "scored": len(scored), "not_finished": [r.name for r in waiting],
        "plots": [name for name, _ in figures],
    }
    _atomic(dest / DATA, json.dumps(data, indent=1, default=str))
    return path


def _atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text if text.endswith("\n") else text + "\n")
    os.replace(tmp, path)
