"""``load_step(v, k)``: one value per step of a slabs loop's reduced axis (a per-channel weight
of a norm over channels, ConvNeXt's channels-first LayerNorm), run in the emulator against
PyTorch in the plain and the blocked (``rows=R``) steps loops, fp16 weights and a ragged last
block; a weight shorter than the axis stops the kernel; misuse is a DslError. The graph frontend
reads such operands per step (form ``k``) in its slabs structures."""

from __future__ import annotations

from pathlib import Path

import pytest
from ascendcraft.dsl.checker import check_program
from ascendcraft.dsl.parser import DslError, parse
from ascendcraft.search.graph import propose_from_graph
from kernel_runs import assert_all_pass, inline_task

from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from ascendcraft.tasks.taskfile import load_task_file

HERE = Path(__file__).parent / "taskfiles"

NORM = '''
@kernel
def k(x: In[f32], w: In[{wt}], b: In[{wt}], y: Out[f32]):
    TILE = tunable(pow2(32, 4096), default={tile})
{rows_tun}    for t in slabs(x, dim=1, tile=TILE{rows}):
        s = tile_fill(0.0)
        for k in steps(t):
            s = s + load(x, k)
        m = s / width(t)
        q = tile_fill(0.0)
        for k in steps(t):
            d = load(x, k) - m
            q = q + d * d
        r = rsqrt(q / width(t) + 1e-5)
        for k in steps(t):
            store(y, k, (load(x, k) - m) * r * load_step(w, k) + load_step(b, k))
'''

FORWARD = ("(x - x.mean(1, keepdim=True)) * torch.rsqrt(x.var(1, keepdim=True, unbiased=False) + 1e-5)"
           " * w.float()[:, None] + b.float()[:, None]")


def _run(tmp_path: Path, src: str, inputs: str):
    task = inline_task(tmp_path, FORWARD, inputs, "x, w, b")
    ev = Evaluator(task, "Ascend910B2", seeds=(0, 1), shape_sets=[list(task.shapes)])
    return ev.evaluate(prepare("k", src), {}, timing=False)


@pytest.mark.parametrize("wt,blocked", [("f32", False), ("f32", True), ("f16", False), ("f16", True)])
def test_a_channel_norm_with_per_step_weights(tmp_path: Path, wt: str, blocked: bool) -> None:
    """[A, K, B] = [3, 37, 50]: 37 steps in blocks of 8 (a ragged last block of 5)."""
    torch_wt = "torch.float16" if wt == "f16" else "torch.float32"
    src = NORM.format(wt=wt, tile=64, rows=", rows=ROWS" if blocked else "",
                      rows_tun="    ROWS = tunable(pow2(1, 64), default=8)\n" if blocked else "")
    inputs = f"torch.randn(3, 37, 50), torch.randn(37, dtype={torch_wt}), torch.randn(37, dtype={torch_wt})"
    out = _run(tmp_path, src, inputs)
    assert out.status == Status.OK, out.message


@pytest.mark.parametrize("blocked", [False, True])
def test_a_weight_shorter_than_the_axis_stops_the_kernel(tmp_path: Path, blocked: bool) -> None:
    src = NORM.format(wt="f32", tile=64, rows=", rows=ROWS" if blocked else "",
                      rows_tun="    ROWS = tunable(pow2(1, 64), default=8)\n" if blocked else "")
    task = inline_task(tmp_path, "x * w.sum() + b.sum()", "torch.randn(3, 37, 50), torch.randn(30), torch.randn(30)",
                       "x, w, b")
    out = Evaluator(task, "Ascend910B2", seeds=(0,), shape_sets=[list(task.shapes)]).evaluate(
        prepare("k", src), {}, timing=False)
    assert out.status != Status.OK and "Trap" in out.message, out.message


@pytest.mark.parametrize("body,why", [
    ("store(y, t, load_step(w, t))", "at the steps variable of a slabs loop"),
])
def test_misuse_is_a_dsl_error(body: str, why: str) -> None:
    src = f'''
@kernel
def k(x: In[f32], w: In[f32], y: Out[f32]):
    for t in slabs(x, dim=1, tile=64):
        {body}
'''
    with pytest.raises(DslError, match=why):
        check_program(parse(src))


def test_not_in_a_rows_loop() -> None:
    src = '''
@kernel
def k(x: In[f32], w: In[f32], y: Out[f32]):
    for t in rows(x, rows=4):
        store(y, t, load(x, t) * load_step(w, t))
'''
    with pytest.raises(DslError, match="steps variable of a slabs loop"):
        check_program(parse(src))


@pytest.mark.parametrize("name", ["convnext_ln_channels_first", "rmsnorm2d_gain_fp16"])
def test_channel_norms_with_per_channel_weights(name: str) -> None:
    """ConvNeXt's channels-first LayerNorm (weight[:, None, None]) and a UNet's channel RMSNorm
    (a [1, C, 1, 1] gain): every slabs candidate reads the weights per step; the plain and the
    blocked ones pass (the flat one needs more UB than a whole [C, H*W] plane leaves at its
    defaults, a SKIP)."""
    task = load_task_file(HERE / "corpus" / f"{name}.py")
    cands = propose_from_graph(task)
    assert cands and all("load_step(" in c.source for c in cands), cands[0].source
    assert_all_pass(task, [c for c in cands if not c.name.endswith("_flat")])
