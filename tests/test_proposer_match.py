"""Recipes are matched by what a task computes (canonical ATen graphs, parameters read from
the graph, a numeric spot check), and every registry op still gets its own recipe."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from ascendcraft.search.builtin import propose
from ascendcraft.search.cube_builtin import (
    DTYPE_DSL as CUBE_DTYPES,
)
from ascendcraft.search.cube_builtin import (
    _mhc_post,
    _mhc_pre,
    matmul_candidates,
    registry_spec,
    spec_dims,
)
from ascendcraft.search.graph import trace_task
from ascendcraft.search.proposer import Declined
from ascendcraft.search.recipe_match import (
    _twin,
    canonical,
    first_match,
    parameter_slots,
    same_number,
    task_canon,
)
from ascendcraft.search.recipes import DTYPE_DSL, RECIPES, RecipeProposer, _Ctx

from ascendcraft.tasks.registry import get_task, task_names
from ascendcraft.tasks.registry_cube import cube_kind
from ascendcraft.tasks.task import InputSpec, Task
from ascendcraft.tasks.taskfile import load_task_file

IMPOSTORS = Path(__file__).parent / "taskfiles" / "impostors"


def _task(fn, *shapes) -> Task:
    return Task("t", "math", fn, [InputSpec(f"x{i}", s) for i, s in enumerate(shapes)])


def test_canonical_graph_does_not_depend_on_dispatch_order() -> None:
    def ab(x, y):
        a = x * x
        b = y + 1.5
        return a * b

    def ba(x, y):
        b = y + 1.5
        a = x * x
        return a * b

    def other(x, y):
        return (x * x) + (y + 1.5)

    def canon(f):
        return canonical(trace_task(_task(f, (8, 16), (8, 16))))

    assert canon(ab) == canon(ba)
    assert canon(other).structure != canon(ab).structure
    # commutative operands in either order; a subtraction's are not
    assert canon(lambda x, y: x * torch.sigmoid(y)) == canon(lambda x, y: torch.sigmoid(y) * x)
    assert canon(lambda x, y: torch.maximum(y, x)) == canon(lambda x, y: torch.maximum(x, y))
    assert canon(lambda x, y: x - y).structure != canon(lambda x, y: y - x).structure
    assert canon(lambda x, y: x + 2 * y).structure != canon(lambda x, y: y + 2 * x).structure


def test_numbers_are_slots_shapes_and_flags_are_compared() -> None:
    half = canonical(trace_task(_task(lambda x: x * 0.5, (4, 8))))
    quarter = canonical(trace_task(_task(lambda x: x * 0.25, (4, 8))))
    assert half.structure == quarter.structure and half.numbers != quarter.numbers
    keep = canonical(trace_task(_task(lambda x: x.sum(1, keepdim=True), (4, 8))))
    drop = canonical(trace_task(_task(lambda x: x.sum(1), (4, 8))))
    assert keep.structure != drop.structure  # keepdim is not a number
    wide = canonical(trace_task(_task(lambda x: x * 0.5, (4, 9))))
    assert wide.structure == half.structure and wide.shapes != half.shapes
    assert same_number(0.1, 0.1 + 1e-12) and not same_number(3, 4) and same_number(float("nan"),
                                                                                    float("nan"))


def test_parameters_are_located_by_tracing_the_op_twice() -> None:
    adam = get_task("adam")
    _, twin = _twin("adam", adam)  # the op on the task's own inputs
    slots = parameter_slots(twin, task_canon(adam))
    assert all(slots[p] for p in ("lr", "beta1", "beta2", "eps")), slots
    numbers = task_canon(adam).numbers
    assert {numbers[i] for i in slots["beta1"]} == {0.9}
    # an unusual constructor (positional-only, a tuple of betas, names of its own)
    m = first_match(load_task_file(IMPOSTORS / "adam.py"), ["adam"], "recipe")
    assert m.params == {"lr": 3e-3, "beta1": 0.8, "beta2": 0.95, "eps": 1e-7, "step": 7}


def test_dims_and_sizes_are_parameters_too() -> None:
    m = first_match(load_task_file(IMPOSTORS / "sum_dim0.py"), list(RECIPES), "recipe")
    assert (m.op, m.params["dim"]) == ("sum_dim", 0)
    pool = first_match(load_task_file(IMPOSTORS.parent / "avgpool1d_k3.py"), list(RECIPES), "recipe")
    assert pool.op == "avg_pool1d" and pool.params["kernel_size"] == 3


def _unary_file(tmp_path: Path, stem: str, expr: str) -> Task:
    """A task file whose forward returns ``expr`` of one 256 x 1024 input ``x``."""
    f = tmp_path / f"{stem}.py"
    f.write_text("import torch\nimport torch.nn as nn\n\n"
                 f"class Model(nn.Module):\n    def forward(self, x):\n        return {expr}\n\n"
                 "def get_inputs():\n    return [torch.randn(256, 1024)]\n\n"
                 "def get_init_inputs():\n    return []\n")
    return load_task_file(f)


def test_numeric_spot_check_catches_what_the_meta_graph_hides(tmp_path) -> None:
    """A reference that computes relu on meta tensors and |x| on real ones: same graph as
    the relu recipe, other values."""
    task = _unary_file(tmp_path, "relu", "torch.relu(x) if x.device.type == 'meta' else x.abs()")
    with pytest.raises(Declined, match="the nearest, relu, .* differs from the task's on random"):
        RecipeProposer().propose(task)


def test_an_untraceable_reference_is_declined_not_crashed(tmp_path) -> None:
    task = _unary_file(tmp_path, "scale_by_max", "x * float(x.abs().max().item())")
    with pytest.raises(Declined, match="no vector recipe can be matched: the reference does not run"):
        RecipeProposer().propose(task)


def _direct(task: Task) -> list:
    """The op's own recipe built from the registry task's own parameters (what the proposer
    did when it looked recipes up by name): the oracle for the semantic match."""
    name = task.name
    if name in RECIPES:
        return RECIPES[name].build(_Ctx(task, DTYPE_DSL[task.dtype], dict(task.params()), name))
    kind = cube_kind(name)
    assert kind is not None and task.dtype in CUBE_DTYPES
    if kind == "mhc_pre":
        return _mhc_pre(task, task.params())
    if kind == "mhc_post":
        return _mhc_post(task, task.params())
    spec = registry_spec(task, name, task.params())
    return matmul_candidates(name, spec, spec_dims(task, spec))


@pytest.mark.parametrize("name", task_names())
def test_every_registry_op_gets_its_own_recipe(name: str) -> None:
    task = get_task(name)
    got = propose(task)
    assert {c.origin for c in got} <= {"recipe", "cube"}, [c.name for c in got]
    assert [(c.name, c.source) for c in got] == [(c.name, c.source) for c in _direct(task)]


@pytest.mark.parametrize("name, shape, dtype", [
    ("softmax", (64, 1000), "fp16"), ("sum_dim", (8, 5, 7), "fp32"), ("cumsum", (4, 6, 10), "bf16"),
    ("group_norm", (2, 16, 9), "fp32"), ("max_dim", (3, 7, 5), "fp16"), ("layer_norm", (3, 4, 96), "fp32"),
    ("matmul_transpose_b", (96, 64), "fp32"), ("adamw", (1000,), "fp16"), ("cross_entropy", (33, 10), "fp32"),
])
def test_registry_ops_at_other_shapes_and_dtypes_keep_their_recipe(name, shape, dtype) -> None:
    task = get_task(name).with_shape(shape, dtype)
    assert [(c.name, c.source) for c in propose(task)] == [(c.name, c.source) for c in _direct(task)]


def test_a_registry_op_under_another_name_gets_that_ops_recipe() -> None:
    """Two registry ops with the same computation: either recipe is right, and a task keeps
    its own (mul_scalar vs matrix_scalar_multiplication)."""
    ms, msm = get_task("mul_scalar"), get_task("matrix_scalar_multiplication")
    assert [c.name for c in propose(ms)] == ["mul_scalar/tiles"]
    assert [c.name for c in propose(msm)] == ["matrix_scalar_multiplication/tiles"]
    renamed = Task("scale_rows", "math", ms.reference, ms.inputs)
    [c] = propose(renamed)
    assert (c.name, c.origin) == ("scale_rows/mul_scalar-tiles", "recipe")
    assert c.source == propose(ms)[0].source
