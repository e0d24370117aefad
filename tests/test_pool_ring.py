"""The ring of staged rows (``windows(..., reuse=True)``, lowered in
``dsl/lowering/compute.py``): a tile's (r - 1) * SH + KH input rows are staged once per kd
and every kh reads its row ri * SH + kh, so overlapping windows (stride < kernel) bring
each input row into UB once per tile. Correct on 2-D and 3-D pools with padding, ragged
tiles and chunks, planes shorter than a tile, fp32 and fp16, the task's and signed data; it
moves fewer bytes than the per-kh staging (modeled faster); 1-D segments that start 512 B
aligned (rows a multiple of 512 B) stay correct; with ``combine=`` (the separable
fold) each output row folds its KH ring rows; the parser refuses a non-boolean value."""

from __future__ import annotations

import shutil

import pytest
from ascendcraft.dsl.parser import DslError, parse
from ascendcraft.search.builtin import propose

from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from ascendcraft.tasks.registry import get_task

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed")


def _cand(task, kind: str):
    return next(c for c in propose(task) if c.name.endswith("/" + kind))


@needs_gxx
@pytest.mark.parametrize("name,shape,dtype,params", [
    ("avg_pool2d", (2, 3, 19, 70), "fp16", {"CORES": 4, "CHUNK": 64, "ROWS": 4}),
    ("max_pool2d", (2, 3, 19, 70), "fp32", {"CORES": 4, "CHUNK": 64, "ROWS": 4}),
    ("max_pool2d", (2, 3, 5, 150), "fp16", {"CORES": 2, "CHUNK": 64, "ROWS": 32}),  # a tile > the plane
    ("avg_pool2d", (3, 2, 33, 40), "fp32", {}),  # default tunables
])
@pytest.mark.parametrize("kind", ["ring", "separable_ring"])
def test_the_ring_is_correct(name: str, shape: tuple, dtype: str, params: dict, kind: str) -> None:
    task = get_task(name).with_shape(shape, dtype)
    cand = _cand(task, kind)
    assert "reuse=True" in cand.source
    ev = Evaluator(task, "Ascend910B2", seeds=(0,), shape_sets=[list(task.shapes)])
    out = ev.evaluate(prepare(cand.name, cand.source), params, timing=False)
    assert out.status is Status.OK, out.message


@needs_gxx
@pytest.mark.parametrize("name,dtype", [("avg_pool3d", "fp32"), ("max_pool3d", "fp16")])
def test_the_separable_ring_in_3d_is_correct(name: str, dtype: str) -> None:
    task = get_task(name).with_shape((2, 3, 9, 10, 70), dtype)
    cand = _cand(task, "separable_ring")
    ev = Evaluator(task, "Ascend910B2", seeds=(0,), shape_sets=[list(task.shapes)])
    for params in ({"CORES": 4, "CHUNK": 64, "ROWS": 4}, {}):
        out = ev.evaluate(prepare(cand.name, cand.source), params, timing=False)
        assert out.status is Status.OK, (params, out.message)


@needs_gxx
def test_the_ring_in_3d_is_correct() -> None:
    # offered in 2-D only (see recipes._pool); the lowering is checked in 3-D too
    task = get_task("max_pool3d").with_shape((2, 3, 9, 10, 70), "fp16")
    src = _cand(task, "windows").source.replace("fill=-inf,", "fill=-inf, reuse=True,", 1)
    ev = Evaluator(task, "Ascend910B2", seeds=(0,), shape_sets=[list(task.shapes)])
    out = ev.evaluate(prepare("ring3d", src), {"CORES": 4, "CHUNK": 64, "ROWS": 4}, timing=False)
    assert out.status is Status.OK, out.message


@needs_gxx
def test_the_ring_reads_each_input_row_once_per_tile() -> None:
    task = get_task("avg_pool2d").with_shape((4, 16, 128, 128), "fp32")
    ev = Evaluator(task, "Ascend910B2", seeds=(0,))
    params = {"CORES": 8, "CHUNK": 64, "ROWS": 8}
    us = {k: ev.time(ev.build(prepare(c.name, c.source), params))["modeled_us"]
          for c in propose(task) for k in [c.name.rsplit("/", 1)[1]] if k in ("windows", "ring")}
    assert us["ring"] < 0.85 * us["windows"], us  # 17/16 of the input staged instead of 3/2


