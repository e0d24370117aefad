"""Split-K in one cube launch (``blocks(..., ordered_split=ws)``): each split's fp32 partial in its
workspace slice, one SyncAll, the slices added in split order and the complete sum converted by
the block's cores (atomic L1 -> GM adds, then GM -> L1 -> L0C -> Fixpipe). Offered beside ``splitk_vec``; correct on ragged
shapes, K not a multiple of the split, rounds with idle cores; one rounding of the fp32 sum."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from ascendcraft.dsl.kernel import prepare
from ascendcraft.dsl.parser import DslError
from ascendcraft.search.cube_builtin import matmul_candidates, propose_cube, registry_spec

from ascendcraft.backends.base import TilingArgs
from ascendcraft.evaluate import Evaluator
from ascendcraft.tasks.registry import get_task


def _ordered(op: str, dims=(1, 48, 40, 4096)):
    t = get_task(op)
    cands = matmul_candidates(op, registry_spec(t, op, {}), dims)
    return t, next(c for c in cands if c.name.endswith("/splitk_ordered"))


def test_offered_beside_splitk_vec_where_blocks_are_few() -> None:
    names = {c.name.split("/")[1]: c for c in propose_cube(get_task("matmul_large_k"))}
    assert {"cube", "splitk_vec", "splitk_ordered"} <= set(names)
    assert "default=3)   # K splits" in names["splitk_ordered"].source  # 8 blocks x 3 = 24 cube cores
    # enough blocks for the cores (no split) or an epilogue on partial sums: not offered
    assert not any(c.name.endswith("splitk_ordered") for c in propose_cube(get_task("matmul")))
    assert not any(c.name.endswith("splitk_ordered") for c in propose_cube(get_task("matmul_bias_relu")))


@pytest.mark.parametrize("op,shapes,params", [
    # ragged M/N, K = 3001 not a multiple of 3 splits; 5 x 5 blocks x 3 = 75 items on 6 cores
    # (CORES=8 -> a multiple of 3): 13 rounds, the last with 3 idle cores joining its barriers
    ("matmul_large_k", [(300, 3001), (3001, 300)], {"SPLITK": 3, "CORES": 8, "BM": 64, "BN": 64}),
    # a few rows and 9 columns (one partial 16-column block), 2 splits
    ("matmul_large_k", [(5, 2000), (2000, 9)], {"SPLITK": 2, "CORES": 8}),
    # fp16 operands, fp32 output (no conversion), 4 splits of 750
    ("matmul_fp32_out", [(70, 3000), (3000, 50)], {"SPLITK": 4, "CORES": 12}),
    # fp32 operands: K fractals of 8
    ("matmul_fp32", [(100, 2000), (2000, 77)], {"SPLITK": 3, "KL1": 128, "BN": 128, "CORES": 12}),
])
def test_correct_on_ragged_shapes(op: str, shapes, params) -> None:
    """The evaluator's check: task and signed inputs, each run twice (byte-identical)."""
    t, c = _ordered(op)
    ev = Evaluator(t, "Ascend910B2", seeds=(0,), shape_sets=[shapes])
    out = ev.evaluate(prepare(c.name, c.source), params, timing=False)
    assert out.status == "ok", out.message


def test_one_rounding_of_the_fp32_sum() -> None:
    """The output is the fp32 sum of the splits rounded once to fp16: within half an fp16 ulp
    (plus fp32 accumulation noise) of the exact product. Adding fp16-rounded partials instead
    (an fp16 atomic add per split) misses the task's 1e-3 tolerance on these shapes by ~4 ulps."""
    t, c = _ordered("matmul_large_k")
    ev = Evaluator(t, "Ascend910B2", seeds=(0,))
    prep = prepare(c.name, c.source)
    params = {"SPLITK": 3, "CORES": 24}
    art = ev.build(prep, params)
    torch.manual_seed(0)
    a = torch.randn(48, 2048).half()
    b = torch.randn(2048, 40).half()
    res = ev.backend.run(art, [a, b], [((48, 40), torch.float16)], tiling=TilingArgs(prep.values(params), ()),
                         timeout_s=60)
    assert res.ok, res.message
    got = res.outputs[0].double()
    exact = a.double() @ b.double()
    ulp = torch.finfo(torch.float16).eps * torch.clamp(exact.abs(), min=2.0 ** -14)
    err = (got - exact).abs()
    assert (err <= ulp).all(), float((err / ulp).max())  # within one fp16 ulp everywhere
    assert (err <= 0.5 * ulp + 1e-4).float().mean() > 0.99  # and correctly rounded nearly always


def test_model_single_launch_below_two_launches() -> None:
    """At the registry shape one launch (no vector launch, no fp32 round trip through a second
    kernel) models faster than today's splitk_vec (modeled)."""
    t = get_task("matmul_large_k")
    ev = Evaluator(t, "Ascend910B2", seeds=(0,))
    cands = {c.name.split("/")[1]: c for c in propose_cube(t)}
    us = {}
    for name in ("splitk_vec", "splitk_ordered"):
        prep = prepare(cands[name].name, cands[name].source)
        us[name] = ev.time(ev.build(prep, {}))["modeled_us"]
    assert us["splitk_ordered"] < us["splitk_vec"] - 2.0, us


@pytest.mark.parametrize("edit,message", [
    ("store(c, blk, cast(relu(acc), f16))", "no relu"),
    ("ordered_split=a", "takes a declared workspace"),
])
def test_refused_with_reason(edit: str, message: str) -> None:
    _, c = _ordered("matmul_large_k")
    src = c.source
    src = src.replace("store(c, blk, cast(acc, f16))", edit) if edit.startswith("store") else \
        src.replace("ordered_split=sum_ws", edit)
    with pytest.raises(DslError, match=message):
        prepare(c.name, src).lower(prepare(c.name, src).program.defaults())


@pytest.mark.parametrize("old,new,message", [
    ("sum_ws = workspace(f32)", "sum_ws = workspace(f16)", "in fp32: workspace"),
    ("ordered_split=sum_ws", "ordered_split=sum_ws, tail=1", "takes no tail"),
])
def test_refused_layouts_with_reason(old: str, new: str, message: str) -> None:
    _, c = _ordered("matmul_large_k")
    src = c.source.replace(old, new)
    with pytest.raises(DslError, match=message):
        prepare(c.name, src).lower(prepare(c.name, src).program.defaults())


def test_barrier_blocks_stay_within_the_cube_cores() -> None:
    """SyncAll with more blocks than physical cube cores would deadlock on the device: the cores
    clamp to the SoC's in a multiple of the split (Ascend910B4: 20 cube cores, 3 splits -> 18),
    and a split above the core count is refused before any build, with the reason."""
    from ascendcraft.dsl.checker import check_program
    from ascendcraft.dsl.lowering.cube import check_cube_budget, plan_cube
    from ascendcraft.dsl.parser import parse

    from ascendcraft.soc import load_soc

    _, c = _ordered("matmul_large_k")
    plan = plan_cube(check_program(parse(c.source)))
    dims = [[512, 32768], [32768, 512], [512, 512]]
    prog = plan.checked.program
    params = {**prog.defaults(), "SPLITK": 3, "CORES": 24}
    t = check_cube_budget(plan, dims, params, load_soc("Ascend910B4"))
    assert (t["cubeDim"], t["splits"], t["itemsPad"]) == (18, 3, 36)
    few = dataclasses.replace(load_soc("Ascend910B4"), cube_cores=2)
    with pytest.raises(DslError, match="would deadlock"):
        check_cube_budget(plan, dims, params, few)
