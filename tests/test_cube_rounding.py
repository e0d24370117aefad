"""Cube candidates round where eager rounds: the traced dtype of each ATen call says whether
its result is rounded to 16 bits (``mm`` rounds the bare product; ``addmm`` / ``nn.Linear`` /
``F.linear`` add the bias in the accumulator and round once; each epilogue call rounds its
own result). A bias in the accumulator is offered only where eager adds it before rounding,
the rounded workspace only where eager rounds the bare product, and every epilogue on the
vector cores rounds after each 16-bit call. Task files in several styles, fp16 / bf16 / fp32,
ragged N and M, signed data; every offered candidate must pass the evaluator's check."""

from __future__ import annotations

import textwrap

import pytest
from ascendcraft.search.cube_builtin import propose_cube, traced_spec

from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from ascendcraft.tasks.taskfile import load_task_file

LINEAR_MODULE = '''
class Model(nn.Module):
    def __init__(self, fan_in, fan_out):
        super().__init__()
        self.proj = nn.Linear(fan_in, fan_out)

    def forward(self, hidden):
        return F.gelu(self.proj(hidden))
'''
FUNCTIONAL = '''
class Model(nn.Module):
    def forward(self, feats, weight, shift):
        return F.gelu(F.linear(feats, weight, shift))
'''
EXPLICIT = '''
class Model(nn.Module):
    def forward(self, x, w, b):
        return F.gelu(x @ w.T + b)
'''
ADDMM_TANH = '''
class Model(nn.Module):
    def forward(self, q, k, off):
        return torch.tanh(torch.addmm(off, q, k))
'''
MATMUL_CHAIN = '''
class Model(nn.Module):
    def forward(self, lhs, rhs, b):
        return torch.sigmoid(torch.matmul(lhs, rhs) + b) * 3.0
'''
RELU_EXPLICIT = '''
class Model(nn.Module):
    def forward(self, x, w, b):
        return F.relu(x @ w + b)
'''


def _task(tmp_path, body: str, ins: str, init: str = "[]", dtype: str = "half"):
    head = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
    tail = (f"\n\ndef get_inputs():\n    return {ins.format(d=dtype)}\n\n\n"
            f"def get_init_inputs():\n    return {init}\n")
    f = tmp_path / f"task_{dtype}.py"
    f.write_text(head + textwrap.dedent(body) + tail)
    return load_task_file(str(f))


NK = "[torch.randn(40, 64).{d}(), torch.randn(200, 64).{d}(), torch.randn(200).{d}()]"  # w is N x K
KN = "[torch.randn(40, 64).{d}(), torch.randn(64, 200).{d}(), torch.randn(200).{d}()]"  # w is K x N

#: (body, inputs, init, dtype, candidates that must be offered, candidates that must not)
CASES = {
    "nn.Linear fp16 module": (LINEAR_MODULE, "[torch.randn(40, 64).{d}()]", "[64, 200]", "half",
                              {"bias_rounded_vec", "mixed_ring"}, {"rounded_vec"}),
    "F.linear bf16": (FUNCTIONAL, NK, "[]", "bfloat16", {"bias_rounded_vec"}, {"rounded_vec"}),
    "x @ w.T + b fp16": (EXPLICIT, NK, "[]", "half", {"rounded_vec", "mixed_ring"},
                         {"bias_rounded_vec", "cube_bias"}),
    "addmm fp16": (ADDMM_TANH, KN, "[]", "half", {"bias_rounded_vec"}, {"rounded_vec"}),
    "matmul + b, sigmoid, * 3 fp16": (MATMUL_CHAIN, KN, "[]", "half", {"rounded_vec"},
                                      {"bias_rounded_vec"}),
    "relu(x @ w + b) fp16": (RELU_EXPLICIT, KN, "[]", "half", {"rounded_vec"}, {"cube_bias"}),
    "x @ w.T + b fp32": (EXPLICIT, NK, "[]", "float", {"splitk_vec", "mixed_ring"}, {"rounded_vec"}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_offered_candidate_rounds_as_eager(tmp_path, case: str) -> None:
    body, ins, init, dtype, offered, refused = CASES[case]
    task = _task(tmp_path, body, ins, init, dtype)
    cands = {c.name.split("/")[-1]: c for c in propose_cube(task)}
    assert offered <= set(cands), sorted(cands)
    assert not refused & set(cands), sorted(cands)
    ev = Evaluator(task, "Ascend910B2", seeds=(0, 1))
    for kind, c in cands.items():
        params = {k: v for k, v in {"BN": 64, "VROWS": 2}.items() if f"{k} = tunable" in c.source}
        out = ev.evaluate(prepare(c.name, c.source), params, timing=False)
        assert out.status is Status.OK, f"{case}: {kind}: {out.message}"


def test_the_epilogue_rounds_after_each_16_bit_call(tmp_path) -> None:
    spec = traced_spec(_task(tmp_path, MATMUL_CHAIN, KN))
    assert not isinstance(spec, str) and spec.rounded and not spec.bias
    # the product, then product + b, rounded before the next call; the last call by the store
    r = "cast(cast({}, f16), f32)".format
    b = "cast(load_bcast(b, cc), f32)"
    assert spec.epilogue == f"({r('sigmoid(' + r('(' + r('v') + ' + ' + b + ')') + ')')} * 3.0)"
    assert spec.rounded_epilogue == f"({r('sigmoid(' + r('(v + ' + b + ')') + ')')} * 3.0)"
    spec = traced_spec(_task(tmp_path, ADDMM_TANH, KN))
    assert not isinstance(spec, str) and not spec.rounded and spec.bias_rounded
    assert spec.bias_epilogue == "tanh(v)" and "cast(cast(" in spec.epilogue  # tanh(round(v + b))
    spec = traced_spec(_task(tmp_path, ADDMM_TANH, KN, dtype="float"))
    assert not isinstance(spec, str) and "cast(cast(" not in spec.epilogue  # fp32: nothing rounds
