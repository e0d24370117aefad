"""A one-number output in bf16: the scalar unit has no conversion to bf16, so the value is
written to an fp32 lane and converted with one vector Cast. Every loss and whole-tensor
reduction of the registry was refused at bf16 ('a scalar output is f32 or f16')."""

from __future__ import annotations

import pytest
import torch
from ascendcraft.search.builtin import propose

from ascendcraft.app.checking import CheckConfig, check
from ascendcraft.status import Status
from ascendcraft.tasks.registry import get_task, list_tasks


def _one_number_ops() -> list[str]:
    return sorted(t.name for t in list_tasks() if t.output_meta()[0][0] == () and t.dtype == torch.float32)


def test_the_registry_has_one_number_ops() -> None:
    names = _one_number_ops()
    assert {"mse_loss", "cross_entropy", "kl_div"} <= set(names), names


@pytest.mark.parametrize("name", ["mse_loss", "cross_entropy", "kl_div", "huber_loss", "triplet_margin_loss"])
def test_one_number_outputs_pass_in_bf16(name: str) -> None:
    t = get_task(name)
    task = t.with_shape(t.shapes[0], torch.bfloat16)
    assert any("Out[bf16]" in c.source for c in propose(task))  # the output really is bf16
    rep = check(task, CheckConfig(soc="Ascend910B2", timing=False))  # as `ascendcraft check --dtype bf16`
    assert rep.correct
    for c in rep.candidates:  # each passes, or none of its tunings fits UB at this width
        assert c.status in (Status.OK, Status.INFEASIBLE), (c.candidate, c.status, c.message)
