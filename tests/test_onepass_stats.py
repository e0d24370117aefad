"""One-pass row statistics (``search/onepass.py``): the online softmax / log-sum-exp and the
shifted-moment norms are correct - rows walked in several chunks with a ragged tail, fp32 and
fp16 inputs, the task's and signed data - and the shifted moments keep their accuracy on
large-mean data, where the unshifted sum-of-squares formula (the negative control below)
cancels to nothing."""

from __future__ import annotations

import dataclasses
import shutil

import pytest
import torch
from ascendcraft.search.builtin import propose

from ascendcraft.backends.base import TilingArgs
from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from ascendcraft.tasks.registry import get_task

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed")

# CHUNK 256 on rows of 1000 (or 1000 strided elements): four chunks, the last one ragged
SMALL_CHUNK = {"CHUNK": 256, "CORES": 4}


def _candidate(task, kind: str):
    return next(c for c in propose(task) if c.name.endswith("/" + kind))


def _check(task, kind: str, params: dict, seeds=(0, 1)):
    ev = Evaluator(task, "Ascend910B2", seeds=seeds, shape_sets=[list(task.shapes)])
    cand = _candidate(task, kind)
    return ev.evaluate(prepare(cand.name, cand.source), params, timing=False)


def _large_mean(task, mean: float = 1000.0, spread: float = 1.0):
    """The task with its first input drawn from U[mean, mean + spread) (no signed variant)."""
    x = dataclasses.replace(task.inputs[0], dist="rand", low=mean, high=mean + spread, signed_ok=False)
    return dataclasses.replace(task, inputs=[x, *task.inputs[1:]])


@pytest.mark.parametrize("name,shape,kind", [
    ("softmax", (6, 1000), "online"),
    ("log_softmax", (6, 1000), "online"),
    ("layer_norm", (6, 1000), "onepass"),
    ("group_norm", (2, 8, 250), "onepass"),        # 4 groups of 2 x 250 = 500 per row
    ("batch_norm", (4, 3, 250), "channels_onepass"),  # 1000 strided elements per channel
])
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_one_pass_candidate_is_correct_across_chunks(name, shape, kind, dtype) -> None:
    task = get_task(name).with_shape(shape, dtype)
    out = _check(task, kind, SMALL_CHUNK, seeds=(0,))
    assert out.status is Status.OK, out.message


@pytest.mark.slow
@pytest.mark.parametrize("name,shape,kind", [
    ("instance_norm", (2, 3, 20, 50), "onepass"),
    ("layer_norm_2d", (2, 3, 20, 50), "onepass"),
    ("logsumexp_dim", (3, 40, 17), "slabs_online"),
])
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_more_one_pass_candidates_are_correct(name, shape, kind, dtype) -> None:
    task = get_task(name).with_shape(shape, dtype)
    params = {} if kind == "slabs_online" else SMALL_CHUNK
    out = _check(task, kind, params)
    assert out.status is Status.OK, out.message


def _run(task, name: str, source: str, params: dict, inputs: list) -> torch.Tensor:
    ev = Evaluator(task, "Ascend910B2", seeds=(0,), shape_sets=[list(task.shapes)])
    prep = prepare(name, source)
    art = ev.build(prep, params)
    [spec] = task.output_meta()
    res = ev.backend.run(art, [i for i in inputs if isinstance(i, torch.Tensor)], [spec],
                         tiling=TilingArgs(prep.values(params), ()), timeout_s=60.0)
    assert res.ok, res.message
    return res.outputs[0]


def _errors(task, source: str) -> tuple[float, float]:
    """Max |error| against float64 of the kernel and of PyTorch in the task's dtype, on the
    same (rounded) inputs: the library's own accuracy is the yardstick."""
    inputs = task.make_inputs(task.shapes, seed=0)
    exact = task.reference(*[i.double() for i in inputs])
    torch_err = (task.run_reference(inputs)[0].double() - exact).abs().max().item()
    got = _run(task, "k", source, SMALL_CHUNK, inputs)
    return (got.double() - exact).abs().max().item(), torch_err


@pytest.mark.parametrize("name,shape,kind", [
    ("layer_norm", (6, 1000), "onepass"),
    ("batch_norm", (4, 3, 250), "channels_onepass"),
])
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_shifted_moments_keep_accuracy_at_large_mean(name, shape, kind, dtype) -> None:
    # data U[1000, 1016): mean/std ~ 220, E[x^2] - E[x]^2 loses ~15.5 of fp32's 24 bits
    task = _large_mean(get_task(name).with_shape(shape, dtype), spread=16.0)
    err, torch_err = _errors(task, _candidate(task, kind).source)
    assert err <= 1.5 * torch_err, (err, torch_err)


def test_the_unshifted_formula_fails_the_large_mean_check() -> None:
    # the negative control: the same kernel with the shift removed (K = 0) is far worse there,
    # so the accuracy test above can tell a shifted kernel from an unshifted one
    task = _large_mean(get_task("layer_norm").with_shape((6, 1000)), spread=16.0)
    src = _candidate(task, "onepass").source
    unshifted = src.replace("k = k + first * row_last(a)", "k = k + first * 0.0")
    assert unshifted != src
    err, torch_err = _errors(task, unshifted)
    assert err > 10 * torch_err, (err, torch_err)


def test_online_softmax_survives_a_chunk_of_only_minus_inf() -> None:
    # masked logits: the first chunk of every row is -inf; a running max that started at -inf
    # would compute exp(-inf - -inf) = NaN there and poison the row
    task = get_task("softmax").with_shape((4, 1000))
    x = torch.randn(4, 1000)
    x[:, :300] = float("-inf")
    got = _run(task, "softmax_online", _candidate(task, "online").source, SMALL_CHUNK, [x])
    assert torch.allclose(got, torch.softmax(x, -1), atol=1e-6, rtol=1e-4)
