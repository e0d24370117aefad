"""A number a task file writes over part of a drawn index tensor (``t[::7] = -100``: ignore_index
padding) is kept: every draw of the check gets it over about the same share, so a kernel that
assumes valid class targets is never passed on valid targets only. The graph frontend refuses
such targets for its class-index gather, and the recipes' kernels stop on them (Trap)."""

from __future__ import annotations

from pathlib import Path

import torch
from ascendcraft.search.builtin import propose

from ascendcraft.cli import main
from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from ascendcraft.tasks.taskfile import load_task_file

HERE = Path(__file__).parent / "taskfiles"

CE = '''import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def forward(self, logits, target):
        return F.cross_entropy(logits, target)


def get_inputs():
    t = torch.randint(0, 100, (64,))
    {pad}
    return [torch.randn(64, 100), t]


def get_init_inputs():
    return []
'''


def _task(tmp_path: Path, pad: str):
    p = tmp_path / "ce_pad.py"
    p.write_text(CE.format(pad=pad))
    return load_task_file(p)


def test_a_strided_write_keeps_its_value_and_share(tmp_path: Path) -> None:
    task = _task(tmp_path, "t[::4] = -100")
    assert task.inputs[1].special == (-100.0, 0.25)
    a, b = (task.make_inputs([(4000, 100), (4000,)], seed=s)[1] for s in (3, 3))
    assert torch.equal(a, b)  # seeded
    share = float((a == -100).float().mean())
    assert 0.2 < share < 0.3 and int(a[a != -100].min()) >= 0


def test_a_masked_write_is_kept_at_a_default_share(tmp_path: Path) -> None:
    task = _task(tmp_path, "t[t < 10] = -100")
    assert task.inputs[1].special == (-100.0, 0.125)


def test_padded_targets_fail_the_recipe_kernels_instead_of_passing(tmp_path: Path) -> None:
    task = _task(tmp_path, "t[::7] = -100")
    ev = Evaluator(task, "Ascend910B2", seeds=(0,))
    cands = propose(task)
    assert cands
    for c in cands:
        out = ev.evaluate(prepare(c.name, c.source), {}, timing=False)
        assert out.status == Status.CHECK_ERROR and "Trap" in out.message, (c.name, out.status, out.message)


def test_label_smoothing_with_padded_targets_is_refused_named(capsys) -> None:
    rc = main(["check", "--no-timing", "--task", str(HERE / "refused" / "ce_smoothing_padded_targets.py")])
    err = capsys.readouterr().err
    assert rc == 2 and "-100" in err and "ignore_index" in err, err
