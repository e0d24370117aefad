"""Backends by name: the one place that knows which implementations exist."""

from __future__ import annotations

import importlib.util
import os

from ascendcraft.soc import Soc

from .base import Backend, BackendUnavailable
from .emulator import EmulatorBackend

BACKENDS: tuple[str, ...] = ("emulator", "npu")


def npu_missing() -> list[str]:
    """What this machine lacks for running kernels on an Ascend NPU (checked without
    importing torch_npu, which breaks ``import torch`` when CANN is absent)."""
    missing = []
    if not (os.environ.get("ASCEND_HOME_PATH") or os.environ.get("ASCEND_TOOLKIT_HOME")):
        missing.append("the CANN toolkit (neither $ASCEND_HOME_PATH nor $ASCEND_TOOLKIT_HOME is set)")
    if importlib.util.find_spec("torch_npu") is None:
        missing.append("torch_npu (not installed)")
    missing.append("an NPU backend in this version of ascendcraft (issue 17 adds it)")
    return missing


def get_backend(name: str = "emulator", soc: Soc | str | None = None) -> Backend:
    """The backend called ``name`` for ``soc``: "emulator" (CPU emulator + performance
    model) or "npu" (not available yet: BackendUnavailable saying what is missing)."""
    if name == "emulator":
        return EmulatorBackend(soc)
    if name == "npu":
        raise BackendUnavailable("the npu backend is not available on this machine: it needs "
                                 + "; ".join(npu_missing()) + ". Use the emulator backend instead.")
    raise ValueError(f"unknown backend {name!r}; known backends: {', '.join(BACKENDS)}")
