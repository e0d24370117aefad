"""The pieces of the sampler and overhead benchmarks that do not need a kernel."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from test_search_toy import FAST, SLOW, ToyObjective, toy_candidates

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def samplers():
    return _load("search_samplers")


def _toy_table(bench) -> dict:
    obj = ToyObjective()
    table: dict = {}
    for c in toy_candidates():
        for p in c.all_params():
            reason = obj.feasible(c, p)
            entry = {"infeasible": reason} if reason else obj.evaluate(c, p, 1.0).to_dict()
            table.setdefault(c.name, {})[bench.point_key(p)] = entry
    return table


def test_evals_to_target_and_censored_median(samplers):
    assert samplers.evals_to_target([5.0, None, 3.0, 1.0], 3.09) == 3
    assert samplers.evals_to_target([5.0, None], 1.0) is None
    assert samplers.median_censored([3, 5, None, 7, 9], 100) == "7"
    assert samplers.median_censored([3, None, None, None, 9], 100) == ">100"


def test_restrict_keeps_defaults_and_order(samplers):
    (fast,) = samplers.restrict([FAST], {"tile": (8, 256, 999), "depth": (3,)})
    tiles = next(t for t in fast.tunables if t.name == "tile")
    depth = next(t for t in fast.tunables if t.name == "depth")
    assert tiles.values == (8, 16, 256)  # the default 16 stays; 999 was never in the domain
    assert depth.values == (1, 3)
    assert next(t for t in fast.tunables if t.name == "unroll").values == (1, 2, 4, 8)


def test_replay_sees_the_cached_landscape(samplers):
    table = _toy_table(samplers)
    best = samplers.optimum(table)
    assert best == (10.0, FAST.name, samplers.point_key({"tile": 64, "unroll": 4, "depth": 2}))
    feasible = sum("infeasible" not in d for v in table.values() for d in v.values())
    calls = samplers.replay(toy_candidates(), table, "grid", 0, feasible + 10)
    assert len(calls) == feasible  # the driver evaluated every feasible point once, then stopped
    assert samplers.evals_to_target(calls, best[0]) is not None
    first = samplers.replay(toy_candidates(), table, "tpe", 3, 20)
    assert first == samplers.replay(toy_candidates(), table, "tpe", 3, 20)  # seeded: repeatable
    defaults = [ToyObjective().model_time(c, c.default_params()) for c in (FAST, SLOW)]
    assert first[:2] == defaults  # defaults first, as in a real run


def test_grid_cache_path_depends_on_domains(samplers, tmp_path):
    a = samplers.grid_cache_path("relu", "Ascend910B2", [FAST], tmp_path)
    b = samplers.grid_cache_path(
        "relu", "Ascend910B2", samplers.restrict([FAST], {"tile": (8,)}), tmp_path
    )
    assert a != b and a.parent == tmp_path


def test_overhead_breakdown():
    mod = _load("tuner_overhead")
    times = {
        "overhead_s": 2.0,
        "setup_s": 0.2,
        "sampler_s": 0.3,
        "storage_s": 0.5,
        "feasible_s": 0.1,
        "submit_s": 0.1,
        "report_s": 0.4,
        "warmup_wait_s": 0.1,
    }
    parts = mod.breakdown(times)
    assert parts["other_s"] == pytest.approx(0.3)
    assert sum(parts.values()) == pytest.approx(2.0)
    json.dumps(parts)
