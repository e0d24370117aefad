"""The feasible assignment nearest to a candidate's defaults.

A template's defaults are written once for every shape; at some task shape they do not fit
(e.g. a vector epilogue's rows x chunk overflow UB). Then the point to start from is the
feasible one closest to what the author chose, not whatever the sampler stumbles on. This is
the one definition of "closest": ``ascendcraft check`` and the benchmarks time it, and the
search evaluates it first in place of an infeasible default.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

from .space import TunableSpec

LIMIT = 4000
"""How many joint assignments are tried at most, after the single-tunable changes."""


def nearest_feasible(tunables: Sequence[TunableSpec], feasible: Callable[[dict[str, int]], str | None],
                     limit: int = LIMIT) -> dict[str, int] | None:
    """The defaults if ``feasible`` accepts them (it returns None for a feasible point, else
    why not), else the closest feasible assignment: first every change of one tunable, nearest
    first (steps along the domain's declared order; at equal steps a smaller value, which
    shrinks buffers, before a larger, then the tunables in declared order: tiles come before
    buffer depths), then joint changes ordered by their total number of
    steps. None if none of the points tried is feasible. The result is a complete assignment."""
    defaults = {t.name: t.default for t in tunables}
    if feasible(dict(defaults)) is None:
        return defaults
    steps = [_steps_from_default(t) for t in tunables]
    singles = sorted((steps[i][v], v > t.default, i, v) for i, t in enumerate(tunables)
                     for v in t.values if v != t.default)
    for _steps, _up, i, v in singles:
        params = {**defaults, tunables[i].name: v}
        if feasible(dict(params)) is None:
            return params
    doms = [sorted(t.values, key=lambda v, st=st: (st[v], v)) for t, st in zip(tunables, steps, strict=True)]
    combos = itertools.islice(itertools.product(*doms), limit)
    scored = sorted(combos, key=lambda c: sum(st[v] for st, v in zip(steps, c, strict=True)))
    for combo in scored:
        params = {t.name: v for t, v in zip(tunables, combo, strict=True)}
        if params != defaults and feasible(dict(params)) is None:
            return params
    return None


def _steps_from_default(t: TunableSpec) -> dict[int, int]:
    """How far each value of ``t`` is from its default, in the domain's declared order."""
    di = list(t.values).index(t.default)
    return {v: abs(i - di) for i, v in enumerate(t.values)}
