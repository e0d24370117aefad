"""Backends by name: the one place that knows which implementations exist."""

from __future__ import annotations

from ascendcraft.soc import Soc

from .base import Backend

BACKENDS: tuple[str, ...] = ("emulator", "npu")


def get_backend(name: str = "emulator", soc: Soc | str | None = None) -> Backend:
    """The backend called ``name`` for ``soc``: "emulator" (CPU emulator + performance
    model) or "npu" (CANN + torch_npu on an Ascend NPU; BackendUnavailable listing exactly
    what is missing on a machine without them)."""
    if name == "emulator":
        from .emulator import EmulatorBackend

        return EmulatorBackend(soc)
    if name == "npu":
        from .npu import NpuBackend

        return NpuBackend(soc)
    raise ValueError(f"unknown backend {name!r}; known backends: {', '.join(BACKENDS)}")


def backend_resources(name: str) -> dict[str, float]:
    """What one trial on backend ``name`` needs besides a CPU (``{"NPU": 1}`` for the npu
    backend), read from the class: the driver that schedules trials need not be able to make
    the backend (an NPU cluster's head node often has no device)."""
    if name == "emulator":
        from .emulator import EmulatorBackend as cls
    elif name == "npu":
        from .npu import NpuBackend as cls
    else:
        raise ValueError(f"unknown backend {name!r}; known backends: {', '.join(BACKENDS)}")
    return {str(k): float(v) for k, v in dict(cls.trial_resources).items()}
