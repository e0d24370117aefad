"""What a task file's product reads besides its two matrices, and how it reads them.

- A number from an input's size (``g / x.shape[0]``) is a host expression in the kernel, not
  the value at the task's shapes: the reduced-shape check runs the same program at other
  sizes, where a baked number is wrong.
- A Python number of ``forward``'s is a Scalar parameter; ``baddbmm`` / ``addmm``'s own
  ``alpha`` and ``beta`` are steps on the product.
- Widened 16-bit operands (``a.float() @ b.float()``) are the cube's 16-bit product with fp32
  sums; an operand copied to another layout is read in its stored one, and an epilogue operand
  that is not in the output's layout is refused by name."""

from __future__ import annotations

import shutil

import pytest
from ascendcraft.search.cube_builtin import propose_cube, traced_spec
from ascendcraft.search.proposer import Declined

from ascendcraft.tasks.taskfile import load_task_file
from tests.kernel_runs import assert_all_pass, inline_task

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed")


def test_mean_over_the_contraction_is_written_with_the_size(tmp_path) -> None:
    # x^T x / n: the divisor is x's row count, 2048 at the task's shapes
    task = inline_task(tmp_path, "torch.mm(x.t(), x).div_(x.shape[0])",
                       "torch.randn(2048, 64, dtype=torch.float16)", "x")
    spec = traced_spec(task)
    assert not isinstance(spec, str), spec
    assert "size(x, 0)" in spec.epilogue and "2048" not in spec.epilogue
    cands = propose_cube(task)
    assert all("2048.0" not in c.source for c in cands)
    assert_all_pass(task, cands)


def test_a_multiple_of_a_size_and_a_reciprocal_pass(tmp_path) -> None:
    # 0.5 / n and a scale of 1/sqrt(d): both change with the shapes
    task = inline_task(tmp_path, "(a @ b) * (0.5 / a.shape[1]) + 1.0 / b.shape[1] ** 0.5",
                       "torch.randn(256, 384), torch.randn(384, 96)", "a, b")
    spec = traced_spec(task)
    assert not isinstance(spec, str), spec
    assert "size(a_1, 1)" in spec.epilogue and "size(b, 1)" in spec.epilogue  # a is a DSL word: a_1
    assert_all_pass(task, propose_cube(task))


def test_a_number_no_size_formula_gives_is_refused_by_name(tmp_path) -> None:
    task = inline_task(tmp_path, "(a @ b) / (a.shape[0] % 7 + 1)",
                       "torch.randn(200, 128), torch.randn(128, 64)", "a, b")
    why = traced_spec(task)
    assert isinstance(why, str) and "depends on the input shape" in why
    with pytest.raises(Declined, match="depends on the input shape"):
        propose_cube(task)


@pytest.mark.parametrize("beta, alpha", [(0.5, 2.0), (-1.0, 1.0), (3.0, 3.0), (0.0, 0.25)])
def test_scaled_addend_and_product(tmp_path, beta: float, alpha: float) -> None:
    # beta * C + alpha * (A @ B), batched; beta = 0 ignores C (NaN in it too)
    fill = "torch.full((3, 40, 24), float('nan'))" if beta == 0 else "torch.randn(3, 40, 24)"
    task = inline_task(tmp_path, f"torch.baddbmm(c, a, b, beta={beta}, alpha={alpha})",
                       f"{fill}, torch.randn(3, 40, 200), torch.randn(3, 200, 24)", "c, a, b")
    spec = traced_spec(task)
    assert not isinstance(spec, str), spec
    assert ("c" in spec.epilogue) == (beta != 0), spec.epilogue
    assert_all_pass(task, propose_cube(task))


def test_linear_addmm_with_beta_keeps_its_row_bias_form(tmp_path) -> None:
    task = inline_task(tmp_path, "torch.addmm(bias, x, w, beta=0.5)",
                       "torch.randn(48), torch.randn(64, 96), torch.randn(96, 48)", "bias, x, w")
    assert_all_pass(task, propose_cube(task))


