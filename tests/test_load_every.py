"""Per-channel operands inside rows: ``load_every(v, at, d)`` (the element of flat index ``f``
reads ``v[(f // d) % numel(v)]``) run in the emulator against PyTorch - group rows of NCHW at
odd spatial sizes (runs that start off the 32 B alignment, chunks that cross runs), fp16, runs
longer than a row; misuse is a DslError naming the reason; the graph frontend reads GroupNorm's
affine weight and bias that way, also when the channel count equals the number of group rows."""

from __future__ import annotations

from pathlib import Path

import pytest
from ascendcraft.dsl.checker import check_program
from ascendcraft.dsl.parser import DslError, parse
from ascendcraft.search.graph import propose_from_graph

from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from tests.kernel_runs import evaluate_at_task_shapes, inline_task

_run = evaluate_at_task_shapes


KERNEL = '''
@kernel
def k(x: In[{dt}], w: In[{dt}], b: In[{dt}], y: Out[{dt}]):
    R = tunable(span(1, 64, 1), default={rows})
    CH = tunable(pow2(16, 4096), default={chunk})
    for t in rows(x, rows=R{loop}):
        for c in chunks(t, CH):
            store(y, c, {body})
'''
F32 = "load(x, c) * load_every(w, c, {d}) + load_every(b, c, {d})"
F16 = "cast(cast(load(x, c), f32) * cast(load_every(w, c, {d}), f32) + cast(load_every(b, c, {d}), f32), f16)"


@pytest.mark.parametrize("dt,shape,loop,d,view,rows,chunk", [
    # group rows of NCHW, H * W = 37: runs start off the 32 B alignment, chunks of 64 cross them
    ("f32", "2, 6, 1, 37", ", dims=3, groups=3", "size(x, 2) * size(x, 3)", "view(1, -1, 1, 1)", 1, 64),
    # fp16 (16 elements a 32 B block), several rows a tile, a chunk wider than the row
    ("f16", "3, 8, 5, 7", ", dims=3, groups=2", "size(x, 2) * size(x, 3)", "view(1, -1, 1, 1)", 3, 512),
    # plain rows over [N*C, L]-like rows with runs longer than a row (one value per 3 rows)
    ("f32", "4, 5, 3, 40", "", "size(x, 2) * size(x, 3)", "view(1, -1, 1, 1)", 4, 32),
])
def test_runs_match_pytorch(tmp_path: Path, dt: str, shape: str, loop: str, d: str, view: str, rows: int,
                            chunk: int) -> None:
    tdt = {"f32": "torch.float32", "f16": "torch.float16"}[dt]
    c = int(shape.split(",")[1])
    task = inline_task(tmp_path, f"x * w.{view} + b.{view}",
                 f"torch.randn({shape}, dtype={tdt}), torch.randn({c}, dtype={tdt}), "
                 f"torch.randn({c}, dtype={tdt})", "x, w, b")
    body = (F32 if dt == "f32" else F16).format(d=d)
    out = _run(task, KERNEL.format(dt=dt, rows=rows, chunk=chunk, loop=loop, body=body))
    assert out.status == Status.OK, out.message


@pytest.mark.parametrize("loop,at,d,msg", [
    ("rows(x, rows=1, axis=1)", "c", "4.0", "belongs to a rows loop"),
    ("rows(x, rows=2)", "t", "4.0", "is at the chunk"),
    ("rows(x, rows=2)", "c", "row_sum(load(x, c))", "d is a host scalar"),
])
def test_misuse_is_named(loop: str, at: str, d: str, msg: str) -> None:
    src = (f"@kernel\ndef k(x: In[f32], w: In[f32], y: Out[f32]):\n    for t in {loop}:\n"
           f"        for c in chunks(t, 64):\n            store(y, c, load(x, c) * load_every(w, {at}, {d}))\n")
    with pytest.raises(DslError, match=msg):
        check_program(parse(src))


def test_group_norm_affine_from_the_graph(tmp_path: Path) -> None:
    """F.group_norm with gamma / beta passed in: 8 channels in 4 groups of a [2, 8, 3, 11] input,
    so the channel count equals the number of group rows (2 x 4) and gamma must still be read
    inside the rows, not as one value per row."""
    task = inline_task(tmp_path, "torch.nn.functional.group_norm(x, 4, g, b, eps=1e-5)",
                 "torch.randn(2, 8, 3, 11), torch.rand(8) + 0.5, torch.randn(8)", "x, g, b")
    cands = propose_from_graph(task)
    assert cands and all("load_every(g, " in c.source for c in cands)
    for c in cands:
        out = Evaluator(task, "Ascend910B2", seeds=(0,), shape_sets=[list(task.shapes)]).evaluate(
            prepare(c.name, c.source), {}, timing=False)
        assert out.status == Status.OK, (c.name, out.message)
