"""Report fields for one modeled kernel: time, speedup vs eager, % of roofline, bottleneck."""

from __future__ import annotations

from typing import Any

from ..version import MODEL_VERSION
from .eager import EagerResult
from .timeline import PIPE_NAMES, ModelResult


def report_fields(result: ModelResult, roofline_us: float,
                  eager: EagerResult | float | None = None) -> dict[str, Any]:
    """Dict with soc, modeled_us, eager_us, speedup, roofline_us, roofline_frac, bound,
    pipes, timing ("modeled") and model_version (:data:`MODEL_VERSION`). ``roofline_frac`` is clamped into (0, 1]; a clamp means the roofline
    inputs (bytes / flops) disagree with the trace and is flagged in ``roofline_violation``."""
    e_us = eager.us if isinstance(eager, EagerResult) else eager
    frac = roofline_us / result.time_us if result.time_us > 0 else 1.0
    out: dict[str, Any] = {
        "soc": result.soc,
        "modeled_us": result.time_us,
        "eager_us": e_us,
        "speedup": (e_us / result.time_us) if e_us else None,
        "roofline_us": roofline_us,
        "roofline_frac": min(1.0, max(frac, 1e-12)),
        "bound": result.bound,
        "pipes": {k: round(v, 4) for k, v in result.pipe_util.items()},
        "timing": "modeled",
        "model_version": MODEL_VERSION,
    }
    if frac > 1.0 + 1e-9:
        out["roofline_violation"] = frac
    return out


def breakdown_text(result: ModelResult) -> str:
    """Human-readable per-pipe breakdown of the critical core."""
    lines = [
        f"{result.soc}: {result.time_us:.2f} us modeled ({result.label}, model {MODEL_VERSION}) = "
        f"{result.launch_us:.2f} us launch + {result.kernel_us:.2f} us kernel, "
        f"block_dim {result.block_dim}, bound: {result.bound}",
        f"{'pipe':<6}{'busy us':>12}{'util':>8}",
    ]
    for name in PIPE_NAMES:
        b = result.pipe_busy_us.get(name, 0.0)
        if b > 0:
            u = result.pipe_util[name]
            lines.append(f"{name:<6}{b:>12.2f}{u:>8.1%}  {'#' * int(round(u * 30))}")
    lines.append(f"{'HBM':<6}{result.hbm_busy_us:>12.2f}{result.hbm_busy_us / result.time_us:>8.1%}"
                 "  (this core's HBM share)")
    res = ", ".join(f"{k} {v:.2f}" for k, v in result.resources_us.items())
    lines.append(f"resource demand (us): {res}")
    for w in result.warnings:
        lines.append(f"warning: {w}")
    return "\n".join(lines)
