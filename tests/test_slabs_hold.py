"""``slabs(x, dim=a, tile=T, hold=True)``: every step of a tile copied once, in one strided copy,
and kept in UB for every steps loop of the body, so a middle-axis norm or softmax reads x once
instead of once a pass. Run in the emulator against PyTorch: per-step weights (built once a
core), fp16 inputs, signed data far from zero, ragged last tiles, one step, every queue depth,
an argmax's index, an operand loaded at the slab; a block too big for UB is a named budget
error; misuse is a DslError; the graph frontend offers it (``slabs_hold``) and its candidates
pass on the corpus files it serves."""

from __future__ import annotations

from pathlib import Path

import pytest
from ascendcraft.dsl.checker import check_program
from ascendcraft.dsl.kernel import prepare as dsl_prepare
from ascendcraft.dsl.parser import DslError, parse
from ascendcraft.search.graph import propose_from_graph
from kernel_runs import assert_all_pass, inline_task

from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from ascendcraft.tasks.taskfile import load_task_file

CORPUS = Path(__file__).parent / "taskfiles" / "corpus"

NORM = '''
@kernel
def k(x: In[{xt}], w: In[{wt}], b: In[{wt}], y: Out[{xt}]):
    TILE = tunable(pow2(64, 32768), default={tile})
    DEPTH = tunable(choice(1, 2, 3), default=3)
    for t in slabs(x, dim=1, tile=TILE, hold=True, depth=DEPTH):
        s = tile_fill(0.0)
        for k in steps(t):
            s = s + cast(load(x, k), f32)
        m = s / width(t)
        q = tile_fill(0.0)
        for k in steps(t):
            d = cast(load(x, k), f32) - m
            q = q + d * d
        r = rsqrt(q / width(t) + 1e-5)
        for k in steps(t):
            store(y, k, cast((cast(load(x, k), f32) - m) * r * load_step(w, k) + load_step(b, k), {xt}))
'''

NORM_FORWARD = ("((x.float() - x.float().mean(1, keepdim=True)) * torch.rsqrt(x.float().var(1, keepdim=True, "
                "unbiased=False) + 1e-5) * w.float()[:, None] + b.float()[:, None]).to(x.dtype)")


def _evaluate(tmp_path: Path, src: str, forward: str, inputs: str, args: str, params: dict | None = None):
    task = inline_task(tmp_path, forward, inputs, args)
    ev = Evaluator(task, "Ascend910B2", seeds=(0, 1), shape_sets=[list(task.shapes)])
    return ev.evaluate(prepare("k", src), params or {}, timing=False)


@pytest.mark.parametrize("xt,wt,depth", [("f32", "f32", 3), ("f32", "f16", 2), ("f16", "f32", 1),
                                         ("f16", "f16", 3)])
def test_a_channel_norm_reads_x_once_and_is_right(tmp_path: Path, xt: str, wt: str, depth: int) -> None:
    """[A, K, B] = [3, 37, 50], data 20 sigma off zero: a block of 512 elements holds 37 steps of
    8 (fp16: 16) positions, so B = 50 ends in a ragged tile whose rows keep the full stride."""
    tt = {"f32": "torch.float32", "f16": "torch.float16"}
    inputs = (f"(torch.randn(3, 37, 50) * 3 + 20).to({tt[xt]}), torch.randn(37, dtype={tt[wt]}), "
              f"torch.randn(37, dtype={tt[wt]})")
    out = _evaluate(tmp_path, NORM.format(xt=xt, wt=wt, tile=512), NORM_FORWARD, inputs, "x, w, b",
                    {"DEPTH": depth})
    assert out.status == Status.OK, out.message


def test_one_step_and_one_position_tiles(tmp_path: Path) -> None:
    out = _evaluate(tmp_path, NORM.format(xt="f32", wt="f32", tile=64), NORM_FORWARD,
                    "torch.randn(2, 1, 19), torch.randn(1), torch.randn(1)", "x, w, b")
    assert out.status == Status.OK, out.message


def test_the_block_is_copied_once_a_tile() -> None:
    src = NORM.format(xt="f32", wt="f32", tile=512)
    [launch] = dsl_prepare("k", src).lower({}).launches
    text = launch.source
    # x: every step at once, read by all three passes; no other copy in
    assert text.count("CopyRowsIn(hold") == 1 and "CopyRowsIn(ld" not in text, text
    assert "FreeTensor(hold" in text
    assert text.count("if (j == 0) {  // this core's first tile") == 2  # w and b, once a core