SRC = '''@kernel(category="pooling")
def k(x: In[f32], out: Out[f32]):
    for t in windows(x, dims=2, kernel=3, stride=2, padding=1, fill=0.0{kw}, rows=4, chunk=64):
        acc = tile_fill(0.0)
        for w in taps(t):
            acc = acc + load(x, w)
        store(out, t, acc)
'''


def test_reuse_is_a_boolean() -> None:
    with pytest.raises(DslError, match="True or False"):
        parse(SRC.format(kw=", reuse=1"))
    parse(SRC.format(kw=", reuse=True"))
    parse(SRC.format(kw=", combine=sum, reuse=True"))


@needs_gxx
@pytest.mark.parametrize("name,shape,dtype", [
    ("avg_pool1d", (2, 3, 1024), "fp32"),  # rows a multiple of 512 B: segments start aligned
    ("max_pool1d", (2, 3, 2048), "fp16"),
    ("max_pool1d", (3, 2, 1000), "fp16"),  # rows that are not: the segment's own start
])
def test_1d_segments_aligned_to_512_bytes_stay_correct(name: str, shape: tuple, dtype: str) -> None:
    # chunks of 64 outputs: every interior chunk starts 1 column past an aligned start, its
    # tap tables shared per offset below the alignment
    task = get_task(name).with_shape(shape, dtype)
    cand = _cand(task, "windows")
    ev = Evaluator(task, "Ascend910B2", seeds=(0,), shape_sets=[list(task.shapes)])
    for params in ({"CORES": 4, "CHUNK": 64}, {}):
        out = ev.evaluate(prepare(cand.name, cand.source), params, timing=False)
        assert out.status is Status.OK, (params, out.message)


@needs_gxx
@pytest.mark.parametrize("name,shape,dtype", [
    ("avg_pool3d", (2, 3, 9, 10, 64), "fp32"),  # whole rows of whole 32 B blocks: a packed ring
    ("max_pool3d", (2, 3, 9, 11, 32), "fp16"),
    ("avg_pool2d", (2, 3, 19, 48), "fp16"),
    ("max_pool2d", (3, 2, 17, 64), "fp32"),
])
def test_a_packed_ring_is_correct(name: str, shape: tuple, dtype: str) -> None:
    # the separable ring stages a segment of whole rows at a pitch of IW (one DataCopy) and
    # keeps the fill slots in its accumulator; chunks narrower than a row keep the padded ring
    task = get_task(name).with_shape(shape, dtype)
    cand = _cand(task, "separable_ring")
    ev = Evaluator(task, "Ascend910B2", seeds=(0,), shape_sets=[list(task.shapes)])
    for params in ({}, {"CORES": 4, "CHUNK": 64, "ROWS": 2}):
        out = ev.evaluate(prepare(cand.name, cand.source), params, timing=False)
        assert out.status is Status.OK, (params, out.message)


@needs_gxx
@pytest.mark.parametrize("name,shape,dtype", [
    ("avg_pool3d", (2, 3, 9, 10, 64), "fp32"),  # packed rows
    ("max_pool3d", (2, 3, 9, 10, 70), "fp16"),  # padded rows
    ("avg_pool3d", (1, 5, 12, 7, 33), "fp16"),  # even depth: the last od's window ends in the padding
])
def test_the_depth_carry_is_correct(name: str, shape: tuple, dtype: str) -> None:
    # carry=True: an od folds the kh-folded plane od - 1 kept in UB instead of staging it
    # again; 4 cores split the (plane, od) units mid-plane (a core's first unit stages all);
    # ROWS=2 (several tiles a unit) and CHUNK=64 (several chunks) turn the carry off
    task = get_task(name).with_shape(shape, dtype)
    cand = _cand(task, "separable_ring_carry")
    assert "carry=True" in cand.source
    ev = Evaluator(task, "Ascend910B2", seeds=(0,), shape_sets=[list(task.shapes)])
    for params in ({}, {"CORES": 4}, {"CORES": 4, "ROWS": 2}, {"CORES": 2, "CHUNK": 64}):
        out = ev.evaluate(prepare(cand.name, cand.source), params, timing=False)
        assert out.status is Status.OK, (params, out.message)


def test_carry_needs_a_3d_separable_ring() -> None:
    with pytest.raises(DslError, match="carry"):
        parse(SRC.format(kw=", reuse=True, carry=True"))
    with pytest.raises(DslError, match="True or False"):
        parse(SRC.format(kw=", carry=1"))


