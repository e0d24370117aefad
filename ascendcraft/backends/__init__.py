"""Backends (layer 4): where a lowered kernel is built, run and timed — the CPU emulator with
the SoC performance model today, an Ascend NPU later — behind one protocol (``base.py``)."""

from .base import (
    TORCH_OF_DSL,
    Artifact,
    Backend,
    BackendError,
    BackendUnavailable,
    RunOutcome,
    TensorSpec,
    TilingArgs,
    Timing,
)
from .emulator import EmulatorBackend
from .factory import BACKENDS, get_backend, npu_missing

__all__ = [
    "BACKENDS", "TORCH_OF_DSL", "Artifact", "Backend", "BackendError", "BackendUnavailable", "EmulatorBackend",
    "RunOutcome", "TensorSpec", "TilingArgs", "Timing", "get_backend", "npu_missing",
]
