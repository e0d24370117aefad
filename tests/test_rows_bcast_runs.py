"""Outer-style broadcasts: ``torch.maximum(p, q)`` with p ``[A, 1, C]`` and q ``[1, B, C]`` reads
p's row ``g // B`` for loop row ``g`` (``load_rows_bcast(p, t, B)``). The rows of a tile that
share one of p's rows take one GM copy and are filled from it on the vector pipe (a copy a row
was one short, latency-bound GM copy each: max_outer_3d 21.7 -> 13.3 us modeled). An input that
meets the loop through a view that only inserts size-1 dims (``a[:, None, :]``,
``a.view(I, 1, D)``, ``b.unsqueeze(0)``) is read the same way.

Run in the emulator against PyTorch: fp32, fp16 and bf16, tiles whose rows cross a run's end,
odd widths and column chunks."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from ascendcraft.dsl.kernel import prepare as dsl_prepare
from ascendcraft.search.graph import propose_from_graph
from kernel_runs import assert_all_pass, inline_task

from ascendcraft.tasks.taskfile import load_task_file

CORPUS = Path(__file__).parent / "taskfiles" / "corpus"
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed")

OUTER = '''
@kernel
def k(p: In[f32], q: In[f32], y: Out[f32]):
    ROWS = tunable(pow2(1, 64), default=4)
    for t in rows(y, rows=ROWS):
        store(y, t, maximum(load_rows_bcast(p, t, size(y, 1)), load_rows_bcast(q, t, 1.0)))
'''


def test_a_run_of_rows_sharing_one_row_is_one_copy() -> None:
    [launch] = dsl_prepare("k", OUTER).lower({}).launches
    text = launch.source
    assert "gd == 1 ? run : 1, w, gp, wp);" in text  # one GM row per run when d > 1
    assert "DataCopy(bcr" in text and "PipeBarrier<PIPE_V>();" in text  # the rest filled in UB


@pytest.mark.parametrize("dtype", ["torch.float32", "torch.float16", "torch.bfloat16"])
@needs_gxx
def test_outer_broadcasts_pass(tmp_path: Path, dtype: str) -> None:
    """[5, 1, 301] against [1, 7, 301]: runs of 7 rows, tiles of 4 or 8 rows cross them."""
    task = inline_task(tmp_path, "torch.maximum(p, q) * 0.5 + p",
                       f"torch.randn(5, 1, 301, dtype={dtype}), torch.randn(1, 7, 301, dtype={dtype})", "p, q")
    assert_all_pass(task, propose_from_graph(task), at_task_shape=True)


@pytest.mark.parametrize("forward", [
    "torch.minimum(a[:, None, :], b[None, :, :])",
    "torch.minimum(a.view(6, 1, 40), b.unsqueeze(0)) - a.unsqueeze(1)",
    "torch.sigmoid(a).unsqueeze(1) * b.view(1, 9, 40)",
])
@needs_gxx
def test_inputs_seen_through_size_one_views(tmp_path: Path, forward: str) -> None:
    task = inline_task(tmp_path, forward, "torch.randn(6, 40), torch.randn(9, 40)", "a, b")
    cands = propose_from_graph(task)
    assert any("load_rows_bcast(a, t, size(" in c.source for c in cands), cands[0].source
    assert_all_pass(task, cands, at_task_shape=True)


@needs_gxx
def test_corpus_pair_gate() -> None:
    """A module whose constructor fixes the view's sizes (keyword-only D), fp16."""
    task = load_task_file(CORPUS / "outer_min_gate_fp16.py")
    assert_all_pass(task, propose_from_graph(task))
