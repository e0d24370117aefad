"""``check_task``: the application layer's ``check`` as the tests call it (a task in, the
JSON report of ``ascendcraft check --json`` out)."""

from __future__ import annotations

from typing import Any

from ascendcraft.app.checking import CheckConfig, check
from ascendcraft.tasks.task import Task


def check_task(task: Task, *, soc: str, full: bool, timing: bool, explicit_shape: bool,
               candidates: list | None = None) -> dict[str, Any]:
    """Check ``task`` as ``ascendcraft check`` does; ``explicit_shape``: at the task's own
    shape (as with ``--shape``) instead of shapes reduced from it."""
    config = CheckConfig(soc=soc, full=full, shape_given=explicit_shape, timing=timing,
                         candidates=None if candidates is None else tuple(candidates))
    return check(task, config).to_dict()
