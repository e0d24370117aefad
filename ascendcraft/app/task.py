"""Which task to work on, as a value that can be sent to another process and loaded there.

A search ships its objective to Ray workers: the task itself (a module loaded from a task
file) does not pickle, so the objective carries this description and each process loads
the task once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..soc import list_socs, load_soc
from ..tasks.limits import GIB, check_fits_device
from ..tasks.registry import get_task
from ..tasks.task import Task, TaskError
from ..tasks.taskfile import load_task_file
from .errors import UserError


@dataclass
class TaskRef:
    """A registry op or a task file, with the shape of its first tensor input and its dtype
    changed if asked (``shape`` as ``64x64``, ``dtype`` as ``fp16``). The loaded task is kept
    for this process (never pickled)."""

    op: str | None = None
    task_file: str | None = None
    shape: str | None = None
    dtype: str | None = None
    _loaded: Task | None = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_loaded": None}

    def load(self) -> Task:
        """The task (raises the loaders' TaskError or ValueError)."""
        if self._loaded is None:
            task = load_task_file(self.task_file) if self.task_file else get_task(self.op)
            if self.shape or self.dtype:
                first = next((s for s in task.inputs if s.is_tensor), None)
                if first is None:
                    raise TaskError(f"task {task.name!r} has no tensor input for --shape/--dtype "
                                    f"to change")
                task = task.with_shape(self.shape or tuple(first.shape), self.dtype)
            self._loaded = task
        return self._loaded


def known_socs() -> list[str]:
    """The SoC models there are specs for."""
    return list_socs()


def load_task(ref: TaskRef, soc: str) -> Task:
    """The task ``ref`` names, refused (:class:`UserError`) when it cannot be loaded or its
    tensors could never fit the SoC's HBM (see :mod:`ascendcraft.tasks.limits`)."""
    if not (ref.op or ref.task_file):
        raise UserError("give --op NAME (see `ascendcraft ops`) or --task FILE")
    try:
        task = ref.load()
        spec = load_soc(soc)
        check_fits_device(task, int(spec.hbm_gib * GIB), spec.name)
        return task
    except (TaskError, ValueError) as e:  # (a KeyError is a loader bug: reported as one, not as a bare key)
        raise UserError(str(e).strip("'\"")) from None
