"""Executors are made here, from an :class:`~.config.ExecutorConfig`, and nowhere else.

The Ray executor's module (and so Ray) is imported only when the configuration asks for
Ray. To add an executor (a job queue, a remote NPU host): one module with a class that
satisfies :class:`ascendcraft.search.protocols.Executor`, a kind in
:data:`~.config.KINDS`, and a branch below.
"""

from __future__ import annotations

from ..search.protocols import Executor
from .config import ExecutorConfig
from .local import LocalExecutor


def make_executor(config: ExecutorConfig | None = None) -> Executor:
    """The executor the configuration describes (not started: the driver starts it)."""
    config = config or ExecutorConfig()
    kind = config.chosen_kind()
    if kind == "local":
        return LocalExecutor()
    from .ray_executor import RayExecutor

    return RayExecutor(config.workers, config.cluster_address(), resources=dict(config.resources),
                       max_retries=config.max_retries)
