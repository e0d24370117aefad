"""Row indices in a rows loop: ``row_position(t, d, n)`` (row ``g`` of the tile takes ``(g // d) %
n`` as f32) run in the emulator against PyTorch - a causal mask over [B, T, S] (T != S, tiles of
rows that cross the matrices' borders), the channel index of NCHW rows in fp16, a divisor that is
not a whole number stopping the kernel; misuse is a DslError naming the reason; the graph
frontend writes triu / tril (and masks built from them in forward) with it."""

from __future__ import annotations

from pathlib import Path

import pytest
from ascendcraft.dsl.checker import check_program
from ascendcraft.dsl.parser import DslError, parse
from ascendcraft.search.graph import propose_from_graph

from ascendcraft.status import Status
from tests.kernel_runs import assert_all_pass, evaluate_at_task_shapes, inline_task

_run = evaluate_at_task_shapes


CAUSAL = '''
@kernel
def k(x: In[f32], y: Out[f32]):
    R = tunable(span(1, 64, 1), default={rows})
    CH = tunable(pow2(16, 4096), default=16)
    for t in rows(x, rows=R):
        for c in chunks(t, CH):
            store(y, c, where(position(c) {cmp} (tile_fill(0.0) + row_position(t, 1.0, size(x, 1))),
                              tile_fill(-5.0), load(x, c)))
'''


@pytest.mark.parametrize("rows", [1, 5, 64])
def test_causal_mask_matches_pytorch(tmp_path: Path, rows: int) -> None:
    """[3, 37, 45]: 111 rows, tiles of 5 or 64 rows cross the matrices' borders (row g is row
    g % 37 of its matrix); 45 columns in chunks of 16."""
    task = inline_task(tmp_path, "x.masked_fill(torch.ones(x.shape[-2], x.shape[-1], dtype=torch.bool)"
                       ".triu(1), -5.0)", "torch.randn(3, 37, 45)", "x")
    out = _run(task, CAUSAL.format(rows=rows, cmp=">"))
    assert out.status == Status.OK, out.message
    wrong = _run(task, CAUSAL.format(rows=rows, cmp=">="))  # the diagonal masked too: caught
    assert wrong.status == Status.WRONG


CHANNEL = '''
@kernel
def k(x: In[f16], y: Out[f16]):
    for t in rows(x, rows=7):
        store(y, t, cast(cast(load(x, t), f32) * (tile_fill(0.0) + row_position(t, {d}, {n})), f16))
'''


def test_index_along_an_outer_row_dim_fp16(tmp_path: Path) -> None:
    """NCHW [2, 3, 5, 8] as 30 rows of 8: the channel of row g is (g // H) % C."""
    task = inline_task(tmp_path, "x * torch.arange(3, dtype=x.dtype).view(1, 3, 1, 1)",
                       "torch.randn(2, 3, 5, 8, dtype=torch.float16)", "x")
    out = _run(task, CHANNEL.format(d="size(x, 2)", n="size(x, 1)"))
    assert out.status == Status.OK, out.message


def test_a_divisor_that_is_not_a_whole_number_stops_the_kernel(tmp_path: Path) -> None:
    task = inline_task(tmp_path, "x * 2.0", "torch.randn(2, 3, 5, 8, dtype=torch.float16)", "x")
    out = _run(task, CHANNEL.format(d="size(x, 2) / 2.0", n="size(x, 1)"))
    assert out.status not in (Status.OK, Status.WRONG), out.status
    assert "trap" in out.message.lower(), out.message


@pytest.mark.parametrize("body, why", [
    ("for t in tiles(x, tile=64):\n        store(y, t, load(x, t) + row_position(t, 1.0, 4.0))",
     "belongs to a plain rows loop"),
    ("for t in rows(x, rows=2):\n        for c in chunks(t, 16):\n"
     "            store(y, c, load(x, c) + row_position(c, 1.0, 4.0))", "use the rows variable"),
    ("for t in rows(x, rows=2):\n        store(y, t, load(x, t) + row_position(t, row_sum(load(x, t)), 4.0))",
     "host scalars"),
    ("for t in rows(x, rows=2):\n        store(y, t, load(x, t) + row_position(t, 1.0))", "takes 3 arguments"),
])
def test_misuse_is_named(body: str, why: str) -> None:
    src = f"@kernel\ndef k(x: In[f32], y: Out[f32]):\n    {body}\n"
    with pytest.raises(DslError, match=why):
        check_program(parse(src))


def test_graph_frontend_writes_triangles_with_row_indices(tmp_path: Path) -> None:
    """torch.triu / torch.tril of data (a band of a non-square fp16 batch, diagonals -1 and 3)
    become comparisons of position(t) and row_position(t, ...): no mask tensor, every candidate
    right at the reduced shapes and at the task's own."""
    task = inline_task(tmp_path, "torch.tril(torch.triu(x, diagonal=-1), 3) * 2.0",
                       "torch.randn(4, 40, 23, dtype=torch.float16)", "x")
    cands = propose_from_graph(task)
    assert cands and all("row_position(t, 1.0, size(x, 1))" in c.source for c in cands)
    assert_all_pass(task, cands)
    assert_all_pass(task, cands, seeds=(0,), at_task_shape=True)


def test_arange_views_keep_the_dim_they_walk(tmp_path: Path) -> None:
    """torch.arange(T)[:, None] is a row index and arange(S)[None, :] a column index (a view of an
    index renumbers the dim it walks), so the two sides of a causal comparison are not confused;
    a reshape that moves the index's elements is refused, named."""
    task = inline_task(tmp_path, "torch.where(torch.arange(x.shape[-2])[:, None] >= "
                       "torch.arange(3, x.shape[-1] + 3)[None, :], x, 0.5)", "torch.randn(2, 9, 13)", "x")
    cands = propose_from_graph(task)
    assert cands and all("row_position(t, 1.0, size(x, 1))" in c.source for c in cands)
    assert_all_pass(task, cands)
    moved = inline_task(tmp_path, "x * torch.arange(60).view(6, 10)", "torch.randn(4, 6, 10)", "x")
    with pytest.raises(Exception, match="a reshape of an index"):
        propose_from_graph(moved)
    shifted = inline_task(tmp_path, "x * (torch.arange(x.shape[1]) + 1)[:, None]", "torch.randn(4, 6, 6)", "x")
    with pytest.raises(Exception, match="moves the dim it walks"):
        propose_from_graph(shifted)
