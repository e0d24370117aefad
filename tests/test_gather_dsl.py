"""Gathers in the DSL: ``gather_rows(x, t, idx, dim)`` reads, for each row of a rows tile, the
row of ``x`` an index input names (index_select on any dim, embedding), one DataCopy per row,
run in the emulator against PyTorch. Indices are untrusted data: a value outside the gathered
dim stops the kernel (``Trap()``) before any read, a readable failed run; misuse is a located
DslError."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ascendcraft.dsl.checker import check_program
from ascendcraft.dsl.parser import DslError, parse
from kernel_runs import inline_task

from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status

GATHER = '''
@kernel
def k(x: In[{xd}], idx: In[{idd}], y: Out[{xd}]):
    R = tunable(pow2(1, 16), default=4)
    for t in rows(y, rows=R{dims}):
        store(y, t, {value})
'''


def _task(tmp_path: Path, forward: str, inputs: str, args: str = "x, idx"):
    return inline_task(tmp_path, forward, inputs, args)


def _run(task, src: str, seeds=(0, 1)):
    ev = Evaluator(task, "Ascend910B2", seeds=seeds, shape_sets=[list(task.shapes)])
    return ev.evaluate(prepare("k", src), {}, timing=False)


@pytest.mark.parametrize("forward,inputs,dim,dims,xd,idd,value", [
    # a middle dim of a 3-D tensor, odd sizes, arithmetic on the gathered tile
    ("torch.index_select(x, 1, idx) * 2.0", "torch.randn(6, 37, 45), torch.randint(0, 37, (13,))",
     1, "", "f32", "i64", "gather_rows(x, t, idx, 1) * 2.0"),
    # rows of a table by a 2-D index (embedding), fp16 values, int32 indices
    ("torch.nn.functional.embedding(idx, x)", "torch.randn(50, 24).half(), "
     "torch.randint(0, 50, (3, 7), dtype=torch.int32)", 0, "", "f16", "i32",
     "gather_rows(x, t, idx, 0)"),
    # dim 0 of a 3-D tensor: each gathered row is the last two dims
    ("x[idx]", "torch.randn(9, 5, 7), torch.randint(0, 9, (11,))", 0, ", dims=2", "f32", "i64",
     "gather_rows(x, t, idx, 0)"),
])
def test_gathered_rows_match_torch(tmp_path: Path, forward, inputs, dim, dims, xd, idd, value) -> None:
    task = _task(tmp_path, forward, inputs)
    out = _run(task, GATHER.format(xd=xd, idd=idd, dims=dims, value=value))
    assert out.status == Status.OK, out.message


def test_select_cols_reads_one_index_list_for_every_row(tmp_path: Path) -> None:
    task = _task(tmp_path, "torch.index_select(x, 1, idx)", "torch.randn(7, 300), torch.randint(0, 300, (45,))")
    src = '''
@kernel
def k(x: In[f32], idx: In[i64], y: Out[f32]):
    for t in rows(y, rows=2):
        for c in chunks(t, 16):
            store(y, c, select_cols(x, c, idx))
'''
    assert _run(task, src).status == Status.OK


def test_gathered_rows_in_column_chunks(tmp_path: Path) -> None:
    task = _task(tmp_path, "torch.index_select(x, 0, idx)",
                 "torch.randn(40, 1000), torch.randint(0, 40, (17,))")
    src = '''
@kernel
def k(x: In[f32], idx: In[i64], y: Out[f32]):
    for t in rows(y, rows=2):
        for c in chunks(t, 256):
            store(y, c, gather_rows(x, c, idx, 0))
'''
    assert _run(task, src).status == Status.OK


def test_an_index_out_of_range_stops_the_kernel(tmp_path: Path) -> None:
    """The reference clamps (so it runs); the kernel does not: an index past the dim is a
    failed run naming Trap(), and no row of another tensor (or of x) is read."""
    task = _task(tmp_path, "torch.index_select(x, 1, idx.clamp(max=x.shape[1] - 1))",
                 "torch.randn(6, 37, 45), torch.randint(30, 50, (13,))")
    out = _run(task, GATHER.format(xd="f32", idd="i64", dims="", value="gather_rows(x, t, idx, 1)"),
               seeds=(0,))
    assert out.status == Status.CHECK_ERROR
    assert "Trap()" in out.message and "index" in out.message and len(out.message.splitlines()) == 1


def test_a_negative_index_stops_the_kernel(tmp_path: Path) -> None:
    task = _task(tmp_path, "torch.index_select(x, 0, idx.clamp(min=0))",
                 "torch.randn(8, 32), torch.randint(-3, 2, (16,))")
    out = _run(task, GATHER.format(xd="f32", idd="i64", dims="", value="gather_rows(x, t, idx, 0)"),
               seeds=(0,))
    assert out.status == Status.CHECK_ERROR and "Trap()" in out.message


@pytest.mark.parametrize("loop,value,phrase", [
    ("tiles(y, tile=256)", "gather_rows(x, t, idx, 0)", "belongs to a plain rows loop"),
    ("rows(y, rows=1)", "gather_rows(x, t, x, 0)", "must be i32 or i64"),
    ("rows(y, rows=1)", "gather_rows(x, t, idx, 99)", "dim is in 0..15"),
])
def test_misuse_is_a_located_error(loop: str, value: str, phrase: str) -> None:
    src = ("@kernel\ndef k(x: In[f32], idx: In[i64], y: Out[f32]):\n"
           f"    for t in {loop}:\n        store(y, t, {value})\n")
    with pytest.raises(DslError, match=re.escape(phrase)) as err:
        check_program(parse(src))
    assert "line 4" in str(err.value)


@pytest.mark.parametrize("value", [
    "gather_rows(x, t, idx, '1); system(\"x\"')",  # a string where a compile-time int goes
    "gather_rows(x, t, idx, size(x, 0))",  # a runtime value where a compile-time int goes
    "gather_rows(x.T, t, idx, 0)",  # attribute access
    "gather_cols(x, t, nosuch)",  # not a parameter
    "gather_cols(x, t, idx, 2)",  # wrap is 0 or 1
    "index_add_rows(load(x, t), y, t, idx, 0)",  # an output as the added source
])
def test_hostile_arguments_never_reach_cpp(value: str) -> None:
    src = ("@kernel\ndef k(x: In[f32], idx: In[i64], y: Out[f32]):\n"
           f"    for t in rows(y, rows=1):\n        store(y, t, {value})\n")
    with pytest.raises(DslError):
        check_program(parse(src))


INDEX_ADD = '''
@kernel
def k(base: In[f32], idx: In[i64], src: In[f32], y: Out[f32]):
    for t in rows(y, rows=3):
        for c in chunks(t, 16):
            store(y, c, index_add_rows(load(base, c), src, c, idx, 1))
'''


def _index_add_task(tmp_path: Path, forward: str, idx: str):
    return _task(tmp_path, forward, f"torch.randn(4, 13, 45), {idx}, torch.randn(4, 29, 45)",
                 "base, idx, src")


def test_index_add_rows_sums_repeated_indices_in_order(tmp_path: Path) -> None:
    """29 indices into 13 rows (repeats certain), chunked columns: equal to eager bit for bit
    (the same ascending-k order), at two seeds."""
    task = _index_add_task(tmp_path, "base.index_add(1, idx, src)", "torch.randint(0, 13, (29,))")
    ev = Evaluator(task, "Ascend910B2", seeds=(0, 1), shape_sets=[list(task.shapes)])
    out = ev.evaluate(prepare("k", INDEX_ADD), {}, timing=False)
    assert out.status == Status.OK and out.max_abs_err == 0, out.message


def test_index_add_rows_stops_on_an_index_out_of_range(tmp_path: Path) -> None:
    task = _index_add_task(tmp_path, "base.index_add(1, idx.clamp(max=base.shape[1] - 1), src)",
                           "torch.randint(10, 20, (29,))")
    out = _run(task, INDEX_ADD, seeds=(0,))
    assert out.status == Status.CHECK_ERROR and "Trap()" in out.message
