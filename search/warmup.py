"""The objective's first checks, run while the executor starts."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from .protocols import Objective
from .space import Candidate


class WarmUp(threading.Thread):
    """Checks every candidate's defaults (the first proposals) in the background while the
    executor starts: the first check pays the objective's one-off set-up (e.g. importing
    torch), which then overlaps Ray's start-up instead of following it.  Its verdicts are
    reused, so nothing is checked twice."""

    def __init__(self, objective: Objective, candidates: Sequence[Candidate], plots: bool) -> None:
        super().__init__(name="ascendcraft-warm-up", daemon=True)
        self.objective = objective
        self.candidates = list(candidates)
        self.plots = plots
        self.verdicts: dict[str, str | None] = {}
        self.t_start = self.t_end = 0.0  # perf_counter readings, taken in this thread

    @property
    def elapsed(self) -> float:
        return self.t_end - self.t_start

    def run(self) -> None:
        self.t_start = time.perf_counter()
        try:
            self._check_all()
        finally:
            self.t_end = time.perf_counter()

    def _check_all(self) -> None:
        for c in self.candidates:
            try:
                reason = self.objective.feasible(c, c.default_params())
            except Exception:  # noqa: BLE001 - the main loop checks again and reports it
                continue
            self.verdicts[c.name] = str(reason) if reason else None
        if self.plots:  # the end-of-run plots need matplotlib: import it now too
            try:
                from .report import _plt

                _plt()
            except Exception:  # noqa: BLE001 - the report imports it again and says why
                pass


def waited_part(start: float, end: float, ready: float) -> float:
    """How much of the interval [start, end] lies after ``ready``: never more than
    ``end - start``, whatever the order of the three readings."""
    return max(0.0, end - max(ready, start))
