"""Cube DSL front end and checks before build: parser errors with line/col, the checker's
stage rules, and the L1 / L0A / L0B / L0C / UB capacity and fractal checks with numbers."""

from __future__ import annotations

import pytest
from ascendcraft.dsl.checker import check_program
from ascendcraft.dsl.lowering.cube import check_cube_budget, lower_cube, plan_cube
from ascendcraft.dsl.parser import DslError, parse

from ascendcraft.soc import load_soc

MATMUL = '''
@cube_kernel(category="matmul")
def mm(a: In[f16], b: In[f16], c: Out[f16]):
    BM = tunable(choice(64, 128, 256), default=128)
    BN = tunable(choice(64, 128, 256), default=256)
    BK = tunable(choice(32, 64, 128), default=64)
    KL1 = tunable(choice(128, 256, 512, 1024), default=256)
    S = tunable(choice(1, 2), default=2)
    D = tunable(choice(1, 2), default=2)
    ACC = tunable(choice(1, 2), default=1)
    ORDER = tunable(choice(row_major, col_major, swizzled), default=swizzled)
    for blk in blocks(a, b, m=BM, n=BN, order=ORDER, group=4, acc_depth=ACC):
        acc = accumulator(blk)
        for kk in k_stages(blk, k=KL1, depth=S):
            a1 = to_l1(a, kk)
            b1 = to_l1(b, kk)
            for k0 in k_steps(kk, k=BK, depth=D):
                acc = mmad(to_l0a(a1, k0), to_l0b(b1, k0), acc)
        store(c, blk, cast(acc, f16))
'''

DIMS = [[4096, 4096], [4096, 4096], [4096, 4096]]


def _plan(src: str = MATMUL):
    return plan_cube(check_program(parse(src)))


def test_parse_matmul_and_defaults() -> None:
    p = parse(MATMUL)
    assert p.cube is not None and p.vector is None
    assert p.defaults()["ORDER"] == 2  # swizzled
    vector = "@kernel\ndef f(x: In[f32], y: Out[f32]):\n    for t in tiles(x, tile=256):\n        store(y, t, load(x, t))\n"
    assert p.decorator == "cube_kernel" and parse(vector).decorator == "kernel"


@pytest.mark.parametrize("bad, where, words", [
    ("import os\n" + MATMUL, (1, 1), "import"),
    (MATMUL.replace("acc = accumulator(blk)", "acc = accumulator(blk).x"), (13, 15), "attribute"),
    (MATMUL.replace("acc = mmad(to_l0a(a1, k0), to_l0b(b1, k0), acc)",
                    "acc = mmad(to_l0b(b1, k0), to_l0a(a1, k0), acc)"), (18, 17), "L0A"),
    (MATMUL.replace("store(c, blk, cast(acc, f16))", "store(c, blk, cast(acc * 2.0, f16))"), (19, 23),
     "Fixpipe applies only ReLU"),
    (MATMUL.replace("depth=S)", "depth=3)"), (14, 46), "depth is 1"),
    (MATMUL.replace("a1 = to_l1(a, kk)", "a1 = to_l1(b, kk)"), (15, 24), "in order"),
])
def test_parse_errors_name_line_and_col(bad: str, where: tuple[int, int], words: str) -> None:
    with pytest.raises(DslError) as ei:
        check_program(parse(bad))
    assert ei.value.loc is not None and (ei.value.loc.line, ei.value.loc.col) == where, str(ei.value)
    assert words in str(ei.value)


def test_checker_stage_rules() -> None:
    src = MATMUL.replace("for blk in blocks(a, b, m=BM, n=BN,", "for blk in blocks(a, b, m=BM, n=BN, split_k=2,")
    with pytest.raises(DslError, match="split_k > 1 writes one partial result per K split"):
        check_program(parse(src))
    src = MATMUL.replace("a: In[f16], b: In[f16], c: Out[f16]", "a: In[f32], b: In[f32], c: Out[f32]")
    src = src.replace("cast(acc, f16)", "acc")
    check_program(parse(src))  # fp32 with B stored K x N: LoadDataWithTranspose (b32)
    src = MATMUL.replace("cast(acc, f16)", "acc")
    with pytest.raises(DslError, match="storing a f32 value into f16"):
        check_program(parse(src))


@pytest.mark.parametrize("params, mem, need", [
    ({"KL1": 1024}, "L1", 2 * (128 * 1024 + 1024 * 256) * 2),
    ({"BM": 256, "BK": 128}, "L0A", 2 * 256 * 128 * 2),
    ({"BN": 256, "BK": 128}, "L0B", 2 * 128 * 256 * 2),
    ({"ACC": 2}, "L0C", 2 * 128 * 256 * 4),
    ({"BM": 256, "BN": 256, "BK": 32}, "L0C", 256 * 256 * 4),
])
def test_capacity_violations_are_rejected_with_numbers(params: dict, mem: str, need: int) -> None:
    soc = load_soc("Ascend910B2")
    cap = {"L1": 512, "L0A": 64, "L0B": 64, "L0C": 128}[mem] * 1024
    with pytest.raises(DslError) as ei:
        check_cube_budget(_plan(), DIMS, params, soc)
    msg = str(ei.value)
    assert f"{mem} capacity exceeded on Ascend910B2: needs {need} B, {cap} B available" in msg, msg


