"""Flat aligned reads (``rows(..., flat=True)``, ``slabs(..., rows=R, flat=True)``, lowered in
``dsl/lowering/compute_flat.py``): a tile's whole rows read as one burst from a 512 B-aligned
start and gathered into 32 B-padded rows. Correct for the last-dim max and the middle-dim
family on odd widths (1023-like, 1, 7, 9, 33, 1025), fp16 inputs and signed data, with tiles
that start anywhere inside a 512 B block and a last burst clamped at the tensor's end; the
flat read is faster in the model than the per-row copies it replaces (unaligned pitch); the
options are refused where they do not apply."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from ascendcraft.search.builtin import propose
from ascendcraft.search.graph import propose_from_graph

from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from ascendcraft.tasks.registry import get_task
from ascendcraft.tasks.taskfile import load_task_file

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed")

MIDDIM = ["sum_dim", "mean_dim", "max_middim", "min_dim", "prod_dim", "logsumexp_dim"]


def _cand(task, kind: str):
    return next(c for c in propose(task) if c.name.split("/")[1] == kind)


def _check(task, kind: str, params: dict):
    ev = Evaluator(task, "Ascend910B2", seeds=(0, 1), shape_sets=[list(task.shapes)])
    cand = _cand(task, kind)
    prep = prepare(cand.name, cand.source)
    assert ev.feasible(prep, params) is None
    return ev.evaluate(prep, params, timing=False)


@needs_gxx
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
@pytest.mark.parametrize("width", [1023, 1, 7, 9, 33, 1025])
def test_flat_rows_max_is_correct_on_odd_widths(width: int, dtype: str) -> None:
    # 3 x 7 = 21 rows on 4 cores in tiles of 4: tiles start at every offset of a 512 B block
    # and the last one is short and ends at the tensor's end
    task = get_task("max_dim").with_shape((3, 7, width), dtype)
    out = _check(task, "rows_flat", {"ROWS": 4, "CORES": 4, "DEPTH": 2})
    assert out.status is Status.OK, out.message


@needs_gxx
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
@pytest.mark.parametrize("name", MIDDIM)
def test_flat_slabs_are_correct_with_ragged_blocks(name: str, dtype: str) -> None:
    kind = "slabs_flat_online" if name == "logsumexp_dim" else "slabs_flat"
    # K = 13 in blocks of 4 (the last one 1 step), B = 45: every block starts off 512 B
    out = _check(get_task(name).with_shape((3, 13, 45), dtype), kind, {"ROWS": 4, "CORES": 2, "DEPTH": 2})
    assert out.status is Status.OK, out.message


@needs_gxx
@pytest.mark.parametrize("width", [1023, 1, 7, 33, 1025])
def test_flat_slabs_on_odd_widths(width: int) -> None:
    for name in ("sum_dim", "max_middim"):
        out = _check(get_task(name).with_shape((2, 9, width), "fp32"), "slabs_flat",
                     {"ROWS": 2, "CORES": 4, "DEPTH": 1})
        assert out.status is Status.OK, (name, out.message)


def _modeled(task, kind: str, params: dict) -> float:
    ev = Evaluator(task, "Ascend910B2", seeds=(0,))
    cand = _cand(task, kind)
    return ev.time(ev.build(prepare(cand.name, cand.source), params))["modeled_us"]


@needs_gxx
def test_the_flat_read_beats_the_per_row_copies_of_unaligned_rows() -> None:
    # 4092 B rows: every per-row burst has an unaligned pitch; the flat burst is aligned
    task = get_task("max_dim").with_shape((16, 768, 1023), "fp32")  # 256 rows a core
    params = {"ROWS": 8, "CORES": 48, "DEPTH": 2}
    assert _modeled(task, "rows_flat", params) < 0.9 * _modeled(task, "rows", params)


def test_the_flat_candidates_are_offered_beside_todays() -> None:
    names = [c.name for c in propose(get_task("max_dim"))]
    assert "max_dim/rows" in names and "max_dim/rows_flat" in names
    for name in MIDDIM[:-1]:
        names = [c.name for c in propose(get_task(name))]
        assert f"{name}/slabs_rows" in names and f"{name}/slabs_flat" in names, names
    names = [c.name for c in propose(get_task("logsumexp_dim"))]
    assert "logsumexp_dim/slabs_flat_online" in names, names


def test_the_flat_slabs_default_cores_balance_the_slabs() -> None:
    src = _cand(get_task("sum_dim"), "slabs_flat").source  # 64 slabs: 2 rounds on 32 cores
    assert "choice(1, 2, 4, 8, 16, 24, 32, 40, 48), default=32)" in src


ROWS_SRC = '''
@kernel(category="reduce")
def f(x: In[f32], y: Out[f32]):
    for t in {loop}:
{body}
'''


@pytest.mark.parametrize("loop,body,match", [
    ("rows(x, rows=4, flat=1)", "        store(y, t, row_max(load(x, t)))", "True or False"),
    ("rows(x, rows=1, flat=True, axis=1)", "        store(y, t, load(x, t))", "flat=True"),
    ("rows(x, rows=4, flat=True)", "        s = row_fill(0.0)\n        for c in chunks(t, 256):\n"
     "            s = s + row_sum(load(x, c))\n        store(y, t, s)", "chunks"),
    ("slabs(x, dim=1, tile=64, flat=True)", "        acc = tile_fill(0.0)\n        for k in steps(t):\n"
     "            acc = acc + load(x, k)\n        store(y, t, acc)", "rows="),
])
def test_flat_is_refused_where_it_does_not_apply(loop: str, body: str, match: str) -> None:
    with pytest.raises(Exception, match=match):
        prepare("f/bad", ROWS_SRC.format(loop=loop, body=body)).lower({})


def test_a_one_byte_tile_is_never_read_flat() -> None:
    """A flat read gathers each tile input, and Gather has no 1-byte form: a bool mask read as tiles
    is a named error before any build (the graph frontend offers no flat structure for it)."""
    src = ('@kernel(category="reduce")\ndef f(x: In[f32], m: In[bool], y: Out[f32]):\n'
           '    for t in rows(x, rows=4, flat=True):\n'
           '        store(y, t, row_sum(where(cast(load(m, t), f32) > 0.5, load(x, t), 0.0)))\n')
    with pytest.raises(Exception, match="no 1-byte form"):
        prepare("f/bad", src).lower({})


TASKS = Path(__file__).parent / "taskfiles"


@needs_gxx
@pytest.mark.parametrize("path,dtype", [
    ("corpus/maximum.py", None), ("corpus/prime_rowsum.py", None), ("corpus/argmin_keepdim_fp16.py", None),
    ("wild/bf16_logsumexp.py", None), ("wild/mse_loss.py", None),
    ("corpus/amax_middim_keepdim.py", "fp16"), ("corpus/norm_middim.py", None), ("wild/prime_middim_var.py", None),
    # a per-step output (x - mean): its stores stay strided, its loads are flat
    ("wild/middim_center.py", None), ("wild/fp16_middim_mean.py", None), ("wild/middim_amax_4d.py", None),
])
def test_the_graph_frontend_offers_flat_reads_and_they_are_correct(path: str, dtype: str | None) -> None:
    task = load_task_file(TASKS / path)
    if dtype:
        task = task.with_shape(task.inputs[0].shape, dtype)
    cand = next(c for c in propose_from_graph(task) if c.name.split("/")[1] in ("graph-rows_flat", "graph-slabs_flat"))
    ev = Evaluator(task, "Ascend910B2", seeds=(0,))
    prep = prepare(cand.name, cand.source)
    params = {"ROWS": 4, "CORES": 4, "DEPTH": 2}
    if ev.feasible(prep, params) is not None:  # wide rows: fewer a tile
        params["ROWS"] = 1
    assert ev.feasible(prep, params) is None
    out = ev.evaluate(prep, params, timing=False)
    assert out.status is Status.OK, out.message


@pytest.mark.parametrize("path", ["corpus/sum_middim_3d.py",  # B = 512: rows already aligned
                                  "corpus/gather_lastdim.py"])  # a gather: not a plain row reduction
def test_no_flat_reads_where_they_do_not_help(path: str) -> None:
    names = [c.name for c in propose_from_graph(load_task_file(TASKS / path))]
    assert names and not any("flat" in n for n in names), names


@needs_gxx
@pytest.mark.parametrize("name,shape", [("sum_dim", (2, 5, 70)), ("logsumexp_dim", (2, 5, 70)), ("prod_dim", (3, 1, 33))])
def test_flat_slabs_with_more_steps_a_copy_than_the_reduced_extent(name: str, shape: tuple) -> None:
    kind = "slabs_flat_online" if name == "logsumexp_dim" else "slabs_flat"
    out = _check(get_task(name).with_shape(shape, "fp32"), kind, {"ROWS": 64, "CORES": 4, "DEPTH": 1})
    assert out.status is Status.OK, out.message
