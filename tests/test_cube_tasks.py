"""Cube-path tasks (matmul family, mHC): references, shapes, the proposer's candidates, and
the evaluator end to end (emulator correctness + modeled time) on small cases."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch
from ascendcraft.dsl import ir
from ascendcraft.search.cube_builtin import (
    MatmulSpec,
    cores_default,
    handles,
    propose_cube,
    split_default,
    tail_default,
    template_fields,
    traced_spec,
)

import ascendcraft.tasks.registry_cube as rc
from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.tasks.registry import get_task
from ascendcraft.tasks.taskfile import load_task_file

MATMUL_OPS = [n for n, k in rc.CUBE_OPS.items() if k == "matmul"]


def test_registered_ops_and_metadata_only_shapes() -> None:
    for name in ("matmul", "matmul_tall_skinny", "matmul_large_k", "matmul_small_m", "matmul_ragged",
                 "matmul_batched", "matmul_transpose_a", "matmul_transpose_b", "matmul_transpose_ab",
                 "matmul_bias_relu", "linear_bias_gelu", "matmul_scale_residual", "matmul_fp32_out",
                 "matmul_fp32", "mhc_pre", "mhc_post"):
        assert name in rc.CUBE_OPS
        t = get_task(name)
        assert t.category == "matmul"
        assert t.output_meta()  # meta device only
    m = get_task("matmul")
    assert m.dtype == torch.float16 and m.shapes == [(4096, 4096), (4096, 4096)]
    assert get_task("matmul_ragged").output_meta()[0][0] == (1000, 1001)
    assert get_task("mhc_pre").dtype == torch.bfloat16


@pytest.mark.parametrize("name", MATMUL_OPS + ["mhc_pre", "mhc_post"])
def test_reduced_shape_sets_are_valid(name: str) -> None:
    t = get_task(name)
    sets = t.check_shapes
    assert sets and len(sets) >= 2
    assert Evaluator(t).shape_sets == [[tuple(s) for s in ss] for ss in sets]
    for ss in sets:
        t.output_meta(ss)
        assert [len(s) for s in ss] == [len(s) for s in t.shapes]


def test_mhc_references() -> None:
    torch.manual_seed(0)
    t = get_task("mhc_pre").with_shape((5, 4, 8), "fp32")
    shapes = t.check_shapes[1]
    x, phi, bias = t.make_inputs(shapes)
    x, phi, bias = x.float(), phi.float(), bias.float()
    h, post, res = rc.mhc_pre(x, phi, bias, **get_task("mhc_pre").init_args)
    n = 4
    # doubly stochastic after Sinkhorn (columns exactly, rows nearly)
    assert torch.allclose(res.float().sum(-2), torch.ones(x.shape[0], n), atol=1e-5)
    # rows only converge with the iteration count (20 here): within 10% from these logits
    assert torch.allclose(res.float().sum(-1), torch.ones(x.shape[0], n), atol=1e-1)
    assert ((post > 0) & (post < 2)).all()
    xf = x.reshape(x.shape[0], -1)
    raw = xf @ phi.reshape(24, -1).t()
    inv = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
    pre = torch.sigmoid(raw[:, :n] * inv + bias[:n])
    assert torch.allclose(h.float(), torch.einsum("ti,tic->tc", pre, x), atol=1e-5)
    y = torch.randn(x.shape[0], x.shape[2])
    out = rc.mhc_post(x, y, post.float(), res.float())
    want = torch.stack([sum(res[:, i, j, None] * x[:, j] for j in range(n)) + post[:, i, None] * y
                        for i in range(n)], 1)
    assert torch.allclose(out, want, atol=1e-5)


@pytest.mark.parametrize("name", MATMUL_OPS + ["mhc_pre", "mhc_post"])
def test_proposer_candidates_parse_and_check(name: str) -> None:
    t = get_task(name)
    assert handles(t)
    cands = propose_cube(t)
    assert cands
    for c in cands:
        prep = prepare(c.name, c.source)
        assert isinstance(prep.program, ir.Program) and prep.program.decorator == "cube_kernel"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["matmul_ragged", "mhc_post"])
def test_evaluator_end_to_end(name: str) -> None:
    t = get_task(name)
    ev = Evaluator(t, "Ascend910B2", seeds=(0,))
    c = propose_cube(t)[0]
    prep = prepare(c.name, c.source)
    params = {"VDEPTH": 1} if name == "mhc_post" else {}
    assert ev.feasible(prep, params) is None
    out = ev.evaluate(prep, params)
    assert out.status == "ok", out.message
    assert out.timing["modeled_us"] > 0 and out.timing["timing"] == "modeled"
    assert set(out.timing["stages_us"]) == ({"vec"} if name == "mhc_post" else {"cube"})


@pytest.mark.slow
def test_matmul_4096_models_above_70_percent_of_cube_peak() -> None:
    t = get_task("matmul")
    ev = Evaluator(t, "Ascend910B2", seeds=(0,), shape_sets=[t.check_shapes[1]])
    c = propose_cube(t)[0]
    prep = prepare(c.name, c.source)
    out = ev.evaluate(prep, {})
    assert out.status == "ok", out.message
    assert out.timing["cube_peak_frac"] >= 0.7, out.timing
    assert out.timing["model_wall_s"] < 30


def test_capacity_violation_is_infeasible_before_build() -> None:
    t = get_task("matmul")
    ev = Evaluator(t, "Ascend910B2")
    c = propose_cube(t)[0]
    prep = prepare(c.name, c.source)
    reason = ev.feasible(prep, {"BM": 256, "BN": 256})
    assert reason and "L0C capacity exceeded on Ascend910B2: needs 196608 B, 131072 B available" in reason
    assert "qC1=196608 B" in reason  # 192 x 256 fp32: the first reduced set clamps BM to M = 192


TASK_FILE = textwrap.dedent('''
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()

        def forward(self, a, b, bias):
            return torch.relu(torch.matmul(a, b) + bias)

    M, K, N = 256, 512, 384

    def get_inputs():
        return [torch.randn(M, K).half(), torch.randn(K, N).half(), torch.randn(N).half()]

    def get_init_inputs():
        return []
''')


def test_task_file_matmul_with_epilogue(tmp_path) -> None:
    f = tmp_path / "mm_bias_relu.py"
    f.write_text(TASK_FILE)
    t = load_task_file(str(f))
    spec = traced_spec(t)
    assert not isinstance(spec, str) and spec.epilogue.startswith("relu(")
    assert [dt for _, dt in spec.order] == ["f16"] * 3 and spec.order[2][0] == "bias"
    assert handles(t)
    for c in propose_cube(t):
        prepare(c.name, c.source)


def test_shape_aware_defaults_split_k_and_tail() -> None:
    """The split-K candidate defaults to a split that puts idle cores on K when the output
    blocks cannot fill them (matmul_large_k: 8 blocks of 128 x 256, 24 cores -> 3 splits),
    and to 1 when they can; the tail split is off for few-row and many-wave short-K shapes."""
    assert split_default(1, 512, 512, 32768) == 3
    assert split_default(1, 4096, 4096, 4096) == 1
    assert split_default(1, 128, 256, 2048) == 2  # a split stays >= 1024 deep
    assert split_default(1, 100, 100, 999) == 1
    assert tail_default(1, 4096, 4096, 4096) == 1
    assert tail_default(1, 16, 16384, 8192) == 0
    assert tail_default(32, 1024, 1024, 512) == 0
    assert tail_default(1, 1000, 1001, 999) == 1
    assert cores_default(1, 16, 16384, 8192) == 16  # 64 blocks: 4 per core on 16, not 3 waves of 24
    assert cores_default(1, 4096, 4096, 4096) == 24
    srcs = {c.name: c.source for c in propose_cube(get_task("matmul_large_k"))}
    assert "default=3)   # K splits" in srcs["matmul_large_k/splitk_vec"]


def test_shape_aware_defaults_group_and_whole_panels() -> None:
    """GROUP: the swizzle group whose waves touch the fewest panel bytes (16 x 8 blocks of
    2048^2: 6; ties - one wave, one block column, two waves of 8 x 4 blocks - the largest). AW: a few-row M with A stored M x K
    that fits L1 whole (matmul_small_m). BW: N of at most two 128-column blocks under many
    block rows (matmul_tall_skinny), which also sets 128-column blocks in row-major order."""
    from ascendcraft.search.cube_builtin import a_whole_default, b_whole_default, group_default

    assert group_default(1, 2048, 2048, 4096) == 6
    assert group_default(1, 512, 384, 256) == 16  # 8 blocks: one wave, every group alike
    assert group_default(1, 32768, 256, 1024) == 16  # one block column: every group alike
    assert group_default(1, 1000, 1001, 999) == 16  # 8 x 4 blocks, two waves: a column walk
    assert group_default(1, 4096, 4096, 4096) == 6
    assert a_whole_default(1, 16, 16384, 8192) == 1
    assert a_whole_default(1, 16, 16384, 8192, transpose_a=True) == 0
    assert a_whole_default(1, 16, 16384, 65536) == 0  # the panel does not fit L1
    assert a_whole_default(1, 4096, 4096, 4096) == 0
    assert b_whole_default(1, 32768, 256, 1024) == 1
    assert b_whole_default(1, 32768, 256, 1024, esize=4) == 0  # fp32 B stored K x N: strips
    assert b_whole_default(1, 32768, 256, 4096) == 0  # the panel does not fit L1
    assert b_whole_default(1, 640, 48, 96) == 0  # few block rows
    # 1536 deep: too much of the full-width panel would stream (held_panel_plan), so column halves
    fields = template_fields("mm", MatmulSpec(a="a", b="b", dtype="f16", out_dtype="f16"), (1, 32768, 256, 1536))
    assert (fields["bn_default"], fields["order_default"], fields["b_whole_default"]) == (128, "row_major", 1)


def test_held_panel_plan_for_tall_narrow_products() -> None:
    """A tall product with one column block of at most 256: 64-row blocks over all of N, the B panel
    held (whole, or 64-row K groups with the other K steps streamed 32 rows a copy and the Fixpipe
    deferred, while at most a quarter streams), two L0C buffers, the tail cut along M."""
    from ascendcraft.search.cube_builtin import held_panel_plan

    assert held_panel_plan(1, 32768, 256, 1024) == {"bh": 13, "bk": 32, "fdef": 8, "run": 1}  # 832 of 1024 rows held
    assert held_panel_plan(1, 32768, 256, 1024, transpose_b=True) == {"bh": 12, "bk": 64, "fdef": 8, "run": 1}  # N x K B
    assert held_panel_plan(1, 32768, 256, 512) == {"bh": 0, "bk": 64, "fdef": 0, "run": 1}  # the whole panel fits
    assert held_panel_plan(1, 16384, 192, 1024) == {"bh": 0, "bk": 64, "fdef": 0, "run": 1}
    assert held_panel_plan(1, 32768, 256, 1536) is None  # 45% would stream
    assert held_panel_plan(16, 2048, 256, 1024)["run"] == 4  # batched: a run of blocks per panel load
    assert held_panel_plan(1, 32768, 512, 1024) is None  # two column blocks
    assert held_panel_plan(1, 1024, 256, 1024) is None  # 16 block rows: not tall
    assert held_panel_plan(1, 32768, 256, 512, esize=4) is None  # fp32 B stored K x N: strips, no held panel
    assert held_panel_plan(1, 32768, 256, 256, transpose_b=True, esize=4) == {"bh": 0, "bk": 64, "fdef": 0, "run": 1}
    src = propose_cube(get_task("matmul_tall_skinny"))[0].source

    def default(name: str) -> str:
        return src.split(f"    {name} = ")[1].split("default=")[1].split(")")[0]

    assert [default(x) for x in ("BM", "BN", "BK", "ACCD", "BW", "BH", "FDEF", "TAIL")] == \
        ["64", "256", "32", "2", "1", "13", "8", "2"]


INPLACE = textwrap.dedent('''
    import torch

    class Model(torch.nn.Module):
        def forward(self, a, b, c):
            return {body}

    def get_inputs():
        return [torch.randn(48, 40), torch.randn(40, 24), torch.randn(48, 24)]

    def get_init_inputs():
        return []
''')


@pytest.mark.parametrize(("in_place", "functional"), [
    ("torch.relu_(a @ b)", "torch.relu(a @ b)"),            # nn.ReLU(inplace=True) traces to aten.relu_
    ("(a @ b).mul_(0.5).add_(c)", "(a @ b) * 0.5 + c"),    # an in-place chain on the product's own value
])
def test_in_place_epilogue_on_the_product_is_the_functional_op(tmp_path, in_place: str, functional: str) -> None:
    specs = []
    for i, body in enumerate((in_place, functional)):
        f = tmp_path / f"epilogue{i}.py"
        f.write_text(INPLACE.format(body=body))
        specs.append(traced_spec(load_task_file(str(f))))
    assert not isinstance(specs[0], str), specs[0]
    assert (specs[0].relu, specs[0].epilogue) == (specs[1].relu, specs[1].epilogue)


def test_in_place_update_of_an_input_is_refused_with_its_reason(tmp_path) -> None:
    f = tmp_path / "inplace_input.py"
    f.write_text(INPLACE.format(body="c.add_(a @ b)"))  # writes into the input c: not the epilogue's value
    spec = traced_spec(load_task_file(str(f)))
    assert isinstance(spec, str) and "updates a tensor other than" in spec, spec


def test_shape_aware_default_fix_split() -> None:
    """FSPLIT (first / last K stage per column half, split Fixpipe): on when a block has a K
    stage between its first and last (K > 512), off when both stages would be split
    (matmul_batched, K 512); the direct candidate of matmul 4096^3 carries it on."""
    from ascendcraft.search.cube_builtin import fix_split_default

    assert fix_split_default(1, 4096, 4096, 4096) == 1
    assert fix_split_default(1, 1000, 1001, 999) == 1
    assert fix_split_default(32, 1024, 1024, 512) == 0
    assert fix_split_default(1, 128, 128, 256) == 0
    srcs = {c.name: c.source for c in propose_cube(get_task("matmul"))}
    assert "default=1)" in srcs["matmul/cube"].split("FSPLIT = ")[1].split("\n")[0]
    assert "fix_split=FSPLIT" in srcs["matmul/cube"]
    assert fix_split_default(32, 1024, 1024, 512) == 0


def test_shape_aware_default_runs() -> None:
    """RUN: many short-K blocks (matmul_batched: 43 waves, K 512) run 8 consecutive blocks down a
    column per core holding the B panel (col-major, BW), with the split Fixpipe per row half
    (FSPLIT 2: whole-row Fixpipe bursts); 1 elsewhere."""
    from ascendcraft.search.cube_builtin import run_default

    assert run_default(32, 1024, 1024, 512) == 8
    assert run_default(32, 256, 1024, 512) == 2  # two block rows
    assert run_default(1, 4096, 4096, 4096) == 1  # K 4096: the panel does not fit L1
    assert run_default(1, 1000, 1001, 999) == 1  # few waves
    assert run_default(32, 1024, 1024, 512, esize=4) == 1  # fp32 B stored K x N: strips
    src = {c.name: c.source for c in propose_cube(get_task("matmul_batched"))}["matmul_batched/cube"]
    for name, want in (("RUN", "8"), ("ORDER", "col_major"), ("BW", "1"), ("FSPLIT", "2")):
        assert f"default={want})" in src.split(f"{name} = ")[1].split("\n")[0], name
    src = {c.name: c.source for c in propose_cube(get_task("matmul"))}["matmul/cube"]
    assert "default=1)" in src.split("RUN = ")[1].split("\n")[0]
    assert "default=0)" in src.split("BA = ")[1].split("\n")[0]  # no runs: no next panel to load ahead


def test_b_ahead_default_and_refusal() -> None:
    """BA: one piece of the next B panel ahead where the held panel's stages plus one fit L1 beside
    two A stages (matmul_batched: 3 x 128 KiB + 128 KiB = 512 KiB), else 0; a program whose pieces
    would need more than 8 queue buffers is refused before a build, with the count."""
    from ascendcraft.dsl.checker import check_program
    from ascendcraft.dsl.lowering.cube import check_cube_budget, plan_cube
    from ascendcraft.dsl.parser import DslError, parse
    from ascendcraft.search.cube_builtin import MatmulSpec, b_ahead_default, matmul_candidates

    from ascendcraft.soc import load_soc

    assert b_ahead_default(32, 1024, 1024, 512) == 1
    assert b_ahead_default(32, 1024, 1024, 768) == 0  # 4 pieces of 128 KiB + A: over L1
    assert b_ahead_default(32, 1024, 1024, 512, esize=4) == 0
    src = {c.name: c.source for c in propose_cube(get_task("matmul_batched"))}["matmul_batched/cube"]
    assert "default=1)" in src.split("BA = ")[1].split("\n")[0]
    mm = [c.source for c in matmul_candidates("mm", MatmulSpec("a", "b", "f16", "f16")) if "/cube" in c.name][0]
    plan = plan_cube(check_program(parse(mm)))
    params = {"BM": 64, "BN": 64, "BK": 32, "KL1": 32, "BW": 1, "BA": 2}
    with pytest.raises(DslError, match=r"b_ahead=2: the B panel's 11 K stages .* need 13 L1 queue buffers"):
        check_cube_budget(plan, [[300, 333], [333, 200], [300, 200]], params, load_soc("Ascend910B2"))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_epilogue_keeps_its_approximation(tmp_path, approximate: str) -> None:
    # F.gelu(approximate="tanh") is a different function from the erf form (|diff| up to
    # ~5e-4, above fp32 tolerance): it was once lowered as the erf GELU and failed its check
    f = tmp_path / "lin_gelu.py"
    f.write_text(textwrap.dedent(f'''
        import torch
        import torch.nn.functional as F

        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = torch.nn.Linear(40, 24)

            def forward(self, h):
                return F.gelu(self.proj(h), approximate="{approximate}")

        def get_inputs():
            return [torch.randn(2, 17, 40) * 2]

        def get_init_inputs():
            return []
        '''))
    t = load_task_file(str(f))
    spec = traced_spec(t)
    assert not isinstance(spec, str), spec
    assert ("tanh(" in spec.epilogue) == (approximate == "tanh")
    assert ("gelu(" in spec.epilogue) == (approximate == "none")
    ev = Evaluator(t, "Ascend910B2", seeds=(0,))
    cand = next(c for c in propose_cube(t) if c.name.endswith("/splitk_vec"))
    out = ev.evaluate(prepare(cand.name, cand.source), {}, timing=False)
    assert out.status == "ok", out.message


def test_gelu_with_an_unknown_approximation_is_refused(tmp_path) -> None:
    from ascendcraft.search.graph.matmul_form import UNARY

    assert "gelu_tanh" in UNARY
    f = tmp_path / "nested_tanh_gelu.py"
    nested = "x @ w"
    for _ in range(6):  # each tanh-GELU repeats its argument 5 times in one expression
        nested = f'F.gelu({nested}, approximate="tanh")'
    f.write_text("import torch\nimport torch.nn.functional as F\n\nclass Model(torch.nn.Module):\n"
                 f"    def forward(self, x, w):\n        return {nested}\n\n"
                 "def get_inputs():\n    return [torch.randn(32, 16), torch.randn(16, 24)]\n\n"
                 "def get_init_inputs():\n    return []\n")
    spec = traced_spec(load_task_file(str(f)))
    assert isinstance(spec, str) and "characters as one DSL expression" in spec, spec


def test_every_dim_before_the_matrix_is_batch_for_the_defaults() -> None:
    """A 4-D product [4, 8, M, K] @ [4, 8, K, N] is 32 batched products for the shape-aware
    defaults (it was read as 4, which turned the runs off: 0.88x -> 1.00x modeled)."""
    from ascendcraft.search.cube_builtin import spec_dims, traced_spec

    task = load_task_file(Path(__file__).parent / "taskfiles" / "corpus" / "heads_matmul_4d_values_fp16.py")
    spec = traced_spec(task)
    assert spec_dims(task, spec) == (32, 1024, 512, 256)
    src = {c.name: c.source for c in propose_cube(task)}
    cube = next(s for n, s in src.items() if n.endswith("/cube"))
    assert "default=8)" in cube.split("RUN = ")[1].split("\n")[0]
    assert "default=2)" in cube.split("FSPLIT = ")[1].split("\n")[0]
