"""Output comparison for correctness runs.

Rules (why): kernels write into fresh NaN-filled buffers, so an element the kernel never
wrote shows up as NaN and must fail; a reference that legitimately produces NaN/inf
(log of 0, overflow) must not make an otherwise right kernel fail, so *matching* NaN
and same-signed inf positions pass.  fp16/bf16 are upcast to float64 before measuring,
so the error itself is not rounded.  Integer and bool outputs (argmax, masks) are exact.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from .task import Shape, Tolerance, is_exact_dtype


@dataclass(frozen=True)
class CompareResult:
    """Outcome of one comparison; ``message`` is one human-readable line."""

    ok: bool
    max_abs_err: float
    max_rel_err: float
    mean_abs_err: float
    n_bad: int
    first_bad_index: tuple[int, ...] | None
    message: str

    def __bool__(self) -> bool:
        return self.ok


def _fmt_shape(shape: Sequence[int]) -> str:
    return "(" + ", ".join(map(str, shape)) + ")"


def _as_tensor(x: Any) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu()
    return torch.as_tensor(x)


def _unravel(flat: int, shape: Sequence[int]) -> tuple[int, ...]:
    idx = []
    for d in reversed(list(shape)):
        idx.append(flat % d if d else 0)
        flat //= d if d else 1
    return tuple(reversed(idx))


def _fail(msg: str, n_bad: int = 0, first: tuple[int, ...] | None = None) -> CompareResult:
    nan = math.nan
    return CompareResult(False, nan, nan, nan, n_bad, first, msg)


def _elementwise(a64: torch.Tensor, e64: torch.Tensor, tol: Tolerance
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per element (float64, same shape): both finite; a special-value mismatch (NaN must match
    NaN, inf the same inf); a finite value out of tolerance; the finite |a - e| (0 elsewhere)."""
    e_nan, a_nan = torch.isnan(e64), torch.isnan(a64)
    e_inf, a_inf = torch.isinf(e64), torch.isinf(a64)
    finite = torch.isfinite(e64) & torch.isfinite(a64)
    special_bad = (e_nan != a_nan) | (e_inf & (a64 != e64)) | (a_inf & ~e_inf)
    diff = torch.where(finite, (a64 - e64).abs(), torch.zeros_like(a64))
    value_bad = finite & (diff > tol.atol + tol.rtol * e64.abs())
    return finite, special_bad, value_bad, diff


