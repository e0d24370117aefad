"""The graph frontend reads slices of task inputs (chunk / split / narrow / basic slicing) as
``load_slice`` windows, with the window's first column written as a host expression of the
sizes (so the candidate is right at every shape it is checked at), and refuses the slices it
cannot read with their reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from ascendcraft.search.graph import propose_from_graph
from ascendcraft.search.proposer import ProposerError

from ascendcraft.tasks.taskfile import load_task_file

HERE = Path(__file__).parent / "taskfiles"


@pytest.mark.parametrize("name,col", [
    ("swiglu_chunk_lastdim", "size({x}, 2) * 1.0 / 2.0"),   # the second half: a fraction of the dim
    ("geglu_split_sizes", "size({x}, 2) * 1.0 / 2.0"),
    ("narrow_ctor_width", "7.0"),                             # a constructor-set start
    ("middim_window_relu", "2.0 * size({x}, 2) * size({x}, 3)"),  # a leading-dim start times the row
    ("leading_rows_offset", "1.0 * size({x}, 1)"),
])
def test_windows_are_load_slices(name: str, col: str) -> None:
    task = load_task_file(HERE / "corpus" / f"{name}.py")
    cands = propose_from_graph(task)
    assert cands
    x = task.inputs[0].name
    for c in cands:
        assert "load_slice(" in c.source, c.source
    assert any(col.format(x=x) in c.source for c in cands), cands[0].source


@pytest.mark.parametrize("name,why", [
    ("slice_step2_evens", "a slice with step 2"),
    ("slice_of_product", "a slice of a computed value (mul)"),
    ("slice_row_sum", "a rows reduction of a slice"),
])
def test_unreadable_slices_are_named(name: str, why: str) -> None:
    with pytest.raises(ProposerError, match=why.replace("(", r"\(").replace(")", r"\)")):
        propose_from_graph(load_task_file(HERE / "refused" / f"{name}.py"))
