"""A vector times a matrix (``einsum('k,kn->n')``, ``torch.matmul(v, M)``, a learned per-row
scale summed over rows) is a sum over the matrix's first dim with one vector value a step
(``load_step``). Two things make it fast, both checked here:

- in a blocked steps loop the step values come in one copy a block and reach their rows on the
  vector pipe (Brcb, a repeat-form add): no scalar GetValue of GM a step, which holds the scalar
  unit until the vector pipe drains and so stops the next block's copy being issued early;
- the graph frontend offers its blocked slabs program with K cut across cores
  (``graph-slabs_rows_split``) when the tiles leave most cores idle (one slab of 8 tiles).

Correctness: fp32, fp16 and bf16 step values, signed data, ragged blocks and K slices."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from ascendcraft.dsl.kernel import prepare as dsl_prepare
from ascendcraft.search.graph import propose_from_graph
from kernel_runs import assert_all_pass, inline_task

from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from ascendcraft.tasks.taskfile import load_task_file

CORPUS = Path(__file__).parent / "taskfiles" / "corpus"
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed")

SPLIT = '''
@kernel
def k(w: In[{wt}], m: In[f32], y: Out[f32]):
    TILE = tunable(pow2(32, 4096), default=32)
    ROWS = tunable(pow2(1, 64), default=8)
    SPLIT = tunable(choice(1, 2, 3, 4), default=3)
    for t in slabs(m, dim=0, tile=TILE, rows=ROWS, split=SPLIT):
        acc = tile_fill(0.0)
        for k in steps(t):
            acc = acc + load_step(w, k) * load(m, k)
        store(y, t, acc)
'''


@pytest.mark.parametrize("wt", ["f32", "f16", "bf16"])
@needs_gxx
def test_step_values_by_block_in_a_split_loop(tmp_path: Path, wt: str) -> None:
    """K = 37 in blocks of 8 cut 3 ways (slices of 12, 12, 13: a ragged block in each), 70
    columns in tiles of 32 (a ragged last tile), signed data and weights."""
    torch_wt = {"f32": "torch.float32", "f16": "torch.float16", "bf16": "torch.bfloat16"}[wt]
    task = inline_task(tmp_path, "(w.float()[:, None] * m).sum(0)",
                       f"torch.randn(37, dtype={torch_wt}), torch.randn(37, 70)", "w, m")
    ev = Evaluator(task, "Ascend910B2", seeds=(0, 1), shape_sets=[list(task.shapes)])
    out = ev.evaluate(prepare("k", SPLIT.format(wt=wt)), {}, timing=False)
    assert out.status == Status.OK, out.message


def test_blocked_step_values_are_copied_not_read_by_the_scalar_unit() -> None:
    [launch] = dsl_prepare("k", SPLIT.format(wt="f16")).lower({}).launches
    cpp = launch.source
    assert "GetValue(k0 + j)" not in cpp
    assert "// the block's kb step values" in cpp and "AcxBrcbRows(" in cpp
    assert "Cast(" in cpp  # fp16 values to fp32 before Brcb


@pytest.mark.parametrize("name", ["einsum_vector_times_matrix", "gemv_left_matmul_fp16",
                                  "vecmat_param_scale_bf16"])
@needs_gxx
def test_split_form_is_offered_passes_and_is_the_fastest(name: str) -> None:
    task = load_task_file(CORPUS / f"{name}.py")
    cands = {c.name.split("/")[1]: c for c in propose_from_graph(task)}
    assert "graph-slabs_rows_split" in cands, sorted(cands)
    assert "split=SPLIT" in cands["graph-slabs_rows_split"].source
    assert_all_pass(task, [cands["graph-slabs_rows"], cands["graph-slabs_rows_split"]])
    ev = Evaluator(task, "Ascend910B2", seeds=(0,))
    us = {}
    for kind in ("graph-slabs_rows", "graph-slabs_rows_split"):
        prep = prepare(kind, cands[kind].source)
        us[kind] = ev.time(ev.build(prep, prep.defaults()))["modeled_us"]
    assert us["graph-slabs_rows_split"] < 0.6 * us["graph-slabs_rows"], us


def test_not_offered_when_the_tiles_fill_the_cores(tmp_path: Path) -> None:
    """A [64, 600, 256] sum over dim 1: 64 slabs of 2 tiles already fill 48 cores; and a vector
    times a matrix of only 300 rows: too few steps to cut."""
    task = inline_task(tmp_path, "x.sum(1)", "torch.randn(64, 600, 256)", "x")
    names = [c.name for c in propose_from_graph(task)]
    assert any(n.endswith("slabs_rows") for n in names) and not any(n.endswith("_split") for n in names), names
    short = inline_task(tmp_path, "torch.einsum('k,kn->n', w, m)", "torch.randn(300), torch.randn(300, 1024)", "w, m")
    names = [c.name for c in propose_from_graph(short)]
    assert not any(n.endswith("slabs_rows_split") for n in names), names