def compare(
    actual: Any, expected: Any, tolerance: Tolerance | tuple[float, float] | None = None
) -> CompareResult:
    """Compare one output (tensor or Python number) with the reference output.

    Passes when every element satisfies ``|a - e| <= atol + rtol * |e|`` (exact for
    integer/bool expected outputs), NaN in ``expected`` is matched by NaN in ``actual``,
    and +-inf by the same inf.  A 0-d expected output also accepts a 1-element actual
    (kernels often write scalars into a 1-element buffer).  Shapes or dtypes that differ
    fail with a message saying so; errors are measured over finite positions, except that
    any NaN/inf mismatch makes ``max_abs_err`` and ``max_rel_err`` infinite.  An expected
    output that is NaN everywhere fails: an unwritten (NaN-filled) output would match it.
    """
    if tolerance is None:
        tol = None
    elif isinstance(tolerance, Tolerance):
        tol = tolerance
    else:
        tol = Tolerance(*tolerance)
    a, e = _as_tensor(actual), _as_tensor(expected)
    if tol is None:
        tol = Tolerance.for_dtype(e.dtype)
    if a.shape != e.shape:
        if a.numel() == 1 and e.numel() == 1:
            a = a.reshape(e.shape)
        else:
            return _fail(
                f"shape mismatch: output has shape {_fmt_shape(a.shape)}, expected "
                f"{_fmt_shape(e.shape)}"
            )
    exact = is_exact_dtype(e.dtype)
    if exact or is_exact_dtype(a.dtype):
        if a.dtype != e.dtype:
            return _fail(f"dtype mismatch: output is {a.dtype}, expected {e.dtype}")
        if e.numel() == 0:
            return CompareResult(True, 0.0, 0.0, 0.0, 0, None, "ok (empty)")
        bad = a != e
        n_bad = int(bad.sum())
        diff = (a.to(torch.float64) - e.to(torch.float64)).abs()
        max_abs = float(diff.max())
        mean_abs = float(diff.mean())
        if n_bad == 0:
            return CompareResult(True, 0.0, 0.0, 0.0, 0, None, "ok (exact match)")
        first = _unravel(int(torch.nonzero(bad.reshape(-1))[0]), e.shape)
        msg = (f"{n_bad} of {e.numel()} elements differ (exact comparison); first at {first}: "
               f"got {a[first].item()}, expected {e[first].item()}")
        return CompareResult(False, max_abs, math.inf, mean_abs, n_bad, first, msg)

    if a.dtype != e.dtype:
        return _fail(f"dtype mismatch: output is {a.dtype}, expected {e.dtype}")
    a64, e64 = a.to(torch.float64), e.to(torch.float64)
    if e64.numel() == 0:
        return CompareResult(True, 0.0, 0.0, 0.0, 0, None, "ok (empty)")
    e_nan, a_nan = torch.isnan(e64), torch.isnan(a64)
    if bool(e_nan.all()):
        return _fail(
            f"the reference output is NaN everywhere ({e64.numel()} elements): an output that "
            f"was never written (NaN-filled) would match it, so nothing can be verified; fix the "
            f"task's inputs or forward"
        )
    finite, special_bad, value_bad, diff = _elementwise(a64, e64, tol)
    bad = special_bad | value_bad
    n_bad = int(bad.sum())
    n_special = int(special_bad.sum())
    # a NaN or inf where the reference has something else is an unbounded error, not 0
    max_abs = math.inf if n_special else float(diff.max())
    n_fin = int(finite.sum())
    mean_abs = math.inf if n_special else float(diff.sum()) / n_fin if n_fin else 0.0
    denom = e64.abs()
    rel = torch.where(finite & (denom > 0), diff / torch.where(denom > 0, denom, 1.0),
                      torch.where(finite & (diff > 0), math.inf, 0.0))
    max_rel = math.inf if n_special else float(rel.max())
    tol_txt = f"atol={tol.atol:g}, rtol={tol.rtol:g}"
    if n_bad == 0:
        return CompareResult(True, max_abs, max_rel, mean_abs, 0, None,
                             f"ok: max_abs_err={max_abs:.3g}, max_rel_err={max_rel:.3g} ({tol_txt})")
    first = _unravel(int(torch.nonzero(bad.reshape(-1))[0]), e.shape)
    got, want = a64[first].item(), e64[first].item()
    why = ""
    if math.isnan(got) and not math.isnan(want):
        n_nan = int((a_nan & ~e_nan).sum())
        why = f" ({n_nan} NaN where a finite value was expected - output not written?)"
    if n_special:
        why += f"; {n_special} NaN/inf mismatches"
    n_total = e.numel()
    msg = (f"{n_bad} of {n_total} elements out of tolerance ({tol_txt}); first at "
           f"{first}: got {got:.6g}, expected {want:.6g}{why}; max_abs_err={max_abs:.3g}, "
           f"max_rel_err={max_rel:.3g}, mean_abs_err={mean_abs:.3g}")
    return CompareResult(False, max_abs, max_rel, mean_abs, n_bad, first, msg)


