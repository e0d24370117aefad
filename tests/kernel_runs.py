"""Shared set-up of the kernel tests: one candidate run on given inputs in the emulator, and
a one-line task file written to a temporary folder."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch

from ascendcraft.backends.base import TilingArgs
from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from ascendcraft.tasks.task import Task
from ascendcraft.tasks.taskfile import load_task_file


def run_one_output(task: Task, cand: Any, x: torch.Tensor, params: dict[str, int]) -> torch.Tensor:
    """Build ``cand`` with ``params`` and run it on ``x`` (the task's one input) at the task's
    shape, returning its one output; bypasses the comparison so a test can judge the values."""
    ev = Evaluator(task, "Ascend910B2", seeds=(0,), shape_sets=[list(task.shapes)])
    prep = prepare(cand.name, cand.source)
    art = ev.build(prep, params)
    [spec] = task.output_meta()
    res = ev.backend.run(art, [x], [spec], tiling=TilingArgs(prep.values(params), ()), timeout_s=60.0)
    assert res.ok, res.message
    return res.outputs[0]


def evaluate_at_task_shapes(task: Task, src: str, seeds: tuple[int, ...] = (0,)) -> Any:
    """The outcome of DSL program ``src`` (tunables at their defaults) checked at the task's own
    shapes, without timing."""
    ev = Evaluator(task, "Ascend910B2", seeds=seeds, shape_sets=[list(task.shapes)])
    return ev.evaluate(prepare("k", src), {}, timing=False)


def inline_task(tmp_path: Path, forward: str, inputs: str, args: str) -> Task:
    """A KernelBench-style task file whose ``forward(args)`` returns ``forward``."""
    p = tmp_path / "t.py"
    p.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
                 f"    def forward(self, {args}):\n        return {forward}\n\n"
                 f"def get_inputs():\n    return [{inputs}]\n\n"
                 "def get_init_inputs():\n    return []\n")
    return load_task_file(p)


def assert_all_pass(task: Task, cands: Iterable[Any], seeds: tuple[int, ...] = (0, 1),
                    at_task_shape: bool = False) -> None:
    """Every candidate of ``cands`` (there is at least one) passes the task's check at its default
    tunables: reduced shapes (or the task's own), task and signed inputs, no timing."""
    cands = list(cands)
    assert cands, "no candidate"
    ev = Evaluator(task, "Ascend910B2", seeds=seeds, shape_sets=[list(task.shapes)] if at_task_shape else None)
    for cand in cands:
        out = ev.evaluate(prepare(cand.name, cand.source), {}, timing=False)
        assert out.status == Status.OK, (cand.name, out.message)
