"""Extrapolated vs fully simulated modeled time on registry ops (issue 14: within 0.5 %).

Every builtin candidate of an op is timed through the evaluator twice at a reduced shape
set (budget 2^19 elements: several tiles per core): with the default trace (a summary; the
model extrapolates periodic loops) and with ``$ASCENDCRAFT_FULL_SIM=1`` (every record
traced and simulated). The default run covers a handful of ops of different kinds; the
slow one covers every registry op. At default shapes: ``benchmarks/trial_cost.py --compare``.
"""

from __future__ import annotations

import dataclasses
import shutil

import pytest
from ascendcraft.search.builtin import ProposerError, propose

from ascendcraft.app.checking import first_feasible
from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.model import periodic
from ascendcraft.tasks.registry import get_task, list_tasks
from ascendcraft.tasks.shapes import reduced_shapes

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed to build emulator kernels")

BUDGET = 1 << 19
QUICK = ["relu", "softmax", "layer_norm", "avg_pool2d", "cross_entropy", "matmul", "cumsum"]


def _at(task, shapes):
    """The task with these shapes as its (timing) shapes."""
    ins = [dataclasses.replace(s, shape=tuple(sh)) if s.is_tensor else s
           for s, sh in zip(task.inputs, shapes, strict=True)]
    return dataclasses.replace(task, inputs=ins)


def _agreement(name: str, monkeypatch, shape: tuple[int, ...] | None = None) -> tuple[float, int]:
    """(worst relative difference over the op's candidates, loop iterations extrapolated)."""
    task = get_task(name)
    if shape is not None:
        small = task.with_shape(shape)
    else:
        small = _at(task, (task.check_shapes or reduced_shapes(task, BUDGET))[-1])
    ev = Evaluator(small, "Ascend910B2", seeds=(0,))
    extrapolated = [0]
    run = periodic.run_summary_program

    def counting(*a, **kw):
        r = run(*a, **kw)
        extrapolated[0] += r.extrapolated
        return r

    monkeypatch.setattr(periodic, "run_summary_program", counting)
    try:
        cands = propose(task)
    except ProposerError:
        return 0.0, 0
    worst = 0.0
    for cand in cands:
        prep = prepare(cand.name, cand.source)
        params = first_feasible(ev, prep)
        if params is None:
            continue
        art = ev.build(prep, params)
        got = {}
        for full in ("0", "1"):
            monkeypatch.setenv("ASCENDCRAFT_FULL_SIM", full)
            got[full] = ev.time(art)
        fast, ref = got["0"]["modeled_us"], got["1"]["modeled_us"]
        assert got["0"]["trace_records"] == got["1"]["trace_records"]
        worst = max(worst, abs(fast - ref) / ref)
    return worst, extrapolated[0]


@pytest.mark.parametrize("name", QUICK)
def test_extrapolated_equals_full_simulation(name, monkeypatch):
    worst, _ = _agreement(name, monkeypatch)
    assert worst <= 5e-3


def test_extrapolation_happens_on_a_tile_loop(monkeypatch):
    worst, extrapolated = _agreement("relu", monkeypatch, (1 << 24,))  # ~40 tiles per core
    assert extrapolated > 0 and worst < 1e-9


@pytest.mark.slow
@pytest.mark.parametrize("name", [t.name for t in list_tasks() if t.name not in QUICK])
def test_every_registry_op(name, monkeypatch):
    worst, _ = _agreement(name, monkeypatch)
    assert worst <= 5e-3
