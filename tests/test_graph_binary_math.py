"""hypot, logaddexp and logaddexp2 in the graph frontend: written so that no intermediate
overflows where torch's own kernels do not (squares of 1e20, exp of 80) and the infinities,
zeros and equal operands torch defines come out as torch gives them."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from ascendcraft.search.graph import propose_from_graph
from kernel_runs import assert_all_pass, inline_task

from ascendcraft.backends.base import TilingArgs
from ascendcraft.evaluate import Evaluator, prepare

INF = float("inf")
#: pairs torch defines at the edges, then ordinary values (the tile is filled by repetition)
SPECIAL = {
    "hypot": [(0.0, 0.0), (3.0, -4.0), (1e20, 1e20), (3e25, -4e25), (INF, 2.0), (-INF, -INF), (1e-30, 0.0)],
    "logaddexp": [(-INF, -INF), (INF, INF), (88.0, 88.0), (100.0, -100.0), (-1e30, 5.0), (0.5, 0.5), (80.0, 79.0)],
    "logaddexp2": [(-INF, -INF), (INF, 3.0), (127.0, 127.0), (-200.0, 60.0), (1.5, 1.5)],
}


def _special_inputs(op: str, n: int, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    pairs = torch.tensor(SPECIAL[op], dtype=torch.float64)
    g = torch.Generator().manual_seed(7)
    x, y = torch.randn(n, width, generator=g) * 30, torch.randn(n, width, generator=g) * 30
    k = len(pairs)
    x.view(-1)[:k * 40] = pairs[:, 0].repeat(40).float()
    y.view(-1)[:k * 40] = pairs[:, 1].repeat(40).float()
    return x, y


@pytest.mark.parametrize("op", sorted(SPECIAL))
def test_binary_math_matches_torch_at_its_edges(tmp_path: Path, op: str) -> None:
    n, width = 9, 301
    task = inline_task(tmp_path, f"torch.{op}(x, y)",
                       f"torch.randn({n}, {width}), torch.randn({n}, {width})", "x, y")
    x, y = _special_inputs(op, n, width)
    want = getattr(torch, op)(x, y)
    assert torch.isinf(want).any() and torch.isfinite(want).any()
    (cand,) = [c for c in propose_from_graph(task) if c.name.endswith("graph-tiles")]
    ev = Evaluator(task, "Ascend910B2", seeds=(0,), shape_sets=[list(task.shapes)])
    prep = prepare(cand.name, cand.source)
    art = ev.build(prep, {})
    [spec] = task.output_meta()
    res = ev.backend.run(art, [x, y], [spec], tiling=TilingArgs(prep.values({}), ()), timeout_s=60.0)
    assert res.ok, res.message
    got = res.outputs[0]
    torch.testing.assert_close(got, want, rtol=2e-6, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("op", ["hypot", "logaddexp"])
def test_binary_math_passes_its_check_in_fp16(tmp_path: Path, op: str) -> None:
    task = inline_task(tmp_path, f"torch.{op}(a, b)",
                       "torch.randn(33, 1000).half() * 8, torch.randn(33, 1000).half() * 8", "a, b")
    assert_all_pass(task, propose_from_graph(task))
