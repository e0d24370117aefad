"""Size limits checked before any work is started.

Two different limits, because timing and checking treat a shape differently:

* **Device capacity.** Timing is trace-only (no tensor memory is allocated), so any shape
  can be *modeled*; but a kernel whose inputs and outputs together exceed the SoC's HBM
  could never run on the device, so its modeled time would describe nothing real. Such a
  shape is refused.
* **Checking memory.** A correctness run allocates the inputs, the reference outputs, the
  kernel's output buffers and their float64 upcasts in ``compare``. When that estimate is
  above a ceiling (a quarter of this machine's RAM), checking at that shape is not
  attempted: the caller either refuses (``--full``) or checks at reduced shapes derived
  from it (``--shape``), which keep every alignment class (see :mod:`.shapes`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import torch

from .task import Shape, Task, TaskError

GIB = 1 << 30

#: bytes one output element costs ``compare`` (a64, e64, diff, limit, rel, ... as float64
#: plus the boolean masks) on top of the tensors themselves
COMPARE_BYTES_PER_OUTPUT_ELEMENT = 72


def fmt_bytes(n: float) -> str:
    """``1.5 GiB``, ``4 TiB``, ``300 MiB`` (binary units, as memory is sized)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024:
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} PiB"


def io_bytes(task: Task, shapes: Sequence[Shape] | None = None) -> tuple[int, int, int]:
    """(input bytes, output bytes, output elements) at ``shapes`` (default: the full shapes),
    from metadata only: outputs come from the meta device. A task whose reference cannot run
    on the meta device is assumed to produce as much as its largest input."""
    shapes = list(task.shapes) if shapes is None else [tuple(s) for s in shapes]
    in_bytes = 0
    largest = (0, 0)
    for spec, shape in zip(task.inputs, shapes, strict=True):
        if not spec.is_tensor:
            continue
        n = math.prod(shape)
        b = n * _size(spec.dtype)
        in_bytes += b
        largest = max(largest, (b, n))
    if not task.meta_ok:
        return in_bytes, largest[0], largest[1]
    out_bytes = out_elems = 0
    for shape, dtype in task.output_meta(shapes):
        n = math.prod(shape)
        out_elems += n
        out_bytes += n * _size(dtype)
    return in_bytes, out_bytes, out_elems


def check_fits_device(task: Task, capacity_bytes: int, device: str) -> None:
    """Refuse a task whose full-shape tensors do not fit the device's memory."""
    ins, outs, _ = io_bytes(task)
    if ins + outs > capacity_bytes:
        dims = "; ".join("x".join(map(str, s)) for s, spec in zip(task.shapes, task.inputs, strict=True)
                         if spec.is_tensor)
        raise TaskError(
            f"Task {task.name!r} at shape {dims} needs {fmt_bytes(ins + outs)} of device memory "
            f"(inputs {fmt_bytes(ins)}, outputs {fmt_bytes(outs)}), more than the "
            f"{fmt_bytes(capacity_bytes)} of HBM on {device}; a kernel for it could never run "
            f"there, so it is neither checked nor modeled. Give a smaller --shape."
        )


def check_bytes(task: Task, shapes: Sequence[Shape] | None = None) -> int:
    """Estimated peak memory of one correctness run at ``shapes`` (default: full shapes):
    inputs and reference outputs (torch), kernel output buffers and their copy (numpy), and
    the float64 work of ``compare``."""
    ins, outs, out_elems = io_bytes(task, shapes)
    return ins + 3 * outs + COMPARE_BYTES_PER_OUTPUT_ELEMENT * out_elems


def memory_ceiling() -> int:
    """The most a correctness run may take: a quarter of this machine's physical memory
    (the rest is for the emulator child, the build and whatever else runs)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not POSIX: assume a modest machine
        total = 8 * GIB
    return max(GIB, total // 4)


def _size(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()
