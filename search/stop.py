"""SIGINT/SIGTERM during a search: stop at a safe point and keep everything done so far.

The handler never breaks bookkeeping (a storage write half done, a trial told to the sampler
but not recorded): outside the *interruptible* sections it only notes the signal, and the
driver stops at its next :meth:`StopSignals.check`; inside them (waiting on the executor,
which for the in-process executor is the evaluation itself, executor start-up, re-validation)
nothing is half-written, so it raises :class:`Stop` at once.  A second signal gives up on
the graceful stop: the previous handlers come back and the signal is delivered to them
(KeyboardInterrupt for SIGINT, termination for SIGTERM).

Searches nest (a campaign runs one per unit, each with its own handlers): a signal the inner
one noted but had no safe point left to act on (it came in while the finished search wrote
its report) is handed to the enclosing :class:`StopSignals` when the inner one restores its
handlers, so the outer one stops at its next check instead of the signal being lost.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stop(BaseException):
    """Raised inside an interruptible section; BaseException so ``except Exception`` (an
    objective's own error handling) cannot swallow it."""


class StopSignals:
    """Installs the handlers for one search (main thread only; elsewhere it does nothing)."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._armed = False
        self._previous: dict[int, Any] = {}

    @property
    def requested(self) -> bool:
        return self.signum is not None

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum is not None else ""

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for s in SIGNALS:
            self._previous[s] = signal.getsignal(s)
            signal.signal(s, self._handle)

    def restore(self, *, hand_on: bool = True) -> None:
        """Put the previous handlers back; with ``hand_on``, a signal noted here goes to an
        enclosing :class:`StopSignals` (a second signal is delivered instead, not noted)."""
        pending = self.signum if hand_on else None
        for s, old in self._previous.items():
            signal.signal(s, old if old is not None else signal.SIG_DFL)
            outer = getattr(old, "__self__", None)
            if pending is not None and isinstance(outer, StopSignals) and outer.signum is None:
                outer.signum = pending  # noted only: the outer one acts at its next check
        self._previous.clear()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is not None:  # the second signal: no more waiting
            self.restore(hand_on=False)
            signal.raise_signal(signum)
            return
        self.signum = signum
        if self._armed:
            self._armed = False
            raise Stop()

    def check(self) -> None:
        """Raise :class:`Stop` if a signal came in since the last check."""
        if self.signum is not None:
            raise Stop()

    @contextmanager
    def interruptible(self) -> Iterator[None]:
        """A section a signal may cut short at once."""
        self.check()
        self._armed = True
        try:
            yield
        finally:
            self._armed = False