def _scaled_task(tmp_path, value: float, dtype: str = "float32"):
    p = tmp_path / ("scaled_small.py" if value < 1 else "scaled_large.py")
    p.write_text("import torch\n\nclass Model(torch.nn.Module):\n"
                 "    def forward(self, a, b, scale: float):\n        return torch.mm(a, b) * scale - scale\n\n"
                 f"def get_inputs():\n    return [torch.randn(96, 160, dtype=torch.{dtype}), "
                 f"torch.randn(160, 72, dtype=torch.{dtype}), {value}]\n\n"
                 "def get_init_inputs():\n    return []\n")
    return load_task_file(p)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_python_number_input_is_a_scalar_parameter(tmp_path, dtype: str) -> None:
    # forward(a, b, scale): the number reaches the kernel as a Scalar[f32] parameter, so the
    # candidates proposed at 0.125 are right at 3.5 too (a baked 0.125 would fail there)
    cands = propose_cube(_scaled_task(tmp_path, 0.125, dtype))
    assert cands and all("scale_1: Scalar[f32]" in c.source or "scale: Scalar[f32]" in c.source for c in cands)
    assert all("0.125" not in c.source for c in cands)
    assert_all_pass(_scaled_task(tmp_path, 3.5, dtype), cands)


def test_a_zero_dim_buffer_is_read_as_its_number(tmp_path) -> None:
    p = tmp_path / "buf.py"
    p.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
                 "    def __init__(self):\n        super().__init__()\n"
                 "        self.w = nn.Parameter(torch.randn(72, 160) / 12)\n"
                 "        self.register_buffer('inv_t', torch.tensor(14.0))\n"
                 "    def forward(self, x):\n        return (x @ self.w.T) * self.inv_t\n\n"
                 "def get_inputs():\n    return [torch.randn(200, 160)]\n\n"
                 "def get_init_inputs():\n    return []\n")
    task = load_task_file(p)
    assert_all_pass(task, propose_cube(task))


@pytest.mark.parametrize("forward, out_f32", [
    ("a.float() @ b.float()", True),                                   # widened operands: fp32 sums
    ("(a @ b).float()", True),                                          # the product rounded, then widened
    ("torch.relu(a.float() @ b.float().t().t() + bias.float()) * 0.5", True),  # a widened bias, views
    ("a.float() @ b.float() * 2.0", True),
])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_widened_16_bit_operands_are_the_cube_product_with_an_fp32_result(
        tmp_path, forward: str, out_f32: bool, dtype: str) -> None:
    # a.float() @ b.float() on 16-bit inputs: every 16-bit product is exact in fp32, so it is the
    # cube's 16-bit product with fp32 sums (before: refused as a computed operand)
    task = inline_task(tmp_path, forward,
                       f"torch.randn(80, 144, dtype=torch.{dtype}), torch.randn(144, 56, dtype=torch.{dtype}), "
                       f"torch.randn(56, dtype=torch.{dtype})", "a, b, bias")
    spec = traced_spec(task)
    assert not isinstance(spec, str), spec
    assert spec.dtype == {"float16": "f16", "bfloat16": "bf16"}[dtype] and spec.out_dtype == "f32"
    cands = propose_cube(task)
    assert all("c: Out[f32]" in c.source for c in cands)
    assert_all_pass(task, cands)


def test_an_operand_copied_to_another_layout_is_read_in_its_stored_one(tmp_path) -> None:
    # a.t().contiguous() of a square a: the product reads a transposed (before: read as stored,
    # and every candidate was wrong); widened after the copy as well
    for i, fwd in enumerate(["a.t().contiguous() @ b", "a.t().contiguous().float() @ b.float()"]):
        (tmp_path / str(i)).mkdir()
        dt = "float32" if i == 0 else "float16"
        task = inline_task(tmp_path / str(i), fwd, f"torch.randn(96, 96, dtype=torch.{dt}), "
                           f"torch.randn(96, 64, dtype=torch.{dt})", "a, b")
        spec = traced_spec(task)
        assert not isinstance(spec, str) and spec.transpose_a, spec
        assert_all_pass(task, propose_cube(task))


def test_an_epilogue_operand_read_transposed_is_refused_by_name(tmp_path) -> None:
    # a @ b + r.t() with a square r has the output's shape but not its layout (before: r was read
    # as stored, and every candidate was wrong)
    task = inline_task(tmp_path, "a @ b + r.t()", "torch.randn(96, 80), torch.randn(80, 96), torch.randn(96, 96)",
                       "a, b, r")
    why = traced_spec(task)
    assert isinstance(why, str) and "in its stored layout" in why
