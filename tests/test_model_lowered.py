"""Performance-model acceptance on real lowered kernels (not synthetic traces): the add
template from the builtin proposer, built for the emulator, traced at full shape and
simulated on the Ascend910B2 model. Figures are modeled, never measured."""

from __future__ import annotations

import pytest
from ascendcraft.search.builtin import propose

from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.tasks.registry import get_task

CORES = 48


def _modeled(n: int, op: str = "add", **params) -> dict:
    task = get_task(op).with_shape((n,))
    ev = Evaluator(task, "Ascend910B2", seeds=(0,))
    cand = propose(task)[0]
    prep = prepare(cand.name, cand.source)
    p = {"CORES": CORES, **params}
    assert ev.feasible(prep, p) is None
    return ev.time(ev.build(prep, p))


@pytest.mark.slow
def test_double_buffering_emerges_only_with_several_tiles_per_core() -> None:
    """GELU (erf form, ~25 vector instructions a tile) keeps the vector unit busy, so
    overlapping the next tile's copy-in with this tile's compute shows."""
    tile = 4096
    many = CORES * 6 * tile
    d1 = _modeled(many, "gelu", TILE=tile, DEPTH=1)
    d2 = _modeled(many, "gelu", TILE=tile, DEPTH=2)
    assert d2["modeled_us"] < 0.9 * d1["modeled_us"], (d1["modeled_us"], d2["modeled_us"])
    one = CORES * tile
    e1, e2 = _modeled(one, "gelu", TILE=tile, DEPTH=1), _modeled(one, "gelu", TILE=tile, DEPTH=2)
    assert abs(e2["modeled_us"] - e1["modeled_us"]) <= 0.02 * e1["modeled_us"]


@pytest.mark.slow
def test_tile_sweep_is_u_shaped_and_the_best_is_near_the_hbm_roofline() -> None:
    """Left arm: tiny tiles pay per-transfer and issue overhead. Right arm: three double-
    buffered 32 KiB queues do not fit the UB budget, which the checker rejects unbuilt."""
    n = 1 << 25  # 128 MiB per fp32 tensor
    times = {t: _modeled(n, TILE=t, DEPTH=2) for t in (256, 512, 1024, 2048, 4096)}
    us = {t: r["modeled_us"] for t, r in times.items()}
    best = min(us, key=us.get)
    assert best != 256 and us[256] > 1.3 * us[best], us
    task = get_task("add").with_shape((n,))
    ev = Evaluator(task, "Ascend910B2", seeds=(0,))
    cand = propose(task)[0]
    assert "UB budget exceeded" in ev.feasible(prepare(cand.name, cand.source), {"TILE": 8192})
    frac = times[best]["roofline_frac"]
    assert 0.85 <= frac <= 1.0, (best, frac)
    assert all(r["roofline_frac"] <= 1.0 for r in times.values())


@pytest.mark.slow
def test_310p_is_slower_than_910b_for_the_same_kernel() -> None:
    task = get_task("relu").with_shape((1 << 24,))
    cand = propose(task)[0]
    prep = prepare(cand.name, cand.source)
    out = {}
    for soc in ("Ascend910B2", "Ascend310P3"):
        ev = Evaluator(task, soc, seeds=(0,))
        p = {"CORES": 8, "TILE": 4096}
        out[soc] = ev.time(ev.build(prep, p))["modeled_us"]
    assert out["Ascend310P3"] > out["Ascend910B2"], out
