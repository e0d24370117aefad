"""The in-process executor: one job at a time (tests, debugging, ``--workers 1``)."""

from __future__ import annotations

import os
import time

from ..search.protocols import Finished, Objective
from ..search.space import Candidate
from .job import run_job


class LocalExecutor:
    """Runs jobs one at a time in this process, when polled, each under its CPU budget
    (:func:`~.job.run_job`: on the main thread a job past its budget is interrupted; off
    it the job runs to completion and is judged afterwards)."""

    def __init__(self) -> None:
        self._queue: list[tuple[int, Objective, Candidate, dict[str, int], float]] = []

    @property
    def capacity(self) -> int:
        return 1

    def start(self) -> None:
        pass

    def submit(self, token: int, objective: Objective, candidate: Candidate,
               params: dict[str, int], timeout_s: float) -> None:
        self._queue.append((token, objective, candidate, dict(params), timeout_s))

    def in_flight(self) -> int:
        return len(self._queue)

    def poll(self, timeout_s: float | None = None) -> list[Finished]:
        if not self._queue:
            return []
        token, objective, candidate, params, limit = self._queue.pop(0)
        t0 = time.perf_counter()
        outcome = run_job(objective, candidate, params, limit)
        return [Finished(token, outcome, time.perf_counter() - t0, worker=f"local:{os.getpid()}")]

    def cancel_all(self) -> None:
        """Forget the jobs not run yet (this executor runs nothing in the background)."""
        self._queue.clear()

    def close(self) -> None:
        self.cancel_all()
