"""Every built-in op has at least one correct candidate from the builtin proposer.

This is the acceptance test of the task registry + proposer: `ascendcraft check --op NAME`
must pass for every op `ascendcraft ops` lists (reduced shapes, several seeds, task and
signed inputs, NaN-filled outputs, each run twice). Timing is left to the benchmark
(`benchmarks/model_all_ops.py`); here only correctness counts.
"""

from __future__ import annotations

import pytest
from checking import check_task

from ascendcraft.tasks.registry import task_names

CATEGORY_MINIMUMS = {"activation": 15, "loss": 7, "math": 6, "normalization": 8, "optimizer": 5,
                     "pooling": 6, "reduce": 5}


def test_registry_covers_the_seven_categories() -> None:
    from ascendcraft.tasks.registry import list_tasks

    tasks = list_tasks()
    assert len(tasks) >= 60
    counts: dict[str, int] = {}
    for t in tasks:
        counts[t.category] = counts.get(t.category, 0) + 1
    for cat, n in CATEGORY_MINIMUMS.items():
        assert counts.get(cat, 0) >= n, (cat, counts)


@pytest.mark.slow
@pytest.mark.parametrize("name", task_names())
def test_builtin_proposer_gives_a_correct_kernel(name: str) -> None:
    from ascendcraft.tasks.registry import get_task

    report = check_task(get_task(name), soc="Ascend910B2", full=False, timing=False,
                        explicit_shape=False)
    bad = [(c["candidate"], c["status"], c.get("message", "")[:200]) for c in report["candidates"]
           if not c["correct"]]
    assert report["correct"], f"{name}: no correct candidate: {bad}"


# fused ops whose PyTorch reference runs several ATen ops (losses, norms, optimizers)
FUSED = ["mse_loss", "huber_loss", "cross_entropy", "cosine_similarity_loss", "rms_norm", "l2_norm",
         "frobenius_norm", "adam", "lamb", "sgd_momentum"]


@pytest.mark.slow
@pytest.mark.parametrize("name", FUSED)
def test_fused_ops_model_faster_than_eager_and_within_roofline(name: str) -> None:
    from ascendcraft.tasks.registry import get_task

    r = check_task(get_task(name), soc="Ascend910B2", full=False, timing=True, explicit_shape=False)
    assert r["correct"] and r["timing"] == "modeled"
    assert 0 < r["roofline_frac"] <= 1 and r["eager_us"] > 0
    assert r["speedup"] > 1, (name, r["modeled_us"], r["eager_us"])
