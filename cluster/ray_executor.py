"""The Ray executor: trials as Ray Core tasks on a local instance or a cluster.

The only module that imports Ray (made by :func:`~.factory.make_executor` when the
configuration asks for it).
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from typing import Any

from ..search.protocols import Finished, Objective
from ..search.space import Candidate, TrialOutcome, checked_outcome, crash_outcome
from .job import safe_evaluate, timeout_outcome


def _ray_job(objective: Objective, candidate: Candidate, params: dict[str, int],
             timeout_s: float) -> tuple[TrialOutcome, float, str]:
    """Body of a Ray task: evaluate and time it where it runs."""
    t0 = time.perf_counter()
    outcome = safe_evaluate(objective, candidate, params, timeout_s)
    return outcome, time.perf_counter() - t0, f"{socket.gethostname()}:{os.getpid()}"


@dataclass
class _Job:
    token: int
    ref: Any
    deadline: float
    timeout_s: float
    submitted: float


class RayExecutor:
    """Evaluates jobs as Ray Core tasks, at most ``workers`` at a time.

    Starts a local Ray instance (``num_cpus=workers``) unless Ray is already initialised or
    ``address``/``RAY_ADDRESS`` names a cluster to join; only what it started is shut down.
    A job past its deadline (counted from submission) is force-cancelled and becomes
    ``timeout``; a job whose worker died is retried by Ray (``max_retries``) and
    otherwise becomes ``crash`` with Ray's reason.  Profiling jobs on real hardware pass
    ``resources={"NPU": 1}``.
    """

    def __init__(
        self,
        workers: int | None = None,
        address: str | None = None,
        *,
        num_cpus: float = 1,
        resources: dict[str, float] | None = None,
        max_retries: int = 1,
        object_store_memory: int | None = 200 * 1024 * 1024,
    ) -> None:
        self.workers = max(1, int(workers or os.cpu_count() or 1))
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        self.num_cpus = num_cpus
        self.resources = dict(resources or {})
        self.max_retries = max_retries
        self.object_store_memory = object_store_memory
        self._started_ray = False
        self._remote: Any = None
        self._jobs: dict[Any, _Job] = {}
        self._objective_refs: dict[int, tuple[Any, Any]] = {}
        self.startup_s = 0.0

    @property
    def capacity(self) -> int:
        return self.workers

    def start(self) -> None:
        if self._remote is not None:
            return
        import ray

        t0 = time.perf_counter()
        if not ray.is_initialized():
            if self.address:
                ray.init(address=self.address, log_to_driver=False, include_dashboard=False)
            else:
                ray.init(
                    num_cpus=self.workers,
                    include_dashboard=False,
                    log_to_driver=False,
                    object_store_memory=self.object_store_memory,
                )
            self._started_ray = True
        options: dict[str, Any] = {"num_cpus": self.num_cpus, "max_retries": self.max_retries}
        if self.resources:
            options["resources"] = self.resources
        self._remote = ray.remote(_ray_job).options(**options)
        self.startup_s = time.perf_counter() - t0

    def _objective_ref(self, objective: Objective) -> Any:
        # Put the objective in the object store once instead of pickling it per task.
        import ray

        key = id(objective)
        hit = self._objective_refs.get(key)
        if hit is None or hit[0] is not objective:
            hit = (objective, ray.put(objective))
            self._objective_refs[key] = hit
        return hit[1]

    def submit(self, token: int, objective: Objective, candidate: Candidate,
               params: dict[str, int], timeout_s: float) -> None:
        self.start()
        now = time.monotonic()
        ref = self._remote.remote(self._objective_ref(objective), candidate, dict(params), timeout_s)
        deadline = now + timeout_s if timeout_s > 0 else float("inf")
        self._jobs[ref] = _Job(token, ref, deadline, timeout_s, now)

    def in_flight(self) -> int:
        return len(self._jobs)

    def poll(self, timeout_s: float | None = None) -> list[Finished]:
        import ray

        if not self._jobs:
            return []
        now = time.monotonic()
        wait_for = min(j.deadline for j in self._jobs.values()) - now
        if timeout_s is not None:
            wait_for = min(wait_for, timeout_s)
        wait_for = max(0.0, wait_for)
        refs = list(self._jobs)
        ready, _ = ray.wait(refs, num_returns=1, timeout=wait_for)
        if ready:  # collect everything else that is already done too
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        done: list[Finished] = []
        for ref in ready:
            job = self._jobs.pop(ref)
            done.append(self._collect(job))
        now = time.monotonic()
        for ref, job in list(self._jobs.items()):
            if now >= job.deadline:
                ray.cancel(ref, force=True)
                del self._jobs[ref]
                done.append(
                    Finished(job.token, timeout_outcome(job.timeout_s, "task cancelled"),
                             now - job.submitted)
                )
        return done

    def _collect(self, job: _Job) -> Finished:
        import ray
        from ray import exceptions as rex

        elapsed = time.monotonic() - job.submitted
        try:
            outcome, eval_s, worker = ray.get(job.ref)
            return Finished(job.token, checked_outcome(outcome), eval_s, worker)
        except rex.TaskCancelledError:
            return Finished(job.token, timeout_outcome(job.timeout_s, "task cancelled"), elapsed)
        except rex.WorkerCrashedError as exc:
            msg = f"worker died (retried {self.max_retries}x): {_first_line(exc)}"
            return Finished(job.token, crash_outcome(msg), elapsed)
        except rex.RayTaskError as exc:
            return Finished(job.token, crash_outcome(f"task error: {_first_line(exc)}"), elapsed)
        except rex.RayError as exc:
            msg = f"{type(exc).__name__}: {_first_line(exc)}"
            return Finished(job.token, crash_outcome(msg), elapsed)

    def close(self) -> None:
        try:
            import ray
        except ImportError:  # pragma: no cover
            return
        for ref in list(self._jobs):
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - best effort on shutdown
                pass
        self._jobs.clear()
        self._objective_refs.clear()
        self._remote = None
        if self._started_ray and ray.is_initialized():
            ray.shutdown()
        self._started_ray = False


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return " | ".join(lines[:3])[:500] if lines else type(exc).__name__
