"""InstanceNorm with affine weight and bias: eager runs it as a batch norm of x [N, C, ...] viewed as
[1, N * C, ...] with the [C] weight and bias repeated N times; the graph frontend computes it on x
itself (statistics over the trailing dims, the weight per channel), so no repeated vector is made.
Module and functional forms, 1-D / 2-D / 3-D, fp16; any other repeat is refused, named."""

from __future__ import annotations

from pathlib import Path

import pytest
from ascendcraft.search.graph import propose_from_graph

from tests.kernel_runs import assert_all_pass, inline_task


@pytest.mark.parametrize("forward, inputs", [
    ("torch.nn.functional.instance_norm(x, weight=w, bias=b, eps=1e-3)",
     "torch.randn(3, 5, 7, 9), torch.rand(5) + 0.5, torch.randn(5)"),
    ("torch.nn.functional.instance_norm(x, weight=w, bias=b) * 2.0",
     "torch.randn(4, 6, 50, dtype=torch.float16), torch.rand(6, dtype=torch.float16) + 0.5, "
     "torch.randn(6, dtype=torch.float16)"),
    ("torch.relu(torch.nn.functional.instance_norm(x, weight=w, bias=None))",
     "torch.randn(2, 3, 4, 5, 6), torch.rand(3) + 0.5, torch.randn(3)"),
])
def test_instance_norm_with_weight_and_bias_matches_eager(tmp_path: Path, forward: str, inputs: str) -> None:
    task = inline_task(tmp_path, forward, inputs, "x, w, b")
    cands = propose_from_graph(task)
    assert cands
    assert_all_pass(task, cands)


def test_another_repeat_is_refused_named(tmp_path: Path) -> None:
    task = inline_task(tmp_path, "x * w.repeat(2)", "torch.randn(4, 6), torch.randn(3)", "x, w")
    with pytest.raises(Exception, match="repeat"):
        propose_from_graph(task)
