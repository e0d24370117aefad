"""One executor kept across several searches (a campaign), lent to each in turn.

Starting Ray costs seconds and joining a cluster more; a campaign of many ops starts its
executor once and lends it to every op's search. The driver closes what it is handed when
its loop ends: closing a loan cancels that search's jobs in flight and nothing else.
"""

from __future__ import annotations

from ..search.protocols import Executor, Finished, Objective
from ..search.space import Candidate


class SharedExecutor:
    """Owns ``inner`` (an executor with ``cancel_all()``); :meth:`lend` gives a search a
    view of it, :meth:`close` releases it for good."""

    def __init__(self, inner: Executor) -> None:
        self.inner = inner

    def start(self) -> None:
        self.inner.start()

    @property
    def capacity(self) -> int:
        return self.inner.capacity

    def lend(self) -> Executor:
        return _Loan(self.inner)

    def close(self) -> None:
        self.inner.close()


class _Loan:
    """The shared executor as one search sees it."""

    def __init__(self, inner: Executor) -> None:
        self._inner = inner

    @property
    def capacity(self) -> int:
        return self._inner.capacity

    def start(self) -> None:
        self._inner.start()

    def submit(self, token: int, objective: Objective, candidate: Candidate,
               params: dict[str, int], timeout_s: float) -> None:
        self._inner.submit(token, objective, candidate, params, timeout_s)

    def poll(self, timeout_s: float | None = None) -> list[Finished]:
        return self._inner.poll(timeout_s)

    def in_flight(self) -> int:
        return self._inner.in_flight()

    def close(self) -> None:
        self._inner.cancel_all()  # type: ignore[attr-defined]
