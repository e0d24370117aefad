"""The graph frontend's online log-sum-exp (``search/graph/emit.py``: ``online_pairs``): a max
reduction and the sum of exp(x - max) of the same x, however a task file writes them
(torch.logsumexp, softmax, log_softmax, ``m + log(sum(exp(x - m)))`` by hand), are also offered
as one pass over the row or the slab axis beside today's two passes; the search picks by the
model. Checked: which files get it (and one that must not), correctness across several chunks
on fp32 and fp16 inputs spread over +-80 (exp(80) alone is near fp32's overflow), and that
the online candidate models faster than the two-pass one on the middle and the last dim."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from ascendcraft.search.graph import propose_from_graph

from ascendcraft.app.checking import CheckConfig, check
from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from ascendcraft.tasks.taskfile import load_task_file

CORPUS = Path(__file__).parent / "taskfiles" / "corpus"
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed")


def _kinds(path: Path) -> list[str]:
    return [c.name.split("/graph-")[1] for c in propose_from_graph(load_task_file(path))]


@pytest.mark.parametrize("stem,expect", [
    # middle dim, fp32, B = 257 not 512 B aligned: flat, K split across cores, one max a block
    ("lse_ctor_negdim_keepdim", ["slabs-online", "slabs_rows-online", "slabs_flat-online",
                                 "slabs_flat-online_split", "slabs_flat-blockmax", "slabs_flat-blockmax_split"]),
    # written by hand on fp16: the rounded x - max is no block_max step, the split still applies
    ("handmade_lse_middim_fp16", ["slabs-online", "slabs_rows-online", "slabs_flat-online",
                                  "slabs_flat-online_split"]),
    ("free_energy_tempered_middim", ["slabs-online", "slabs_rows-online", "slabs_flat-online",
                                     "slabs_flat-online_split", "slabs_flat-blockmax", "slabs_flat-blockmax_split"]),
    # B = 1024: aligned, no flat read; one slab of 8 tiles, K = 512: also K-split
    ("logsumexp_dim0", ["slabs-online", "slabs_rows-online", "slabs_rows-online_split"]),
    ("softmax_tensor_temp", ["chunked-online"]),
    ("logprob_minus_lse_wide", ["chunked-online", "chunked-online_hold"]),  # 24001-wide rows: also held
])
def test_online_candidates_are_offered_beside_the_two_pass_ones(stem: str, expect: list[str]) -> None:
    kinds = _kinds(CORPUS / f"{stem}.py")
    assert [k for k in kinds if "online" in k or "blockmax" in k] == expect
    assert any(k in kinds for k in ("slabs", "chunked"))  # the two-pass form stays


def test_a_sum_of_exp_not_shifted_by_its_own_max_stays_two_passes(tmp_path: Path) -> None:
    """exp(x - max(x) / 2) is no online pair: rescaling by the running max would change it."""
    f = tmp_path / "half_shift.py"
    f.write_text("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
                 "    def forward(self, x):\n"
                 "        return torch.exp(x - x.amax(1, keepdim=True) / 2).sum(1)\n\n\n"
                 "def get_inputs():\n    return [torch.randn(8, 700, 33)]\n\n\n"
                 "def get_init_inputs():\n    return []\n")
    kinds = _kinds(f)
    assert "slabs" in kinds and not any("online" in k or "blockmax" in k for k in kinds)


def _spread(task, shape: tuple[int, ...]):
    """The task at ``shape`` with its input drawn from U[-80, 80)."""
    task = task.with_shape(shape)
    x = dataclasses.replace(task.inputs[0], dist="rand", low=-80.0, high=80.0, signed_ok=False)
    return dataclasses.replace(task, inputs=[x, *task.inputs[1:]])


@needs_gxx
@pytest.mark.parametrize("stem,shape,kind,params", [
    ("free_energy_tempered_middim", (3, 300, 45), "slabs_flat-blockmax_split", {"ROWS": 8, "SPLIT": 3, "CORES": 8}),
    ("free_energy_tempered_middim", (3, 300, 45), "slabs_rows-online", {"TILE": 32, "ROWS": 16, "CORES": 4}),
    ("handmade_lse_middim_fp16", (4, 333, 21), "slabs_flat-online_split", {"ROWS": 8, "SPLIT": 2, "CORES": 8}),
    ("softmax_tensor_temp", (6, 1000), "chunked-online", {"CHUNK": 256, "CORES": 4}),
    ("logprob_minus_lse_wide", (5, 1000), "chunked-online", {"CHUNK": 256, "CORES": 4}),
])
def test_online_candidates_are_correct_on_inputs_over_80(stem, shape, kind, params) -> None:
    task = _spread(load_task_file(CORPUS / f"{stem}.py"), shape)
    cand = next(c for c in propose_from_graph(task) if c.name.endswith("/graph-" + kind))
    ev = Evaluator(task, "Ascend910B2", seeds=(0, 1), shape_sets=[list(task.shapes)])
    out = ev.evaluate(prepare(cand.name, cand.source), params, timing=False)
    assert out.status is Status.OK, out.message


@needs_gxx
@pytest.mark.parametrize("stem,two_pass", [
    ("free_energy_tempered_middim", ("slabs", "slabs_rows", "slabs_flat")),
    ("logprob_minus_lse_wide", ("chunked",)),
])
def test_the_online_form_models_faster_than_two_passes(stem: str, two_pass: tuple[str, ...]) -> None:
    report = check(load_task_file(CORPUS / f"{stem}.py"), CheckConfig(soc="Ascend910B2"))
    times = {c.candidate.split("/graph-")[1]: c.time_us for c in report.candidates if c.correct and c.time_us}
    online = min(t for k, t in times.items() if "online" in k or "blockmax" in k)
    assert all(k in times for k in two_pass)
    assert online < 0.9 * min(times[k] for k in two_pass)


@needs_gxx
@pytest.mark.parametrize("forward, inputs, params", [
    # LayerNorm over rows of 3000 with a mean 30 sigma off zero: the shift keeps the variance accurate
    ("torch.nn.functional.layer_norm(x, (3000,))", "torch.randn(6, 3000) + 30.0",
     {"ROWS": 2, "CHUNK": 256}),
    # fp16, a hand-written variance (unbiased) and its mean, chunks of 512 with a ragged last one
    ("(x - x.mean(-1, keepdim=True)) / (x.var(-1, keepdim=True) + 1e-3).sqrt()",
     "torch.randn(5, 1300, dtype=torch.float16) * 4 + 2", {"ROWS": 1, "CHUNK": 512}),
    # GroupNorm: the moments over group rows
    ("torch.nn.functional.group_norm(x, 4)", "torch.randn(2, 8, 40, 30) + 50.0", {"ROWS": 1, "CHUNK": 256}),
])
def test_moments_in_one_pass_over_chunked_rows(tmp_path: Path, forward: str, inputs: str, params: dict) -> None:
    """A centred sum of squares and its mean's sum in one chunks pass (``moment_pairs``: sums
    shifted by a sample of the row, search/onepass.py): offered as chunked-online, right against
    eager at several chunks a row, including means far larger than the spread."""
    from tests.kernel_runs import inline_task
    task = inline_task(tmp_path, forward, inputs, "x")
    cand = next(c for c in propose_from_graph(task) if c.name.endswith("/graph-chunked-online"))
    assert "row_last(" in cand.source and cand.source.count("in chunks(") == 2
    ev = Evaluator(task, "Ascend910B2", seeds=(0, 1), shape_sets=[list(task.shapes)])
    prep = prepare(cand.name, cand.source)
    assert ev.feasible(prep, {**prep.defaults(), **params}) is None
    out = ev.evaluate(prep, params, timing=False)
    assert out.status is Status.OK, out.message


@needs_gxx
@pytest.mark.parametrize("forward, inputs", [
    # a norm over channels (dim 1) with a mean 30 sigma off zero: shifted by the first step's values
    ("(x - x.mean(1, keepdim=True)) / (x.var(1, keepdim=True, unbiased=False) + 1e-6).sqrt()",
     "torch.randn(3, 70, 50) + 30.0"),
    # fp16 input, the variance written as the mean of squared deviations, 4-D
    ("(x - x.mean(1, keepdim=True)) * ((x - x.mean(1, keepdim=True)) ** 2).mean(1, keepdim=True).add(1e-5).rsqrt()",
     "torch.randn(2, 33, 6, 7, dtype=torch.float16) * 3 - 5"),
])
def test_moments_in_one_pass_over_steps(tmp_path: Path, forward: str, inputs: str) -> None:
    """The same pairing in the plain steps loop of a middle-axis norm (slabs-online): the shift is
    the first step's value of each column, x is read twice instead of three times."""
    from tests.kernel_runs import inline_task
    task = inline_task(tmp_path, forward, inputs, "x")
    cand = next(c for c in propose_from_graph(task) if c.name.endswith("/graph-slabs-online"))
    assert cand.source.count("in steps(t)") == 2, cand.source
    ev = Evaluator(task, "Ascend910B2", seeds=(0, 1), shape_sets=[list(task.shapes)])
    out = ev.evaluate(prepare(cand.name, cand.source), {"TILE": 64}, timing=False)
    assert out.status is Status.OK, out.message
