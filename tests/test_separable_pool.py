"""Separable pooling windows (``windows(..., combine=sum|max)``, lowered in
``dsl/lowering/compute.py``): the (kd, kh) staged input rows are folded elementwise and only
the kw taps gathered. Correct on 2-D and 3-D pools with padding, ragged tiles, fp32 and fp16
inputs, the task's and signed data; the windows' tap offset tables, built once per kind of
chunk (padded first, interior, right edge), stay right; a taps body that is not a fold with the named op is
refused rather than silently reordered."""

from __future__ import annotations

import shutil

import pytest
from ascendcraft.search.builtin import propose

from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from ascendcraft.tasks.registry import get_task

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed")

# 4 output rows per tile and 64-column chunks over odd-sized planes: ragged tiles and chunks
SMALL = {"CORES": 4, "CHUNK": 64, "ROWS": 4}


def _separable(task):
    return next(c for c in propose(task) if c.name.endswith("/separable"))


def _check(task, kind: str = "separable"):
    ev = Evaluator(task, "Ascend910B2", seeds=(0,), shape_sets=[list(task.shapes)])
    cand = next(c for c in propose(task) if c.name.endswith("/" + kind))
    return ev.evaluate(prepare(cand.name, cand.source), SMALL, timing=False)


@needs_gxx
@pytest.mark.parametrize("name,shape,dtype", [
    ("avg_pool3d", (2, 3, 9, 10, 70), "fp32"),
    ("max_pool3d", (2, 3, 9, 10, 70), "fp16"),
    ("avg_pool2d", (2, 3, 19, 70), "fp16"),
    ("max_pool2d", (2, 3, 19, 70), "fp32"),
])
def test_separable_pool_is_correct(name: str, shape: tuple, dtype: str) -> None:
    out = _check(get_task(name).with_shape(shape, dtype))
    assert out.status is Status.OK, out.message


@needs_gxx
@pytest.mark.parametrize("name,shape,dtype", [
    ("avg_pool1d", (2, 3, 300), "fp32"), ("max_pool1d", (2, 3, 301), "fp16"),
    ("avg_pool3d", (2, 3, 9, 10, 70), "fp16"),
])
def test_tap_tables_shared_by_interior_chunks_stay_right(name: str, shape: tuple, dtype: str) -> None:
    # 150 output columns in chunks of 64: the padded first chunk, an interior chunk (the
    # shared tables) and the right-edge chunk, each with its own offset tables
    out = _check(get_task(name).with_shape(shape, dtype), "windows")
    assert out.status is Status.OK, out.message


def test_one_dim_pools_have_no_separable_candidate() -> None:
    assert not [c for c in propose(get_task("avg_pool1d")) if c.name.endswith("/separable")]


def test_a_body_that_is_not_the_named_fold_is_refused() -> None:
    src = _separable(get_task("avg_pool3d")).source
    assert "combine=sum" in src
    bad = src.replace("acc = acc + ", "acc = acc * ")
    assert bad != src
    with pytest.raises(Exception, match="combine=sum"):
        prepare("avg_pool3d/bad", bad).lower({})
