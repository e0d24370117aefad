"""How a campaign shares its night between ops: a fair share first, then more time where
the last trials still improved.

Pure functions of the campaign's state (no Ray, no Optuna), so the policy can be read and
tested on its own. Round 1 gives every unit (one op on one SoC) an equal share of
``FIRST_ROUND`` of the time left and half its trial budget; a unit that finishes early
leaves its time to the units after it. Round 2 splits what is left between the units whose
best time still improved in the last third of their trials (all units with budget left
when none did), up to each unit's full budget.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

FIRST_ROUND = 0.6
"""The part of the night round 1 hands out in fair shares."""
LATE = 1 / 3
"""An improvement in this last part of a unit's trials means it is still improving."""
MIN_SHARE_S = 1.0
"""The least time a unit is given in round 1. Whatever its share, a run starts its first
batch of trials (the defaults first: the driver's time limit never stops it), so every op
of the campaign is covered however short the night."""


@dataclass(frozen=True)
class Grant:
    """What one run of a unit may use: trials in total (a resume continues to this) and
    seconds of wall time after which it starts no trial."""

    budget: int
    seconds: float


def first_budget(budget_per_op: int) -> int:
    """Round 1's trial budget per unit: half the unit's full budget (at least one)."""
    return max(1, math.ceil(budget_per_op / 2))


def first_round_grant(left_s: float, units_left: int, budget_per_op: int,
                      night_s: float) -> Grant:
    """The fair share of the next unit of round 1: ``left_s`` of the night remain and
    ``units_left`` units (this one included) have not had their first round yet."""
    pool = max(0.0, left_s - (1 - FIRST_ROUND) * night_s)
    return Grant(first_budget(budget_per_op), max(MIN_SHARE_S, pool / max(1, units_left)))


def still_improving(best_curve: Sequence[float | None]) -> bool:
    """Whether a unit's best-so-far (one entry per evaluated trial, None before the first
    correct one) last improved within the last ``LATE`` of its trials."""
    n = len(best_curve)
    if n == 0:
        return True  # nothing known yet: worth more time
    last_change = -1
    prev: float | None = None
    for i, v in enumerate(best_curve):
        if v is not None and (prev is None or v < prev):
            last_change, prev = i, v
    if last_change < 0:
        return False  # no correct kernel at all: more trials rarely help
    return last_change >= n - max(1, math.ceil(n * LATE))


def second_round(candidates: Sequence[str], improving: Sequence[str],
                 left_s: float) -> dict[str, float]:
    """Round 2's seconds per unit among ``candidates`` (units with budget left): the
    improving ones share what is left; if none is improving, every candidate does."""
    chosen = [u for u in candidates if u in set(improving)] or list(candidates)
    if not chosen or left_s <= 0:
        return {}
    return {u: left_s / len(chosen) for u in chosen}


def best_curve(rows: Sequence[dict]) -> list[float | None]:
    """Best-so-far time per evaluated trial of a run's ``trials.jsonl`` rows, in the order
    they completed."""
    done = sorted((r for r in rows if r.get("evaluated")),
                  key=lambda r: (r.get("datetime_complete") or "", r.get("number") or 0))
    out: list[float | None] = []
    best: float | None = None
    for r in done:
        t = r.get("time_us")
        if r.get("status") == "ok" and isinstance(t, (int, float)) and t > 0:
            best = t if best is None else min(best, t)
        out.append(best)
    return out
