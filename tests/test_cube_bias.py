"""The cube-side bias epilogue: ``accumulator(blk, bias=b)`` (bias table, Mmad with a bias
operand, Fixpipe ReLU) — parse/check rules, the proposer's ``cube_bias`` candidate, and the
emulator end to end on shapes the templates were not written around (ragged N, fp16 and fp32,
signed data, a linear layer's transposed weight)."""

from __future__ import annotations

import textwrap

import pytest
from ascendcraft.dsl.parser import DslError
from ascendcraft.search.cube_builtin import propose_cube, traced_spec

from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.tasks.registry import get_task
from ascendcraft.tasks.taskfile import load_task_file

SRC = textwrap.dedent('''
    @cube_kernel(category="matmul")
    def mmb(a: In[f16], b: In[f16], bias: In[{bdt}], c: Out[f16]):
        BN = tunable(choice(64, 128, 256, 512), default=256)
        for blk in blocks(a, b, m=64, n=BN{split}):
            acc = accumulator(blk, bias=bias)
            for kk in k_stages(blk, k=128, depth=2):
                a1 = to_l1(a, kk)
                b1 = to_l1(b, kk)
                for k0 in k_steps(kk, k=32, depth=1):
                    acc = mmad(to_l0a(a1, k0), to_l0b(b1, k0), acc)
            store(c, blk, cast(relu(acc), f16))
''')


def test_bias_rules_are_checked() -> None:
    with pytest.raises(DslError, match="once per K split"):
        prepare("mmb", SRC.format(bdt="f16", split=", split_k=2"))
    with pytest.raises(DslError, match="needs the operands' dtype f16"):
        prepare("mmb", SRC.format(bdt="f32", split=""))
    prep = prepare("mmb", SRC.format(bdt="f16", split=""))
    assert prep.program.cube.bias == "bias"


