"""Norm and loss kernel structures of issue 18: a whole-row ``load_bcast`` is copied once per
core and stays resident; ``total_*`` partials fold on the vector pipe (no scalar round trip
a tile); the resident layer norm is correct on fp32 and fp16, task and signed data, and keeps
the shifted moments' accuracy at a large mean; so is its in-place form (``rows(inplace=True)``:
y written into x's slot of a VECIN->VECOUT bound queue and copied out of it), whose syncs are
in order and whose refusals name the rule."""

from __future__ import annotations

import dataclasses
import shutil

import pytest
from ascendcraft.dsl.kernel import prepare as dsl_prepare
from ascendcraft.search.builtin import propose

from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from ascendcraft.tasks.registry import get_task

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed")


def _candidate(task, kind: str):
    return next(c for c in propose(task) if c.name.endswith("/" + kind))


def _body(source: str) -> str:
    """The generated AscendC of the kernel's (one) vector launch."""
    [launch] = dsl_prepare("k", source).lower({}).launches
    return launch.source


def test_whole_row_bcast_is_copied_once_per_core() -> None:
    task = get_task("layer_norm").with_shape((6, 1000))
    src = _candidate(task, "resident").source
    text = _body(src)
    assert "res_weight" in text and "res_bias" in text
    assert "inq_weight" not in text and "inq_bias" not in text
    assert text.count("if (i == 0)") >= 2


def test_total_sum_partials_stay_on_the_vector_pipe() -> None:
    task = get_task("mse_loss").with_shape((8, 1000))
    text = _body(_candidate(task, "tiles").source)
    loop = text[text.index("for (int64_t off = 0;"):text.index("combine the per-core partials")]
    tile_loop = loop[:loop.rindex("SyncVS();")]  # the one read of the partials, after the loop
    assert "GetValue" not in tile_loop and "SyncVS" not in tile_loop and "SyncSV" not in tile_loop
    assert "Add(gacc" in tile_loop


@needs_gxx
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
@pytest.mark.parametrize("name,shape", [("layer_norm", (6, 1000)), ("layer_norm", (5, 33)),
                                        ("layer_norm_2d", (2, 3, 20, 50))])
def test_resident_layer_norm_is_correct(name, shape, dtype) -> None:
    task = get_task(name).with_shape(shape, dtype)
    ev = Evaluator(task, "Ascend910B2", seeds=(0, 1), shape_sets=[list(task.shapes)])
    cand = _candidate(task, "resident")
    out = ev.evaluate(prepare(cand.name, cand.source), {"ROWS": 2, "CORES": 4}, timing=False)
    assert out.status is Status.OK, out.message


@needs_gxx
@pytest.mark.parametrize("kind", ["resident", "resident_inplace"])
def test_resident_layer_norm_keeps_accuracy_at_large_mean(kind) -> None:
    task = get_task("layer_norm").with_shape((6, 1000))
    x = dataclasses.replace(task.inputs[0], dist="rand", low=1000.0, high=1016.0, signed_ok=False)
    task = dataclasses.replace(task, inputs=[x, *task.inputs[1:]])
    ev = Evaluator(task, "Ascend910B2", seeds=(0,), shape_sets=[list(task.shapes)])
    cand = _candidate(task, kind)
    out = ev.evaluate(prepare(cand.name, cand.source), {"CORES": 4}, timing=False)
    assert out.status is Status.OK, out.message


@needs_gxx
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
@pytest.mark.parametrize("name,shape,params", [
    ("layer_norm", (6, 1000), {"ROWS": 2, "CORES": 2}),  # several tiles a core: both slots reused
    ("layer_norm", (5, 33), {"ROWS": 2, "CORES": 4}),  # odd width, a ragged last tile
    ("layer_norm_2d", (2, 3, 20, 50), {"CORES": 4})])
def test_inplace_layer_norm_is_correct(name, shape, params, dtype) -> None:
    # y computed into x's slot of a bound queue and copied out of it (rows(inplace=True))
    task = get_task(name).with_shape(shape, dtype)
    ev = Evaluator(task, "Ascend910B2", seeds=(0, 1), shape_sets=[list(task.shapes)])
    cand = _candidate(task, "resident_inplace")
    out = ev.evaluate(prepare(cand.name, cand.source), params, timing=False)
    assert out.status is Status.OK, out.message


def test_inplace_layer_norm_has_one_bound_queue_and_no_output_buffer() -> None:
    text = _body(_candidate(get_task("layer_norm").with_shape((6, 1000)), "resident_inplace").source)
    assert "TQueBind<QuePosition::VECIN, QuePosition::VECOUT, DEPTH> bindq_x;" in text
    assert "outq_out" not in text and "inq_x" not in text
    # the vector pipe waits for the copy-in, the copy-out for the vector pipe, then the slot is freed
    order = ["CopyRowsIn(ld1_x", "WaitFlag<HardEvent::MTE2_V>(2)", "WaitFlag<HardEvent::V_MTE3>(2)",
             "CopyRowsOut(gm_out", "bindq_x.FreeTensor(ld1_x)"]
    at = [text.index(x) for x in order]
    assert at == sorted(at), at


@pytest.mark.parametrize("old,new,match", [
    ("inplace=True", "inplace=1", "True or False"),
    ("g = cast(load_bcast(weight, t), f32)", "g = cast(load_bcast(weight, t), f32) + cast(load(x, t), f32)",
     "loads 'x' once"),
    ("b + b, f32))", "b + b, f32))\n        z = row_sum(e)", "ends the loop"),
])
def test_inplace_rows_refuses_what_it_cannot_do(old, new, match) -> None:
    from ascendcraft.dsl.parser import DslError

    src = _candidate(get_task("layer_norm").with_shape((6, 1000)), "resident_inplace").source
    src = src.replace("* g + b, f32))", "* g + b + b, f32))")  # a marker the third case extends
    bad = src.replace(old, new)
    assert bad != src
    with pytest.raises(DslError, match=match):
        _body(bad)


def test_inplace_rows_refuses_a_chunks_loop() -> None:
    from ascendcraft.dsl.parser import DslError

    src = _candidate(get_task("layer_norm").with_shape((6, 1000)), "chunked").source
    with pytest.raises(DslError, match="whole rows"):
        _body(src.replace("depth=DEPTH", "depth=DEPTH, inplace=True", 1))


@needs_gxx
@pytest.mark.parametrize("name", ["mse_loss", "cross_entropy", "frobenius_norm"])
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_vector_folded_totals_are_correct(name, dtype) -> None:
    task = get_task(name)
    params = {"CORES": 4}
    if name == "frobenius_norm":
        # its dims are each under 300 (16 x 64 x 256 x 256: a minute or more a case, and a sum
        # of squares the fp16 reference overflows); 1 x 2 x 60 x 101 in tiles of 1024 gives each
        # of 4 cores two full tiles and a ragged third: still folded across tiles and cores
        shape, params = (1, 2, 60, 101), {"CORES": 4, "TILE": 1024}
    else:
        shape = tuple(min(d, 300) for d in task.shapes[0])
    task = task.with_shape(shape, dtype)
    ev = Evaluator(task, "Ascend910B2", seeds=(0, 1), shape_sets=[list(task.shapes)])
    cand = propose(task)[0]
    out = ev.evaluate(prepare(cand.name, cand.source), params, timing=False)
    assert out.status is Status.OK, out.message
