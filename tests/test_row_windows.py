"""Row windows: ``load_rows_bcast(x, t, d, n, p, o[, m, q])`` reads the rows of a window of an
input (a causal-mask buffer built for the longest context and sliced ``bias[:, :, :T, :T]``,
a KV-cache mask sliced from a row that depends on two sizes, a per-head table), run in the
emulator against PyTorch: offsets, pitches, two levels of rows, runs that wrap inside a tile,
d > 1, fp16, column chunks; values outside the tensor and misuse end as named errors. The graph
frontend reads such slices of task inputs as row windows and names the ones it cannot."""

from __future__ import annotations

from pathlib import Path

import pytest
from ascendcraft.dsl.checker import check_program
from ascendcraft.dsl.parser import DslError, parse
from ascendcraft.search.graph import propose_from_graph
from ascendcraft.search.proposer import ProposerError
from kernel_runs import assert_all_pass, inline_task

from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from ascendcraft.tasks.taskfile import load_task_file

HERE = Path(__file__).parent / "taskfiles"

KERNEL = '''
@kernel
def k(x: In[{dt}], m: In[{dt}], y: Out[{dt}]):
    R = tunable(pow2(1, 16), default={rows})
    for t in rows(x, rows=R):
        store(y, t, {body})
'''


def _run(tmp_path: Path, forward: str, inputs: str, src: str):
    task = inline_task(tmp_path, forward, inputs, "x, m")
    ev = Evaluator(task, "Ascend910B2", seeds=(0, 1), shape_sets=[list(task.shapes)])
    return ev.evaluate(prepare("k", src), {}, timing=False)


@pytest.mark.parametrize("forward,inputs,rows,window", [
    # a window starting at row 2, column 3 of a wider tensor; 8-row tiles over T = 5 rows wrap
    ("x + m[2:7, 3:43]", "torch.randn(3, 5, 40), torch.randn(20, 50)", 8,
     "1.0, size(x, 1), size(m, 1), 2.0 * size(m, 1) + 3.0"),
    # two levels: H blocks of T rows (a per-head table [H, L, C] sliced [:, :T, :W])
    ("x + m[:, :4, :24]", "torch.randn(2, 3, 4, 24), torch.randn(3, 9, 30)", 16,
     "1.0, size(m, 0) * size(x, 2), size(m, 2), 0.0, size(x, 2), size(m, 1) * size(m, 2)"),
    # d > 1: each window row serves B = 6 loop rows in a row ([A, 1, W] against [A, B, W])
    ("x + m[1:5, :33][:, None, :]", "torch.randn(4, 6, 33), torch.randn(7, 35)", 4,
     "size(x, 1), size(x, 0), size(m, 1), size(m, 1)"),
])
def test_windows_match_torch(tmp_path: Path, forward: str, inputs: str, rows: int, window: str) -> None:
    src = KERNEL.format(dt="f32", rows=rows, body=f"load(x, t) + load_rows_bcast(m, t, {window})")
    out = _run(tmp_path, forward, inputs, src)
    assert out.status == Status.OK, out.message


def test_an_fp16_window_in_column_chunks(tmp_path: Path) -> None:
    """The window read at each chunk of a row (its first column plus c0), 2-byte elements."""
    src = '''
@kernel
def k(x: In[f16], m: In[f16], y: Out[f16]):
    for t in rows(x, rows=4):
        for c in chunks(t, 32):
            v = cast(load(x, c), f32) * cast(load_rows_bcast(m, c, 1.0, size(x, 1), size(m, 1), 3.0), f32)
            store(y, c, cast(v, f16))
'''
    out = _run(tmp_path, "x * m[:9, 3:103]", "torch.randn(2, 9, 100, dtype=torch.float16), "
               "torch.randn(12, 110, dtype=torch.float16)", src)
    assert out.status == Status.OK, out.message


@pytest.mark.parametrize("window,why", [
    ("1.0, size(x, 1) + 20.0, size(m, 1), 0.0", "run past"),       # more rows than m holds
    ("1.0, size(x, 1), size(m, 1), 0.5", "whole number"),          # o is not an element
    ("1.0, size(x, 1), 0.0, 0.0", "at least 1"),                   # p = 0
    ("1.0, size(x, 1), size(m, 1), 0.0, 2.0, 0.0", "at least 1"),  # q = 0
])
def test_windows_outside_the_tensor_are_named(tmp_path: Path, window: str, why: str) -> None:
    src = KERNEL.format(dt="f32", rows=4, body=f"load(x, t) + load_rows_bcast(m, t, {window})")
    out = _run(tmp_path, "x + m[:5, :40]", "torch.randn(3, 5, 40), torch.randn(20, 50)", src)
    assert out.status != Status.OK and "load_rows_bcast" in out.message and why in out.message, out.message


@pytest.mark.parametrize("body,why", [
    ("load_rows_bcast(m, t, 1.0, load(x, t), 8.0, 0.0)", "n is a host scalar"),
    ("load_rows_bcast(m, t, 1.0, 4.0, 8.0)", "takes 3 or 6 or 8 arguments"),
])
def test_misuse_is_a_dsl_error(body: str, why: str) -> None:
    with pytest.raises(DslError, match=why):
        check_program(parse(KERNEL.format(dt="f32", rows=4, body=body)))


@pytest.mark.parametrize("name,want", [
    ("gpt_bias_buffer_sliced", "size({x}, 2), 1024.0, 0.0"),                      # :T rows of 1024
    ("kv_cache_past_mask_fp16", "(size({x}, 3) - size({x}, 2)) * 2048.0"),     # past = k_len - q_len
    ("alibi_per_head_buffer_bf16", "size({x}, 2), 1048576.0"),                  # H blocks of T rows
    ("tril_bool_buffer_square_fp16", "size({x}, 1), 512.0, 0.0"),
])
def test_sliced_buffers_are_row_windows(name: str, want: str) -> None:
    """Each corpus file's mask or table is read as a row window whose rows follow the scores'
    sizes, and every candidate passes the check."""
    task = load_task_file(HERE / "corpus" / f"{name}.py")
    cands = propose_from_graph(task)
    x = task.inputs[0].name
    assert any(want.format(x=x) in c.source for c in cands), cands[0].source
    assert_all_pass(task, cands[:1])


def test_three_levels_of_rows_are_named() -> None:
    with pytest.raises(ProposerError, match="at most two evenly spaced levels of rows"):
        propose_from_graph(load_task_file(HERE / "refused" / "window_three_levels.py"))
