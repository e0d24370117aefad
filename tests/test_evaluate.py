"""The one evaluator: shape sets chosen by what a task is (never its name), outcomes with
Status values, time and its kind as the backend gives them, eager model computed once."""

from __future__ import annotations

import shutil
import textwrap

import pytest
from ascendcraft.dsl.parser import DslError
from ascendcraft.search.builtin import propose

import ascendcraft.evaluate as evaluate_module
from ascendcraft.backends import EmulatorBackend, Timing
from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.model import eager_us, min_bytes, roofline_us
from ascendcraft.status import Status
from ascendcraft.tasks.registry import get_task
from ascendcraft.tasks.shapes import reduced_shapes
from ascendcraft.tasks.taskfile import load_task_file

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed")

NOT_A_MATMUL = textwrap.dedent('''
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def forward(self, a, b):
            return a * 2 + b

    def get_inputs():
        return [torch.randn(4096, 4096).half(), torch.randn(4096, 4096).half()]

    def get_init_inputs():
        return []
''')


def test_shape_sets_follow_the_task_not_its_name(tmp_path) -> None:
    """A task file called matmul.py that is no matmul is checked on the generic reduced
    shapes; the registry matmul brings its own sets, kept through --shape/--dtype."""
    f = tmp_path / "matmul.py"
    f.write_text(NOT_A_MATMUL)
    impostor = load_task_file(str(f))
    assert impostor.name == "matmul" and impostor.check_shapes is None
    assert Evaluator(impostor).shape_sets == [[tuple(s) for s in ss] for ss in reduced_shapes(impostor)]
    registry = get_task("matmul")
    assert Evaluator(registry).shape_sets[0] == [(192, 160), (160, 320)]
    assert Evaluator(impostor).shape_sets != Evaluator(registry).shape_sets
    assert get_task("matmul").with_shape((64, 64), "fp32").check_shapes == registry.check_shapes
    assert Evaluator(registry, full=True).shape_sets == [[(4096, 4096), (4096, 4096)]]


def _prep(task, name: str | None = None):
    cand = propose(task)[0] if name is None else next(c for c in propose(task) if c.name == name)
    return prepare(cand.name, cand.source)


def test_outcomes_carry_status_values_and_messages(monkeypatch) -> None:
    add = get_task("add").with_shape((3000,))
    ev = Evaluator(add, seeds=(0,))
    prep = _prep(add)
    ok = ev.evaluate(prep, {})
    assert ok.status is Status.OK and ok.correct and ok.timing_kind == "modeled"
    assert ok.time_us == ok.timing["modeled_us"] and ok.timing["timing"] == ok.timing_kind
    assert 0 < ok.timing["roofline_frac"] <= 1 and ok.timing["stages_us"] == {"vec": ok.time_us}
    wrong = Evaluator(get_task("sub").with_shape((3000,)), seeds=(0,)).evaluate(prep, {})
    assert wrong.status is Status.WRONG and "output 0" in wrong.message and "seed 0" in wrong.message
    infeasible = Evaluator(get_task("add"), seeds=(0,)).evaluate(prep, {"TILE": 32768, "DEPTH": 2})
    assert infeasible.status is Status.INFEASIBLE and "UB budget exceeded" in infeasible.message
    relu = _prep(get_task("relu"))
    mismatch = ev.evaluate(relu, {})
    assert mismatch.status is Status.INFEASIBLE and "kernel takes 1 input tensors, the task has 2" in mismatch.message

    def fails_to_lower(params=None):
        raise DslError("line 3: cannot lower this")

    broken = prepare(prep.name, prep.source)
    monkeypatch.setattr(broken, "lower", fails_to_lower)
    out = ev.evaluate(broken, {})
    assert out.status is Status.DSL_ERROR and "cannot lower" in out.message


class _Measured(EmulatorBackend):
    """The emulator relabelled as a hardware backend would label its times (the seam test:
    the evaluator reports whatever kind the backend wrote)."""

    def time(self, artifact, inputs, outputs, *, tiling, timeout_s):
        t = super().time(artifact, inputs, outputs, tiling=tiling, timeout_s=timeout_s)
        return Timing("measured", t.us, {"device": "test"})


