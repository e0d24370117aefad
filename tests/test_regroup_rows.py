"""Few very wide rows of elementwise work (``leaky_relu(x) * y`` with x ``[4, 2^18]``, y
``[1, 2^18]``): the rows loop gave one row to each of four cores. The graph frontend now also
offers the rows split into groups (``rows(..., groups=G)``, :func:`patterns.regroup`), the
row-broadcast operand read as rows of its own (``load_rows_bcast(y, t, 1.0)``: loop row g reads
its row g % G); the search decides. Not offered for per-row operands, reductions or many rows."""

from __future__ import annotations

from pathlib import Path

import pytest
from ascendcraft.search.graph import propose_from_graph
from kernel_runs import assert_all_pass, inline_task

from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from ascendcraft.tasks.taskfile import load_task_file

CORPUS = Path(__file__).parent / "taskfiles" / "corpus"


def _grouped(task) -> list:
    return [c for c in propose_from_graph(task) if "_rows1g" in c.name]


@pytest.mark.parametrize("name,groups", [("leaky_gate_few_wide_rows", 8), ("vocab_bias_small_batch_fp16", 32)])
def test_few_wide_rows_are_split_into_groups(name: str, groups: int) -> None:
    """groups: the fewest that give 48 cores a row, as many as divide the row at every traced
    shape (the reduced check shapes of the first file have rows of 40 elements: 8)."""
    task = load_task_file(CORPUS / f"{name}.py")
    cands = _grouped(task)
    assert cands and all(f"groups={groups}" in c.source and "load_rows_bcast(" in c.source for c in cands)
    # whole rows of 2^18 / 8 fp32 values do not fit UB (that candidate is infeasible, a SKIP)
    assert_all_pass(task, [c for c in cands if "chunked" in c.name or groups == 32])


def test_a_row_broadcast_in_a_groups_loop_reads_its_own_piece(tmp_path: Path) -> None:
    src = '''
@kernel
def k(x: In[f32], y: In[f32], out: Out[f32]):
    for t in rows(x, rows=3, groups=4):
        store(out, t, load(x, t) * load_rows_bcast(y, t, 1.0) + 1.0)
'''
    task = inline_task(tmp_path, "x * y + 1.0", "torch.randn(5, 96), torch.randn(1, 96)", "x, y")
    out = Evaluator(task, "Ascend910B2", seeds=(0, 1), shape_sets=[list(task.shapes)]).evaluate(
        prepare("k", src), {}, timing=False)
    assert out.status == Status.OK, out.message


@pytest.mark.parametrize("forward,inputs", [
    ("x * y", "torch.randn(4, 65536), torch.randn(4, 1)"),  # a per-row operand
    ("x - x.amax(-1, keepdim=True)", "torch.randn(4, 65536)"),  # a row reduction
    ("x * y", "torch.randn(64, 65536), torch.randn(1, 65536)"),  # rows enough for every core
    ("x * y", "torch.randn(4, 1000), torch.randn(1, 1000)"),  # rows too short to split
])
def test_not_offered(tmp_path: Path, forward: str, inputs: str) -> None:
    assert not _grouped(inline_task(tmp_path, forward, inputs, "x, y" if "y" in forward else "x"))
