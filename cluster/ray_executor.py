"""The Ray executor: trials as Ray Core tasks on a local instance or a cluster.

The only module that imports Ray (made by :func:`~.factory.make_executor` when the
configuration asks for it).

Where a trial runs is Ray's choice among the nodes that offer what it asks for: one CPU,
plus what the objective says the trial needs (its optional ``resources(candidate, params)``,
e.g. ``{"NPU": 1}`` when its backend profiles on an Ascend device) and what the
configuration adds for every trial. Each worker process fetches the objective once and
keeps it, so its evaluator, loaded task and parsed candidates serve every trial it runs;
builds go to the build cache of the node the worker runs on (nothing about the driver's
disk travels with a task).
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..search.errors import SearchSetupError
from ..search.protocols import Finished, Objective
from ..search.space import Candidate, TrialOutcome, checked_outcome, crash_outcome
from ..status import Status
from .job import answer_within_s, run_job, trial_resources

GRACE_S = 60.0
"""Added to a job's outer deadline: Ray's scheduling, a retry after a lost worker."""
NODES_TTL_S = 10.0
"""How long the list of the cluster's nodes is trusted before it is read again."""
WORKER_OBJECTIVES = 4
"""Objectives a worker process keeps (one per search; a campaign runs many in turn)."""

_objectives: OrderedDict[str, Objective] = OrderedDict()  # in each worker process


