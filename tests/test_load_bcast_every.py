"""Per-channel operands repeated along whole rows: ``load_bcast_every(v, t, d)`` (column ``c`` of
every row reads ``v[(c // d) % numel(v)]``, built once per core) run in the emulator against
PyTorch - rows that are whole [C, L] planes of [N, C, L] at odd sizes (runs off the 32 B
alignment), fp16; misuse is a DslError naming the reason; the graph frontend offers it for
per-channel work over short rows (an eval BatchNorm1d over [N, C, 8] read per row was
scalar-bound), beside the per-row forms, and every candidate is right."""

from __future__ import annotations

from pathlib import Path

import pytest
from ascendcraft.dsl.checker import check_program
from ascendcraft.dsl.kernel import prepare as dsl_prepare
from ascendcraft.dsl.parser import DslError, parse
from ascendcraft.search.graph import propose_from_graph

from ascendcraft.status import Status
from tests.kernel_runs import assert_all_pass, evaluate_at_task_shapes, inline_task

KERNEL = '''
@kernel
def k(x: In[{dt}], w: In[{dt}], b: In[{dt}], y: Out[{dt}]):
    R = tunable(span(1, 64, 1), default=3)
    for t in rows(x, rows=R, dims=2):
        store(y, t, {body})
'''
F32 = "load(x, t) * load_bcast_every(w, t, {d}) + load_bcast_every(b, t, {d})"
F16 = ("cast(cast(load(x, t), f32) * cast(load_bcast_every(w, t, {d}), f32) "
       "+ cast(load_bcast_every(b, t, {d}), f32), f16)")


@pytest.mark.parametrize("dt, shape, d, ok", [
    ("f32", "5, 7, 3", "size(x, 2)", True),  # runs of 3 f32: most start off a 32 B block
    ("f16", "4, 9, 13", "size(x, 2)", True),  # runs of 13 fp16
    ("f32", "6, 32, 8", "size(x, 2)", True),  # runs of one 32 B block (Brcb)
    ("f16", "3, 16, 16", "size(x, 2)", True),  # runs of one 32 B block of fp16 (Brcb)
    ("f32", "6, 32, 8", "size(x, 2) * 2.0", False),  # the Brcb path checks d too
    ("f32", "5, 7, 3", "size(x, 2) + 1.0", False),  # the wrong divisor is caught
])
def test_repeated_rows_match_pytorch(tmp_path: Path, dt: str, shape: str, d: str, ok: bool) -> None:
    tdt = {"f32": "torch.float32", "f16": "torch.float16"}[dt]
    c = int(shape.split(",")[1])
    task = inline_task(tmp_path, "x * w.view(1, -1, 1) + b.view(1, -1, 1)",
                       f"torch.randn({shape}, dtype={tdt}), torch.randn({c}, dtype={tdt}), "
                       f"torch.randn({c}, dtype={tdt})", "x, w, b")
    out = evaluate_at_task_shapes(task, KERNEL.format(dt=dt, body=(F32 if dt == "f32" else F16).format(d=d)))
    assert out.status == (Status.OK if ok else Status.WRONG), out.message


@pytest.mark.parametrize("body, why", [
    ("for t in tiles(x, tile=64):\n        store(y, t, load(x, t) * load_bcast_every(w, t, 2.0))",
     "belongs to a plain rows loop"),
    ("for t in rows(x, rows=2):\n        for c in chunks(t, 16):\n"
     "            store(y, c, load(x, c) * load_bcast_every(w, t, 2.0))", "without column chunks"),
    ("for t in rows(x, rows=2):\n        store(y, t, load(x, t) * load_bcast_every(w, t, row_sum(load(x, t))))",
     "host scalar"),
])
def test_misuse_is_named(body: str, why: str) -> None:
    src = f"@kernel\ndef k(x: In[f32], w: In[f32], y: Out[f32]):\n    {body}\n"
    with pytest.raises(DslError, match=why):
        check_program(parse(src))


def test_graph_frontend_offers_repeated_rows_for_short_channel_rows(tmp_path: Path) -> None:
    """x * gamma[1, C, 1] + shift over [N, C, 12] in fp16: besides rows of 12 with a per-row value,
    rows of whole [C, 12] planes with the operands repeated along them; all candidates right."""
    task = inline_task(tmp_path, "x * (g.view(1, -1, 1) * 0.5) + s.view(1, -1, 1)",
                       "torch.randn(40, 6, 12, dtype=torch.float16), torch.randn(6, dtype=torch.float16), "
                       "torch.randn(6, dtype=torch.float16)", "x, g, s")
    cands = propose_from_graph(task)
    rep = [c for c in cands if "load_bcast_every(" in c.source]
    assert rep and all("dims=2" in c.source and "chunks(" not in c.source for c in rep)
    assert any("load_per_row(" in c.source for c in cands)
    assert_all_pass(task, cands)


KERNEL3 = '''
@kernel
def k(x: In[f32], w: In[f32], y: Out[f32]):
    for t in rows(x, rows=2, dims=3):
        store(y, t, load(x, t) * load_bcast_every(w, t, size(x, 3)))
'''


@pytest.mark.parametrize("c", [8, 5, 4])
def test_a_row_of_several_periods(tmp_path: Path, c: int) -> None:
    """Rows of [3, C, 8] planes: the row holds three periods of v. Runs of one 32 B block take
    the Brcb path, v copied in once a period when a period is whole 32 B (C = 8); C = 5 and 4
    (20 B, 16 B) fall back to a scalar read and a Duplicate a run. All match PyTorch."""
    task = inline_task(tmp_path, "x * w.view(1, 1, -1, 1)", f"torch.randn(4, 3, {c}, 8), torch.randn({c})", "x, w")
    out = evaluate_at_task_shapes(task, KERNEL3)
    assert out.status == Status.OK, out.message
    [launch] = dsl_prepare("k", KERNEL3).lower({}).launches
    assert "AcxBrcbRows(" in launch.source and "Duplicate(" in launch.source  # both paths, chosen at run time
