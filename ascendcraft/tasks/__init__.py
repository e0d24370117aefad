"""Tasks: operators to write kernels for (registry, task files, shapes, comparison)."""

from .compare import CompareResult, compare, compare_outputs, nan_filled_like
from .registry import get_task, list_tasks, task_names
from .shapes import reduced_shapes
from .task import CATEGORIES, InputSpec, Task, TaskError, Tolerance, parse_dtype, parse_shape
from .taskfile import load_task_file


def resolve_task(name_or_path: str) -> Task:
    """A registry name or a path to a task file (``.py``), as the CLI accepts."""
    if name_or_path.endswith(".py") or "/" in name_or_path:
        return load_task_file(name_or_path)
    return get_task(name_or_path)


__all__ = [
    "CATEGORIES", "CompareResult", "InputSpec", "Task", "TaskError", "Tolerance", "compare",
    "compare_outputs", "get_task", "list_tasks", "load_task_file", "nan_filled_like",
    "parse_dtype", "parse_shape", "reduced_shapes", "resolve_task", "task_names",
]