SOFTMAX = '''
@kernel
def k(x: In[{xt}], y: Out[{xt}]):
    TILE = tunable(pow2(64, 32768), default=1024)
    for t in slabs(x, dim=1, tile=TILE, hold=True):
        m = tile_fill(-inf)
        for k in steps(t):
            m = maximum(m, cast(load(x, k), f32))
        s = tile_fill(0.0)
        for k in steps(t):
            s = s + exp(cast(load(x, k), f32) - m)
        for k in steps(t):
            store(y, k, cast(exp(cast(load(x, k), f32) - m) / s, {xt}))
'''


@pytest.mark.parametrize("xt,shape", [("f32", "4, 21, 130"), ("f16", "2, 5, 300")])
def test_a_softmax_over_channels(tmp_path: Path, xt: str, shape: str) -> None:
    dt = "torch.float16" if xt == "f16" else "torch.float32"
    out = _evaluate(tmp_path, SOFTMAX.format(xt=xt), "torch.softmax(x.float(), 1).to(x.dtype)",
                    f"(torch.randn({shape}) * 30 - 50).to({dt})", "x")
    assert out.status == Status.OK, out.message


ARGMAX = '''
@kernel
def k(x: In[f32], z: In[f32], i: Out[f32], v: Out[f32]):
    TILE = tunable(pow2(64, 32768), default=256)
    for t in slabs(x, dim=1, tile=TILE, hold=True):
        m = tile_fill(-inf)
        ix = tile_fill(0.0)
        for k in steps(t):
            a = load(x, k)
            ix = where(a > m, position(k), ix)
            m = maximum(m, a)
        store(i, t, ix)
        store(v, t, m - load(z, t))
'''


def test_an_argmax_with_ties_keeps_the_first_index(tmp_path: Path) -> None:
    """Rounded data ties often; the index is the first step holding the max; ``load(z, t)`` at
    the slab (an [A, B] operand) is one row repeated over the held block's rows."""
    out = _evaluate(tmp_path, ARGMAX, "(x.argmax(1).float(), x.amax(1) - z)",
                    "torch.randn(3, 23, 70).round(), torch.randn(3, 70)", "x, z")
    assert out.status == Status.OK, out.message


def test_a_block_bigger_than_ub_is_a_named_budget_error(tmp_path: Path) -> None:
    """4000 steps of 8 positions: every buffer is 4000 x 8 fp32, far over 184 KiB."""
    task = inline_task(tmp_path, "torch.softmax(x, 1)", "torch.randn(2, 4000, 16)", "x")
    ev = Evaluator(task, "Ascend910B2", seeds=(0,), shape_sets=[list(task.shapes)])
    why = ev.feasible(prepare("k", SOFTMAX.format(xt="f32")), {})
    assert why and "UB budget exceeded" in why, why


@pytest.mark.parametrize("loop,why", [
    ("slabs(x, dim=1, tile=64, rows=4, hold=True)", "no rows=, flat=, block_max= or split="),
    ("slabs(x, dim=1, tile=64, hold=1)", r"slabs\(hold=\.\.\.\) is True or False"),
    ("rows(x, rows=4, hold=True)", "has no argument 'hold'"),
])
def test_misuse_is_a_dsl_error(loop: str, why: str) -> None:
    src = f'''
@kernel
def k(x: In[f32], y: Out[f32]):
    for t in {loop}:
        store(y, t, load(x, t))
'''
    with pytest.raises(DslError, match=why):
        check_program(parse(src))


@pytest.mark.parametrize("name", ["timm_layernorm2d_permute", "seg_softmax_over_classes",
                                  "convnext_ln_channels_first", "channel_logsoftmax_tau_bf16"])
def test_the_graph_frontend_offers_it_and_it_passes(name: str) -> None:
    task = load_task_file(CORPUS / f"{name}.py")
    held = [c for c in propose_from_graph(task) if c.name.endswith("graph-slabs_hold")]
    assert len(held) == 1 and "hold=True" in held[0].source
    assert_all_pass(task, held)


def test_not_offered_for_a_long_reduced_axis(tmp_path: Path) -> None:
    task = inline_task(tmp_path, "x.sum(1)", "torch.randn(2, 600, 40)", "x")
    assert not any(c.name.endswith("slabs_hold") for c in propose_from_graph(task))
