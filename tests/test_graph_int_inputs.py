"""Integer inputs cast to a float (``counts.float() * w``, ``ids.to(torch.float16)``) are read
as numbers: loaded in their own dtype and cast on load, rounded as torch rounds them (int64
to fp32 takes CAST_RINT, which the API requires for that pair). Integer arithmetic on them
stays refused with its reason."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from ascendcraft.search.builtin import ProposerError
from ascendcraft.search.graph import propose_from_graph
from kernel_runs import assert_all_pass, inline_task

from ascendcraft.backends.base import TilingArgs
from ascendcraft.evaluate import Evaluator, prepare


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_int_inputs_cast_to_float_round_as_torch(tmp_path: Path, dtype: torch.dtype) -> None:
    task = inline_task(tmp_path, "counts.float() * w + 1.0",
                       f"torch.randint(0, 9, (24, 300), dtype={dtype}), torch.randn(300)", "counts, w")
    cands = propose_from_graph(task)
    ev = Evaluator(task, "Ascend910B2", seeds=(0,), shape_sets=[list(task.shapes)])
    info = torch.iinfo(dtype)
    x = torch.randint(info.min, info.max, (24, 300), dtype=dtype)
    # above 2^24 a float cannot hold every integer: the cast must round to nearest even
    edge = [2**24 + 1, 2**24 + 3, -(2**25) - 3, 0, -1, info.max, info.min]
    if dtype == torch.int64:
        edge += [2**40 + 12345, -(2**53) - 7]
    x.view(-1)[:len(edge)] = torch.tensor(edge, dtype=dtype)
    w = torch.randn(300)
    want = x.float() * w + 1.0
    for cand in cands:
        prep = prepare(cand.name, cand.source)
        res = ev.backend.run(ev.build(prep, {}), [x, w], task.output_meta(),
                             tiling=TilingArgs(prep.values({}), ()), timeout_s=60.0)
        assert res.ok, res.message
        assert torch.equal(res.outputs[0], want), cand.name


def test_int_input_cast_to_fp16_passes_its_check(tmp_path: Path) -> None:
    task = inline_task(tmp_path, "torch.sigmoid(ids.to(torch.float16) * 0.01) * x",
                       "torch.randint(-500, 500, (40, 513)), torch.randn(40, 513).half()", "ids, x")
    assert_all_pass(task, propose_from_graph(task))


def test_integer_arithmetic_is_refused_with_its_reason(tmp_path: Path) -> None:
    task = inline_task(tmp_path, "(counts * 3).float() + x",
                       "torch.randint(0, 9, (8, 64), dtype=torch.int32), torch.randn(8, 64)", "counts, x")
    with pytest.raises(ProposerError, match="integer"):
        propose_from_graph(task)


@pytest.mark.parametrize("forward,inputs", [
    # an attention mask as users pass it: int64 0/1 per key, broadcast over queries
    ("torch.softmax(s.masked_fill(mask == 0, -1e4), dim=-1)",
     "torch.randn(4, 48, 300), torch.randint(0, 2, (4, 1, 300))"),
    ("torch.where(ids > 3, x, -x)", "torch.randint(0, 8, (33, 257), dtype=torch.int32), torch.randn(33, 257)"),
])
def test_integer_inputs_compared_are_masks(tmp_path: Path, forward: str, inputs: str) -> None:
    args = "s, mask" if "mask" in forward else "ids, x"
    task = inline_task(tmp_path, forward, inputs, args)
    assert_all_pass(task, propose_from_graph(task))


def test_a_boolean_buffer_is_a_kernel_input(tmp_path: Path) -> None:
    # a causal mask registered as a bool buffer [T, T], broadcast over batch and heads
    f = tmp_path / "causal.py"
    f.write_text(
        "import torch\n\nclass Model(torch.nn.Module):\n    def __init__(self, t):\n"
        "        super().__init__()\n        self.register_buffer('keep', torch.tril(torch.ones(t, t, dtype=torch.bool)))\n\n"
        "    def forward(self, s):\n        return s.masked_fill(~self.keep, float('-inf')).softmax(-1)\n\n"
        "def get_inputs():\n    return [torch.randn(2, 3, 40, 40)]\n\ndef get_init_inputs():\n    return [40]\n")
    from ascendcraft.tasks.taskfile import load_task_file

    task = load_task_file(str(f))
    assert [(s.name, s.kind, s.dtype) for s in task.inputs][-1] == ("keep", "state", torch.bool)
    assert_all_pass(task, propose_from_graph(task), seeds=(0,))
