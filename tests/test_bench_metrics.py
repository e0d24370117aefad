"""The bench's suite metrics on a hand-made result set: compile and correct rates, fast_p
(strictly faster than p × eager, over all tasks), the geometric-mean speedup and median
roofline share (over the correct tasks), per category and overall, and the
budget-vs-quality curve from best-so-far histories."""

from __future__ import annotations

import math

import pytest

from ascendcraft.bench.metrics import (
    TaskResult,
    budget_curve,
    by_category,
    fast_p,
    geomean,
    group_metrics,
    rate,
)


def _ok(name: str, cat: str, best: float, eager: float, frac: float,
        curve: tuple = ()) -> TaskResult:
    return TaskResult(name, cat, compiled=True, correct=True, best_us=best, eager_us=eager,
                      roofline_frac=frac, curve=curve)


RESULTS = [
    _ok("a", "act", best=10.0, eager=40.0, frac=0.9, curve=(20.0, 20.0, 10.0)),  # 4×
    _ok("b", "act", best=50.0, eager=50.0, frac=0.5, curve=(None, 50.0)),        # 1× exactly
    _ok("c", "red", best=100.0, eager=25.0, frac=0.2, curve=(100.0,)),            # 0.25×
    TaskResult("d", "red", compiled=True, correct=False, eager_us=30.0, curve=(None, None)),
    TaskResult("e", "red", compiled=False, correct=False, why="refused by the frontend: x"),
]


def test_speedup_only_for_correct_tasks():
    assert RESULTS[0].speedup == 4.0 and RESULTS[2].speedup == 0.25
    assert RESULTS[3].speedup is None and RESULTS[4].speedup is None
    d = RESULTS[0].to_dict()
    assert d["speedup"] == 4.0 and "curve" not in d


def test_rates_fast_p_and_means_overall():
    g = group_metrics("all", RESULTS)
    assert (g.tasks, g.compiled, g.correct) == (5, 4, 3)
    assert g.compile_rate == pytest.approx(0.8) and g.correct_rate == pytest.approx(0.6)
    # speedups 4, 1, 0.25 among 5 tasks; fast_p is strict
    assert g.fast[0.2] == pytest.approx(3 / 5)
    assert g.fast[0.8] == pytest.approx(2 / 5)
    assert g.fast[1.0] == pytest.approx(1 / 5)  # b is exactly 1×: not faster
    assert g.fast[1.5] == pytest.approx(1 / 5) and g.fast[2.0] == pytest.approx(1 / 5)
    assert g.geomean_speedup == pytest.approx((4 * 1 * 0.25) ** (1 / 3))  # = 1.0
    assert g.median_roofline == pytest.approx(0.5)


def test_per_category_then_all():
    groups = by_category(RESULTS)
    assert [g.group for g in groups] == ["act", "red", "all"]
    act, red, _ = groups
    assert act.correct_rate == 1.0 and act.fast[1.0] == 0.5
    assert act.geomean_speedup == pytest.approx(2.0)  # sqrt(4 × 1)
    assert red.compile_rate == pytest.approx(2 / 3) and red.correct_rate == pytest.approx(1 / 3)
    assert red.fast[0.2] == pytest.approx(1 / 3) and red.fast[0.8] == 0.0
    assert red.median_roofline == pytest.approx(0.2)
    assert set(red.to_dict()["fast"]) == {"fast_0.2", "fast_0.8", "fast_1", "fast_1.5", "fast_2"}


def test_empty_and_degenerate_inputs():
    assert rate([]) is None and fast_p([], 1.0) is None and geomean([]) is None
    assert geomean([0.0, -1.0]) is None  # only positive values count
    assert math.isclose(geomean([2.0, 8.0]), 4.0)
    g = group_metrics("none", [RESULTS[4]])
    assert g.correct_rate == 0.0 and g.geomean_speedup is None and g.median_roofline is None


def test_budget_curve_follows_best_so_far():
    curve = budget_curve(RESULTS, 3)
    assert [c["trials"] for c in curve] == [1, 2, 3]
    # after 1 trial: a at 2× (faster), b none yet, c 0.25×: fast_1 = 1/5
    assert curve[0]["fast_1"] == pytest.approx(1 / 5)
    assert curve[0]["geomean_speedup"] == pytest.approx(math.sqrt(2 * 0.25))
    # after 2: b reaches 1× (not faster)
    assert curve[1]["geomean_speedup"] == pytest.approx((2 * 1 * 0.25) ** (1 / 3))
    # after 3: a improves to 4×; shorter histories keep their last best
    assert curve[2]["geomean_speedup"] == pytest.approx((4 * 1 * 0.25) ** (1 / 3))
