"""One vector code generator: the rows stage of a ``@cube_kernel`` (its AIV launch) and the rows
loop of a ``@kernel`` are lowered by the same pass (``compute._Compute``), so the same DSL
statements become the same AscendC lines in both; what differs is only the tiling names
of the loop and chunk headers and where loads and stores go."""

from __future__ import annotations

import dataclasses
import re

import pytest
from ascendcraft.dsl.checker import check_program
from ascendcraft.dsl.lowering import compute
from ascendcraft.dsl.lowering.cube import lower_cube
from ascendcraft.dsl.lowering.kernel import lower
from ascendcraft.dsl.parser import parse
from test_one_ir import EPILOGUE

BODY = '''
        for c in chunks(t, CH):
            x = load({x}, c)
            s = s + row_sum(x * x)
        inv = rsqrt(s / width(t) + 1e-05)
        for c in chunks(t, CH):
            x = load({x}, c)
            store(y, c, maximum(exp(x * inv) * 0.5 - x, x * 2.0))
'''

VECTOR = '''
@kernel(category="norm")
def rowstat(xin: In[f32], y: Out[f32]):
    CH = tunable(pow2(64, 1024), default=256)
    for t in rows(xin, rows=8):
        s = row_fill(0.0)''' + BODY.format(x="xin")

# the cube stage of test_one_ir's program (its split-K workspace ws), then our rows stage
CUBE = EPILOGUE[:EPILOGUE.index("    for t in rows")].replace(
    "bias: In[f16], c: Out[f16]):", "y: Out[f32]):\n    CH = tunable(pow2(64, 1024), default=256)") + \
    "    for t in rows(ws, rows=8):\n        s = row_fill(0.0)" + BODY.format(x="ws")


def _statement_lines(source: str, line: str) -> list[str]:
    """The generated lines of the DSL statement whose text is ``line`` (up to the next marker)."""
    out: list[str] = []
    inside = False
    for x in source.splitlines():
        x = x.strip()
        if x.startswith("// DSL line"):
            inside = x.endswith(line)
            continue
        if inside:
            x = re.sub(r"\b(v|ld|work|out|st)\d+(_\w+)?\b", r"\1#", x)  # value names differ
            x = re.sub(r"\b(inq|outq)\w*\b", r"\1#", x)  # queues: one per tensor / per use
            out.append(x.replace("td_.A * td_.W", "WIDTH").replace("td_.vW", "WIDTH"))  # each tiling's row width
    return out


def test_the_same_statements_lower_to_the_same_lines() -> None:
    vec = lower(VECTOR).kernel_class
    cube = lower_cube(CUBE).vector_class
    for stmt in ("s = s + row_sum(x * x)", "inv = rsqrt(s / width(t) + 1e-05)"):
        a, b = _statement_lines(vec, stmt), _statement_lines(cube, stmt)
        assert a and a == b, (stmt, a, b)
    # the store's expression too (its destination is each launch's own output queue)
    last = "store(y, c, maximum(exp(x * inv) * 0.5 - x, x * 2.0))"
    ops = ("Exp", "Mul", "Sub", "Max")

    def math(src: str) -> list[str]:
        return [x.replace("st#", "OUT").replace("out#", "OUT") for x in _statement_lines(src, last) if x.startswith(ops)]

    assert math(vec) and math(vec) == math(cube)


def test_the_rows_stage_is_planned_by_the_vector_pass() -> None:
    tp = check_program(parse(CUBE))
    plan = compute.plan_rows_stage(tp)
    kinds = {b.kind for b in plan.buffers}
    assert {"inq", "outq", "tmp", "row", "work"} <= kinds  # the pass's own pools, in the cube tiling
    assert any(x.strip().startswith("AcxRowsReduce<0>(v") for x in plan.body)  # straight into the row values


def test_no_second_generator_is_left() -> None:
    import importlib.util

    for gone in ("epilogue", "epilogue_ops"):
        assert importlib.util.find_spec(f"ascendcraft.dsl.lowering.{gone}") is None


ROWSTATS = '''
@kernel(category="reduce")
def rowstats(x: In[f32], y: Out[f32]):
    R = tunable(pow2(1, 16), default=4)
    for t in rows(x, rows=R):
        a = load(x, t)
        store(y, t, row_sum(a) * 0.5 + row_max(a) - row_min(a) * 0.25)
'''


@pytest.mark.slow
@pytest.mark.parametrize("width", [1, 7, 63, 64, 65, 520, 4096, 4100])
def test_row_reductions_fold_exactly_at_every_width(width: int) -> None:
    """AcxRowReduce: one whole-repeat reduction up to 64 values, block folds up to 512 and
    4096, ReduceSum/Max/Min beyond; ragged tails masked, rows apart in UB. Signed data,
    widths on both sides of every boundary, against torch."""
    import torch

    from ascendcraft.evaluate import Evaluator, prepare
    from ascendcraft.tasks.registry import get_task

    task = get_task("sum_lastdim").with_shape(f"5,{width}", "fp32")

    def ref(x: torch.Tensor) -> torch.Tensor:
        return x.sum(-1) * 0.5 + x.amax(-1) - x.amin(-1) * 0.25

    task = dataclasses.replace(task, reference=ref)
    res = Evaluator(task, "Ascend910B2", seeds=(0,)).evaluate(prepare("rowstats", ROWSTATS), {}, timing=False)
    assert res.status == "ok" and res.correct, res.message