def _task_file(tmp_path, body: str, ins: str, name: str = "mmb.py"):
    """A task file whose Model.forward is ``body`` and whose inputs are ``ins``."""
    head = ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
            "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n")
    tail = f"\n\ndef get_inputs():\n    return {ins}\n\n\ndef get_init_inputs():\n    return []\n"
    f = tmp_path / name
    f.write_text(head + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ") + tail)
    return load_task_file(str(f))


def test_bias_shape_and_bias_table_capacity_are_infeasible_before_build(tmp_path) -> None:
    t = get_task("matmul_bias_relu")
    ev = Evaluator(t, "Ascend910B2")
    prep = prepare("mmb", SRC.format(bdt="f16", split=""))
    assert "bias table capacity" in ev.feasible(prep, {"BN": 512})
    assert ev.feasible(prep, {"BN": 256}) is None
    bad = _task_file(tmp_path, '''
        def forward(self, a, b, bias):
            return a @ b + torch.cat([bias, bias])
    ''', "[torch.randn(64, 96).half(), torch.randn(96, 80).half(), torch.randn(40).half()]")
    reason = Evaluator(bad, "Ascend910B2").feasible(prep, {})
    assert reason and "'bias' has 40 values, the product has N = 80 columns" in reason


@pytest.mark.parametrize(("dtype", "expr"), [("half", "torch.addmm(b, x, w)"), ("float", "x @ w + b"),
                                           ("bfloat16", "torch.addmm(b, x, w)")])
def test_task_file_bias_relu_runs_on_the_cube_alone(tmp_path, dtype: str, expr: str) -> None:
    # ragged N (not a multiple of 16), M not a multiple of the block, signed inputs and bias; in
    # 16 bits the bias is added before eager rounds (addmm): `x @ w + b` rounds the product first,
    # which a bias in the accumulator would skip (tests/test_cube_rounding.py)
    t = _task_file(tmp_path, f'''
        def forward(self, x, w, b):
            return F.relu({expr})
    ''', f"[torch.randn(70, 96).{dtype}(), torch.randn(96, 200).{dtype}(), torch.randn(200).{dtype}()]")
    spec = traced_spec(t)
    assert not isinstance(spec, str) and spec.bias == "b" and spec.bias_relu
    cands = {c.name.split("/")[-1]: c for c in propose_cube(t)}
    assert "cube_bias" in cands and "splitk_vec" in cands  # offered beside today's structure
    c = cands["cube_bias"]
    prep = prepare(c.name, c.source)
    ev = Evaluator(t, "Ascend910B2", seeds=(0, 1))
    assert ev.feasible(prep, {"BN": 64}) is None
    out = ev.evaluate(prep, {"BN": 64})  # four column blocks, the last one ragged
    assert out.status == "ok", out.message
    assert set(out.timing["stages_us"]) == {"cube"}  # no vector pass


def test_linear_bias_without_relu_uses_the_bias_table(tmp_path) -> None:
    t = _task_file(tmp_path, '''
        def forward(self, x, w, b):
            return F.linear(x, w, b)
    ''', "[torch.randn(48, 64).half(), torch.randn(160, 64).half(), torch.randn(160).half()]", "lin.py")
    spec = traced_spec(t)
    assert not isinstance(spec, str) and spec.bias and not spec.bias_relu and spec.transpose_b
    c = next(c for c in propose_cube(t) if c.name.endswith("/cube_bias"))
    prep = prepare(c.name, c.source)
    out = Evaluator(t, "Ascend910B2", seeds=(0,)).evaluate(prep, {})
    assert out.status == "ok", out.message


def test_registry_bias_relu_proposes_cube_bias() -> None:
    t = get_task("matmul_bias_relu")
    names = [c.name for c in propose_cube(t)]
    assert names == ["matmul_bias_relu/cube_bias", "matmul_bias_relu/splitk_vec"]
    gelu = [c.name.split("/")[-1] for c in propose_cube(get_task("linear_bias_gelu"))]
    # GELU stays on the vector side; rounding the product before the bias add (rounded_vec) is out of
    # the registry's fp32-accumulated tolerance on signed data, so it is not offered there
    assert gelu == ["splitk_vec", "bias_rounded_vec", "mixed_ring"]  # and the one-launch form of the latter


def test_task_file_linear_gelu_with_the_bias_in_the_accumulator(tmp_path) -> None:
    # fp16, ragged N and M, signed data: x @ w.T + b on the cube (bias table), rounded to fp16 by
    # Fixpipe into the workspace as eager's addmm rounds, GELU on the vector cores
    t = _task_file(tmp_path, '''
        def forward(self, x, w, b):
            return F.gelu(F.linear(x, w, b))
    ''', "[torch.randn(40, 64).half(), torch.randn(200, 64).half(), torch.randn(200).half()]", "lg.py")
    spec = traced_spec(t)
    assert not isinstance(spec, str) and spec.bias and spec.bias_epilogue == "gelu(v)"
    cands = {c.name.split("/")[-1]: c for c in propose_cube(t)}
    assert "cube_bias" not in cands and {"splitk_vec", "bias_rounded_vec"} <= set(cands)
    assert "rounded_vec" not in cands  # eager rounds product + bias once, not the bare product
    c = cands["bias_rounded_vec"]
    assert "accumulator(blk, bias=" in c.source and "load_bcast" not in c.source
    prep = prepare(c.name, c.source)
    out = Evaluator(t, "Ascend910B2", seeds=(0, 1)).evaluate(prep, {"BN": 64, "VROWS": 2})
    assert out.status == "ok", out.message
    assert set(out.timing["stages_us"]) == {"cube", "vec"}


def test_bias_table_capacity_comes_from_the_soc_spec():
    """The bias table's size is a SoC fact with a source (soc/data/*.json), read by the
    lowering's check and enforced by the emulator; not a constant in either."""
    from ascendcraft.soc import load_soc

    soc = load_soc("Ascend910B2")
    assert soc.bt_kib == 1 and soc.buffer_bytes["bt"] == 1024
    assert "copy_cbuf_to_bt" in soc.sources["bt_kib"]
