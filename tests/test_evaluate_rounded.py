"""fp16 / bf16 checks judged again against the correctly rounded result: a CPU reference in
fp16 rounds its intermediates (an fp16 sum of squares overflows, a long product drifts by
ulps), so a kernel accumulating in fp32 may miss it while being as close as rounding allows."""

from __future__ import annotations

from pathlib import Path

import torch
from ascendcraft.search.builtin import propose

from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from ascendcraft.tasks.registry import get_task


def _fp16(name: str):
    t = get_task(name)
    return t.with_shape(t.shapes[0], torch.float16)


def test_an_overflowing_fp16_reference_does_not_fail_a_correct_kernel() -> None:
    # frobenius_norm at fp16: the CPU reference's sum of squares is inf, so it returns 0 for
    # every element; the kernel (fp32 sums) returns x / ||x||, which is the rounded truth
    task = _fp16("frobenius_norm")
    ev = Evaluator(task, "Ascend910B2", seeds=(0,))
    for cand in propose(task):
        out = ev.evaluate(prepare(cand.name, cand.source), {}, timing=False)
        assert out.status == Status.OK, (cand.name, out.message)
        assert "or of the correctly rounded result" in out.message
        assert "float16 CPU reference alone, which rounds its intermediates" in out.message
        assert out.max_abs_err < 1e-3  # errors are against the rounded truth


def test_ulp_drift_of_an_fp16_product_is_judged_by_the_rounded_truth() -> None:
    task = _fp16("prod_dim")
    ev = Evaluator(task, "Ascend910B2", seeds=(0,))
    cand = propose(task)[0]
    out = ev.evaluate(prepare(cand.name, cand.source), {}, timing=False)
    assert out.status == Status.OK, out.message
    assert "of 4080 elements out of tolerance" in out.message  # the CPU reference's own ulp drift


def test_an_output_off_both_references_still_fails() -> None:
    task = _fp16("prod_dim")
    ev = Evaluator(task, "Ascend910B2", seeds=(0,))
    case = ev._case(list(ev.shape_sets[0]), 0, False)
    inputs = task.make_inputs(list(ev.shape_sets[0]), seed=0, signed=False)
    truth = task.run_reference_wide(inputs)[0].to(torch.float16)
    bad = (truth.float() * 1.02 + 0.01).half()  # 2 % off: beyond the fp16 tolerance everywhere
    first = ev._compare(case.key, 0, bad, case.expected[0])
    assert not first.ok
    again = ev._compare_rounded(case, 0, bad, first)
    assert again is first  # the first failure stands, with its message
    good = ev._compare_rounded(case, 0, truth, ev._compare(case.key, 0, truth, case.expected[0]))
    assert good.ok and "correctly rounded" in good.message


def test_fp32_tasks_have_no_wide_reference_and_module_tasks_run_at_float64(tmp_path: Path) -> None:
    assert get_task("frobenius_norm").run_reference_wide([torch.randn(4, 4)]) is None  # fp32: not asked
    # a task file with a module holding parameters, at fp16: the float64 run takes them along
    f = tmp_path / "norm_scale.py"
    f.write_text("import torch\nimport torch.nn as nn\n\n"
                 "class Model(nn.Module):\n"
                 "    def __init__(self, width):\n"
                 "        super().__init__()\n"
                 "        self.norm = nn.LayerNorm(width)\n"
                 "        self.scale = nn.Parameter(torch.full((width,), 1.5))\n"
                 "    def forward(self, x):\n"
                 "        return self.norm(x) * self.scale\n\n"
                 "def get_inputs():\n    return [torch.randn(6, 40).half()]\n\n"
                 "def get_init_inputs():\n    return [40]\n")
    from ascendcraft.tasks.taskfile import load_task_file

    task = load_task_file(f)
    assert task.dtype == torch.float16
    ins = task.make_inputs(task.shapes, seed=0)
    [ref] = task.run_reference(ins)
    [wide] = task.run_reference_wide(ins)
    assert wide.dtype == torch.float64 and wide.shape == ref.shape
    assert (wide - ref.double()).abs().max() < 2e-2  # the same function, at two precisions
