"""Built-in task registry: every built-in operator (`ascendcraft ops` lists them) in PyTorch's
naming, KernelBench-sized shapes; the matmul family and mHC are defined in :mod:`.registry_cube`.

Each entry is a *definition* (reference function, input layout as a function of the
primary shape, constructor args) so :meth:`Task.with_shape` can rebuild the task at a
CLI-given shape with the right dependent shapes (``shape_rule`` says how).  Default
shapes are realistic - each input is ~64 MiB .. 2 GiB - and are only ever used as
metadata; correctness runs use :func:`ascendcraft.tasks.shapes.reduced_shapes`.
References are written from PyTorch semantics; hyper-parameters are keyword-only
arguments bound from ``init_args``.
"""

from __future__ import annotations

import difflib

from . import registry_cube, registry_vector  # noqa: F401 - importing them registers their tasks
from .catalog import _DEFS, _build
from .task import Task, TaskError, dtype_name

# ---------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------

def get_task(name: str) -> Task:
    """The registry task ``name`` at its default shape (fp32).

    Unknown names raise :class:`TaskError` listing close matches, since names are
    typed on the command line.
    """
    key = name.strip().lower().replace("-", "_")
    if key not in _DEFS:
        close = difflib.get_close_matches(key, list(_DEFS), n=5, cutoff=0.5)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise TaskError(
            f"Unknown task {name!r}.{hint} Run list_tasks() (or `ascendcraft ops`) for all "
            f"{len(_DEFS)} built-in names, or pass a task file path."
        )
    d = _DEFS[key]
    return _build(d, d.shape, d.dtype)


def list_tasks(category: str | None = None) -> list[Task]:
    """All registry tasks (optionally of one category), sorted by category then name."""
    tasks = [get_task(n) for n in _DEFS]
    if category is not None:
        tasks = [t for t in tasks if t.category == category]
    return sorted(tasks, key=lambda t: (t.category, t.name))


def task_names() -> list[str]:
    """Registry names without building tasks (cheap, for CLI completion)."""
    return sorted(_DEFS)


def describe_registry() -> str:
    """Table of name, category and default shape for docs/CLI."""
    rows = []
    for t in list_tasks():
        shp = ", ".join("x".join(map(str, s.shape)) or "scalar" for s in t.inputs)
        rows.append(f"{t.category:13s} {t.name:30s} {shp} {dtype_name(t.dtype)}")
    return "\n".join(rows)
