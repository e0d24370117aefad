"""Backends by name: the one place that knows which implementations exist."""

from __future__ import annotations

from ascendcraft.soc import Soc

from .base import Backend

BACKENDS: tuple[str, ...] = ("emulator", "npu")


def get_backend(name: str = "emulator", soc: Soc | str | None = None) -> Backend:
    """The backend called ``name`` for ``soc``: "emulator" (CPU emulator + performance
    model) or "npu" (CANN + torch_npu on an Ascend NPU; BackendUnavailable listing exactly
    what is missing on a machine without them)."""
    return _backend_class(name)(soc)


def backend_resources(name: str) -> dict[str, float]:
    """What one trial on backend ``name`` needs besides a CPU (``{"NPU": 1}`` for the npu
    backend), read from the class: the driver that schedules trials need not be able to make
    the backend (an NPU cluster's head node often has no device)."""
    return {str(k): float(v) for k, v in dict(_backend_class(name).trial_resources).items()}


def _backend_class(name: str) -> type:
    """The class of backend ``name``, its module imported only now (the npu one imports
    CANN-facing code)."""
    if name == "emulator":
        from .emulator import EmulatorBackend

        return EmulatorBackend
    if name == "npu":
        from .npu import NpuBackend

        return NpuBackend
    raise ValueError(f"unknown backend {name!r}; known backends: {', '.join(BACKENDS)}")
