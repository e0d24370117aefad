"""The ring form of a @cube_kernel (``workspace(dtype, ring=R)``): one mixed launch where the vector
cores apply the epilogue to block j while the cube computes block j + 1. The DSL form, its
refusals, the lowering (one "mix" launch, flags around the Fixpipe), and the evaluator end to end
on the registry's reduced shapes (fp16 inputs, signed data, ragged M / N / K) for the ops it is
offered to, beside the two-launch candidates."""

from __future__ import annotations

import pytest
from ascendcraft.dsl.parser import DslError, parse
from ascendcraft.search.cube_builtin import propose_cube

from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.tasks.registry import get_task

OPS = ["linear_bias_gelu", "matmul_scale_residual"]


def _mixed(op: str):
    t = get_task(op)
    cands = {c.name.split("/")[-1]: c for c in propose_cube(t)}
    return t, cands


@pytest.mark.parametrize("op", OPS)
def test_offered_beside_the_two_launch_candidates(op: str) -> None:
    _, cands = _mixed(op)
    assert "mixed_ring" in cands
    assert "splitk_vec" in cands  # today's candidates stay
    if op == "linear_bias_gelu":
        assert "bias_rounded_vec" in cands
        assert "bias=bias" in cands["mixed_ring"].source and "workspace(f16, ring=RING)" in cands["mixed_ring"].source
    else:
        assert "workspace(f32, ring=RING)" in cands["mixed_ring"].source
    k = prepare("k", cands["mixed_ring"].source).lower()
    assert [launch.core for launch in k.launches] == ["mix"]
    src = k.launches[0].source
    assert "KERNEL_TYPE_MIX_AIC_1_2" in src
    assert src.count("CrossCoreSetFlag<2, PIPE_FIX>(0)") == 1 and src.count("CrossCoreSetFlag<2, PIPE_MTE2>(1)") == 1
    assert "if (jRing >= RING) CrossCoreWaitFlag(1);" in src  # the cube never overwrites an unread slot


def test_no_ring_candidate_where_the_cube_finishes_alone() -> None:
    _, cands = _mixed("matmul_bias_relu")  # bias + ReLU in the bias table and Fixpipe: no vector pass
    assert "mixed_ring" not in cands and "cube_bias" in cands
    _, cands = _mixed("matmul")
    assert "mixed_ring" not in cands


_PROG = """
@cube_kernel(category="matmul")
def mm_act(a: In[f16], b: In[f16], c: Out[f16]):
    RING = tunable(choice(1, 2), default=2)
    ws = workspace(f32{ring})
    for blk in blocks(a, b, m=64, n=64{split}):
        acc = accumulator(blk)
        for kk in k_stages(blk, k=64):
            a1 = to_l1(a, kk)
            b1 = to_l1(b, kk)
            for k0 in k_steps(kk, k=32):
                acc = mmad(to_l0a(a1, k0), to_l0b(b1, k0), acc)
        store(ws, blk, acc)
    for t in rows(ws, rows=4):
        for cc in chunks(t, 64):
            v = load(ws, cc)
            store(c, cc, cast(relu(v), f16))
"""


def test_dsl_form_and_its_refusals() -> None:
    p = parse(_PROG.format(ring=", ring=RING", split=""))
    assert p.workspaces[0].ring == "RING"
    assert parse(_PROG.format(ring=", ring=3", split="")).workspaces[0].ring == 3
    assert parse(_PROG.format(ring="", split="")).workspaces[0].ring == 0  # the two-launch form
    with pytest.raises(DslError, match="at most 15"):
        parse(_PROG.format(ring=", ring=16", split=""))
    with pytest.raises(DslError, match="one keyword, ring="):
        parse(_PROG.format(ring=", depth=2", split=""))
    with pytest.raises(DslError, match="not a declared tunable"):
        parse(_PROG.format(ring=", ring=R2", split=""))
    # a ring holds whole blocks: split-K partial sums are refused before any build
    prep = prepare("k", _PROG.format(ring=", ring=RING", split=", split_k=2"))
    ev = Evaluator(get_task("matmul").with_shape((128, 256), "fp16"), "Ascend910B2", seeds=(0,))
    assert "split_k must be 1" in (ev.feasible(prep, {}) or "")


