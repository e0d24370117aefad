"""The one ATen tracer (ascendcraft.tasks.aten), read by the eager model and the graph frontend."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from ascendcraft.search.graph import trace_task as frontend_trace
from ascendcraft.search.graph.trace import Unsupported

from ascendcraft.model.eager import record_aten_ops, trace_aten_ops
from ascendcraft.tasks.aten import Ref, TraceError, extent_bytes, trace, trace_task
from ascendcraft.tasks.registry import get_task
from ascendcraft.tasks.taskfile import load_task_file

TASKFILES = Path(__file__).parent / "taskfiles"


def test_eager_model_and_frontend_read_one_trace() -> None:
    for task in (get_task("layer_norm"), get_task("softmax"), load_task_file(TASKFILES / "bias_gelu.py")):
        ag = trace_task(task)
        eager = [c[0] for c in trace_aten_ops(task.reference, task.meta_inputs())]
        assert eager == [ag.node(n)["name"] for n in ag.work_nodes()]
        assert frontend_trace(task).op_nodes() == ag.op_nodes()


def test_a_task_files_module_is_built_outside_the_trace() -> None:
    """The module's constructor (LayerNorm fills its weight and bias) is not eager work."""
    task = load_task_file(TASKFILES / "layernorm_module.py")
    assert [c.op for c in record_aten_ops(task.reference, task.meta_inputs())] == ["native_layer_norm"]
    ag = trace_task(task)
    inputs = [ag.node(n)["name"] for n in ag.graph.nodes if ag.node(n)["kind"] == "input"]
    assert inputs == ["x", "ln.weight", "ln.bias"]  # the module's tensors are kernel inputs
    assert not [n for n in ag.graph.nodes if ag.node(n)["kind"] == "param"]


def test_bytes_count_what_an_operand_addresses() -> None:
    ag = trace(lambda x, b: x + b.expand(64, 128), [((64, 128), torch.float32), ((1, 128), torch.float32)])
    (add,) = ag.work_nodes()
    read, written = ag.call_bytes(add)
    assert (read, written) == (64 * 128 * 4 + 128 * 4, 64 * 128 * 4)  # the row is read once
    assert extent_bytes((64, 128), (0, 1), torch.float16) == 256
    assert ag.call_elems(add) == 64 * 128
    # strided real inputs keep their strides (a transposed view addresses all of its base)
    t = torch.empty(32, 64).t()
    ag = trace(lambda x: x * 2, [t])
    assert ag.extent_bytes(Ref("in0")) == 32 * 64 * 4


def test_matmul_flops_and_schema_bound_arguments() -> None:
    lin = torch.nn.Linear(256, 64)
    ag = trace(lin, [((8, 256), torch.float32)])
    (mm,) = ag.work_nodes()
    assert ag.op(mm) == "addmm"
    assert ag.matmul_flops(mm) == 2 * 8 * 64 * 256 + 8 * 64
    assert set(ag.node(mm)["args"]) == {"self", "mat1", "mat2", "beta", "alpha"}  # defaults bound
    names = {ag.node(n)["name"] for n in ag.graph.nodes if ag.node(n)["kind"] == "param"}
    assert names == {"weight", "bias"}
    ag = trace(lambda x: torch.softmax(x, dim=0), [((8, 16), torch.float16)])
    (sm,) = ag.work_nodes()
    assert ag.node(sm)["args"]["dim"] == 0 and ag.meta(Ref(sm)) == ((8, 16), torch.float16)


def test_what_stops_a_dataflow_reading_is_one_sentence() -> None:
    with pytest.raises(TraceError, match=r"does not run on meta tensors \(RuntimeError"):
        trace(lambda x: x * x.sum().item(), [((4, 4), torch.float32)])

    def inplace_on_view(x):
        y = x * 1
        v = y[0]
        v.add_(1)
        return y

    ag = trace(inplace_on_view, [((4, 4), torch.float32)])  # the eager model can still cost it
    assert ag.notes and "in-place update of a tensor that has views" in ag.notes[0]
    task = get_task("relu").with_shape((4, 4))
    with pytest.raises(Unsupported, match="in-place update"):
        frontend_trace(dataclasses.replace(task, reference=inplace_on_view))
    with pytest.raises(Unsupported, match="returns a float, not a tensor"):
        frontend_trace(dataclasses.replace(task, reference=lambda x: (x + 1, 2.0)))


def test_an_aliased_update_nothing_reads_again_is_no_obstacle() -> None:
    """An in-place update through a view whose storage nothing reads afterwards (an instance norm's
    running statistics) leaves the dataflow intact: no note. Read afterwards - by an op, or as
    an output - it is one."""
    def dead_update(x):
        stats = x.sum(0) * 0
        stats.view(-1).add_(1)  # updated, never read again
        return x * 2

    def read_after(x):
        stats = x.sum(0) * 0
        stats.view(-1).add_(1)
        return x * stats

    def returned(x):
        stats = x.sum(0) * 0
        stats.view(-1).add_(1)
        return stats

    assert not trace(dead_update, [((4, 4), torch.float32)]).notes
    for fn in (read_after, returned):
        ag = trace(fn, [((4, 4), torch.float32)])
        assert ag.notes and "in-place update of a tensor that has views" in ag.notes[0], fn.__name__