def test_time_and_its_kind_come_from_the_backend() -> None:
    task = get_task("relu").with_shape((1 << 16,))
    prep = _prep(task)
    out = Evaluator(task, backend=_Measured("Ascend910B2"), seeds=(0,)).evaluate(prep, {})
    assert out.status is Status.OK and out.timing_kind == "measured"
    assert out.timing["measured_us"] == out.time_us and "modeled_us" not in out.timing
    assert out.timing["timing"] == "measured" and out.timing["device"] == "test"
    with pytest.raises(ValueError, match="differs from the backend's"):
        Evaluator(task, "Ascend310P3", backend=EmulatorBackend("Ascend910B2"))


def test_eager_model_and_roofline_once_per_task(monkeypatch) -> None:
    calls = []
    real = evaluate_module.eager_us

    def counting(*args, **kw):
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(evaluate_module, "eager_us", counting)
    task = get_task("relu").with_shape((1 << 16,))
    ev = Evaluator(task, seeds=(0,))
    prep = _prep(task)
    for params in ({}, {"TILE": 2048}):
        assert ev.evaluate(prep, params).status is Status.OK
    assert ev.eager() is ev.eager() and len(calls) == 1


def test_cube_roofline_counts_cube_work_at_the_cube_peak() -> None:
    """matmul at full shape: roofline = max(bytes / HBM, 2 MNK / cube peak (fp16))."""
    ev = Evaluator(get_task("matmul"))
    e = ev.eager()
    flops = 2 * 4096 ** 3
    assert e["cube_flops"] == flops
    soc = ev.soc
    assert e["roofline_us"] == pytest.approx(max(3 * 4096 * 4096 * 2 / (soc.hbm_gbps * 1e9),
                                                 flops / soc.cube_peak_flops("float16")) * 1e6)
    relu = get_task("relu")  # fp32, vector only: bytes / HBM vs vector flops at the fp32 peak
    e = Evaluator(relu).eager()
    flops = sum(op.flops for op in eager_us(relu.reference, relu.meta_inputs(), soc).ops)
    assert e["cube_flops"] == 0
    assert e["roofline_us"] == roofline_us(min_bytes([(s.shape, s.dtype) for s in relu.inputs] * 2), flops, soc)


class _OneByOne(EmulatorBackend):
    """A backend without ``run_many``: the evaluator runs its check runs one by one."""

    run_many = None  # type: ignore[assignment]

    def run(self, artifact, inputs, outputs, *, tiling, timeout_s):
        return EmulatorBackend.run_many(self, artifact, [(inputs, outputs, tiling)], timeout_s=timeout_s)[0]


def test_check_runs_are_batched_and_their_inputs_made_once(monkeypatch) -> None:
    """Every check run of a trial goes to the fork server in one request (per launch); the
    inputs and reference outputs are made once per evaluator, not per trial; a backend that
    cannot batch gets the same verdicts, including the first failing run's message."""
    import ascendcraft.backends.emulator as emu

    batches, made = [], []
    real_batch, task = emu.run_batch, get_task("relu").with_shape((1 << 12,))
    monkeypatch.setattr(emu, "run_batch", lambda so, runs, **kw: batches.append(len(runs)) or real_batch(so, runs, **kw))
    real_inputs = type(task).make_inputs
    monkeypatch.setattr(type(task), "make_inputs", lambda self, *a, **kw: made.append(1) or real_inputs(self, *a, **kw))
    ev = Evaluator(task, seeds=(0, 1))
    prep = _prep(task)
    n_cases = len(ev.shape_sets) * 2 * 2
    counts = []
    for params in ({}, {"TILE": 2048}):
        assert ev.evaluate(prep, params, timing=False).status is Status.OK
        counts.append(len(made))
    assert batches == [2 * n_cases, 2 * n_cases] and counts[0] >= n_cases and counts[1] == counts[0]
    sub = get_task("sub").with_shape((3000,))
    add = _prep(get_task("add"))
    batched = Evaluator(sub, seeds=(0, 1)).evaluate(add, {}, timing=False)
    single = Evaluator(sub, backend=_OneByOne("Ascend910B2"), seeds=(0, 1)).evaluate(add, {}, timing=False)
    assert batched.status is single.status is Status.WRONG and batched.message == single.message
    batches.clear()  # past CHECK_GROUP_BYTES, an input's two runs are a batch of their own
    monkeypatch.setattr(evaluate_module, "CHECK_GROUP_BYTES", 1)
    assert ev.evaluate(prep, {}, timing=False).status is Status.OK and batches == [2] * n_cases
    grouped = Evaluator(sub, seeds=(0, 1)).evaluate(add, {}, timing=False)
    assert grouped.message == single.message
