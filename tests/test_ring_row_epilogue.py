"""A product followed by a row computation (a softmax, a log-softmax over classes) in one mixed
launch: the cube writes each block into a ring, the AI Core's vector cores run the graph
frontend's row program on it (``search/cube_suffix.ring_twin``). Right only when every block spans
whole rows: the twin's block width takes values of at least N, its tail never splits along N, and
the lowering refuses a ring whose rows stage combines columns over part of a row. Also: a 16-bit
one-element parameter folded through an op is rounded as eager rounds it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from ascendcraft.search.builtin import propose
from kernel_runs import assert_all_pass, inline_task

from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.tasks.taskfile import load_task_file

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed")
CORPUS = Path(__file__).parent / "taskfiles" / "corpus"


def _by_kind(task) -> dict:
    return {c.name.split("/")[1]: c for c in propose(task)}


@needs_gxx
def test_class_head_softmax_in_one_launch() -> None:
    """nn.Linear(1024, 256) then softmax over the 256 classes, fp16: the ring twins pass at reduced
    shapes and the online one models faster than its two-launch form (modeled, model 2.3:
    146.1 -> 106.8 us, 0.75x -> 1.03x eager)."""
    task = load_task_file(CORPUS / "class_head_softmax_fp16.py")
    cands = _by_kind(task)
    assert {"ring_then_chunked", "ring_then_chunked-online"} <= set(cands), sorted(cands)
    src = cands["ring_then_chunked-online"].source
    assert "workspace(f16, ring=RING)" in src and "BN = tunable(choice(256), default=256)" in src
    assert "TAIL = tunable(choice(0, 2)" in src and "cores=" not in src.split("for t in rows(")[1].split(")")[0]
    assert_all_pass(task, [cands["ring_then_chunked"], cands["ring_then_chunked-online"]])
    ev = Evaluator(task, "Ascend910B2", seeds=(0,))
    us = {k: ev.time(ev.build(p, p.defaults()))["modeled_us"]
          for k in ("cube_then_chunked-online", "ring_then_chunked-online") for p in [prepare(k, cands[k].source)]}
    assert us["ring_then_chunked-online"] < 0.8 * us["cube_then_chunked-online"], us


@needs_gxx
def test_ragged_block_width_and_a_folded_bf16_temperature() -> None:
    """3000 queries against 200 prototypes, log-softmax at exp(log_tau) of a bf16 Parameter: blocks
    of 256 columns hold rows of 200 (and 29 queries of the last block row); every candidate passes,
    the temperature folded to the bf16 number eager divides by."""
    task = load_task_file(CORPUS / "proj_logsoftmax_tau_bf16.py")
    cands = _by_kind(task)
    assert "ring_then_chunked-online" in cands
    assert_all_pass(task, cands.values())
    assert "0.49609375" in cands["ring_then_chunked-online"].source  # bf16(exp(bf16(-0.7)))


def test_a_folded_16_bit_op_of_a_parameter_is_rounded(tmp_path: Path) -> None:
    p = tmp_path / "t.py"
    p.write_text("import torch\nfrom torch import nn\n\nclass Model(nn.Module):\n    def __init__(self):\n"
                 "        super().__init__()\n        self.t = nn.Parameter(torch.tensor([-0.7], dtype=torch.bfloat16))\n\n"
                 "    def forward(self, x):\n        return x / self.t.exp()\n\n"
                 "def get_inputs():\n    return [torch.randn(64, 80, dtype=torch.bfloat16)]\n\n"
                 "def get_init_inputs():\n    return []\n")
    [cand] = propose(load_task_file(p))
    assert re.search(r"/ 0\.49609375\b", cand.source), cand.source


def test_no_ring_twin_for_rows_wider_than_a_block(tmp_path: Path) -> None:
    """softmax(x @ w) over 300 columns: no block of the cube spans the row, so no ring twin (the
    two-launch forms stay)."""
    task = inline_task(tmp_path, "torch.softmax(x @ w, -1)", "torch.randn(512, 64), torch.randn(64, 300)", "x, w")
    names = list(_by_kind(task))
    assert any(n.startswith("cube_then_") for n in names) and not any(n.startswith("ring_then_") for n in names)


def test_fp32_ring_twin_fits_at_its_defaults(tmp_path: Path) -> None:
    task = inline_task(tmp_path, "torch.log_softmax(x @ w, -1)", "torch.randn(1000, 512), torch.randn(512, 200)", "x, w")
    cands = _by_kind(task)
    prep = prepare("ring", cands["ring_then_chunked-online"].source)
    assert prep.defaults()["BK"] == 32 and prep.defaults()["KL1"] == 128
    assert Evaluator(task, "Ascend910B2", seeds=(0,)).feasible(prep, prep.defaults()) is None


@pytest.mark.parametrize("change,why", [({"BN": 128}, "span whole rows"), ({"TAIL": 1}, "splits blocks along N")])
def test_a_row_wise_ring_over_part_of_a_row_is_refused(change: dict, why: str) -> None:
    task = load_task_file(CORPUS / "class_head_softmax_fp16.py")
    src = _by_kind(task)["ring_then_chunked-online"].source
    src = src.replace("BN = tunable(choice(256), default=256)", "BN = tunable(choice(64, 128, 256), default=256)")
    src = src.replace("TAIL = tunable(choice(0, 2)", "TAIL = tunable(choice(0, 1, 2)")
    prep = prepare("ring", src)
    ev = Evaluator(task, "Ascend910B2", seeds=(0,))
    assert ev.feasible(prep, prep.defaults()) is None
    assert why in (ev.feasible(prep, {**prep.defaults(), **change}) or "")


@needs_gxx
def test_a_per_row_output_in_the_ring() -> None:
    """x @ W then each row's mean after its max (one value a row): the row values are written at
    their global rows, each by the one vector core whose block holds the row."""
    task = load_task_file(CORPUS / "param_matmul_rowmax_mean.py")
    cands = _by_kind(task)
    assert "ring_then_chunked" in cands, sorted(cands)
    assert_all_pass(task, [cands["ring_then_chunked"]])