class _QuietDefaultAuthNotice(logging.Filter):
    """Drops Ray's notice that a new local instance uses token authentication (its secure
    default, which we keep: other users of the machine cannot submit work to it). It came
    with every ``tune --workers N`` as a WARNING that asked for no action. Every other
    record passes, including the warning that authentication is *disabled*."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(
            "Token authentication is enabled for this Ray cluster")


#: the Ray logger the notice comes from (if Ray moves it, the filter just filters nothing)
_RAY_AUTH_LOGGER = "ray._private.authentication.authentication_token_setup"


def _worker_objective(ref: Any) -> Objective:
    """The objective behind ``ref``, fetched once per worker process."""
    import ray

    key = ref.hex()
    obj = _objectives.get(key)
    if obj is None:
        obj = ray.get(ref)
        _objectives[key] = obj
        while len(_objectives) > WORKER_OBJECTIVES:
            _objectives.popitem(last=False)
    else:
        _objectives.move_to_end(key)
    return obj


def _ray_job(boxed: list, candidate: Candidate, params: dict[str, int],
             timeout_s: float) -> tuple[TrialOutcome, float, str]:
    """Body of a Ray task: evaluate under the job's CPU budget and say where it ran. The
    objective's reference comes in a list so that Ray hands over the reference, not a new
    copy of the objective for every task."""
    import ray

    t0 = time.perf_counter()
    outcome = run_job(_worker_objective(boxed[0]), candidate, params, timeout_s)
    node = ray.get_runtime_context().get_node_id()
    return outcome, time.perf_counter() - t0, f"{socket.gethostname()}:{os.getpid()} node {node}"


def outer_deadline_s(timeout_s: float) -> float:
    """How long the driver waits for a job before force-cancelling it: the job stops itself
    far earlier (:func:`~.job.answer_within_s`); this catches a worker that no longer
    answers at all."""
    return answer_within_s(timeout_s) + GRACE_S


@dataclass
class _Job:
    token: int
    ref: Any
    deadline: float
    timeout_s: float
    submitted: float


class RayExecutor:
    """Evaluates jobs as Ray Core tasks, at most ``capacity`` at a time.

    Starts a local Ray instance (``num_cpus=workers``) unless Ray is already initialised or
    ``address``/``RAY_ADDRESS`` names a cluster to join; only what it started is shut down.
    On a cluster the capacity is ``workers`` if given, else the cluster's CPUs (and no more
    than the nodes can run at once of what a trial asks for).

    Faults end as outcomes: a job whose worker process or node died is retried by Ray on
    another worker (``max_retries``) and otherwise becomes ``crash`` naming the loss; a job
    stops itself at its CPU budget (:func:`~.job.run_job`), and one whose worker stops
    answering is force-cancelled at :func:`outer_deadline_s` and becomes ``timeout``; a job
    asking for a resource no node of the cluster offers fails at once, saying so.
    """

    def __init__(
        self,
        workers: int | None = None,
        address: str | None = None,
        *,
        num_cpus: float = 1,
        resources: Mapping[str, float] | None = None,
        max_retries: int = 2,
        object_store_memory: int | None = 200 * 1024 * 1024,
    ) -> None:
        self.workers_asked = int(workers) if workers else None
        self.workers = max(1, self.workers_asked or os.cpu_count() or 1)
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        self.num_cpus = num_cpus
        self.resources = dict(resources or {})
        self.max_retries = max_retries
        self.object_store_memory = object_store_memory
        self._started_ray = False
        self._remote: Any = None
        self._options: dict[tuple, Any] = {}
        self._jobs: dict[Any, _Job] = {}
        self._refused: list[Finished] = []
        self._objective_refs: dict[int, tuple[Any, Any]] = {}
        self._nodes: list[dict[str, float]] = []
        self._nodes_at = -1e9
        self._capacity = self.workers
        self.startup_s = 0.0

    @property
    def capacity(self) -> int:
        return self._capacity

    def start(self) -> None:
        if self._remote is not None:
            return
        import ray

        t0 = time.perf_counter()
        if not ray.is_initialized():
            try:
                if self.address:
                    ray.init(address=self.address, log_to_driver=False, include_dashboard=False)
                else:
                    _quiet_default_auth_notice()
                    ray.init(
                        # a new instance of our own, even when another Ray runs on this
                        # machine (without it ray.init joins that one and refuses num_cpus)
                        address="local",
                        num_cpus=self.workers,
                        include_dashboard=False,
                        log_to_driver=False,
                        object_store_memory=self.object_store_memory,
                    )
            except Exception as exc:  # noqa: BLE001 - Ray raises bare Exception, ConnectionError, ...
                raise SearchSetupError(_no_ray(self.address, exc)) from None
            self._started_ray = True
        self._remote = ray.remote(_ray_job)
        self._capacity = self._fit_capacity(self._needs({}))
        self.startup_s = time.perf_counter() - t0

    # ---- what a job needs and where it can go ------------------------------------------
    def _needs(self, extra: Mapping[str, float]) -> dict[str, float]:
        needs = {"CPU": float(self.num_cpus)}
        for source in (self.resources, extra):
            for name, amount in source.items():
                needs[str(name)] = max(needs.get(str(name), 0.0), float(amount))
        return {k: v for k, v in needs.items() if v > 0}

    def _alive_nodes(self, refresh: bool = False) -> list[dict[str, float]]:
        import ray

        now = time.monotonic()
        if refresh or now - self._nodes_at > NODES_TTL_S:
            self._nodes = [dict(n.get("Resources") or {}) for n in ray.nodes() if n.get("Alive")]
            self._nodes_at = now
        return self._nodes

    def _slots(self, needs: Mapping[str, float]) -> int:
        """How many jobs asking for ``needs`` the live nodes can run at once."""
        return sum(int(min(node.get(k, 0.0) / v for k, v in needs.items()) + 1e-9)
                   for node in self._alive_nodes())

    def _fit_capacity(self, needs: Mapping[str, float]) -> int:
        """``workers`` if asked for (or on a local instance made for them), else what the
        cluster's live nodes can run at once."""
        if self.workers_asked is not None or not self.address:
            return self.workers
        return max(1, self._slots(needs))

    def _unplaceable(self, needs: Mapping[str, float]) -> str | None:
        """Why no live node could ever run a job asking for ``needs`` (None if one can)."""
        if self._slots(needs) > 0:
            return None
        self._alive_nodes(refresh=True)  # a node may have joined since
        if self._slots(needs) > 0:
            return None
        want = ", ".join(f"{k}: {v:g}" for k, v in sorted(needs.items()))
        have = "; ".join(", ".join(f"{k}: {v:g}" for k, v in sorted(n.items())
                                   if not k.startswith("node:") and "memory" not in k)
                         for n in self._nodes) or "no live node"
        return (f"no node of the Ray cluster offers what this trial needs ({want}); the "
                f"nodes offer: {have}. Start a worker that has it (e.g. ray start "
                f"--address=HEAD --resources='{{\"NPU\": 8}}')")

    def _objective_ref(self, objective: Objective) -> Any:
        # Put the objective in the object store once instead of pickling it per task.
        import ray

        key = id(objective)
        hit = self._objective_refs.get(key)
        if hit is None or hit[0] is not objective:
            hit = (objective, ray.put(objective))
            self._objective_refs[key] = hit
        return hit[1]

    def _remote_for(self, needs: Mapping[str, float]) -> Any:
        key = tuple(sorted(needs.items()))
        remote = self._options.get(key)
        if remote is None:
            custom = {k: v for k, v in needs.items() if k not in ("CPU", "GPU")}
            opts: dict[str, Any] = {"num_cpus": needs.get("CPU", 0.0),
                                    "max_retries": self.max_retries, "retry_exceptions": False}
            if custom:
                opts["resources"] = custom
            remote = self._remote.options(**opts)
            self._options[key] = remote
        return remote

    # ---- the protocol ------------------------------------------------------------------
    def submit(self, token: int, objective: Objective, candidate: Candidate,
               params: dict[str, int], timeout_s: float) -> None:
        self.start()
        now = time.monotonic()
        needs = self._needs(trial_resources(objective, candidate, params))
        why = self._unplaceable(needs)
        if why is not None:
            self._refused.append(Finished(token, crash_outcome(why), 0.0))
            return
        if set(needs) - {"CPU"}:  # e.g. NPU trials: no more in flight than devices
            self._capacity = min(self._capacity, self._fit_capacity(needs))
        ref = self._remote_for(needs).remote([self._objective_ref(objective)], candidate,
                                             dict(params), timeout_s)
        limit = outer_deadline_s(timeout_s) if timeout_s > 0 else float("inf")
        self._jobs[ref] = _Job(token, ref, now + limit, timeout_s, now)

    def in_flight(self) -> int:
        return len(self._jobs) + len(self._refused)

    def poll(self, timeout_s: float | None = None) -> list[Finished]:
        import ray

        done, self._refused = self._refused, []
        if done or not self._jobs:
            return done + (self._ready(0.0) if self._jobs else [])
        now = time.monotonic()
        wait_for = min(j.deadline for j in self._jobs.values()) - now
        if timeout_s is not None:
            wait_for = min(wait_for, timeout_s)
        done = self._ready(max(0.0, wait_for))
        now = time.monotonic()
        for ref, job in list(self._jobs.items()):
            if now >= job.deadline:
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # noqa: BLE001 - it is dropped either way
                    pass
                del self._jobs[ref]
                msg = (f"no answer from its worker after {now - job.submitted:.0f} s (the "
                       f"job stops itself at its {job.timeout_s:g} s CPU budget); task "
                       f"cancelled")
                done.append(Finished(job.token, TrialOutcome(Status.TIMEOUT, None, "", msg),
                                     now - job.submitted))
        return done

    def _ready(self, wait_s: float) -> list[Finished]:
        """Collect the jobs that are done, waiting up to ``wait_s`` for the first."""
        import ray

        refs = list(self._jobs)
        try:
            ready, _ = ray.wait(refs, num_returns=1, timeout=wait_s)
            if ready:  # collect everything else that is already done too
                ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        except Exception as exc:  # noqa: BLE001 - the cluster itself is gone
            _reraise_interrupt(exc)
            msg = f"lost the Ray cluster while the trial ran: {type(exc).__name__}: {_first_line(exc)}"
            jobs, self._jobs = list(self._jobs.values()), {}
            return [Finished(j.token, crash_outcome(msg), time.monotonic() - j.submitted)
                    for j in jobs]
        return [self._collect(self._jobs.pop(ref)) for ref in ready]

    def _collect(self, job: _Job) -> Finished:
        import ray
        from ray import exceptions as rex

        elapsed = time.monotonic() - job.submitted
        tries = f"{self.max_retries + 1} attempt{'s' if self.max_retries else ''}"
        try:
            outcome, eval_s, worker = ray.get(job.ref)
            return Finished(job.token, checked_outcome(outcome), eval_s, worker)
        except rex.TaskCancelledError:
            return Finished(job.token, TrialOutcome(Status.TIMEOUT, None, "", "task cancelled"),
                            elapsed)
        except rex.NodeDiedError as exc:
            msg = f"the node running it died ({tries}): {_first_line(exc)}"
        except (rex.WorkerCrashedError, rex.LocalRayletDiedError) as exc:
            msg = f"worker died ({tries}; the node or the candidate killed it): {_first_line(exc)}"
        except rex.OutOfMemoryError as exc:
            msg = f"killed by Ray's memory monitor ({tries}): {_first_line(exc)}"
        except rex.RayTaskError as exc:
            msg = f"task error: {_first_line(exc)}"
        except rex.RayError as exc:
            msg = f"{type(exc).__name__}: {_first_line(exc)}"
        return Finished(job.token, crash_outcome(msg), elapsed)

    def cancel_all(self) -> None:
        """Cancel every job in flight and drop the objectives; Ray stays up (a campaign
        hands this executor from one search to the next)."""
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
        self._refused.clear()
        self._objective_refs.clear()

    def close(self) -> None:
        self.cancel_all()
        try:
            import ray
        except ImportError:  # pragma: no cover
            return
        self._remote = None
        self._options.clear()
        if self._started_ray and ray.is_initialized():
            ray.shutdown()
        self._started_ray = False


