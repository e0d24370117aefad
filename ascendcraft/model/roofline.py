"""Roofline lower bound: the physical limit every kernel is reported against.

``roofline_us = max(bytes / peak HBM bandwidth, flops / peak of the unit)``. Peaks are
the spec's theoretical figures (not the sustained fraction the timeline uses), so the
bound is never above what the timeline can model: roofline_frac = roofline / modeled <= 1.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from ascendcraft.soc import Soc, load_soc

_ITEMSIZE = {
    "float32": 4, "float": 4, "fp32": 4, "float16": 2, "half": 2, "fp16": 2, "bfloat16": 2,
    "bf16": 2, "int32": 4, "int64": 8, "int16": 2, "int8": 1, "uint8": 1, "bool": 1,
    "float64": 8, "uint32": 4, "uint16": 2,
}


def itemsize(dtype: Any) -> int:
    """Bytes per element of a dtype given as torch.dtype, numpy dtype or name."""
    if hasattr(dtype, "itemsize"):
        return int(dtype.itemsize)
    name = str(dtype).replace("torch.", "")
    if name not in _ITEMSIZE:
        raise ValueError(f"unknown dtype {dtype!r}")
    return _ITEMSIZE[name]


def tensor_bytes(shape: Sequence[int], dtype: Any) -> int:
    """Bytes of a dense tensor."""
    return math.prod(int(d) for d in shape) * itemsize(dtype)


def min_bytes(tensors: Iterable[Any]) -> int:
    """Minimal bytes a task must move: every input read once plus every output written once.

    Items are tensors (any device, including meta) or ``(shape, dtype)`` pairs."""
    total = 0
    for t in tensors:
        if hasattr(t, "shape") and hasattr(t, "dtype"):
            total += tensor_bytes(tuple(t.shape), t.dtype)
        else:
            shape, dtype = t
            total += tensor_bytes(shape, dtype)
    return total


def roofline_us(bytes_moved: float, flops: float, soc: Soc | str | None = None,
                unit: str = "vector", dtype: str = "float32") -> float:
    """Lower bound in microseconds: max(bytes / HBM peak, flops / unit peak)."""
    soc = load_soc(soc)
    if unit == "vector":
        peak = soc.vector_peak_flops(dtype)
    elif unit == "cube":
        peak = soc.cube_peak_flops(dtype if dtype != "float32" else "float32")
    else:
        raise ValueError(f"unit must be 'vector' or 'cube', not {unit!r}")
    t_mem = bytes_moved / (soc.hbm_gbps * 1e9)
    t_flop = flops / peak if flops else 0.0
    return max(t_mem, t_flop) * 1e6
