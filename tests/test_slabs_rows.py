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
from tests.kernel_runs import evaluate_at_task_shapes, inline_task

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


def test_no_blocked_slabs_for_scans() -> None:
    names = [c.name for c in propose_from_graph(load_task_file(TASKS / "corpus/cummin_middim_ties.py"))]
    assert any(n.endswith("/graph-slabs") for n in names), names
    assert not any(n.endswith("/graph-slabs_rows") for n in names), names


@needs_gxx
@pytest.mark.parametrize("path,dtype", [("corpus/argmax_middim.py", None), ("corpus/argmax_middim.py", "fp16")])
def test_step_indices_in_blocks(path: str, dtype: str | None) -> None:
    """position(k) in a blocked steps loop is a tile whose row j holds step k0 + j: argmax over a
    middle dim (the first index of the max, with a ragged last block) is offered blocked and right."""
    task = load_task_file(TASKS / path)
    if dtype:
        task = task.with_shape(task.inputs[0].shape, dtype)
    cand = next(c for c in propose_from_graph(task) if c.name.endswith("/graph-slabs_rows"))
    ev = Evaluator(task, "Ascend910B2", seeds=(0, 1))
    out = ev.evaluate(prepare(cand.name, cand.source), {"TILE": 32, "ROWS": 8, "CORES": 4, "DEPTH": 2}, timing=False)
    assert out.status is Status.OK, out.message


@needs_gxx
def test_a_weighted_sum_of_step_indices(tmp_path: Path) -> None:
    """sum_k k * x[:, k, :] over K = 37 in blocks of 8 (the last of 5): each row of a block is
    weighted by its own step."""
    task = inline_task(tmp_path, "(x * torch.arange(x.shape[1]).view(1, -1, 1)).sum(1)", "torch.randn(3, 37, 45)", "x")
    out = evaluate_at_task_shapes(task, BAD.format(update="acc + load(x, k) * position(k)"))
    assert out.status is Status.OK, out.message


ARG = '''
@kernel(category="reduce")
def k(x: In[f32], y: Out[i64]):
    for t in slabs(x, dim=1, tile=32, rows={rows}{split}):
        m = tile_fill({init})
        i = tile_fill(0.0)
        for k in steps(t):
            a = load(x, k)
            i = where(a {cmp} m, position(k), i)
            m = {fold}(m, a)
        store(y, t, cast(i, i64))
'''


@needs_gxx
@pytest.mark.parametrize("cmp, fold, ref", [(">", "maximum", "argmax"), ("<", "minimum", "argmin")])
@pytest.mark.parametrize("rows", [1, 8])
def test_the_index_of_a_running_extreme_in_one_pass(tmp_path: Path, cmp: str, fold: str, ref: str, rows: int) -> None:
    """i = where(a > m, position(k), i) before m = maximum(m, a): per row of a block the first step of
    its extreme, then the smallest index among the rows holding the folded extreme - the first
    index overall, on data of 3 levels (ties everywhere), K = 37 in blocks of 8 (the last of 5)."""
    task = inline_task(tmp_path, f"torch.{ref}(x, dim=1)", "torch.randint(0, 3, (3, 37, 45)).float()", "x")
    ev = Evaluator(task, "Ascend910B2", seeds=(0, 1), shape_sets=[list(task.shapes)])
    src = ARG.format(rows=rows, split="", cmp=cmp, fold=fold, init="-inf" if cmp == ">" else "inf")
    out = ev.evaluate(prepare("k", src), {}, timing=False)
    assert out.status is Status.OK, out.message


@pytest.mark.parametrize("fold, split, match", [
    ("minimum", "", "must be a max fold"),  # where(a > m, ...) follows a max, not a min
    ("maximum", ", split=2, flat=True", "no split combine"),
])
def test_an_index_fold_that_cannot_be_split_is_refused(fold: str, split: str, match: str) -> None:
    with pytest.raises(Exception, match=match):
        prepare("k", ARG.format(rows=8, split=split, cmp=">", fold=fold, init="-inf")).lower({})
