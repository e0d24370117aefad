"""compare(): tolerances, NaN/inf handling, exact ints, scalars, shape mismatches."""

from __future__ import annotations

import math

import torch

from ascendcraft.tasks import Tolerance, compare, compare_outputs, nan_filled_like
from ascendcraft.tasks.compare import sentinel_for

TOL = Tolerance(1e-4, 1e-4)


def test_equal_and_within_tolerance() -> None:
    e = torch.linspace(-3, 3, 100)
    r = compare(e.clone(), e, TOL)
    assert r.ok and r.max_abs_err == 0 and r.n_bad == 0 and r.first_bad_index is None
    r = compare(e + 5e-5, e, TOL)
    assert r.ok and r.max_abs_err > 0 and r.mean_abs_err > 0


def test_out_of_tolerance_reports_first_index() -> None:
    e = torch.zeros(4, 5)
    a = e.clone()
    a[2, 3] = 1.0
    a[3, 0] = -1.0
    r = compare(a, e, TOL)
    assert not r.ok and r.n_bad == 2 and r.first_bad_index == (2, 3)
    assert r.max_abs_err == 1.0 and "(2, 3)" in r.message and "2 of 20" in r.message


def test_rtol_scales_with_magnitude() -> None:
    e = torch.tensor([1e4])
    assert compare(e + 0.5, e, TOL).ok  # 0.5 <= 1e-4 + 1e-4 * 1e4
    assert not compare(e + 2.0, e, TOL).ok


def test_nan_rules() -> None:
    e = torch.tensor([1.0, math.nan, math.inf, -math.inf])
    assert compare(e.clone(), e, TOL).ok  # matching NaN/inf positions allowed
    bad = torch.tensor([math.nan, math.nan, math.inf, -math.inf])
    r = compare(bad, e, TOL)
    assert not r.ok and r.first_bad_index == (0,) and "not written" in r.message
    assert not compare(torch.tensor([1.0, 0.0, math.inf, -math.inf]), e, TOL).ok
    assert not compare(torch.tensor([1.0, math.nan, -math.inf, -math.inf]), e, TOL).ok
    assert not compare(torch.tensor([math.inf]), torch.tensor([1.0]), TOL).ok


def test_half_precision_upcast() -> None:
    e = torch.randn(1000).to(torch.float16)
    a = (e.double() + 1e-4).to(torch.float16)
    r = compare(a, e, Tolerance.for_dtype(torch.float16))
    assert r.ok
    eb = torch.randn(100).to(torch.bfloat16)
    assert compare(eb, eb, None).ok
    assert not compare(eb + 1, eb, None).ok


def test_exact_for_int_and_bool() -> None:
    e = torch.arange(10)
    assert compare(e.clone(), e, Tolerance(10, 10)).ok  # tolerance ignored: exact
    a = e.clone()
    a[7] += 1
    r = compare(a, e, Tolerance(10, 10))
    assert not r.ok and r.n_bad == 1 and r.first_bad_index == (7,)
    m = torch.tensor([True, False])
    assert compare(m.clone(), m).ok and not compare(~m, m).ok
    assert not compare(e.float(), e).ok  # dtype mismatch is a clear failure
    assert "dtype" in compare(e.float(), e).message


def test_scalar_outputs() -> None:
    e = torch.tensor(2.5)
    assert compare(torch.tensor(2.5), e, TOL).ok
    assert compare(torch.tensor([2.5]), e, TOL).ok  # 1-element buffer for a scalar
    r = compare(torch.tensor(3.0), e, TOL)
    assert not r.ok and r.first_bad_index == ()
    assert compare(2.5, e, TOL).ok


def test_shape_mismatch_message() -> None:
    r = compare(torch.zeros(4, 5), torch.zeros(5, 4), TOL)
    assert not r.ok and "shape mismatch" in r.message and "(4, 5)" in r.message


def test_compare_outputs_tuple() -> None:
    v, i = torch.cummax(torch.randn(3, 7), dim=1)
    assert compare_outputs([v, i], [v, i], TOL).ok
    r = compare_outputs([v, i + 1], [v, i], TOL)
    assert not r.ok and r.message.startswith("output 1")
    assert not compare_outputs([v], [v, i], TOL).ok


def test_nan_filled_like() -> None:
    buf = nan_filled_like(((3, 4), torch.float16))
    assert buf.shape == (3, 4) and buf.dtype == torch.float16 and torch.isnan(buf).all()
    ib = nan_filled_like(torch.empty(5, dtype=torch.int64, device="meta"))
    assert ib.device.type == "cpu" and (ib == torch.iinfo(torch.int64).min).all()
    assert sentinel_for(torch.uint8) == 255
    r = compare(nan_filled_like(((2, 2), torch.float32)), torch.zeros(2, 2), TOL)
    assert not r.ok and r.n_bad == 4


def test_either_reference_element_by_element() -> None:
    """Each element within tolerance of one of two legitimate results passes (eager's fp16 CPU
    output and the correctly rounded one may disagree by an ulp where a kernel's reduction order
    moves one rounding of the chain); an element off both fails, and so does a NaN where both
    have a value."""
    from ascendcraft.tasks.compare import compare_either

    cpu = torch.tensor([2.859375, 1.0, 2.5], dtype=torch.float16)
    wide = torch.tensor([2.85546875, 1.0, 2.50390625], dtype=torch.float16)
    got = torch.tensor([2.85546875, 1.0, 2.5], dtype=torch.float16)  # first as wide, last as cpu
    assert not compare(got, cpu) and not compare(got, wide)
    ok = compare_either(got, cpu, wide)
    assert ok and "within tolerance of one of the two" in ok.message
    off = torch.tensor([2.85546875, 1.0078125, 2.5], dtype=torch.float16)  # middle off both
    bad = compare_either(off, cpu, wide)
    assert not bad and "1 elements are out of tolerance of both" in bad.message
    nan = torch.tensor([2.85546875, math.nan, 2.5], dtype=torch.float16)
    assert not compare_either(nan, cpu, wide)
