"""How trials should be spread: the configuration an executor is made from.

The application layer fills it from the command line (``--workers``, ``--ray-address``)
and :func:`~.factory.make_executor` turns it into an executor; nothing else reads it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

KINDS = ("auto", "local", "ray")


@dataclass(frozen=True)
class ExecutorConfig:
    """``kind``: ``local`` (in this process, one job at a time), ``ray`` (Ray Core tasks),
    or ``auto`` (Ray when a cluster is named or more than one worker is asked for, else
    local). ``workers``: trials in flight (default: this machine's CPU cores; on a cluster,
    what its nodes can run at once). ``address``: a Ray cluster to join (default:
    ``$RAY_ADDRESS``; neither: a local instance). ``resources``: what every trial needs
    besides one CPU, on top of what the objective asks for per trial (its backend's
    ``{"NPU": 1}`` for profiling on hardware). ``max_retries``: re-runs of a job whose
    worker process or node died before it is a crash."""

    kind: str = "auto"
    workers: int | None = None
    address: str | None = None
    resources: Mapping[str, float] = field(default_factory=dict)
    max_retries: int = 2

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown executor {self.kind!r}; choose one of {', '.join(KINDS)}")
        if self.workers is not None and int(self.workers) < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be at least 0, got {self.max_retries}")
        for name, amount in dict(self.resources).items():
            if not isinstance(amount, (int, float)) or amount < 0:
                raise ValueError(f"resource {name!r} must be a number >= 0, got {amount!r}")

    def cluster_address(self) -> str | None:
        """The Ray cluster to join: ``address``, else ``$RAY_ADDRESS``, else None."""
        return self.address or os.environ.get("RAY_ADDRESS") or None

    def worker_count(self) -> int:
        return max(1, int(self.workers or os.cpu_count() or 1))

    def chosen_kind(self) -> str:
        """The executor ``auto`` stands for."""
        if self.kind != "auto":
            return self.kind
        if self.cluster_address():
            return "ray"
        return "local" if self.worker_count() <= 1 else "ray"
