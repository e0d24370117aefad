"""The bench's PNG plots: speedup per task by category, the distribution of the share of
roofline, the fast_p curve and the budget-vs-quality curve. Every time axis says its kind
and model version (``label``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .metrics import TaskResult, budget_curve, fast_p


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    _plt().close(fig)


def write_plots(where: Path, results: Sequence[TaskResult], budget: int,
                label: str) -> list[tuple[str, str]]:
    """Write the plots into ``where``; the (file name, title) of each one written."""
    plt = _plt()
    where.mkdir(parents=True, exist_ok=True)
    out: list[tuple[str, str]] = []
    cats = list(dict.fromkeys(r.category for r in results))
    colours = {c: plt.get_cmap("tab10")(i % 10) for i, c in enumerate(cats)}

    won = [r for r in results if r.speedup]
    if won:
        fig, ax = plt.subplots(figsize=(8, max(3.0, 0.16 * len(won) + 1.5)))
        ax.barh([r.name for r in won], [r.speedup for r in won],
                color=[colours[r.category] for r in won])
        ax.set_xscale("log")
        ax.axvline(1.0, color="grey", lw=0.8)
        ax.invert_yaxis()
        ax.tick_params(axis="y", labelsize=6)
        ax.set_xlabel(f"speedup over PyTorch eager ({label}; log scale)")
        handles = [plt.Rectangle((0, 0), 1, 1, color=colours[c]) for c in cats]
        ax.legend(handles, cats, fontsize=7, loc="lower right")
        ax.set_title("Speedup per task, by category")
        _save(fig, where / "speedup_by_task.png")
        out.append(("speedup_by_task.png", "speedup per task, by category"))

    shares = [r.roofline_frac for r in results if r.correct and r.roofline_frac is not None]
    if shares:
        fig, ax = plt.subplots(figsize=(7, 3.5))
        ax.hist(shares, bins=[i / 20 for i in range(21)], color="tab:blue")
        ax.set_xlabel(f"share of roofline of the best kernel ({label})")
        ax.set_ylabel("tasks")
        ax.set_title("Share of roofline")
        _save(fig, where / "roofline_share.png")
        out.append(("roofline_share.png", "distribution of the share of roofline"))

    if results:
        top = max([3.0] + [min(r.speedup, 20.0) for r in won])
        ps = [top * i / 200 for i in range(201)]
        fig, ax = plt.subplots(figsize=(7, 3.5))
        ax.plot(ps, [fast_p(results, p) for p in ps], color="black", label="all")
        for c in cats:
            group = [r for r in results if r.category == c]
            ax.plot(ps, [fast_p(group, p) for p in ps], lw=0.8, color=colours[c], label=c)
        ax.axvline(1.0, color="grey", lw=0.6, ls=":")
        ax.set_xlabel(f"p (speedup threshold over eager, {label})")
        ax.set_ylabel("fast_p")
        ax.set_ylim(0, 1.02)
        ax.legend(fontsize=6, ncol=2)
        ax.set_title("fast_p: share correct and faster than p × eager")
        _save(fig, where / "fast_p.png")
        out.append(("fast_p.png", "fast_p curve"))

    curve = budget_curve(results, budget) if any(r.curve for r in results) else []
    if curve:
        fig, ax = plt.subplots(figsize=(7, 3.5))
        xs = [c["trials"] for c in curve]
        ax.plot(xs, [c["fast_1"] or 0 for c in curve], color="tab:green", label="fast_1.0")
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("evaluated trials per task")
        ax.set_ylabel("fast_1.0", color="tab:green")
        ax2 = ax.twinx()
        ax2.plot(xs, [c["geomean_speedup"] or float("nan") for c in curve], color="tab:purple")
        ax2.set_ylabel("geometric-mean speedup", color="tab:purple")
        ax.set_title(f"Budget vs quality (best so far, before re-validation; {label})",
                     fontsize=9)
        _save(fig, where / "budget_quality.png")
        out.append(("budget_quality.png", "budget vs quality, from the trial history"))
    return out
