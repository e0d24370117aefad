"""A number a task file writes over part of a drawn index tensor (``t[::7] = -100``: ignore_index
padding) is kept: every draw of the check gets it over about the same share, so a kernel that
assumes valid class targets is never passed on valid targets only. The recipes (which read every
target) decline such tasks; the graph frontend skips the padded rows in its gather
(``pick(x, t, idx, -100)``) and masks them per row (a where() over per-row values), and a kernel
that meets any other out-of-range target stops (Trap)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from ascendcraft.dsl.errors import DslError
from ascendcraft.search.builtin import propose

from ascendcraft.cli import main
from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from ascendcraft.tasks.taskfile import load_task_file
from tests.kernel_runs import evaluate_at_task_shapes

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


def test_padded_targets_are_skipped_and_the_mean_is_over_the_other_rows(tmp_path: Path) -> None:
    task = _task(tmp_path, "t[::7] = -100")
    cands = propose(task)
    assert cands and all("/graph-" in c.name and "pick(" in c.source and ", -100)" in c.source for c in cands)
    ev = Evaluator(task, "Ascend910B2", seeds=(0, 1))
    for c in cands:
        out = ev.evaluate(prepare(c.name, c.source), {}, timing=False)
        assert out.status == Status.OK, (c.name, out.status, out.message)


def test_label_smoothing_with_padded_targets_passes(capsys) -> None:
    rc = main(["check", "--no-timing", "--task", str(HERE / "corpus" / "ce_smoothing_padded_targets.py")])
    out = capsys.readouterr().out
    assert rc == 0 and "PASS" in out, out


ROW_CHOICE = '''
@kernel(category="loss")
def k(x: In[f32], t: In[i64], y: Out[f32]):
    for r in rows(x, rows=4):
        a = load(x, r)
        m = row_max(a)
        lse = log(row_sum(exp(a - m))) + m
        p = pick(x, r, t{ignore})
        tv = cast(load_per_row(t, r), f32)
        store(y, r, where(tv != -100.0, lse - p, {other}))
'''


def test_dsl_pick_skips_its_ignore_value_and_where_chooses_per_row(tmp_path: Path) -> None:
    """reduction='none' over padded targets: 0 on the padded rows. Without the ignore value the
    gather stops on them (Trap); where() over per-row values chooses only per-row values."""
    p = tmp_path / "ce_none.py"
    p.write_text(CE.replace("F.cross_entropy(logits, target)", "F.cross_entropy(logits, target, reduction='none')")
                 .format(pad="t[::5] = -100"))
    task = load_task_file(p)
    ok = evaluate_at_task_shapes(task, ROW_CHOICE.format(ignore=", -100", other="0.0"), seeds=(0, 1))
    assert ok.status == Status.OK, ok.message
    trap = evaluate_at_task_shapes(task, ROW_CHOICE.format(ignore="", other="0.0"))
    assert trap.status == Status.CHECK_ERROR and "Trap" in trap.message, trap.message
    with pytest.raises(DslError, match="per-row"):
        prepare("k", ROW_CHOICE.format(ignore=", -100", other="a"))