def test_capacity_follows_the_soc() -> None:
    # 310P3 has a 1 MiB L1: the same L1 plan fits there
    plan = _plan()
    with pytest.raises(DslError, match="L1 capacity"):
        check_cube_budget(plan, DIMS, {"KL1": 512}, load_soc("Ascend910B2"))
    t = check_cube_budget(plan, DIMS, {"KL1": 512}, load_soc("Ascend310P3"))
    assert t["bytesL1"] == 2 * (128 * 512 + 512 * 256) * 2


def test_fractal_alignment_and_clamping() -> None:
    src = MATMUL.replace("choice(64, 128, 256), default=128)", "choice(64, 120, 256), default=120)", 1)
    with pytest.raises(DslError, match="fractal alignment: m = 120"):
        check_cube_budget(_plan(src), DIMS, {}, load_soc())
    t = check_cube_budget(_plan(), [[16, 100], [100, 1001], [16, 1001]], {}, load_soc())
    assert t["bm"] == 16 and t["bn"] == 256 and t["kl1"] == 128 and t["nN"] == 4


def test_shape_mismatch_is_a_dsl_error() -> None:
    with pytest.raises(DslError, match="inner dimensions differ"):
        check_cube_budget(_plan(), [[64, 32], [48, 64], [64, 64]], {}, load_soc())


def test_lowering_emits_the_cube_api() -> None:
    lk = lower_cube(MATMUL, {"S": 1})
    src = lk.kernel_source("cube")
    for api in ("Nd2NzParams", "LoadData(", "ifTranspose", "Mmad(", "FixpipeParamsV220", "F322F16",
                "KERNEL_TYPE_AIC_ONLY", "constexpr int32_t STAGES = 1;", "TQue<TPosition::CO1"):
        assert api in src, api
    assert "struct MmCustomTilingData" in lk.header and "MmCustomComputeTiling" in lk.header
    cann = lk.cann_kernel_source("cube")
    assert "GET_TILING_DATA" in cann


VEC_ONLY = '''
@cube_kernel
def post(x: In[f32], w: In[f32], y: Out[f32]):
    R = tunable(pow2(1, 64), default=8)
    CH = tunable(pow2(64, 65536), default=256)
    for t in rows(x, rows=R, dims=2):
        g = load_group(w, t, 2)
        for c in chunks(t, CH, parts=2):
            store(y, c, g[0] * load(x, c, 0) + g[1] * load(x, c, 1))
'''


def test_vector_stage_ub_budget_and_shape_rules() -> None:
    plan = _plan(VEC_ONLY)
    soc = load_soc()
    dims = [[100, 2, 512], [100, 2], [100, 512]]
    t = check_cube_budget(plan, dims, {}, soc)
    assert 0 < t["bytesUB"] <= soc.ub_budget_kib * 1024
    with pytest.raises(DslError, match=r"UB capacity exceeded on Ascend910B2: needs \d+ B, 188416 B available"):
        check_cube_budget(plan, [[100, 2, 65536], [100, 2], [100, 65536]], {"R": 64, "CH": 65536}, soc)
    with pytest.raises(DslError, match="load_group"):
        check_cube_budget(plan, [[100, 2, 512], [100, 3], [100, 512]], {}, soc)


def test_vector_stage_typing_errors() -> None:
    bad = VEC_ONLY.replace("g[0] * load(x, c, 0)", "g * load(x, c, 0)")
    with pytest.raises(DslError, match="not a group of 2"):
        check_program(parse(bad))
    bad = VEC_ONLY.replace("x: In[f32]", "x: In[f16]")
    with pytest.raises(DslError, match="cast"):
        check_program(parse(bad))


def test_rounded_workspace_holds_the_output_dtype_and_refuses_split_k() -> None:
    """workspace(f16): Fixpipe rounds the product there (as eager's matmul output is rounded);
    split-K partial sums stay fp32."""
    from ascendcraft.search.cube_builtin import MatmulSpec, matmul_candidates

    spec = MatmulSpec("a", "b", "f16", "f16", extra=(("bias", "f16"),), rounded=True,
                      epilogue="relu(v + cast(load_bcast(bias, cc), f32))")
    src = {c.name: c.source for c in matmul_candidates("mm", spec)}["mm/rounded_vec"]
    prog = check_program(parse(src)).program
    assert [(w.name, w.dtype) for w in prog.workspaces] == [("mm_ws", "f16")]
    bad = src.replace("acc_depth=ACCD,", "acc_depth=ACCD, split_k=2,")
    with pytest.raises(DslError, match="split-K partial sums are summed in fp32"):
        check_program(parse(bad))
    assert "mm/rounded_vec" not in {c.name for c in matmul_candidates("mm", MatmulSpec(**{**spec.__dict__,
                                                                                           "rounded": False}))}
