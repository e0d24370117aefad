"""``for c in chunks(t, CHUNK, hold=H)``: the first H chunks of each row tile that the loop loads
stay in UB, and every later chunks loop of the tile reads them from there instead of copying
them from GM again (rows too wide for UB are read twice by a softmax or a norm; a hold of half a
256 KiB row saves half the second read). Run in the emulator against PyTorch: fp32, fp16 and bf16
inputs, a ragged last chunk and row tile, a hold larger than the row, three passes over the
held chunks (none may write over them); misuse is a DslError; the recipes offer it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from ascendcraft.dsl.checker import check_program
from ascendcraft.dsl.kernel import prepare as dsl_prepare
from ascendcraft.dsl.parser import DslError, parse
from ascendcraft.search.builtin import propose
from kernel_runs import inline_task

from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from ascendcraft.tasks import get_task

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed")

# three passes over x: the max, the sum of exp, the output; the first keeps HOLD chunks
SOFTMAX3 = '''
@kernel
def k(x: In[{dt}], y: Out[{dt}]):
    ROWS = tunable(choice(1, 2, 3, 4), default={rows})
    CHUNK = tunable(pow2(64, 4096), default=64)
    HOLD = tunable(choice(1, 2, 3, 8), default={hold})
    for t in rows(x, rows=ROWS):
        m = row_fill(-inf)
        for c in chunks(t, CHUNK, hold=HOLD):
            m = maximum(m, row_max(cast(load(x, c), f32)))
        s = row_fill(0.0)
        for c in chunks(t, CHUNK):
            s = s + row_sum(exp(cast(load(x, c), f32) - m))
        for c in chunks(t, CHUNK):
            store(y, c, cast(exp(cast(load(x, c), f32) - m) / s, {dt}))
'''


@pytest.mark.parametrize("dt,tdt,rows,hold", [
    ("f32", "torch.float32", 2, 2),  # 200 columns: chunks of 64, 64, 64, 8; two kept
    ("f32", "torch.float32", 3, 8),  # every chunk kept (8 > 4); 7 rows in tiles of 3
    ("f16", "torch.float16", 2, 3),
    ("bf16", "torch.bfloat16", 1, 1),
])
@needs_gxx
def test_held_chunks_serve_every_later_pass(tmp_path: Path, dt: str, tdt: str, rows: int, hold: int) -> None:
    task = inline_task(tmp_path, "torch.softmax(x.float(), -1).to(x.dtype)", f"torch.randn(7, 200, dtype={tdt}) * 3", "x")
    ev = Evaluator(task, "Ascend910B2", seeds=(0, 1), shape_sets=[list(task.shapes)])
    out = ev.evaluate(prepare("k", SOFTMAX3.format(dt=dt, rows=rows, hold=hold)), {}, timing=False)
    assert out.status == Status.OK, out.message


def test_later_passes_read_the_kept_chunks() -> None:
    [launch] = dsl_prepare("k", SOFTMAX3.format(dt="f32", rows=2, hold=2)).lower({}).launches
    text = launch.source
    assert text.count("if (c0 < td_.holdChunks * td_.chunk) {  // kept for the later passes") == 1
    assert text.count("// kept by the first pass: no copy") == 2  # the sum and the output passes
    assert "FreeTensor(" in text and "if (!kept" in text  # a copied chunk is freed, a kept one not


@pytest.mark.parametrize("head,why", [
    ("for c in chunks(t, 64, hold=2, reverse=True):", "no reverse= or parts="),
    ("for c in chunks(t, 64, hold=2, parts=2):", "no reverse= or parts="),
    ("for c in chunks(t, 64, hold=HOLDX):", "not a declared tunable"),
])
def test_misuse_is_a_dsl_error(head: str, why: str) -> None:
    src = f'''
@kernel
def k(x: In[f32], y: Out[f32]):
    for t in rows(x, rows=2):
        s = row_fill(0.0)
        {head}
            s = s + row_sum(load(x, c))
        store(y, t, s)
'''
    with pytest.raises(DslError, match=why):
        check_program(parse(src))


def test_not_in_strided_rows() -> None:
    src = '''
@kernel
def k(x: In[f32], y: Out[f32]):
    for t in rows(x, rows=1, axis=1):
        s = row_fill(0.0)
        for c in chunks(t, 64, hold=2):
            s = s + row_sum(load(x, c))
        store(y, t, s)
'''
    with pytest.raises(DslError, match="hold=H"):
        dsl_prepare("k", src).lower({})


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "instance_norm"])
@needs_gxx
def test_recipes_offer_the_held_form_for_rows_wider_than_ub(op: str) -> None:
    """Rows of 65536 fp32 (256 KiB): the held form is offered and models faster than the
    two-read one at the default shape (modeled)."""
    task = get_task(op)
    cands = {c.name.split("/")[1]: c for c in propose(task)}
    plain = "online" if op.endswith("softmax") else "onepass"
    assert f"{plain}_hold" in cands and "hold=HOLD" in cands[f"{plain}_hold"].source
    ev = Evaluator(task, "Ascend910B2", seeds=(0,))
    us = {}
    for kind in (plain, f"{plain}_hold"):
        prep = prepare(kind, cands[kind].source)
        assert ev.feasible(prep, prep.defaults()) is None
        us[kind] = ev.time(ev.build(prep, prep.defaults()))["modeled_us"]
    assert us[f"{plain}_hold"] < 0.97 * us[plain], us


@needs_gxx
def test_graph_frontend_offers_it_for_wide_rows() -> None:
    """Logits minus their logsumexp over [384, 24001] (rows too wide for UB): the two-pass chunked programs get a
    held twin that passes and models faster; a LayerNorm with a weight (a column operand read a
    chunk a tile) gets none, nor do rows that fit UB."""
    from ascendcraft.search.graph import propose_from_graph
    from kernel_runs import assert_all_pass

    from ascendcraft.tasks.taskfile import load_task_file

    corpus = Path(__file__).parent / "taskfiles" / "corpus"
    task = load_task_file(corpus / "logprob_minus_lse_wide.py")
    cands = {c.name.split("/graph-")[1]: c for c in propose_from_graph(task)}
    assert {"chunked_hold", "chunked-online_hold"} <= set(cands), sorted(cands)
    assert_all_pass(task, [cands["chunked-online"], cands["chunked-online_hold"]])
    ev = Evaluator(task, "Ascend910B2", seeds=(0,))
    us = {k: ev.time(ev.build(p, p.defaults()))["modeled_us"]
          for k in ("chunked-online", "chunked-online_hold") for p in [prepare(k, cands[k].source)]}
    assert us["chunked-online_hold"] < 0.95 * us["chunked-online"], us
    for stem in ("big_layernorm_4gib_fp16", "softmax_tensor_temp"):
        names = [c.name for c in propose_from_graph(load_task_file(corpus / f"{stem}.py"))]
        assert not any(n.endswith("_hold") for n in names), names
