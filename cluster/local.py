"""The in-process executor: one job at a time (tests, debugging, ``--workers 1``)."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..search.protocols import Finished, Objective
from ..search.space import Candidate
from .job import JobTimeout, safe_evaluate, timeout_outcome


@contextmanager
def _alarm(timeout_s: float) -> Iterator[bool]:
    """Interrupt the main thread after ``timeout_s`` (Unix, main thread only)."""
    usable = (
        hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and timeout_s > 0
    )
    if not usable:
        yield False
        return

    def _raise(signum: int, frame: Any) -> None:
        raise JobTimeout()

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        yield True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class LocalExecutor:
    """Runs jobs one at a time in this process, when polled.

    A timeout interrupts the evaluation with SIGALRM when running on the main thread; off the
    main thread the job runs to completion and is marked ``timeout`` if it overran.
    """

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
        try:
            with _alarm(limit) as armed:
                outcome = safe_evaluate(objective, candidate, params, limit)
            elapsed = time.perf_counter() - t0
            if not armed and limit > 0 and elapsed > limit:
                outcome = timeout_outcome(limit, "ran to completion, result discarded")
        except JobTimeout:
            elapsed = time.perf_counter() - t0
            outcome = timeout_outcome(limit, "interrupted")
        return [Finished(token, outcome, elapsed, worker=f"local:{os.getpid()}")]

    def close(self) -> None:
        self._queue.clear()
