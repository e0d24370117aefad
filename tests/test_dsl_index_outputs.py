"""Integer and bool results in the DSL: ``Out[i64]``/``Out[bool]``, ``cast(v, i64)``
(truncating, as ``Tensor.long()``), ``cast(v, bool)`` (``v != 0`` decided before any
narrowing) and ``position(at)`` (the step of a slabs loop / the column of a rows tile), run in
the emulator against the PyTorch reference; misuse is a DslError naming the line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ascendcraft.dsl.checker import check_program
from ascendcraft.dsl.parser import DslError, parse

from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from ascendcraft.tasks.taskfile import load_task_file

CAST = '''
@kernel
def k(x: In[f32], y: Out[{dtype}]):
    T = tunable(pow2(256, 4096), default=256)
    for t in tiles(x, tile=T):
        store(y, t, cast(load(x, t), {dtype}))
'''

#: values where a wrong rule shows: -0.0, a tiny nonzero (0 in f16), NaN, inf, halves
VALUES = "[0.0, -0.0, 1e-8, float('nan'), -3.7, float('inf'), 2.5, -2.5, 1e6 + 0.5, -1e-30, 7.0]"


def _task(tmp_path: Path, forward: str, values: str = f"{VALUES} * 30"):
    p = tmp_path / "t.py"
    p.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
                 f"    def forward(self, x):\n        return {forward}\n\n"
                 f"def get_inputs():\n    return [torch.tensor({values})]\n\n"
                 "def get_init_inputs():\n    return []\n")
    return load_task_file(p)


def _run(task, src: str):
    ev = Evaluator(task, "Ascend910B2", seeds=(0,), shape_sets=[list(task.shapes)])
    return ev.evaluate(prepare("k", src), {}, timing=False)


@pytest.mark.parametrize("dtype,forward", [("bool", "x != 0"), ("i64", "x.long()")])
def test_casts_to_integer_outputs_match_torch(tmp_path: Path, dtype: str, forward: str) -> None:
    values = VALUES if dtype == "bool" else VALUES.replace("float('nan'), ", "").replace(
        "float('inf'), ", "")  # torch's NaN/inf -> int64 is undefined
    values = f"{values} * 30"
    out = _run(_task(tmp_path, forward, values), CAST.format(dtype=dtype))
    assert out.status == Status.OK, out.message


def test_a_wrong_index_is_caught_exactly(tmp_path: Path) -> None:
    """The comparison of an int64 output is exact: argmin written where argmax is asked fails."""
    rows = "[[float((i * 7 + j * j) % 5) for j in range(11)] for i in range(30)]"  # ties
    task = _task(tmp_path, "torch.argmax(x, dim=1)", rows)
    src = '''
@kernel
def k(x: In[f32], y: Out[i64]):
    for t in rows(x, rows=4):
        a = load(x, t)
        store(y, t, cast(row_min(where(a == (tile_fill(0.0) + row_{red}(a)), position(t), inf)), i64))
'''
    assert _run(task, src.format(red="max")).status == Status.OK
    bad = _run(task, src.format(red="min"))
    assert bad.status == Status.WRONG and "exact comparison" in bad.message


@pytest.mark.parametrize("body,phrase", [
    ("store(y, t, cast(position(t), i64))", "position() is the step of a slabs steps loop"),
    ("store(y, t, cast(row_max(load(x, t)), bool))", "cast(v, bool) takes an f32/f16 tile"),
])
def test_misuse_is_a_located_error(body: str, phrase: str) -> None:
    src = ("@kernel\ndef k(x: In[f32], y: Out[{d}]):\n    for t in {loop}:\n        {body}\n").format(
        d="bool" if "bool" in body else "i64", body=body,
        loop="tiles(x, tile=256)" if "position" in body else "rows(x, rows=1)")
    with pytest.raises(DslError, match=re.escape(phrase)) as err:
        check_program(parse(src))
    assert "line 4" in str(err.value)


def test_position_takes_the_innermost_loop_variable() -> None:
    src = ('@kernel\ndef k(x: In[f32], y: Out[f32]):\n    for t in slabs(x, dim=1, tile=64):\n'
           '        acc = tile_fill(0.0)\n        for k in steps(t):\n'
           '            acc = acc + position(t)\n        store(y, t, acc)\n')
    with pytest.raises(DslError, match="innermost loop variable"):
        check_program(parse(src))


def test_load_scalar_reads_one_element_of_a_float_input(tmp_path: Path) -> None:
    p = tmp_path / "s.py"
    p.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
                 "    def forward(self, x, s):\n        return x * s - s\n\n"
                 "def get_inputs():\n    return [torch.randn(300), torch.rand(1) + 0.5]\n\n"
                 "def get_init_inputs():\n    return []\n")
    task = load_task_file(p)
    src = ("@kernel\ndef k(x: In[f32], s: In[f32], y: Out[f32]):\n    for t in tiles(x, tile=256):\n"
           "        store(y, t, load(x, t) * load_scalar(s) - load_scalar(s))\n")
    ev = Evaluator(task, "Ascend910B2", seeds=(0, 1), shape_sets=[list(task.shapes)])
    out = ev.evaluate(prepare("k", src), {}, timing=False)
    assert out.status == Status.OK, out.message  # two seeds: two drawn values of s
    with pytest.raises(DslError, match=r"load_scalar\(\) reads an f32"):
        check_program(parse(src.replace("s: In[f32]", "s: In[i32]")))
