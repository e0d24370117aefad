"""``x[..., i, ...]`` with an integer index (``aten.select``) is the slice ``i:i+1`` of that dim
seen without it, so it reaches the kernels the slices reach: a model's last position fed to a
softmax over the vocabulary (one row: a tiles loop with grid-wide max and sum), a whole row
picked from a batch, one position of every sequence (``h[:, -1, :]``: rows read as a window whose
first row starts at ``(S - 1) x D``). Where a slice has no window form the refusal is the slice's,
named (it was "data movement has no DSL form" for every select)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from ascendcraft.search.graph import propose_from_graph
from ascendcraft.search.proposer import ProposerError
from kernel_runs import assert_all_pass, inline_task

from ascendcraft.tasks.taskfile import load_task_file

CORPUS = Path(__file__).parent / "taskfiles" / "corpus"
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed")


@needs_gxx
def test_last_position_softmax_over_the_vocabulary() -> None:
    task = load_task_file(CORPUS / "vocab_softmax_one_token.py")
    cands = propose_from_graph(task)
    assert cands
    assert_all_pass(task, cands)


@pytest.mark.parametrize("forward,inputs", [
    ("torch.relu(x[2]) * 2.0", "torch.randn(5, 300, 64)"),
    ("torch.tanh(x[-1]) - x[0]", "torch.randn(3, 7, 33)"),
    # one position of every sequence: rows S x D apart from (S - 2) x D (a size plus an offset)
    ("torch.sigmoid(x[:, -2, :] + 1)", "torch.randn(8, 6, 256)"),
    ("x[:, 0, :].float().relu()", "torch.randn(9, 5, 200).half()"),
])
@needs_gxx
def test_a_row_picked_by_index(tmp_path: Path, forward: str, inputs: str) -> None:
    task = inline_task(tmp_path, forward, inputs, "x")
    assert_all_pass(task, propose_from_graph(task), at_task_shape=True)


@pytest.mark.parametrize("forward,inputs,why", [
    ("torch.nn.functional.layer_norm(x[:, -1, :], (33,))", "torch.randn(4, 9, 33)", "slice"),
    ("x[:, :, 3].sum(-1)", "torch.randn(16, 200, 8)", "slice"),
])
def test_what_the_slices_cannot_read_is_refused_by_name(tmp_path: Path, forward: str, inputs: str,
                                                        why: str) -> None:
    task = inline_task(tmp_path, forward, inputs, "x")
    with pytest.raises(ProposerError, match=why):
        propose_from_graph(task)
