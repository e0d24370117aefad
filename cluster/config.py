"""How trials should be spread: the configuration an executor is made from.

The application layer fills it from the command line (``--workers`` today; a cluster
address and per-trial resources such as ``{"NPU": 1}`` for issue 16) and
:func:`~.factory.make_executor` turns it into an executor; nothing else reads it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

KINDS = ("auto", "local", "ray")


@dataclass(frozen=True)
class ExecutorConfig:
    """``kind``: ``local`` (in this process, one job at a time), ``ray`` (Ray tasks), or
    ``auto`` (local for one worker, Ray for more). ``workers``: parallel trials (default:
    this machine's CPU cores). ``address``: a Ray cluster to join (default: ``RAY_ADDRESS``,
    else a local instance). ``resources``: what each trial needs besides one CPU, e.g.
    ``{"NPU": 1}`` to profile on real hardware. ``max_retries``: re-runs of a job whose Ray
    worker died before it becomes a crash."""

    kind: str = "auto"
    workers: int | None = None
    address: str | None = None
    resources: Mapping[str, float] = field(default_factory=dict)
    max_retries: int = 1

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown executor {self.kind!r}; choose one of {', '.join(KINDS)}")
        if self.workers is not None and int(self.workers) < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be at least 0, got {self.max_retries}")

    def worker_count(self) -> int:
        return max(1, int(self.workers or os.cpu_count() or 1))

    def chosen_kind(self) -> str:
        """The executor ``auto`` stands for."""
        if self.kind != "auto":
            return self.kind
        return "local" if self.worker_count() <= 1 else "ray"
