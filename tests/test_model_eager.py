"""Eager baseline on meta tensors, roofline helpers and report fields."""

import resource

import pytest
import torch

from ascendcraft.model import (
    breakdown_text,
    eager_us,
    load_soc,
    min_bytes,
    report_fields,
    roofline_us,
    simulate,
    trace_aten_ops,
)
from ascendcraft.model.synth import elementwise_trace

BIG = ((1 << 16, 1 << 15), torch.float32)  # 8 GiB


def test_softmax_8gib_on_meta_without_allocating():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    e = eager_us(lambda x: torch.softmax(x, -1), [BIG], "Ascend910B2")
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 1 << 20  # far less than 1 GiB
    assert [o.name for o in e.ops] == ["aten._softmax.default"]
    fused = roofline_us(min_bytes([BIG, BIG]), 5 * (1 << 31), "Ascend910B2")
    assert e.us > fused
    assert e.label == "modeled"


def test_op_count_matches_dispatch():
    def ref(x):
        z = torch.exp(x - x.amax(-1, keepdim=True))
        return z / z.sum(-1, keepdim=True)
    names = [c[0] for c in trace_aten_ops(ref, [BIG])]
    assert names == ["aten.amax.default", "aten.sub.Tensor", "aten.exp.default",
                     "aten.sum.dim_IntList", "aten.div.Tensor"]
    e = eager_us(ref, [BIG])
    soc = load_soc()
    assert e.us > 5 * (soc.host_dispatch_us + soc.launch_us(soc.vector_cores))
    assert e.op_tuples[0][1] == (1 << 33) + (1 << 16) * 4  # read x, write the row maxima


def test_views_are_free_and_modules_work():
    ops = trace_aten_ops(lambda x: x.reshape(-1).unsqueeze(0).expand(2, -1).detach().t(),
                         [((64, 32), torch.float16)])
    assert ops == []
    # a reshape that cannot be a view really copies, and PyTorch dispatches that copy
    ops = trace_aten_ops(lambda x: x.t().reshape(-1), [((64, 32), torch.float16)])
    assert [o[0] for o in ops] == ["aten.clone.default"] and ops[0][1] == 2 * 64 * 32 * 2
    lin = torch.nn.Linear(4096, 1024)
    e = eager_us(lin, [((8, 4096), torch.float32)])
    assert [o.name for o in e.ops] == ["aten.addmm.default"] and e.ops[0].unit == "cube"
    assert e.ops[0].flops == pytest.approx(2 * 8 * 4096 * 1024 + 8 * 1024)


def test_roofline_helpers():
    soc = load_soc("Ascend910B2")
    assert min_bytes([torch.empty(4, 8, device="meta"), ((4, 8), "float16")]) == 128 + 64
    assert roofline_us(1.6e12, 0, soc) == pytest.approx(1e6)
    assert roofline_us(0, soc.cube_peak_flops(), soc, unit="cube", dtype="float16") == pytest.approx(1e6)


def test_report_fields_and_text():
    n = 1 << 24
    r = simulate(elementwise_trace(n, 8192, 2, 48))
    rl = roofline_us(min_bytes([((n,), "float32")] * 3), n)
    eager = eager_us(lambda a, b: a + b, [((n,), torch.float32)] * 2)
    f = report_fields(r, rl, eager)
    assert set(f) >= {"soc", "modeled_us", "eager_us", "speedup", "roofline_us", "roofline_frac",
                      "bound", "pipes", "timing"}
    assert f["timing"] == "modeled" and 0 < f["roofline_frac"] <= 1
    assert f["speedup"] == pytest.approx(eager.us / r.time_us)
    text = breakdown_text(r)
    assert "MTE2" in text and "bound: memory" in text
