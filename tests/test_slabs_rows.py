"""Blocked middle-dim reductions (``slabs(..., rows=R)``, lowered in
``dsl/lowering/compute.py``): each step copies R rows of the reduced axis at once into R partial
rows of every accumulator, folded into one after the steps. Correct for sum, mean, max, min,
prod and the online log-sum-exp (its rescaled sum merged relative to the folded max), on fp32
and fp16 inputs with signed data, with a ragged last block of steps, a ragged last tile of B,
and R larger than the reduced extent; a steps body that is not a fold is refused rather than
silently reordered."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from ascendcraft.search.builtin import propose
from ascendcraft.search.graph import propose_from_graph

from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from ascendcraft.tasks.registry import get_task
from ascendcraft.tasks.taskfile import load_task_file

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed")

OPS = ["sum_dim", "mean_dim", "max_middim", "min_dim", "prod_dim", "logsumexp_dim"]


def _blocked(task):
    return next(c for c in propose(task) if "/slabs_rows" in c.name)


def _check(task, params: dict):
    ev = Evaluator(task, "Ascend910B2", seeds=(0, 1), shape_sets=[list(task.shapes)])
    cand = _blocked(task)
    return ev.evaluate(prepare(cand.name, cand.source), params, timing=False)


@needs_gxx
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
@pytest.mark.parametrize("name", OPS)
def test_blocked_slabs_are_correct_with_ragged_blocks(name: str, dtype: str) -> None:
    # K = 37 in blocks of 8 (the last one 5 rows), B = 45 in tiles of 32 (the last one 13)
    out = _check(get_task(name).with_shape((3, 37, 45), dtype),
                 {"TILE": 32, "ROWS": 8, "CORES": 4, "DEPTH": 2})
    assert out.status is Status.OK, out.message


@needs_gxx
@pytest.mark.parametrize("name", ["sum_dim", "max_middim", "logsumexp_dim"])
def test_more_rows_than_the_reduced_extent(name: str) -> None:
    out = _check(get_task(name).with_shape((2, 5, 70), "fp32"), {"TILE": 64, "ROWS": 64, "CORES": 3, "DEPTH": 1})
    assert out.status is Status.OK, out.message


def test_the_blocked_candidate_is_offered_beside_the_slabs_one() -> None:
    for name in OPS:
        names = [c.name for c in propose(get_task(name))]
        assert any(n.endswith("/slabs") or n.endswith("/slabs_online") for n in names), names
        assert any("/slabs_rows" in n for n in names), names


BAD = '''
@kernel(category="reduce")
def sum_dim(x: In[f32], y: Out[f32]):
    for t in slabs(x, dim=1, tile=64, rows=8):
        acc = tile_fill(0.0)
        for k in steps(t):
            acc = {update}
        store(y, t, acc)
'''


@pytest.mark.parametrize("update,match", [
    ("acc * 0.5 + load(x, k)", "must be a fold"),
    ("acc + load(x, k) * acc", "must be a fold"),
    ("acc + load(x, k) * position(k)", "position"),
])
def test_a_steps_body_that_is_not_a_fold_is_refused(update: str, match: str) -> None:
    with pytest.raises(Exception, match=match):
        prepare("sum_dim/bad", BAD.format(update=update)).lower({})


TASKS = Path(__file__).parent / "taskfiles"


@needs_gxx
@pytest.mark.parametrize("path,dtype", [("wild/prime_middim_var.py", None), ("corpus/sum_middim_3d.py", None),
                                        ("corpus/norm_middim.py", "fp16"),
                                        # a per-step output (x - amax): kb rows stored a copy
                                        ("corpus/amax_middim_keepdim.py", "fp16"),
                                        ("wild/middim_center.py", None)])
def test_the_graph_frontend_offers_the_blocked_slabs_and_it_is_correct(path: str, dtype: str | None) -> None:
    task = load_task_file(TASKS / path)
    if dtype:
        task = task.with_shape(task.inputs[0].shape, dtype)
    cand = next(c for c in propose_from_graph(task) if c.name.endswith("/graph-slabs_rows"))
    ev = Evaluator(task, "Ascend910B2", seeds=(0,))
    prep = prepare(cand.name, cand.source)
    params = {"TILE": 32, "ROWS": 4, "CORES": 4, "DEPTH": 2}
    assert ev.feasible(prep, params) is None
    out = ev.evaluate(prep, params, timing=False)
    assert out.status is Status.OK, out.message


@pytest.mark.parametrize("path", ["corpus/argmax_middim.py", "corpus/cummin_middim_ties.py"])
def test_no_blocked_slabs_for_step_indices_or_scans(path: str) -> None:
    names = [c.name for c in propose_from_graph(load_task_file(TASKS / path))]
    assert any(n.endswith("/graph-slabs") for n in names), names
    assert not any(n.endswith("/graph-slabs_rows") for n in names), names


# the blocked loop of BAD, then a second distribution loop without rows=
TWO_LOOPS = BAD.format(update="acc + load(x, k)").replace("        store(y, t, acc)\n", """        tot = total_sum(acc)
    for t in slabs(x, dim=1, tile=64):
        store(y, t, tile_fill(0.0) + tot)
""")


def test_every_slabs_loop_of_a_kernel_copies_the_same_steps() -> None:
    # the loops share one tiling (one stepRows): a second header without rows= is refused
    with pytest.raises(Exception, match="same header"):
        prepare("sum_dim/two", TWO_LOOPS).lower({})


@pytest.mark.parametrize("body,match", [
    # a running sum stored per step is a scan: its rows would hold partial sums
    (["acc = acc + load(x, k)", "store(y2, k, acc)"], "store per step"),
    # a fold of another accumulator's partial rows
    (["m = maximum(m, load(x, k))", "acc = acc + exp(load(x, k) - m)", "store(y2, k, load(x, k))"],
     "must be a fold"),
])
def test_steps_that_read_partial_folds_are_refused(body: list[str], match: str) -> None:
    src = '''
@kernel(category="reduce")
def f(x: In[f32], y: Out[f32], y2: Out[f32]):
    for t in slabs(x, dim=1, tile=64, rows=8):
        acc = tile_fill(0.0)
        m = tile_fill(-inf)
        for k in steps(t):
''' + "".join(f"            {ln}\n" for ln in body) + '''        store(y, t, acc + m)
'''
    with pytest.raises(Exception, match=match):
        prepare("f/bad", src).lower({})
