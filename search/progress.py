"""The progress of a search as text: one redrawn line on a terminal, plain lines elsewhere.

The driver only reports where it stands (:class:`~.protocols.SearchProgress`, through the
:class:`~.protocols.ProgressSink` it is handed); this module turns that into what a user
watching ``tune`` sees: trials done of the budget, the best time so far with its kind
(modeled or measured, as the backend said), failures, cached trials and an estimate of the
time left. On a terminal the line is redrawn in place (at most ``redraw_s`` apart); on a
pipe or a log file a plain line is written every ``every_s`` seconds and at the end, so a
log is readable without carriage returns.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from typing import TextIO

from .protocols import SearchProgress

BAR_WIDTH = 20


def eta_text(seconds: float | None) -> str:
    """``m:ss`` (or ``h:mm:ss``) for a number of seconds; ``?`` when not known yet."""
    if seconds is None or seconds != seconds or seconds < 0 or seconds == float("inf"):
        return "?"
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def render(p: SearchProgress, eta_s: float | None, *, bar: bool) -> str:
    """One progress line (without line ending or carriage return)."""
    parts = []
    if bar:
        filled = min(BAR_WIDTH, int(BAR_WIDTH * p.done / max(1, p.budget)))
        parts.append("[" + "#" * filled + "-" * (BAR_WIDTH - filled) + "]")
    parts.append(f"{p.done}/{p.budget} trials")
    if p.best_us is not None:
        kind = f" {p.timing}" if p.timing else ""
        parts.append(f"best {p.best_us:.4g} us{kind} ({p.best_candidate})")
    else:
        parts.append("best -")
    parts.append(f"failed {p.failed}")
    if p.infeasible:
        parts.append(f"infeasible {p.infeasible}")
    if p.cached:
        parts.append(f"cached {p.cached}")
    parts.append("done" if p.final else f"ETA {eta_text(eta_s)}")
    return "  ".join(parts)


class ProgressLine:
    """A :class:`~.protocols.ProgressSink` writing to ``stream`` (the CLI: stderr on a
    terminal, stdout otherwise).

    ``tty`` (default: ``stream.isatty()``) chooses the redrawn line or plain lines;
    ``clock`` is injectable so that the estimate and the pacing can be tested."""

    def __init__(self, stream: TextIO, *, tty: bool | None = None,
                 clock: Callable[[], float] = time.monotonic, redraw_s: float = 0.2,
                 every_s: float = 15.0) -> None:
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self.clock = clock
        self.interval = redraw_s if self.tty else every_s
        self._first: tuple[float, int] | None = None  # (time, done) of the first report
        self._last_draw: float | None = None
        self._drawn = False
        self._closed = False

    def eta(self, p: SearchProgress) -> float | None:
        """Seconds left at the rate of this session (trials a resume found are not counted)."""
        now = self.clock()
        if self._first is None:
            self._first = (now, p.done)
            return None
        t0, d0 = self._first
        if p.done <= d0:  # nothing finished yet (e.g. workers starting): the clock starts later
            self._first = (now, p.done)
            return None
        if now <= t0:
            return None
        return (p.budget - p.done) * (now - t0) / (p.done - d0)

    def update(self, p: SearchProgress) -> None:
        if self._closed:
            return
        eta = self.eta(p)
        now = self.clock()
        if not p.final and self._last_draw is not None and now - self._last_draw < self.interval:
            return
        self._last_draw = now
        line = render(p, eta, bar=self.tty)
        if self.tty:
            width = shutil.get_terminal_size((100, 20)).columns
            self.stream.write("\r" + line[: max(10, width - 1)] + "\x1b[K")
            self._drawn = True
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.tty and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
