"""``load_slice(x, t, col)``: a column window of a GM tensor (chunk / split / narrow / basic
slicing), run in the emulator against the PyTorch reference at odd sizes, fp16, column
chunks and tiles loops; misuse and windows outside the tensor are DslErrors naming the
reason; a strided window with unaligned rows is modeled slower than a contiguous read of
the same bytes, an aligned one is not."""

from __future__ import annotations

from pathlib import Path

import pytest
from ascendcraft.dsl.checker import check_program
from ascendcraft.dsl.parser import DslError, parse
from kernel_runs import inline_task

from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status


def _task(tmp_path: Path, forward: str, inputs: str, args: str = "x"):
    return inline_task(tmp_path, forward, inputs, args)


def _run(task, src: str, timing: bool = False):
    ev = Evaluator(task, "Ascend910B2", seeds=(0,), shape_sets=[list(task.shapes)])
    return ev.evaluate(prepare("k", src), {}, timing=timing)


ROWS = '''
@kernel
def k(x: In[{dt}], y: Out[{dt}]):
    R = tunable(pow2(1, 16), default=4)
    for t in rows(y, rows=R):
        store(y, t, {body})
'''

CHUNKED = '''
@kernel
def k(x: In[f32], y: Out[f32]):
    C = tunable(pow2(64, 4096), default=256)
    for t in rows(y, rows=1):
        for c in chunks(t, C):
            a = load_slice(x, c, size(x, -1) - 1001.0)
            store(y, c, a * 2.0)
'''


@pytest.mark.parametrize("dt,forward,shape,body", [
    # SwiGLU's halves at an odd width: two windows of one tensor live together
    ("f32", "torch.nn.functional.silu(x[..., :997]) * x[..., 997:]", "7, 3, 2 * 997",
     "silu(load_slice(x, t, 0)) * load_slice(x, t, size(x, -1) / 2)"),
    # a 2-byte column offset (fp16) and a pitch that is not a whole 32 B block
    ("f16", "x[:, 1:] * 2", "33, 4098", "cast(cast(load_slice(x, t, 1), f32) * 2.0, f16)"),
])
def test_column_windows_match_torch(tmp_path: Path, dt: str, forward: str, shape: str, body: str) -> None:
    torch_dt = "torch.float16" if dt == "f16" else "torch.float32"
    task = _task(tmp_path, forward, f"torch.randn({shape}, dtype={torch_dt})")
    out = _run(task, ROWS.format(dt=dt, body=body))
    assert out.status == Status.OK, out.message


def test_a_window_in_column_chunks(tmp_path: Path) -> None:
    """The last columns but one (``x[..., -1001:-1]``) walked in chunks of 256: col + c0."""
    out = _run(_task(tmp_path, "x[..., -1001:-1] * 2", "torch.randn(5, 1010)"), CHUNKED)
    assert out.status == Status.OK, out.message


def test_an_offset_in_a_tiles_loop(tmp_path: Path) -> None:
    """A slice along the first dim is one contiguous run: an element offset in a tiles loop."""
    src = '''
@kernel
def k(x: In[f32], y: Out[f32]):
    T = tunable(pow2(256, 4096), default=1024)
    for t in tiles(y, tile=T):
        store(y, t, exp(load_slice(x, t, 3.0 * size(x, 1))))
'''
    out = _run(_task(tmp_path, "torch.exp(x[3:])", "torch.randn(50, 129)"), src)
    assert out.status == Status.OK, out.message


@pytest.mark.parametrize("forward,shape,col,why", [
    ("x[..., 2:]", "8, 100", "3.0", "outside"),           # col + W > pitch
    ("x[..., :50]", "8, 100", "0.5", "whole number"),     # not an element
    ("x[..., :50]", "8, 100", "0.0 - 1.0", "outside"),    # negative
])
def test_windows_outside_the_tensor_are_named(tmp_path: Path, forward: str, shape: str, col: str,
                                              why: str) -> None:
    task = _task(tmp_path, forward, f"torch.randn({shape})")
    out = _run(task, ROWS.format(dt="f32", body=f"load_slice(x, t, {col})"))
    assert out.status != Status.OK and "load_slice" in out.message and why in out.message, out.message


def test_rows_that_do_not_divide_are_named(tmp_path: Path) -> None:
    """x has 3 * 7 elements, the loop 2 rows: no pitch."""
    src = ROWS.replace("rows(y, rows=R)", "rows(y, rows=R, dims=1)").format(dt="f32", body="load_slice(x, t, 0)")
    task = _task(tmp_path, "x.reshape(-1)[:6].reshape(2, 3) + y", "torch.randn(3, 7), torch.randn(2, 3)", "x, y")
    src = src.replace("def k(x: In[f32], y: Out[f32]):", "def k(x: In[f32], z: In[f32], y: Out[f32]):")
    out = _run(task, src)
    assert out.status != Status.OK and "whole number of the loop's 2 rows" in out.message, out.message


@pytest.mark.parametrize("body,why", [
    ("load_slice(x, t, load(x, t))", "host scalar"),
    ("load_slice(x, c, 0)", "expected a loop variable"),
])
def test_misuse_is_a_dsl_error(body: str, why: str) -> None:
    with pytest.raises(DslError, match=why):
        check_program(parse(ROWS.format(dt="f32", body=body)))


def test_not_in_a_slabs_loop() -> None:
    src = '''
@kernel
def k(x: In[f32], y: Out[f32]):
    for t in slabs(x, dim=1, tile=256):
        acc = tile_fill(0.0)
        for s in steps(t):
            acc = acc + load_slice(x, s, 0)
        store(y, t, acc)
'''
    with pytest.raises(DslError, match="plain rows loop"):
        check_program(parse(src))


def test_strided_windows_cost_their_bursts(tmp_path: Path) -> None:
    """The same 1024 x 2048 fp32 read (8 MiB, memory-bound) three ways: contiguous, as a window
    of 512 B-aligned rows (pitch 4096), and as a window at column 3 of rows of 2055 (every burst
    unaligned). The model prices each burst's alignment, so only the unaligned window is slower."""
    contiguous = _run(_task(tmp_path, "x * 2", "torch.randn(1024, 2048)"),
                      ROWS.format(dt="f32", body="load(x, t) * 2.0").replace("rows(y", "rows(x"), True)
    aligned = _run(_task(tmp_path, "x[:, 2048:] * 2", "torch.randn(1024, 4096)"),
                   ROWS.format(dt="f32", body="load_slice(x, t, 2048) * 2.0"), True)
    ragged = _run(_task(tmp_path, "x[:, 3:2051] * 2", "torch.randn(1024, 2055)"),
                  ROWS.format(dt="f32", body="load_slice(x, t, 3) * 2.0"), True)
    for o in (contiguous, aligned, ragged):
        assert o.status == Status.OK and o.time_us, o.message
    assert aligned.time_us <= contiguous.time_us * 1.02, (aligned.time_us, contiguous.time_us)
    assert ragged.time_us > contiguous.time_us * 1.05, (ragged.time_us, contiguous.time_us)