@needs_gxx
@pytest.mark.parametrize("name,shape,dtype", [
    ("avg_pool1d", (2, 3, 1024), "fp32"),  # rows a multiple of 512 B: the halo is kept
    ("max_pool1d", (3, 2, 4096), "fp16"),
    ("max_pool1d", (3, 2, 1000), "fp16"),  # rows that are not: every chunk staged whole
])
def test_the_1d_halo_carry_is_correct(name: str, shape: tuple, dtype: str) -> None:
    # carry=True in 1-D: a chunk's first 512 B were the previous chunk's last (kept in UB)
    task = get_task(name).with_shape(shape, dtype)
    cand = _cand(task, "windows_carry")
    assert "carry=True" in cand.source
    ev = Evaluator(task, "Ascend910B2", seeds=(0,), shape_sets=[list(task.shapes)])
    for params in ({"CORES": 4, "CHUNK": 64}, {"CORES": 2, "CHUNK": 256}, {}):
        out = ev.evaluate(prepare(cand.name, cand.source), params, timing=False)
        assert out.status is Status.OK, (params, out.message)


@needs_gxx
@pytest.mark.parametrize("name,shape,dtype", [
    ("avg_pool2d", (2, 3, 37, 64), "fp32"),  # packed rows, a ragged last row tile
    ("max_pool2d", (2, 3, 19, 150), "fp16"),  # padded rows, two chunks a row with CHUNK=64
])
def test_the_2d_row_carry_is_correct(name: str, shape: tuple, dtype: str) -> None:
    # carry=True in 2-D: a row tile's first KH - SH ring rows were the previous tile's last;
    # 4 cores split the row tiles mid-plane; CHUNK=64 (several chunks a row) turns it off
    task = get_task(name).with_shape(shape, dtype)
    cand = _cand(task, "separable_ring_carry")
    ev = Evaluator(task, "Ascend910B2", seeds=(0,), shape_sets=[list(task.shapes)])
    for params in ({"CORES": 4, "ROWS": 4}, {"CORES": 3, "ROWS": 2}, {"CORES": 2, "CHUNK": 64, "ROWS": 4}, {}):
        out = ev.evaluate(prepare(cand.name, cand.source), params, timing=False)
        assert out.status is Status.OK, (params, out.message)


@needs_gxx
@pytest.mark.parametrize("name,shape,base,most", [
    ("avg_pool1d", (8, 128, 32768), "windows", 0.995),  # 128 of 4224 staged columns a chunk
    ("avg_pool2d", (4, 16, 512, 512), "separable_ring", 0.98),  # 1 of 17 ring rows a tile
    ("avg_pool3d", (4, 8, 64, 64, 64), "separable_ring", 0.9),  # 1 of 3 planes an od
])
def test_the_carry_moves_fewer_bytes(name: str, shape: tuple, base: str, most: float) -> None:
    # HBM-bound shapes (48 cores): the bytes the carry saves are time saved (modeled)
    task = get_task(name).with_shape(shape, "fp32")
    ev = Evaluator(task, "Ascend910B2", seeds=(0,))
    us = {k: ev.time(ev.build(prepare(c.name, c.source), {"CORES": 48}))["modeled_us"]
          for c in propose(task) for k in [c.name.rsplit("/", 1)[1]] if k in (base, base + "_carry", "windows_carry")}
    carried = us.get(base + "_carry", us.get("windows_carry"))
    assert carried < most * us[base], us


@needs_gxx
@pytest.mark.parametrize("name", ["max_pool2d", "avg_pool2d"])
def test_bf16_pools_fold_only_sums_and_check_correct(name: str) -> None:
    # a max fold runs Max on the input's dtype, which the vector unit lacks for bf16: neither the
    # recipes nor the graph frontend offer it; a sum fold casts each bf16 row up and adds in fp32
    from ascendcraft.search.graph import propose_from_graph

    task = get_task(name).with_shape((2, 3, 19, 64), "bf16")
    cands = propose(task)
    graph = [c.name.rsplit("/", 1)[1] for c in propose_from_graph(task)]
    if name == "max_pool2d":
        assert not [c for c in cands if "combine=" in c.source]
        assert graph == ["graph-windows"]
    else:
        assert [c for c in cands if "combine=sum" in c.source]
        assert graph == ["graph-windows", "graph-windows-separable", "graph-windows-ring"]
    ev = Evaluator(task, "Ascend910B2", seeds=(0,), shape_sets=[list(task.shapes)])
    for c in cands:
        out = ev.evaluate(prepare(c.name, c.source), {}, timing=False)
        assert out.status is Status.OK, (c.name, out.message)
