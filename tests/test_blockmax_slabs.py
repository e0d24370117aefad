"""The blocked online log-sum-exp (``slabs(..., rows=R, block_max=True)``, lowered in
``dsl/lowering/step_blockmax.py``): one max a block of R steps, the running sum rescaled once
a block. Correct on odd widths (1, 7, 33, 1023, 1025) with ragged blocks, fp16 inputs and
signed data; accurate on rows of large magnitude (values near +-80, where an unshifted
exp overflows the sum) and on steps of only -inf; offered beside the elementwise online
form; refused on a steps body that is not the online form; faster than that form in the model."""

from __future__ import annotations

import shutil

import pytest
import torch
from ascendcraft.dsl.parser import DslError
from ascendcraft.search.builtin import propose
from kernel_runs import run_one_output

from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from ascendcraft.tasks.registry import get_task

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed")
KIND = "slabs_flat_blockmax"


def _cand(task, kind: str = KIND):
    return next(c for c in propose(task) if c.name.split("/")[1] == kind)


@needs_gxx
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
@pytest.mark.parametrize("width", [1, 7, 33, 1023, 1025])
def test_block_max_is_correct_on_odd_widths_with_ragged_blocks(width: int, dtype: str) -> None:
    # K = 13 in blocks of 4 (the last one a single step); blocks start anywhere in a 512 B block
    task = get_task("logsumexp_dim").with_shape((3, 13, width), dtype)
    ev = Evaluator(task, "Ascend910B2", seeds=(0, 1), shape_sets=[list(task.shapes)])
    cand = _cand(task)
    prep = prepare(cand.name, cand.source)
    params = {"ROWS": 4, "CORES": 2, "DEPTH": 2}
    assert ev.feasible(prep, params) is None
    out = ev.evaluate(prep, params, timing=False)
    assert out.status is Status.OK, out.message




@needs_gxx
def test_large_magnitudes_and_minus_inf_steps() -> None:
    # +-80 with a spread of 10: exp(x) alone would overflow a sum of 64 steps; the first block
    # of column 0 is all -inf (a max of -inf must not give exp(-inf - -inf) = NaN), and the
    # max of each column rises in a late block (the running sum rescaled there)
    task = get_task("logsumexp_dim").with_shape((2, 64, 37), "fp32")
    g = torch.Generator().manual_seed(0)
    x = (torch.rand(2, 64, 37, generator=g) * 10 - 5) + 80 * torch.sign(torch.randn(2, 64, 37, generator=g))
    x[:, 50, :] += 8.0
    x[:, :8, 0] = float("-inf")
    got = run_one_output(task, _cand(task), x, {"ROWS": 8, "CORES": 2, "DEPTH": 2})
    want = torch.logsumexp(x.double(), dim=1)
    assert torch.isfinite(got).all()
    assert (got.double() - want).abs().max().item() < 1e-4


def test_offered_beside_the_online_form_and_faster_in_the_model() -> None:
    task = get_task("logsumexp_dim")
    names = {c.name.split("/")[1] for c in propose(task)}
    assert {"slabs_flat_online", KIND} <= names
    src = _cand(task).source
    assert "flat=True, block_max=True):" in src


@needs_gxx
def test_block_max_models_faster_than_the_elementwise_online_form() -> None:
    task = get_task("logsumexp_dim").with_shape((8, 512, 1023), "fp32")
    ev = Evaluator(task, "Ascend910B2", seeds=(0,))
    us = {}
    for kind in ("slabs_flat_online", KIND):
        c = _cand(task, kind)
        us[kind] = ev.time(ev.build(prepare(c.name, c.source), {"ROWS": 4, "CORES": 8}))["modeled_us"]
    assert us[KIND] < 0.85 * us["slabs_flat_online"], us


@pytest.mark.parametrize("old,new", [
    ("s = s * exp(m - mn) + exp(a - mn)", "s = s + exp(a - mn)"),
    ("s = s * exp(m - mn) + exp(a - mn)", "s = s * exp(m - mn) + exp(a - m)"),
    ("mn = maximum(m, a)", "mn = minimum(m, a)"),
    # step values a one-row slab cannot hold: a value of the slab (one row under block_max),
    # a compare's mask or a gelu's scratch as large as the step's rows
    ("        for k in steps(t):\n            a = cast(load(x, k), f32)",
     "        z = tile_fill(1.0)\n        for k in steps(t):\n            a = cast(load(x, k), f32) * z"),
    ("a = cast(load(x, k), f32)", "a = where(cast(load(x, k), f32) > 0.0, cast(load(x, k), f32), 0.0)"),
    ("a = cast(load(x, k), f32)", "a = gelu(cast(load(x, k), f32))"),
])
def test_a_steps_body_that_is_not_the_online_form_is_refused(old: str, new: str) -> None:
    from ascendcraft.dsl.kernel import prepare as dsl_prepare

    src = _cand(get_task("logsumexp_dim")).source
    bad = src.replace(old, new)
    assert bad != src
    with pytest.raises(DslError, match="block_max|fold"):
        dsl_prepare("bad", bad).lower({})


def test_block_max_needs_rows() -> None:
    from ascendcraft.dsl.kernel import prepare as dsl_prepare

    src = _cand(get_task("logsumexp_dim")).source.replace("rows=ROWS, flat=True, block_max=True", "block_max=True")
    with pytest.raises(DslError, match="block_max"):
        dsl_prepare("bad", src)


@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_only_the_steps_values_are_a_block_tall(dtype: str) -> None:
    # the accumulators, the output and the epilogue are one row under block_max: 8 steps a
    # block fit UB at B = 1023, where the elementwise online form's 8-row accumulators do not
    task = get_task("logsumexp_dim").with_shape((64, 4096, 1023), dtype)
    ev = Evaluator(task, "Ascend910B2", seeds=(0,))
    params = {"ROWS": 8, "CORES": 32, "DEPTH": 2}
    fits = {}
    for kind in ("slabs_flat_online", KIND):
        c = _cand(task, kind)
        fits[kind] = ev.feasible(prepare(c.name, c.source), params) is None
    assert fits == {"slabs_flat_online": False, KIND: True}, fits


def test_block_max_without_flat_is_refused() -> None:
    from ascendcraft.dsl.kernel import prepare as dsl_prepare

    src = _cand(get_task("logsumexp_dim")).source.replace("flat=True, block_max=True", "block_max=True")
    with pytest.raises(DslError, match="flat=True"):
        dsl_prepare("bad", src)
