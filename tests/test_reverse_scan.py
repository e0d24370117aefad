"""The true reverse scan (``rscan_*``, ``row_first``, ``chunks(..., reverse=True)``,
``steps(..., reverse=True)``): the registry's ``cumsum_reverse`` candidates that walk the
row from its end are correct across several chunks with a ragged tail, fp32 and fp16, on
the task's and signed data (the evaluator checks both), in both scan forms (Hillis-Steele
and blocked) and on the 3-D slabs; the graph frontend lowers ``flip(scan(flip(x)))`` to it
(a reversed cumprod, which total-minus-prefix could not express, now has a kernel) and a
pass that mixes both directions is left to the whole-row structure; the parser refuses a
non-boolean ``reverse=``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from ascendcraft.dsl.parser import DslError, parse
from ascendcraft.search.builtin import propose
from ascendcraft.search.graph import propose_from_graph

from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from ascendcraft.tasks.registry import get_task
from ascendcraft.tasks.taskfile import load_task_file

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed")
# rows of 2500 in chunks of 1024: the ragged chunk (452) is the first one walked
CHUNKS = {"CHUNK": 1024, "CORES": 4}


def _evaluate(task, kind: str, params: dict):
    cand = next(c for c in propose(task) if c.name.endswith("/" + kind))
    ev = Evaluator(task, "Ascend910B2", seeds=(0,), shape_sets=[list(task.shapes)])
    return cand, ev.evaluate(prepare(cand.name, cand.source), params, timing=False)


@needs_gxx
@pytest.mark.parametrize("kind,shape,dtype", [
    ("reverse_blocked", (6, 2500), "fp32"), ("reverse_blocked", (6, 2500), "fp16"),
    ("reverse", (6, 2500), "fp16"),
    ("reverse_blocked", (5, 1050), "fp32"),  # a last chunk of 26 < 64 lanes: Hillis-Steele branch
])
def test_the_reverse_cumsum_is_correct_across_chunks(kind: str, shape: tuple, dtype: str) -> None:
    cand, out = _evaluate(get_task("cumsum_reverse").with_shape(shape, dtype), kind, CHUNKS)
    assert out.status is Status.OK, out.message
    assert "reverse=True" in cand.source and " - " not in cand.source.split('"""')[-1]


@needs_gxx
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_the_reverse_cumsum_of_a_middle_dim_walks_its_steps_backwards(dtype: str) -> None:
    cand, out = _evaluate(get_task("cumsum_reverse").with_shape((4, 9, 33), dtype), "slabs_reverse", {})
    assert out.status is Status.OK, out.message
    assert "steps(t, reverse=True)" in cand.source


def _task_file(tmp_path: Path, name: str, forward: str) -> Path:
    p = tmp_path / f"{name}.py"
    p.write_text("import torch\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
                 f"        return {forward}\n\ndef get_inputs():\n    return [torch.randn(24, 300)]\n\n"
                 "def get_init_inputs():\n    return []\n")
    return p


@needs_gxx
def test_the_frontend_lowers_a_reversed_cumprod_to_a_reverse_scan(tmp_path: Path) -> None:
    task = load_task_file(_task_file(tmp_path, "rcumprod",
                                     "torch.flip(torch.cumprod(torch.flip(x * 0.5 + 0.75, [1]), 1), [1])"))
    cands = propose_from_graph(task)
    assert {c.name.split("/")[1] for c in cands} >= {"graph-rows", "graph-rows-blocked",
                                                     "graph-chunked", "graph-chunked-blocked"}
    ev = Evaluator(task, "Ascend910B2", seeds=(0,), shape_sets=[list(task.shapes)])
    for c in cands:
        assert "rscan_prod(" in c.source
        out = ev.evaluate(prepare(c.name, c.source), {"CHUNK": 256} if "chunked" in c.name else {},
                          timing=False)
        assert out.status is Status.OK, (c.name, out.message)


def test_a_pass_mixing_both_directions_keeps_the_whole_row_structure(tmp_path: Path) -> None:
    task = load_task_file(_task_file(tmp_path, "both", "torch.cumsum(x, 1) + "
                                     "torch.flip(torch.cumsum(torch.flip(x, [1]), 1), [1])"))
    names = [c.name.split("/")[1] for c in propose_from_graph(task)]
    assert names == ["graph-rows", "graph-rows-blocked"]


SRC = '''@kernel(category="math")
def k(x: In[f32], y: Out[f32]):
    for t in rows(x, rows=1):
        carry = row_fill(0.0)
        for c in chunks(t, 256{kw}):
            s = rscan_sum(load(x, c), carry)
            store(y, c, s)
            carry = row_first(s)
'''


@pytest.mark.parametrize("kw,msg", [(", reverse=1", "reverse= is True or False"),
                                     (", parts=2, reverse=True", "no parts=")])
def test_reverse_takes_a_boolean_and_whole_rows(kw: str, msg: str) -> None:
    with pytest.raises(DslError, match=msg):
        parse(SRC.format(kw=kw))
    parse(SRC.format(kw=", reverse=True"))


@needs_gxx
@pytest.mark.parametrize("name,kind", [("cumsum", "blocked"), ("cumsum_reverse", "reverse_blocked")])
def test_a_row_not_a_multiple_of_the_segments_stays_blocked(name: str, kind: str) -> None:
    # one chunk of 4000: 64 segments of 63 padded to 64 x 64 = 4096 cells, which the col
    # buffers (align_up(4000, 128) = 4096) hold: the blocked path, not Hillis-Steele
    one = {"CHUNK": 4096, "CORES": 1}
    _, out = _evaluate(get_task(name).with_shape((3, 4000), "fp16"), kind, one)
    assert out.status is Status.OK, out.message
    task = get_task(name).with_shape((16, 4000), "fp32")
    ev = Evaluator(task, "Ascend910B2", seeds=(0,))
    us = {}
    for c in propose(task):
        k = c.name.rsplit("/", 1)[1]
        if k in ("chunked", kind):
            us[k] = ev.time(ev.build(prepare(c.name, c.source), one))["modeled_us"]
    assert us[kind] < 0.5 * us["chunked"], us
