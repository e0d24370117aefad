"""Permutations that cancel (``search/graph/permutes.py``): an input permuted, worked on by
elementwise ops and reductions, and permuted back (timm's LayerNorm2d, a softmax over dim 1
written with ``swapaxes``) or reduced over the permuted dims (``x.transpose(1, 2).mean(-1)``)
is computed on the input's own layout; each candidate passes. A permuted output, a permutation
of a computed value and an operand that would need a transpose are refused with their reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from ascendcraft.search.graph import propose_from_graph
from ascendcraft.search.graph.decompose import decompose
from ascendcraft.search.graph.patterns import live_nodes
from ascendcraft.search.graph.trace import trace_task
from ascendcraft.search.proposer import ProposerError
from kernel_runs import assert_all_pass

from ascendcraft.tasks.taskfile import load_task_file

HERE = Path(__file__).parent / "taskfiles"


@pytest.mark.parametrize("name,loop", [
    ("timm_layernorm2d_permute", "slabs(x, dim=1"),       # a LayerNorm over channels, weight per step
    ("softmax_dim1_by_swapaxes", "slabs(x, dim=1"),
    ("transpose_mean_lastdim", "slabs(x, dim=1"),         # the permuted dim reduced away
    ("permute_amax_channels_fp16", "slabs(x, dim=1"),
])
def test_cancelled_permutations_run_on_the_input_layout(name: str, loop: str) -> None:
    task = load_task_file(HERE / "corpus" / f"{name}.py")
    pg = decompose(trace_task(task), task.inputs)
    assert not any(pg.op(n) == "permute" for n in live_nodes(pg))
    cands = propose_from_graph(task)
    assert cands and loop in cands[0].source, cands[0].source
    assert_all_pass(task, [c for c in cands if not c.name.endswith("_flat")][:2])


@pytest.mark.parametrize("name,why", [
    ("transposed_output_softmax", "an output in a permuted layout"),
    ("permute_of_computed_value", "transposed layouts are supported only for an input permuted back"),
    ("permuted_table_operand", "'table' of shape [16, 16, 32] meets a permuted value"),
])
def test_permutations_that_stay_are_named(name: str, why: str) -> None:
    with pytest.raises(ProposerError, match=why.replace("[", r"\[").replace("]", r"\]")):
        propose_from_graph(load_task_file(HERE / "refused" / f"{name}.py"))
