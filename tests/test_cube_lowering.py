"""Cube lowering on the emulator: generated kernels compile, the C++ tiling agrees with its
Python mirror, and small matmuls (layouts, batches, ragged sizes, split-K + epilogues) and a
vector stage with per-row groups give the right numbers."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from ascendcraft.dsl.checker import check_program
from ascendcraft.dsl.lowering.cube import lower_cube, plan_cube
from ascendcraft.dsl.parser import parse
from ascendcraft.search.cube_builtin import MatmulSpec, matmul_candidates

from ascendcraft.emulator.build import build_kernel
from ascendcraft.emulator.runner import TilingRequest, compute_tiling, run_kernel

pytestmark = pytest.mark.slow


def _build(src: str, params: dict | None = None):
    plan = plan_cube(check_program(parse(src)))
    lk = lower_cube(plan.checked.program, params or {}, plan)
    libs = {}
    for which in lk.stages():
        name = f"{lk.op}_{which}.cpp"
        libs[which] = build_kernel({name: lk.emulator_source(which), f"{lk.op}_tiling.h": lk.header}, name)
    return plan, lk, libs


def _run(plan, lk, libs, inputs: list[np.ndarray], out_shapes, params: dict | None = None):
    """Both launches, the way the evaluator does it."""
    p = lk.program
    values = {**p.defaults(), **(params or {})}
    tun = [values[t.name] for t in p.tunables]
    shapes = [list(x.shape) for x in inputs] + [list(s) for s, _ in out_shapes]
    t = plan.tiling.evaluate(shapes, values, 24, 48)
    ws = [np.full(t.get("wsFloats", t["splits"] * t["Bt"] * t["M"] * t["N"]), np.nan, np.float32) for _ in p.workspaces]
    outs = [np.full(s, np.nan, dt) for s, dt in out_shapes]
    if "cube" in libs:
        r = run_kernel(libs["cube"], inputs, outputs=ws + outs, core_type="aic",
                       tiling=TilingRequest(shapes=shapes, tunables=tun, core_num=24))
        assert r.ok, r.message
        ws, outs = r.outputs[:len(ws)], r.outputs[len(ws):]
    if "vec" in libs:
        r = run_kernel(libs["vec"], inputs + ws, outputs=outs, core_type="aiv",
                       tiling=TilingRequest(shapes=shapes, tunables=tun, core_num=48))
        assert r.ok, r.message
        outs = r.outputs
    return outs, t


def _mm_src(**kw) -> list[str]:
    spec = MatmulSpec(**{"a": "a", "b": "b", "dtype": "f16", "out_dtype": "f16", **kw})
    return [c.source for c in matmul_candidates("mm", spec)]


@pytest.mark.parametrize("ta, tb, batched", [(False, False, False), (True, False, False), (False, True, False),
                                            (True, True, False), (False, False, True)])
def test_matmul_layouts(ta: bool, tb: bool, batched: bool) -> None:
    m, k, n, bt = 70, 150, 90, 2
    torch.manual_seed(0)
    a = torch.randn((bt, m, k) if batched else (m, k)).half()
    b = torch.randn((bt, k, n) if batched else (k, n)).half()
    ga = a.transpose(-1, -2).contiguous() if ta else a
    gb = b.transpose(-1, -2).contiguous() if tb else b
    ref = (a.float() @ b.float()).half().numpy()
    src = _mm_src(transpose_a=ta, transpose_b=tb, batched=batched)[0]
    plan, lk, libs = _build(src)
    params = {"BM": 64, "BN": 64, "BK": 32, "KL1": 128, "GROUP": 2}
    (out,), t = _run(plan, lk, libs, [ga.numpy(), gb.numpy()], [(ref.shape, np.float16)], params)
    assert t["nM"] == 2 and t["nN"] == 2
    np.testing.assert_allclose(out.astype(np.float32), ref.astype(np.float32), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("order", [0, 1, 2])
def test_block_orders_cover_every_block(order: int) -> None:
    m, k, n = 150, 40, 200
    a, b = torch.randn(m, k).half(), torch.randn(k, n).half()
    ref = (a.float() @ b.float()).half().numpy()
    plan, lk, libs = _build(_mm_src()[0])
    params = {"BM": 64, "BN": 64, "BK": 32, "KL1": 128, "ORDER": order, "GROUP": 2, "CORES": 8}
    (out,), t = _run(plan, lk, libs, [a.numpy(), b.numpy()], [(ref.shape, np.float16)], params)
    assert t["blocks"] == 12 and t["cubeDim"] == 8
    np.testing.assert_allclose(out.astype(np.float32), ref.astype(np.float32), rtol=2e-3, atol=2e-3)


def test_split_k_and_vector_epilogue() -> None:
    m, k, n = 33, 1000, 70
    torch.manual_seed(1)
    a, b, bias = torch.randn(m, k).half(), torch.randn(k, n).half(), torch.randn(n).half()
    ref = torch.relu(a.float() @ b.float() + bias.float()).half().numpy()
    src = _mm_src(extra=(("bias", "f16"),), epilogue="relu(v + cast(load_bcast(bias, cc), f32))")
    two_launch = [s for s in src if "ring=" not in s]  # the mixed (ring) form has its own tests
    assert len(two_launch) == 1
    plan, lk, libs = _build(two_launch[0])
    params = {"BM": 64, "BN": 64, "BK": 32, "KL1": 128, "SPLITK": 4, "VROWS": 4, "VCHUNK": 256}
    (out,), t = _run(plan, lk, libs, [a.numpy(), b.numpy(), bias.numpy()], [(ref.shape, np.float16)], params)
    assert t["splits"] == 4
    np.testing.assert_allclose(out.astype(np.float32), ref.astype(np.float32), rtol=2e-3, atol=2e-2)


@pytest.mark.parametrize("tail", [0, 1])
def test_tail_split_pieces_cover_the_last_wave(tail: int) -> None:
    """tail=1 cuts the blocks of the last, partial wave along N (a ragged last column too):
    the result is the same as whole blocks, with split-K partial sums as well."""
    m, k, n = 150, 1000, 200
    torch.manual_seed(2)
    a, b, bias = torch.randn(m, k).half(), torch.randn(k, n).half(), torch.randn(n).half()
    ref = (a.float() @ b.float()).half().numpy()
    plan, lk, libs = _build(_mm_src()[0])
    params = {"BM": 64, "BN": 64, "BK": 32, "KL1": 128, "GROUP": 2, "CORES": 8, "TAIL": tail}
    (out,), t = _run(plan, lk, libs, [a.numpy(), b.numpy()], [(ref.shape, np.float16)], params)
    assert (t["blocks"], t["fullTiles"], t["tparts"], t["items"]) == ((12, 8, 2, 16) if tail else (12, 8, 1, 12))
    np.testing.assert_allclose(out.astype(np.float32), ref.astype(np.float32), rtol=2e-3, atol=2e-2)
    ref2 = (a.float() @ b.float() + bias.float()).half().numpy()
    src = _mm_src(extra=(("bias", "f16"),), epilogue="v + cast(load_bcast(bias, cc), f32)")[0]
    plan, lk, libs = _build(src)
    params = {"BM": 64, "BN": 128, "BK": 32, "KL1": 128, "SPLITK": 2, "CORES": 8, "TAIL": tail, "VROWS": 4,
              "VCHUNK": 256}
    (out,), t = _run(plan, lk, libs, [a.numpy(), b.numpy(), bias.numpy()], [(ref2.shape, np.float16)], params)
    assert (t["blocks"], t["tparts"]) == ((12, 2) if tail else (12, 1))
    np.testing.assert_allclose(out.astype(np.float32), ref2.astype(np.float32), rtol=2e-3, atol=2e-2)


@pytest.mark.parametrize("dtype, batched, tb, order", [("f16", False, False, 2), ("f16", True, False, 1),
                                                     ("f32", False, False, 0), ("f16", False, True, 0),
                                                     ("f32", False, True, 2)])
def test_whole_panels_match_staged_panels(dtype: str, batched: bool, tb: bool, order: int) -> None:
    """AW=1 / BW=1 copy each block's whole A (rows x K range) / B (K range x columns) panel once
    and keep it while the next block on the core has the same one; several blocks per core
    (reloads), ragged last blocks, tail-split pieces (their own B columns) and K tails give
    the result of staged panels, bit for bit."""
    bt, m, k, n = (2, 150, 333, 200) if batched else (1, 150, 333, 200)
    torch.manual_seed(5)
    tdt = torch.float16 if dtype == "f16" else torch.float32
    a = torch.randn((bt, m, k) if batched else (m, k)).to(tdt)
    b = torch.randn((bt, k, n) if batched else (k, n)).to(tdt)
    ref = (a.float() @ b.float()).to(tdt).numpy()
    gb = b.transpose(-1, -2).contiguous() if tb else b
    src = _mm_src(dtype=dtype, out_dtype=dtype, batched=batched, transpose_b=tb)[0]
    plan, lk, libs = _build(src)
    outs = []
    b_ok = tb or dtype == "f16"  # fp32 B stored K x N stays staged (16-row strips in L1)
    for aw, bw in ((0, 0), (1, 0), (0, 1), (1, 1)):
        params = {"BM": 64, "BN": 64, "BK": 32, "KL1": 128, "ORDER": order, "GROUP": 2, "CORES": 3, "TAIL": 1,
                  "AW": aw, "BW": bw}
        (out,), t = _run(plan, lk, libs, [a.numpy(), gb.numpy()], [(ref.shape, ref.dtype)], params)
        assert (t["aWhole"], t["bWhole"]) == (aw, bw if b_ok else 0)
        assert (t["b_qA1"] == 0) == bool(aw) and (t["b_qB1"] == 0) == bool(t["bWhole"])
        np.testing.assert_allclose(out.astype(np.float32), ref.astype(np.float32), rtol=2e-3, atol=3e-2)
        outs.append(out)
    for out in outs[1:]:
        np.testing.assert_array_equal(outs[0], out)
    ta_src = _mm_src(transpose_a=True)[0]  # A stored K x M: not a panel of rows, AW is ignored
    assert plan_cube(check_program(parse(ta_src))).tiling.evaluate(
        [[k, m], [k, n], [m, n]], {**parse(ta_src).defaults(), "AW": 1}, 24, 48)["aWhole"] == 0


def test_rounded_workspace_mirrors_the_rounded_product() -> None:
    """The rounded candidate stores fp16(A @ B) in an f16 workspace and adds the bias after, as
    an fp16 reference does: relu(fp16(fp16(A @ B) + bias))."""
    m, k, n = 70, 200, 90
    torch.manual_seed(3)
    a, b, bias = torch.randn(m, k).half(), torch.randn(k, n).half(), torch.randn(n).half()
    mm = (a.float() @ b.float()).half()
    ref = torch.relu((mm.float() + bias.float()).half()).numpy()
    src = [c.source for c in matmul_candidates("mm", MatmulSpec(
        "a", "b", "f16", "f16", extra=(("bias", "f16"),), rounded=True,
        epilogue="relu(v + cast(load_bcast(bias, cc), f32))")) if "workspace(f16)" in c.source][0]
    plan, lk, libs = _build(src)
    params = {"BM": 64, "BN": 64, "BK": 32, "KL1": 128, "CORES": 8, "VROWS": 4, "VCHUNK": 256}
    (out,), t = _run(plan, lk, libs, [a.numpy(), b.numpy(), bias.numpy()], [(ref.shape, np.float16)], params)
    np.testing.assert_allclose(out.astype(np.float32), ref.astype(np.float32), rtol=2e-3, atol=4e-3)


@pytest.mark.parametrize("m, k, n, bm, bk", [(70, 150, 90, 64, 32), (33, 7, 20, 64, 32), (100, 200, 50, 128, 64),
                                          (48, 40, 30, 64, 32)])
def test_fp32_a_stored_k_by_m(m: int, k: int, n: int, bm: int, bk: int) -> None:
    """fp32 A.T @ B: A staged as 16-row strips and transposed into L0A square by square,
    including K steps with an odd number of 8-wide K fractals (k = 7, 22, 8)."""
    torch.manual_seed(0)
    a, b = torch.randn(m, k), torch.randn(k, n)
    ref = (a.double() @ b.double()).float().numpy()
    src = _mm_src(dtype="f32", out_dtype="f32", transpose_a=True)[0]
    plan, lk, libs = _build(src)
    params = {"BM": bm, "BN": 64, "BK": bk, "KL1": 128}
    (out,), _ = _run(plan, lk, libs, [a.t().contiguous().numpy(), b.numpy()], [(ref.shape, np.float32)], params)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_tiling_header_matches_python() -> None:
    plan, lk, libs = _build(_mm_src()[1])
    p = lk.program
    values = {**p.defaults(), "SPLITK": 4}
    shapes = [[300, 1001], [1001, 250], [300, 250]]
    r = compute_tiling(libs["cube"], TilingRequest(shapes=shapes, tunables=[values[t.name] for t in p.tunables],
                                                    core_num=24))
    assert r.ok, r.message
    fields = plan.tiling.fields()
    got = dict(zip(fields, np.frombuffer(r.tiling[:8 * len(fields)], dtype=np.int64).tolist(), strict=True))
    want = plan.tiling.evaluate(shapes, values, 24, 1)
    for f in fields:
        if f in want and not f.startswith(("coreNumVec", "vDim", "baseRows", "bigCores", "tileRows", "rowElems", "tileElems")):
            assert got[f] == want[f], f
    assert r.block_dim == want["cubeDim"]


GROUPS = '''
@cube_kernel
def groups(x: In[f32], w: In[f32], m: In[f32], y: Out[f32], s: Out[f32], h: Out[f32]):
    R = tunable(pow2(1, 16), default=4)
    CH = tunable(pow2(16, 1024), default=32)
    for t in rows(x, rows=R, dims=2):
        ss = row_fill(0.0)
        for c in chunks(t, CH):
            v = load(x, c)
            ss = ss + row_sum(v * v)
        g = load_group(w, t, 4)
        mm = load_members(m, 4)
        store(s, t, sigmoid(g * rsqrt(ss / width(t) + 1e-6) + mm))
        store(h, t, sinkhorn(exp(g), 2, 5))
        for c in chunks(t, CH, parts=2):
            store(y, c, g[0] * load(x, c, 0) + g[3] * load(x, c, 1))
'''


def test_vector_stage_groups_gather_sinkhorn() -> None:
    torch.manual_seed(2)
    t_, w_ = 13, 50
    x, w, m = torch.randn(t_, 2, w_), torch.randn(t_, 4), torch.randn(4)
    inv = torch.rsqrt(x.reshape(t_, -1).pow(2).mean(-1, keepdim=True) + 1e-6)
    s_ref = torch.sigmoid(w * inv + m)
    h = torch.exp(w).reshape(t_, 2, 2)
    for _ in range(5):
        h = h / h.sum(-1, keepdim=True)
        h = h / h.sum(-2, keepdim=True)
    y_ref = w[:, :1] * x[:, 0] + w[:, 3:] * x[:, 1]
    plan, lk, libs = _build(GROUPS)
    outs, _ = _run(plan, lk, libs, [x.numpy(), w.numpy(), m.numpy()],
                   [((t_, w_), np.float32), ((t_, 4), np.float32), ((t_, 4), np.float32)])
    np.testing.assert_allclose(outs[0], y_ref.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outs[1], s_ref.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outs[2], h.reshape(t_, 4).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype, ta, tb, batched, bn, kl1", [
    ("f16", False, False, False, 64, 128), ("f16", False, False, False, 128, 512), ("f16", True, True, False, 128, 128),
    ("f16", False, True, True, 64, 128), ("f32", False, False, False, 64, 128), ("f32", True, True, False, 128, 128)])
def test_fix_split_matches_whole_fixpipe(dtype: str, ta: bool, tb: bool, batched: bool, bn: int, kl1: int) -> None:
    """fix_split=1 (first and last K stage per column half, each half's Fixpipe beside the other's
    Mmads) and fix_split=2 (every K stage per row half, each half its own L0C tile) give the
    whole-block result bit for bit: ragged last row and column blocks (a half of 8 columns, blocks
    of 32 columns or fewer run whole; a 22-row block as halves of 16 and 6 rows), tail-split
    pieces (a new geometry after whole blocks), three K stages and one (KL1 >= K), every B layout
    (fp32 K x N strips too). fp32 A stored K x M keeps column halves; with two L0C buffers it is off."""
    bt, m, k, n = (2, 150, 333, 200) if batched else (1, 150, 333, 200)
    torch.manual_seed(7)
    tdt = torch.float16 if dtype == "f16" else torch.float32
    a = torch.randn((bt, m, k) if batched else (m, k)).to(tdt)
    b = torch.randn((bt, k, n) if batched else (k, n)).to(tdt)
    ref = (a.float() @ b.float()).to(tdt).numpy()
    ga = a.transpose(-1, -2).contiguous() if ta else a
    gb = b.transpose(-1, -2).contiguous() if tb else b
    plan, lk, libs = _build(_mm_src(dtype=dtype, out_dtype=dtype, transpose_a=ta, transpose_b=tb, batched=batched)[0])
    outs = []
    for fs in (0, 1, 2):
        params = {"BM": 64, "BN": bn, "BK": 32, "KL1": kl1, "GROUP": 2, "CORES": 7 if batched else 5, "TAIL": 1, "FSPLIT": fs, "ACCD": 1}
        (out,), t = _run(plan, lk, libs, [ga.numpy(), gb.numpy()], [(ref.shape, ref.dtype)], params)
        assert t["fixSplit"] == (1 if fs == 2 and ta and dtype == "f32" else fs) and t["tparts"] > 1
        np.testing.assert_allclose(out.astype(np.float32), ref.astype(np.float32), rtol=2e-3, atol=3e-2)
        outs.append(out)
    for out in outs[1:]:
        np.testing.assert_array_equal(outs[0], out)
    assert plan.tiling.evaluate([list(ga.shape), list(gb.shape), list(ref.shape)],
                                {**lk.program.defaults(), "FSPLIT": 1, "ACCD": 2, "BN": 64}, 24, 48)["fixSplit"] == 0


def test_fix_split_with_bias_table() -> None:
    """fix_split with accumulator(blk, bias=b): each half's first Mmad adds its own columns of the
    bias table (column halves: half 1 from column nh, a multiple of 32, the bias operand's
    alignment; row halves: every column's)."""
    m, k, n = 100, 300, 200
    torch.manual_seed(8)
    a, b, bias = torch.randn(m, k).half(), torch.randn(k, n).half(), torch.randn(n).half()
    ref = torch.relu(a.float() @ b.float() + bias.float()).half().numpy()
    spec = MatmulSpec("a", "b", "f16", "f16", extra=(("bias", "f16"),), bias="bias", bias_relu=True,
                      epilogue="relu(v + cast(load_bcast(bias, cc), f32))")
    src = next(c.source for c in matmul_candidates("mm", spec) if c.name.endswith("/cube_bias"))
    plan, lk, libs = _build(src)
    outs = []
    for fs in (0, 1, 2):
        params = {"BM": 64, "BN": 128, "BK": 32, "KL1": 128, "CORES": 3, "TAIL": 1, "FSPLIT": fs}
        (out,), t = _run(plan, lk, libs, [a.numpy(), b.numpy(), bias.numpy()], [(ref.shape, np.float16)], params)
        assert t["fixSplit"] == fs
        np.testing.assert_allclose(out.astype(np.float32), ref.astype(np.float32), rtol=2e-3, atol=3e-2)
        outs.append(out)
    for out in outs[1:]:
        np.testing.assert_array_equal(outs[0], out)


@pytest.mark.parametrize("batched, tb, order, bw", [(True, False, 1, 1), (False, True, 1, 1), (False, False, 2, 0)])
def test_runs_of_consecutive_blocks_cover_every_block(batched: bool, tb: bool, order: int, bw: int) -> None:
    """run=R deals each core R consecutive blocks of the order (a held B panel serves the run), the
    items past the last whole round of runs round-robin: with ragged blocks, tail pieces and split
    Fixpipe the result is run=1's, bit for bit."""
    bt, m, k, n = (3, 150, 333, 200) if batched else (1, 300, 333, 200)
    torch.manual_seed(9)
    a = torch.randn((bt, m, k) if batched else (m, k)).half()
    b = torch.randn((bt, k, n) if batched else (k, n)).half()
    ref = (a.float() @ b.float()).half().numpy()
    gb = b.transpose(-1, -2).contiguous() if tb else b
    plan, lk, libs = _build(_mm_src(transpose_b=tb, batched=batched)[0])
    outs = []
    for run in (1, 2, 4):
        params = {"BM": 64, "BN": 64, "BK": 32, "KL1": 128, "ORDER": order, "GROUP": 2, "CORES": 5, "TAIL": 1,
                  "BW": bw, "FSPLIT": 2 if batched else 1, "RUN": run}
        (out,), t = _run(plan, lk, libs, [a.numpy(), gb.numpy()], [(ref.shape, np.float16)], params)
        assert t["runLen"] == run and 0 < t["runFull"] <= t["items"]
        np.testing.assert_allclose(out.astype(np.float32), ref.astype(np.float32), rtol=2e-3, atol=3e-2)
        outs.append(out)
    for out in outs[1:]:
        np.testing.assert_array_equal(outs[0], out)


def panel_operands(batched: bool, tb: bool, dtype: str, seed: int) -> tuple[list[np.ndarray], torch.Tensor]:
    """A and B (stored N x K with ``tb``) of a product with a 333-deep K (two 128-row stages and a
    77-row tail), ragged 150/300 x 200 blocks, batched 3 ways or not; and the rounded reference."""
    bt, m, k, n = (3, 150, 333, 200) if batched else (1, 300, 333, 200)
    torch.manual_seed(seed)
    tdt = torch.float16 if dtype == "f16" else torch.float32
    a = torch.randn((bt, m, k) if batched else (m, k)).to(tdt)
    b = torch.randn((bt, k, n) if batched else (k, n)).to(tdt)
    gb = b.transpose(-1, -2).contiguous() if tb else b
    return [a.numpy(), gb.numpy()], (a.float() @ b.float()).to(tdt)


@pytest.mark.parametrize("batched, tb, order, run, dtype", [(True, False, 1, 2, "f16"), (False, True, 0, 1, "f16"),
                                                          (True, True, 2, 4, "f32"), (False, False, 2, 1, "f16")])
def test_b_panel_ahead_matches_whole_panel(batched: bool, tb: bool, order: int, run: int, dtype: str) -> None:
    """b_ahead=E holds the B panel as one L1 piece per K stage and loads E pieces of the core's next
    panel while the current run computes, the rest in the run's last stage (the last piece half
    there, half behind the next run's first A copy, handed to MTE1 a stage later): over several panels
    per core, a K tail (333 = 2 x 128 + 77), ragged and tail-split blocks, runs and round-robin
    items, the result is the single-copy panel's (BA=0), bit for bit, and every buffer is freed
    (the emulator refuses a kernel that leaves one allocated)."""
    np_in, ref = panel_operands(batched, tb, dtype, 11)
    plan, lk, libs = _build(_mm_src(dtype=dtype, out_dtype=dtype, transpose_b=tb, batched=batched)[0])
    outs = []
    for ba in (0, 1, 2, 3):
        params = {"BM": 64, "BN": 64, "BK": 32, "KL1": 128, "ORDER": order, "GROUP": 2, "CORES": 5, "TAIL": 1,
                  "BW": 1, "BA": ba, "FSPLIT": 2 if batched else 1, "RUN": run}
        (out,), t = _run(plan, lk, libs, np_in, [(tuple(ref.shape), np_in[0].dtype)], params)
        assert t["bAhead"] == ba and t["bPieces"] == 3 and t["bwSlots"] == (3 + ba if ba else 1)
        np.testing.assert_allclose(out.astype(np.float32), ref.float().numpy(), rtol=2e-3, atol=3e-2)
        outs.append(out)
    for out in outs[1:]:
        np.testing.assert_array_equal(outs[0], out)
