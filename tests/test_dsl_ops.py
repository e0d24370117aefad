"""The DSL op table (``dsl/ops.py``): the parser, checker and both vector code generators read
it, so an op spelled in the table is accepted, typed and lowered without another list; ops
that are compositions (gelu, silu) run correctly in vector kernels too."""

from __future__ import annotations

import math

import pytest
from ascendcraft.dsl import ir, ops
from ascendcraft.dsl.checker import check_program
from ascendcraft.dsl.kernel import lower
from ascendcraft.dsl.parser import DslError, parse

from ascendcraft.emulator.trace_format import OP_INSTR_CLASS
from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.model.op_costs import OP_CLASS
from ascendcraft.tasks.registry import get_task

UNARY_SRC = '''
@kernel
def u(x: In[f32], y: Out[f32]):
    T = tunable(pow2(256, 4096), default=1024)
    for t in tiles(x, tile=T):
        store(y, t, {op}(load(x, t)))
'''


@pytest.mark.parametrize("op", sorted(n for n, o in ops.UNARY.items() if o.spellings))
def test_every_spelled_unary_op_parses_checks_and_lowers(op: str) -> None:
    src = UNARY_SRC.format(op=op)
    check_program(parse(src))
    k = lower(src)
    api = ops.UNARY[op].api
    if api:  # one instruction: the table's AscendC call is in the kernel
        assert f"{api}(" in k.launches[0].source


def test_dtype_rules_come_from_the_table() -> None:
    src = UNARY_SRC.replace("In[f32]", "In[i32]").replace("Out[f32]", "Out[i32]")
    check_program(parse(src.format(op="abs")))  # abs: f32/f16/i32
    with pytest.raises(DslError, match="exp\\(\\) needs a float"):
        check_program(parse(src.format(op="exp")))


def test_constant_folding_and_host_forms_use_the_table() -> None:
    p = parse(UNARY_SRC.replace("{op}(load(x, t))", "load(x, t) * sigmoid(0.0)"))
    assert any(isinstance(e, ir.Const) and e.value == 0.5 for e in ir.program_exprs(p))
    assert ops.host_cpp("rsqrt", ("x",)) == "(1.0 / __builtin_sqrt(x))"
    assert ops.host_cpp("max", ("a", "b")) == "__builtin_fmax(a, b)"


def test_aten_lookup_for_the_graph_frontend() -> None:
    assert [o.name for o in ops.by_aten("aten.exp.default")] == ["exp"]
    assert {o.kind for o in ops.by_aten("aten.sum.dim_IntList")} == {"reduce"}
    assert ops.REDUCE["max"].identity == -math.inf and ops.SCAN["prod"].identity == 1.0
    assert ops.by_aten("aten.convolution") == []


def test_trace_ops_carry_their_instruction_class() -> None:
    """The model's op -> class map can be the trace format's (same entries today)."""
    assert dict(OP_INSTR_CLASS) == dict(OP_CLASS)


@pytest.mark.slow
@pytest.mark.parametrize("op", ["gelu", "silu"])
def test_composite_unary_ops_are_correct_in_vector_kernels(op: str) -> None:
    task = get_task(op).with_shape("1000", "fp32")
    src = UNARY_SRC.format(op=op)
    res = Evaluator(task, "Ascend910B2", seeds=(0,)).evaluate(prepare(op, src), {}, timing=False)
    assert res.status == "ok" and res.correct, res.message