def _quiet_default_auth_notice() -> None:
    log = logging.getLogger(_RAY_AUTH_LOGGER)
    if not any(isinstance(f, _QuietDefaultAuthNotice) for f in log.filters):
        log.addFilter(_QuietDefaultAuthNotice())


def _no_ray(address: str | None, exc: BaseException) -> str:
    """Why no trial can run: Ray did not start or the cluster could not be joined."""
    why = f"{type(exc).__name__}: {_first_line(exc)}"
    if address:
        return (f"cannot join the Ray cluster at {address} ({why}); check that its head is "
                f"running (ray status --address {address}) and reachable from here")
    return (f"cannot start a local Ray instance ({why}); on a heavily loaded machine retry, "
            f"or run trials in this process with --workers 1")


def _reraise_interrupt(exc: BaseException) -> None:
    """A signal's exception (the driver's stop, KeyboardInterrupt) raised while Ray's C++
    core waited comes back wrapped in a ``SystemError``; raise the signal's exception, so
    that an interrupted wait is an interruption and not a lost cluster."""
    seen = exc.__cause__ or exc.__context__
    while seen is not None:
        if not isinstance(seen, Exception):
            raise seen
        seen = seen.__cause__ or seen.__context__


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return " | ".join(lines[:3])[:500] if lines else type(exc).__name__
