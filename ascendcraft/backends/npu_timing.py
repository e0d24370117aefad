"""How a kernel is timed on the device: warm-up, then repetitions until enough device time has
been measured, each one optionally after an L2 flush, summarised as median and spread.

The loop is independent of torch_npu: it takes a function that runs the kernel once and
returns the device time of that run (the npu backend measures it between two NPU events),
and a function that flushes L2 between runs. A median over many runs is robust to the odd
slow run (a preempted stream, a clock change); the spread (interquartile range) says how
much the runs disagree.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

WARMUP_RUNS = 5
MIN_REPS = 20
MAX_REPS = 2000
MIN_TOTAL_S = 0.2
"""Keep repeating until this much device time has been measured (and at least MIN_REPS)."""

L2_FLUSH_FACTOR = 2
"""Flush L2 between runs when the kernel's working set is below this many times the L2 size:
a working set that small would otherwise be served from L2 on every repetition after the
first, which a kernel called once in a real program does not enjoy."""


@dataclass(frozen=True)
class TimingPolicy:
    warmup: int = WARMUP_RUNS
    min_reps: int = MIN_REPS
    max_reps: int = MAX_REPS
    min_total_s: float = MIN_TOTAL_S

    def __post_init__(self) -> None:
        if self.warmup < 0 or self.min_reps < 1 or self.max_reps < self.min_reps or self.min_total_s < 0:
            raise ValueError(f"bad timing policy {self}")


@dataclass(frozen=True)
class Measurement:
    """Device times of the repetitions (microseconds) and their summary."""

    samples_us: tuple[float, ...]
    l2_flushed: bool

    @property
    def median_us(self) -> float:
        return statistics.median(self.samples_us)

    def summary(self) -> dict[str, float | int | bool]:
        s = sorted(self.samples_us)
        q = statistics.quantiles(s, n=4, method="inclusive") if len(s) > 1 else [s[0]] * 3
        return {"reps": len(s), "median_us": statistics.median(s), "min_us": s[0], "max_us": s[-1],
                "p25_us": q[0], "p75_us": q[2], "spread_us": q[2] - q[0],
                "mean_us": statistics.fmean(s), "l2_flush": self.l2_flushed}


def needs_l2_flush(working_set_bytes: int, l2_bytes: int) -> bool:
    """Whether to flush L2 between runs (see :data:`L2_FLUSH_FACTOR`)."""
    return working_set_bytes < L2_FLUSH_FACTOR * l2_bytes


class MeasureTimeout(Exception):
    """The trial's time limit passed before one repetition was measured."""


def measure(run_once: Callable[[], float], *, flush: Callable[[], None] | None = None,
            policy: TimingPolicy | None = None, timeout_s: float = 0.0,
            clock: Callable[[], float] = time.monotonic) -> Measurement:
    """Warm up, then repeat ``run_once`` (which returns one run's device time in µs), calling
    ``flush`` before every run when given, until ``min_total_s`` of device time and at least
    ``min_reps`` runs (at most ``max_reps``).

    With ``timeout_s`` > 0 the loop also stops once that much wall time has passed: the runs
    measured so far are the measurement (``reps`` says how many), and
    :class:`MeasureTimeout` is raised when not one was. A slow kernel so costs a trial its
    time limit, not the campaign its night. (A run that never returns is stopped by the
    executor around the trial, not here.)"""
    policy = policy or TimingPolicy()
    deadline = clock() + timeout_s if timeout_s > 0 else None

    def late(what: str) -> bool:
        if deadline is None or clock() <= deadline:
            return False
        if not samples:
            raise MeasureTimeout(f"exceeded {timeout_s:g}s {what} before one timed run")
        return True

    samples: list[float] = []
    for _ in range(policy.warmup):
        if flush is not None:
            flush()
        run_once()
        if late("in the warm-up runs"):
            break
    total_us = 0.0
    while len(samples) < policy.max_reps and (len(samples) < policy.min_reps
                                               or total_us < policy.min_total_s * 1e6):
        if samples and late("timing"):
            break
        if flush is not None:
            flush()
        us = float(run_once())
        if not us >= 0:  # NaN or negative: the events did not bracket the run
            raise ValueError(f"a run reported {us} us of device time")
        samples.append(us)
        total_us += us
    return Measurement(tuple(samples), flush is not None)
