"""Identity: a custom kernel that does exactly what the library kernel does models at
1.00 +- 0.03x the eager baseline - real kernels from the builtin proposer, lowered, built and
traced by the emulator at full size, through the evaluator (the same path `check` takes).

One cost basis for both sides is what makes a speedup mean something: an elementwise op, a
row softmax whose rows fit in UB, a 4096^3 fp16 matmul and a K-large one must come out even."""

from __future__ import annotations

import shutil

import pytest
import torch
from ascendcraft.search.builtin import propose

from ascendcraft.emulator.trace_format import Op
from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.model import eager_us, simulate
from ascendcraft.model.synth import elementwise_trace
from ascendcraft.tasks.registry import get_task

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed")


def _timing(task, candidate: str, params: dict | None = None) -> dict:
    ev = Evaluator(task, "Ascend910B2", seeds=(0,))
    cand = next(c for c in propose(task) if c.name == candidate)
    prep = prepare(cand.name, cand.source)
    params = params or {}
    assert ev.feasible(prep, params) is None
    return ev.time(ev.build(prep, params))


@pytest.mark.parametrize("name,shape,candidate,params", [
    ("relu", (4096, 32768), "relu/tiles", {}),               # elementwise, one pass, memory-bound
    ("add", (4096, 8192), "add/tiles", {}),                  # two inputs
    ("softmax", (4096, 4096), "softmax/rows", {"ROWS": 2}),  # row values applied on the vector pipe (Brcb)
])
def test_vector_kernel_doing_the_library_work_is_even(name, shape, candidate, params) -> None:
    task = get_task(name)
    if tuple(task.shapes[0]) != shape:
        task = task.with_shape(shape)
    t = _timing(task, candidate, params)
    assert t["timing"] == "modeled" and t["model_version"]
    assert t["speedup"] == pytest.approx(1.0, abs=0.03), (name, t["modeled_us"], t["eager_us"])


def test_matmul_4096_fp16_is_even() -> None:
    # the library's structure: one Fixpipe per block after its Mmads (the split Fixpipe, FSPLIT,
    # overlaps them and is ours, beside it: it models about 4% faster at this shape)
    t = _timing(get_task("matmul"), "matmul/cube", {"FSPLIT": 0})
    assert t["speedup"] == pytest.approx(1.0, abs=0.03), (t["modeled_us"], t["eager_us"])
    assert 0.80 < t["cube_peak_frac"] < 0.92  # public torch_npu: 314.5 TFLOPS = 89% of peak


def test_k_large_matmul_with_the_library_blocking_is_even() -> None:
    # 512 x 32768 @ 32768 x 512 fp16: the library's blocking for few output blocks and a long K
    # (128 x 256 blocks in L0C, each block's K split over 3 cube cores, 24 in all) reads A twice
    # and B four times; the eager model charges those re-reads at the L2 rate (model 2.4), as the
    # timeline charges this kernel's - before, eager paid only one pass and this came out 0.85x
    t = _timing(get_task("matmul_large_k"), "matmul_large_k/splitk_ordered",
                {"BM": 128, "BN": 256, "SPLITK": 3, "CORES": 24})
    assert t["speedup"] == pytest.approx(1.0, abs=0.03), (t["modeled_us"], t["eager_us"])


def test_fp32_output_matmul_is_costed_at_the_fp16_input_rate() -> None:
    # fp16 operands with an fp32 result run at the fp16 cube rate: no speedup from the dtype
    t16 = _timing(get_task("matmul_fp32_out"), "matmul_fp32_out/cube")
    e16 = Evaluator(get_task("matmul"), "Ascend910B2").eager()["eager_us"]
    assert t16["eager_us"] == pytest.approx(e16, rel=0.01)
    assert t16["speedup"] < 1.03


def test_row_softmax_library_sequence_is_even() -> None:
    # the library's one-pass row softmax (rows fit in UB), tiled and double-buffered, through the
    # timeline: the same instruction sequence the eager recipe costs (max, subtract, exp, sum, divide)
    rows, width = 4096, 4096
    trace = elementwise_trace(rows * width, 2 * width, 2, 48, n_inputs=1,
                              ops=[Op.REDUCE_MAX, Op.SUB, Op.EXP, Op.REDUCE_SUM, Op.DIV])
    kernel = simulate(trace, "Ascend910B2", 48).time_us
    eager = eager_us(lambda x: torch.softmax(x, -1), [((rows, width), torch.float32)], "Ascend910B2")
    assert [o.passes for o in eager.ops] == [1]
    assert eager.us / kernel == pytest.approx(1.0, abs=0.03)
