"""Partial sums in L1 (``blocks(..., tile_m=, tile_n=)``): a block larger than one L0C buffer is
computed K stage by K stage as L0C tiles, each tile's fp32 partial sum going L0C -> L1 (Fixpipe)
after a stage and back (DataCopy L1 -> L0C) before the next. The output is bit for bit the one of
the same blocks accumulated whole in L0C, for tiles kept in L0C (at most ACCDEPTH of them) and
swapped through L1, ragged shapes, one and several K splits (the ordered combine), both B layouts,
batched and fp32 operands."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from ascendcraft.dsl.checker import check_program
from ascendcraft.dsl.errors import DslError
from ascendcraft.dsl.lowering.cube import check_cube_budget, plan_cube
from ascendcraft.dsl.parser import parse

from ascendcraft.emulator.trace_format import RECORD_DTYPE, Op, Pipe, RecordKind
from ascendcraft.model.record_costs import record_costs
from ascendcraft.soc import load_soc
from tests.test_cube_lowering import _build, _run

pytestmark = pytest.mark.slow


def _src(dtype: str = "f16", transpose_b: bool = False, batched: bool = False, extra: str = "") -> str:
    """A split-K matmul whose blocks may be cut into L0C tiles (TM / TN 0: the whole block)."""
    flags = (", transpose_b=True" if transpose_b else "") + (", batched=True" if batched else "")
    store = "acc" if dtype == "f32" else f"cast(acc, {dtype})"
    return f'''
@cube_kernel(category="matmul")
def mm(a: In[{dtype}], b: In[{dtype}], c: Out[{dtype}]):
    BM = tunable(choice(64, 128, 256), default=256)
    BN = tunable(choice(64, 128, 256), default=256)
    TM = tunable(choice(0, 32, 64, 128), default=128)
    TN = tunable(choice(0, 32, 64, 128), default=64)
    ACCD = tunable(choice(1, 2, 4), default=4)
    BK = tunable(choice(32, 64), default=64)
    KL1 = tunable(choice(64, 128), default=128)
    SPLITK = tunable(choice(1, 2, 3, 4), default=1)
    CORES = tunable(choice(4, 6, 8, 12), default=8)
    sum_ws = workspace(f32)
    for blk in blocks(a, b, m=BM, n=BN{flags}, split_k=SPLITK, cores=CORES, acc_depth=ACCD,
                      tile_m=TM, tile_n=TN{extra}, ordered_split=sum_ws):
        acc = accumulator(blk)
        for kk in k_stages(blk, k=KL1, depth=2):
            a1 = to_l1(a, kk)
            b1 = to_l1(b, kk)
            for k0 in k_steps(kk, k=BK, depth=2):
                acc = mmad(to_l0a(a1, k0), to_l0b(b1, k0), acc)
        store(c, blk, {store})
'''


def _operands(m: int, k: int, n: int, dtype: str, transpose_b: bool = False, batch: int = 0, seed: int = 0):
    torch.manual_seed(seed)
    td = {"f16": torch.float16, "f32": torch.float32}[dtype]
    lead = (batch,) if batch else ()
    a = torch.randn(*lead, m, k).to(td)
    b = torch.randn(*lead, n, k).to(td) if transpose_b else torch.randn(*lead, k, n).to(td)
    bm = b.transpose(-1, -2) if transpose_b else b
    ref = (a.float() @ bm.float()).to(td)
    return [a.numpy(), b.numpy()], ref


def _outputs(src: str, np_in, ref, runs: list[dict]) -> list[np.ndarray]:
    builds = {}  # ACCDEPTH is a template argument of the L0C queue: a build per depth
    outs = []
    for params in runs:
        if params["ACCD"] not in builds:
            builds[params["ACCD"]] = _build(src, {"ACCD": params["ACCD"]})
        plan, lk, libs = builds[params["ACCD"]]
        (out,), t = _run(plan, lk, libs, np_in, [(tuple(ref.shape), np_in[0].dtype)], params)
        tiled = params.get("TM", 128) > 0
        assert t["l1Acc"] == (1 if tiled and (t["tm"] < t["bm"] or t["tn"] < t["bn"]) else 0)
        np.testing.assert_allclose(out.astype(np.float32), ref.float().numpy(), rtol=2e-3, atol=5e-2)
        outs.append(out)
    return outs


@pytest.mark.parametrize("splits", [1, 3])
def test_tiles_in_l1_match_the_whole_block(splits: int) -> None:
    """Ragged 300 x 3001 @ 3001 x 300 on 256 x 256 blocks (edge blocks of 44 rows / columns): 8 tiles
    of 128 x 64 with 4 L0C buffers (half of them swapped each stage, the stages in alternating
    order), 16 tiles of 64 x 64 with 2 buffers, 128 x 128 blocks of 4 tiles of 64 x 64 with 4
    buffers (all kept in L0C), against the whole block in L0C (TM = TN = 0); one split or three (the ordered combine, its
    shares cut at tile boundaries)."""
    np_in, ref = _operands(300, 3001, 300, "f16", seed=splits)
    base = {"SPLITK": splits, "CORES": 12 if splits == 3 else 4, "BM": 256, "BN": 256, "KL1": 64}
    outs = _outputs(_src(), np_in, ref, [
        {**base, "TM": 0, "TN": 0, "ACCD": 1, "BM": 128, "BN": 128},  # the plain path, 128 x 128 blocks
        {**base, "TM": 128, "TN": 64, "ACCD": 4},
        {**base, "TM": 64, "TN": 64, "ACCD": 2},
        {**base, "TM": 64, "TN": 64, "ACCD": 4, "BM": 128, "BN": 128},
    ])
    for out in outs[1:]:
        np.testing.assert_array_equal(outs[0], out)


@pytest.mark.parametrize("dtype, transpose_b, batch", [("f16", True, 0), ("f16", False, 3), ("f32", False, 0)])
def test_layouts_batches_and_fp32(dtype: str, transpose_b: bool, batch: int) -> None:
    """B stored N x K, batched operands, fp32 operands (K fractals of 8): the swapped tiles give the
    bits of the whole 128 x 128 block."""
    np_in, ref = _operands(150, 700, 200, dtype, transpose_b, batch, seed=7)
    base = {"SPLITK": 2, "CORES": 8, "BM": 128, "BN": 128, "BK": 32, "KL1": 64}
    outs = _outputs(_src(dtype, transpose_b, batch > 0), np_in, ref, [
        {**base, "TM": 0, "TN": 0, "ACCD": 1},
        {**base, "TM": 64, "TN": 32, "ACCD": 2},
    ])
    np.testing.assert_array_equal(outs[0], outs[1])


def test_refusals_are_named() -> None:
    """Tile sizes take the plain stage ring (no held panels); with ordered_split a tile's L0C buffer
    holds the combine's piece (one column block of the block's rows)."""
    with pytest.raises(DslError, match="plain stage ring: drop b_whole="):
        _build(_src(extra=", b_whole=1"))
    plan = plan_cube(check_program(parse(_src())))
    dims = [[256, 512], [512, 256], [256, 256]]
    soc = load_soc("Ascend910B2")
    ok = {"SPLITK": 2, "BM": 256, "BN": 256, "TM": 64, "TN": 64, "ACCD": 2}
    assert check_cube_budget(plan, dims, ok, soc)["l1Acc"] == 1
    with pytest.raises(DslError, match="holds less than one column block"):
        check_cube_budget(plan, dims, {**ok, "TM": 32, "TN": 32}, soc)


def test_fixpipe_into_l1_is_costed_off_the_gm_channel() -> None:
    """Fixpipe L0C -> L1 occupies the FIX pipe for the Fixpipe path's latency + bytes / peak (no
    published rate of its own) and no time on the HBM channel."""
    soc = load_soc("Ascend910B2")
    rec = np.zeros(2, RECORD_DTYPE)
    rec["kind"] = int(RecordKind.INSTR)
    rec["pipe"] = int(Pipe.FIX)
    rec["op"] = [int(Op.FIXPIPE_L0C2L1), int(Op.FIXPIPE_L0C2GM)]
    rec["bytes"] = 32768
    rec["blocks"] = 4
    rec["flags"] = 1
    dur, hbm, _ = record_costs(rec, soc, 24)
    path = soc.paths["L0C2GM"]
    assert dur[0] == pytest.approx(path.latency_ns + 32768 / path.peak_bytes_per_ns)
    assert hbm[0] == 0.0 and hbm[1] > 0.0
