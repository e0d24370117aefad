"""A task's forward may write into its inputs (``x.mul_(2)``, ``y.add_(x)``, then return them or
something else): the evaluator's reference run must not hand the kernel the inputs it left
behind. Each case passes its check with the graph frontend's kernel; a kernel that read the
mutated inputs would be WRONG here."""

from __future__ import annotations

from pathlib import Path

import pytest
from ascendcraft.search.graph import propose_from_graph
from kernel_runs import assert_all_pass, inline_task


@pytest.mark.parametrize("forward,inputs,args", [
    ("x.mul_(2.0).relu_()", "torch.randn(64, 300)", "x"),                  # returned, mutated twice
    ("torch.exp(y.add_(x)) * x", "torch.randn(16, 70), torch.randn(16, 70)", "x, y"),  # another input written
    ("x.clamp_(min=0.0).sum(-1)", "torch.randn(33, 129)", "x"),           # a reduction of the written input
])
def test_a_forward_that_writes_its_inputs(tmp_path: Path, forward: str, inputs: str, args: str) -> None:
    task = inline_task(tmp_path, forward, inputs, args)
    assert_all_pass(task, propose_from_graph(task)[:1])