@pytest.mark.parametrize("op", OPS)
def test_mixed_candidate_correct_on_a_ragged_reduced_shape(op: str) -> None:
    t, cands = _mixed(op)
    ragged = t.check_shapes[1]  # (100, 77, 130): ragged M, K and N, several blocks
    ev = Evaluator(t, "Ascend910B2", seeds=(0,), shape_sets=[ragged])
    prep = prepare(cands["mixed_ring"].name, cands["mixed_ring"].source)
    out = ev.evaluate(prep, {"BM": 64, "BN": 64, "VCHUNK": 64, "RING": 2})
    assert out.status == "ok", out.message
    assert set(out.timing["stages_us"]) == {"mix"} and out.timing["timing"] == "modeled"


@pytest.mark.slow
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("params", [{}, {"RING": 1, "TAIL": 1}, {"RING": 3, "BM": 64, "BN": 64, "VCHUNK": 64,
                                                                   "VROWS": 4, "ORDER": 0},
                                    {"RING": 2, "TAIL": 2, "BM": 64, "BN": 64, "VCHUNK": 64, "CORES": 8}])
def test_mixed_candidate_on_every_reduced_shape(op: str, params: dict) -> None:
    t, cands = _mixed(op)
    ev = Evaluator(t, "Ascend910B2", seeds=(0, 1))
    prep = prepare(cands["mixed_ring"].name, cands["mixed_ring"].source)
    out = ev.evaluate(prep, params)
    assert out.status == "ok", out.message


def test_task_file_gelu_of_a_linear_reaches_the_mixed_form(tmp_path) -> None:
    # the graph frontend: F.gelu(F.linear(x, w, b)) in fp16, ragged M and N, signed data; the bias in
    # the accumulator (addmm), the product + bias rounded into an f16 ring, GELU on the vector cores
    from ascendcraft.tasks.taskfile import load_task_file

    f = tmp_path / "lgm.py"
    f.write_text(
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
        "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
        "    def forward(self, x, w, b):\n        return F.gelu(F.linear(x, w, b))\n\n\n"
        "def get_inputs():\n    return [torch.randn(40, 64).half(), torch.randn(200, 64).half(), torch.randn(200).half()]\n"
        "\n\ndef get_init_inputs():\n    return []\n")
    t = load_task_file(str(f))
    cands = {c.name.split("/")[-1]: c for c in propose_cube(t)}
    c = cands["mixed_ring"]
    assert "workspace(f16, ring=RING)" in c.source and "accumulator(blk, bias=" in c.source
    out = Evaluator(t, "Ascend910B2", seeds=(0, 1)).evaluate(prepare(c.name, c.source),
                                                            {"BM": 64, "BN": 64, "VCHUNK": 64, "RING": 2})
    assert out.status == "ok", out.message
    assert set(out.timing["stages_us"]) == {"mix"}


def test_cann_project_of_the_mixed_form(tmp_path) -> None:
    """The library's CANN form: one MIX op_kernel (each core its class, blockDim = AI Cores), the
    workspace sized for the ring, the op_host compiling against the stub CANN headers."""
    import shutil
    import subprocess
    from pathlib import Path

    _, cands = _mixed("linear_bias_gelu")
    k = prepare("k", cands["mixed_ring"].source).lower({})
    files = k.render("Ascend910B2")
    kernel = files["cann/op_kernel/linear_bias_gelu_custom.cpp"]
    assert "KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2)" in kernel and "SyncAll" not in kernel
    assert kernel.count("constexpr int32_t RING = 2;") == 2  # in both stages' namespaces
    host = files["cann/op_host/linear_bias_gelu_custom.cpp"]
    assert "SetBlockDim(static_cast<uint32_t>(plain.cubeDim))" in host
    assert "plain.cubeDim * plain.ring * plain.bm * plain.bn * 4" in host
    if shutil.which("g++") is None:
        return
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    stubs = Path(__file__).parent / "golden" / "stubs"
    proc = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", f"-I{stubs}",
                           f"-I{tmp_path / 'cann/op_host'}", str(tmp_path / "cann/op_host/linear_bias_gelu_custom.cpp")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[:2000]
