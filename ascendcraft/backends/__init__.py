"""Backends (layer 4): where a lowered kernel is built, run and timed — the CPU emulator with
the SoC performance model, or an Ascend NPU through CANN and torch_npu — behind one protocol
(``base.py``).

The names below are loaded from their module on first use: ``npu_env`` (what this machine
has for an NPU) must be importable where ``import torch`` itself fails (torch_npu installed
without CANN), so importing the package imports neither torch nor a backend.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOME = {
    "TORCH_OF_DSL": "base", "Artifact": "base", "Backend": "base", "BackendError": "base",
    "BackendUnavailable": "base", "RunOutcome": "base", "TensorSpec": "base", "TilingArgs": "base",
    "Timing": "base",
    "EmulatorBackend": "emulator",
    "BACKENDS": "factory", "get_backend": "factory",
    "npu_missing": "npu_env",
}

__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
