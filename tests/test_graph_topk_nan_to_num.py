"""Small rules of the graph frontend: ``one_hot`` (its int64 comparison read as a mask), ``nan_to_num`` (NaN is the value that differs from itself;
infinities to the dtype's extremes or the given bounds) and ``topk`` with k = 1 (the extreme;
its index is refused, since topk's choice among ties is not PyTorch's first index), checked
against eager with NaNs, infinities and fp16 ties; an argmax kept as a dim and squeezed is
still an index output."""

from __future__ import annotations

from pathlib import Path

import pytest
from ascendcraft.search.graph import propose_from_graph
from ascendcraft.search.proposer import ProposerError
from kernel_runs import assert_all_pass, inline_task

from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from ascendcraft.tasks.taskfile import load_task_file

HERE = Path(__file__).parent / "taskfiles"


@pytest.mark.parametrize("name", ["nan_to_num_of_log", "nan_to_num_bounds_fp16", "topk1_values_lastdim"])
def test_corpus_files_pass(name: str) -> None:
    task = load_task_file(HERE / "corpus" / f"{name}.py")
    assert_all_pass(task, propose_from_graph(task)[:1])


@pytest.mark.parametrize("forward,inputs,args", [
    # every special value: NaN, +inf, -inf, defaults (finfo max / min of float32)
    ("torch.nan_to_num(x / y)", "torch.randn(64, 96), torch.randint(-1, 2, (64, 96)).float()", "x, y"),
    # the smallest over a middle dim, kept, of fp32 data
    ("torch.topk(x, 1, dim=1, largest=False).values * 2", "torch.randn(6, 50, 33)", "x"),
    # argmax kept as a dim, then squeezed: still the first index, stored as int64
    ("x.argmax(dim=-1, keepdim=True).squeeze(-1)", "torch.randn(40, 77)", "x"),
])
def test_small_rules_match_eager(tmp_path: Path, forward: str, inputs: str, args: str) -> None:
    task = inline_task(tmp_path, forward, inputs, args)
    cands = propose_from_graph(task)
    assert_all_pass(task, cands[:1])


@pytest.mark.parametrize("name,why", [
    ("topk3_sorts", "topk with k = 3"),
    ("topk1_index_ties_fp16", "topk's index among tied values is not specified"),
])
def test_topk_refusals_are_named(name: str, why: str) -> None:
    with pytest.raises(ProposerError, match=why):
        propose_from_graph(load_task_file(HERE / "refused" / f"{name}.py"))


@pytest.mark.parametrize("name", ["one_hot_select_sum", "one_hot_smoothed_ce_fp16"])
def test_one_hot_is_a_mask(name: str) -> None:
    """F.one_hot's int64 comparison read as 1.0 / 0.0 where it is used as numbers (a selecting
    sum, a label-smoothed cross entropy written by hand); before, the int64 cast was refused."""
    task = load_task_file(HERE / "corpus" / f"{name}.py")
    ev = Evaluator(task, "Ascend910B2", seeds=(0, 1))
    ran = 0
    for cand in propose_from_graph(task):
        prep = prepare(cand.name, cand.source)
        if ev.feasible(prep, prep.defaults()) is not None:
            continue  # (whole 5000-wide rows at the defaults need more UB: a SKIP in check)
        out = ev.evaluate(prep, {}, timing=False)
        assert out.status == Status.OK, (cand.name, out.message)
        ran += 1
    assert ran


def test_a_one_hot_output_is_refused() -> None:
    with pytest.raises(ProposerError, match="output 0 is int64 but not an index"):
        propose_from_graph(load_task_file(HERE / "refused" / "one_hot_int64_output.py"))
