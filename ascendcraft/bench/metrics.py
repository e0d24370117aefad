"""The suite metrics, pure functions of per-task results (no run directory, no plots), so
they can be checked on a hand-made result set.

Definitions (after KernelBench's): over *all* tasks of a group, the compile rate and the
correct rate are the shares compiled and correct; ``fast_p`` is the share that is correct
**and** more than ``p`` times as fast as PyTorch eager (strictly greater, so fast_1.0 counts
tasks that beat eager). Over the correct tasks only: the geometric-mean speedup and the
median share of roofline (roofline time / kernel time).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

FAST_P: tuple[float, ...] = (0.2, 0.8, 1.0, 1.5, 2.0)


@dataclass(frozen=True)
class TaskResult:
    """One task of a bench. Times in microseconds of ``timing`` kind (``modeled`` or
    ``measured``); ``why``: why it is not compiled or not correct ("" when it is)."""

    name: str
    category: str
    compiled: bool
    correct: bool
    best_us: float | None = None
    eager_us: float | None = None
    roofline_frac: float | None = None
    bound: str | None = None
    candidate: str | None = None
    params: dict[str, int] | None = None
    trials: int = 0
    wall_s: float = 0.0
    timing: str = ""
    state: str = "done"
    why: str = ""
    curve: tuple[float | None, ...] = field(default=(), repr=False)
    """Best-so-far time after each evaluated trial (the budget-vs-quality curve)."""

    @property
    def speedup(self) -> float | None:
        """Eager time over the best time, for a correct task."""
        if not self.correct or not self.best_us or not self.eager_us:
            return None
        return self.eager_us / self.best_us

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("curve")
        d["speedup"] = self.speedup
        return d


UNFINISHED = ("not run", "stopped mid-run")
"""States of a task a stopped bench has not finished: left out of the metrics (and
listed as such), so a partial report scores only what ran to its budget."""


def finished(results: Iterable[TaskResult]) -> list[TaskResult]:
    """The results a report scores: every task but the unfinished ones."""
    return [r for r in results if r.state not in UNFINISHED]


def rate(flags: Iterable[bool]) -> float | None:
    """The share of true flags; None for no flags."""
    xs = list(flags)
    return sum(1 for x in xs if x) / len(xs) if xs else None


def fast_p(results: Sequence[TaskResult], p: float) -> float | None:
    """The share of ``results`` correct and faster than ``p`` × eager."""
    return rate(r.speedup is not None and r.speedup > p for r in results)


def geomean(values: Iterable[float]) -> float | None:
    """The geometric mean of positive values; None for none."""
    xs = [v for v in values if v is not None and v > 0]
    return math.exp(sum(math.log(v) for v in xs) / len(xs)) if xs else None


def median(values: Iterable[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return statistics.median(xs) if xs else None


@dataclass(frozen=True)
class GroupMetrics:
    """The metrics of one category, or of the whole suite (``group`` = "all")."""

    group: str
    tasks: int
    compiled: int
    correct: int
    compile_rate: float | None
    correct_rate: float | None
    fast: dict[float, float | None]
    geomean_speedup: float | None
    median_roofline: float | None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["fast"] = {f"fast_{p:g}": v for p, v in self.fast.items()}
        return d


def group_metrics(group: str, results: Sequence[TaskResult],
                  ps: Sequence[float] = FAST_P) -> GroupMetrics:
    """The metrics of ``results`` as one group."""
    correct = [r for r in results if r.correct]
    return GroupMetrics(
        group=group, tasks=len(results), compiled=sum(1 for r in results if r.compiled),
        correct=len(correct), compile_rate=rate(r.compiled for r in results),
        correct_rate=rate(r.correct for r in results),
        fast={p: fast_p(results, p) for p in ps},
        geomean_speedup=geomean(r.speedup for r in correct if r.speedup),
        median_roofline=median(r.roofline_frac for r in correct))


def by_category(results: Sequence[TaskResult]) -> list[GroupMetrics]:
    """One group per category (in order of first appearance), then "all"."""
    cats = list(dict.fromkeys(r.category for r in results))
    return ([group_metrics(c, [r for r in results if r.category == c]) for c in cats]
            + [group_metrics("all", results)])


def budget_curve(results: Sequence[TaskResult], budget: int) -> list[dict[str, float | None]]:
    """Quality after the first ``b`` evaluated trials of each task, b = 1..budget: the share
    with a correct kernel that beats eager (fast_1.0, before the winner's re-validation)
    and the geometric-mean speedup of those with a correct kernel by then."""
    out = []
    for b in range(1, budget + 1):
        speedups: list[float | None] = []
        for r in results:
            seen = [t for t in r.curve[:b] if t is not None]
            best = seen[-1] if seen else None
            speedups.append(r.eager_us / best if best and r.eager_us else None)
        out.append({"trials": b,
                    "fast_1": rate(s is not None and s > 1.0 for s in speedups),
                    "geomean_speedup": geomean(s for s in speedups if s)})
    return out