def compare_either(actual: Any, expected: Any, alternative: Any,
                   tolerance: Tolerance | tuple[float, float] | None = None) -> CompareResult:
    """Pass when every element is within tolerance of ``expected`` or of ``alternative`` (two
    legitimate results: eager's fp16 / bf16 CPU output, which rounds its intermediates, and the
    correctly rounded one). An element between them - a kernel whose reduction order moves one
    rounding of the chain - is right by one of them. Errors are reported against ``alternative``
    where ``expected`` fails. Shapes, dtypes, NaN and inf follow :func:`compare`."""
    first = compare(actual, expected, tolerance)
    if first.ok:
        return first
    alt = compare(actual, alternative, tolerance)
    if alt.ok or not math.isfinite(first.max_abs_err) or not math.isfinite(alt.max_abs_err):
        return alt
    tol = tolerance if isinstance(tolerance, Tolerance) else (
        Tolerance(*tolerance) if tolerance is not None else Tolerance.for_dtype(_as_tensor(expected).dtype))
    a = _as_tensor(actual).to(torch.float64).reshape(-1)
    bad = None
    for ref in (expected, alternative):
        _, special, value, _ = _elementwise(a, _as_tensor(ref).to(torch.float64).reshape(-1), tol)
        bad = special | value if bad is None else bad & (special | value)
    n_bad = int(bad.sum())
    if n_bad:
        return replace_message(alt, f"{n_bad} elements are out of tolerance of both references; "
                                    f"against the second: {alt.message}")
    return CompareResult(True, alt.max_abs_err, alt.max_rel_err, alt.mean_abs_err, 0, None,
                         f"ok: every element within tolerance of one of the two (against the "
                         f"second: max_abs_err={alt.max_abs_err:.3g}, {alt.n_bad} elements off it)")


def replace_message(c: CompareResult, message: str) -> CompareResult:
    """``c`` with another message."""
    return CompareResult(c.ok, c.max_abs_err, c.max_rel_err, c.mean_abs_err, c.n_bad, c.first_bad_index, message)


def compare_outputs(
    actual: Sequence[Any], expected: Sequence[Any], tolerance: Tolerance | None = None
) -> CompareResult:
    """Compare several outputs (tuple-returning references); worst errors, first failure."""
    if len(actual) != len(expected):
        return _fail(f"got {len(actual)} outputs, expected {len(expected)}")
    results = [compare(a, e, tolerance) for a, e in zip(actual, expected, strict=True)]
    if len(results) == 1:
        return results[0]

    def worst(vals: list[float]) -> float:
        finite = [v for v in vals if not math.isnan(v)]
        return max(finite) if finite else math.nan

    failed = [(i, r) for i, r in enumerate(results) if not r.ok]
    msg = "ok: all outputs match" if not failed else f"output {failed[0][0]}: {failed[0][1].message}"
    return CompareResult(
        ok=not failed,
        max_abs_err=worst([r.max_abs_err for r in results]),
        max_rel_err=worst([r.max_rel_err for r in results]),
        mean_abs_err=worst([r.mean_abs_err for r in results]),
        n_bad=sum(r.n_bad for r in results),
        first_bad_index=failed[0][1].first_bad_index if failed else None,
        message=msg,
    )


def sentinel_for(dtype: torch.dtype) -> float | int | bool:
    """Fill value of fresh output buffers: NaN for floats, the most negative integer
    (or the max for unsigned) for ints, and True for bool (no spare bool value)."""
    if dtype.is_floating_point or dtype.is_complex:
        return math.nan
    if dtype == torch.bool:
        return True
    info = torch.iinfo(dtype)
    return info.max if info.min == 0 else info.min


def nan_filled_like(
    meta: torch.Tensor | tuple[Shape, torch.dtype], device: str | torch.device = "cpu"
) -> torch.Tensor:
    """A fresh output buffer filled with :func:`sentinel_for` so unwritten elements show.

    ``meta`` is a tensor (any device, e.g. ``meta``) or a ``(shape, dtype)`` pair as
    returned by :meth:`Task.output_meta`.
    """
    if isinstance(meta, torch.Tensor):
        shape, dtype = tuple(meta.shape), meta.dtype
    else:
        shape, dtype = tuple(meta[0]), meta[1]
    return torch.full(shape, sentinel_for(dtype), dtype=dtype, device=device)
