"""The Backend seam: build a lowered ``Kernel``, run it on tensors, time it.

The evaluator talks only to this protocol, so where a kernel runs (the CPU emulator with the
performance model today, an Ascend NPU through CANN and torch_npu later) is one object chosen
by name (``backends.get_backend``). Tensors cross the seam as torch tensors in the kernel's
parameter order; every failure crosses it as a :class:`~ascendcraft.status.Status` with its
message, never as an exception type of one backend; every time carries its kind
(``measured`` or modeled) as written by the backend that produced it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import torch

from ascendcraft.dsl.kernel import Kernel
from ascendcraft.soc import Soc
from ascendcraft.status import Status

TensorSpec = tuple[tuple[int, ...], torch.dtype]
"""A tensor described, not allocated: (shape, dtype)."""

#: DSL element types -> the torch dtypes tensors of them cross the seam as.
TORCH_OF_DSL: dict[str, torch.dtype] = {
    "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "i32": torch.int32,
    "i64": torch.int64, "i8": torch.int8, "u8": torch.uint8, "bool": torch.bool,
}


class BackendError(RuntimeError):
    """A backend could not build, run or time a kernel; ``status`` says which failure."""

    def __init__(self, status: Status, message: str) -> None:
        super().__init__(message)
        self.status = Status.parse(status)


class BackendUnavailable(RuntimeError):
    """The backend asked for cannot work on this machine; the message says what is missing."""


@dataclass(frozen=True)
class Artifact:
    """A built kernel: the ``Kernel`` and, per launch in order, the file the backend runs."""

    kernel: Kernel
    backend: str
    key: str  # content hash of everything that was built
    files: tuple[Path, ...]  # one per kernel launch (emulator: the shared library)


@dataclass(frozen=True)
class TilingArgs:
    """The runtime inputs of the tiling function besides the shapes: every tunable's value
    (by name) and the task's scalar inputs in order."""

    values: Mapping[str, int]
    scalars: tuple[float, ...] = ()


@dataclass
class RunOutcome:
    """One run of every launch of a kernel on one set of inputs."""

    status: Status
    message: str = ""
    outputs: list[torch.Tensor] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == Status.OK


@dataclass
class Timing:
    """How long a kernel takes at the timed shapes. ``kind`` is written only by the backend
    that produced it ("measured" on hardware, modeled in the emulator); ``fields`` holds
    what explains the number (pipes, bound, per-launch times, model version or device)."""

    kind: str
    us: float
    fields: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Backend(Protocol):
    """Where kernels are built, run and timed, for one SoC. A backend may also offer
    ``run_many(artifact, [(inputs, outputs, tiling), ...], *, timeout_s) -> [RunOutcome]``
    (``run`` on each case in order, stopping after the first failure) to send several runs
    at once; the evaluator uses it for a trial's check runs when it is there."""

    name: str
    soc: Soc

    def build(self, kernel: Kernel) -> Artifact:
        """Build every launch of ``kernel`` (cached by source hash); BackendError on failure."""
        ...

    def run(self, artifact: Artifact, inputs: Sequence[torch.Tensor], outputs: Sequence[TensorSpec],
            *, tiling: TilingArgs, timeout_s: float) -> RunOutcome:
        """Run every launch in order on ``inputs`` (the kernel's input tensors, in its order)
        into fresh buffers shaped like ``outputs``; the outputs come back as tensors."""
        ...

    def time(self, artifact: Artifact, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec],
             *, tiling: TilingArgs, timeout_s: float) -> Timing:
        """Time every launch at these shapes (nothing needs to be allocated at full size);
        BackendError on failure."""
        ...
