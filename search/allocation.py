"""Which candidate gets the next trial, and what to try when the sampler is stuck.

First every candidate's defaults (enqueued by the driver), then round-robin until each has
``n_init`` evaluations, then each slot goes to the candidate with the highest UCB score
``best_all / best_c + exploration * sqrt(ln N / n_c)``, where ``best_c`` is the candidate's
best time so far (0 if none is ok), ``n_c`` its evaluations including those in flight and
``N`` their sum. Candidates with queued trials go first; exhausted ones drop out.

When a sampler keeps proposing infeasible or already-seen points (``MISS_CAP`` in a row),
the driver asks :func:`nearest_unseen` for the feasible unseen point nearest the incumbent.
Feasibility is the driver's one memoized check (``_Search._checked``), handed in as
``check``: it keeps every verdict in ``c.feasible`` / ``c.infeasible``, so a point is never
checked twice and this module does not re-derive or re-record verdicts.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from itertools import product

from .record import CandidateState

MISS_CAP = 2  # consecutive infeasible/duplicate proposals before enumerating unseen points
ENUM_LIMIT = 50_000  # enumerate the whole space below this size, sample it above


def pick(cands: Sequence[CandidateState], n_init: int, exploration: float) -> CandidateState | None:
    """The candidate the next trial goes to; None when every candidate is exhausted."""
    active = [c for c in cands if not c.exhausted]
    if not active:
        return None
    for c in active:
        if c.waiting > 0:
            return c
    warm = [c for c in active if c.n() < n_init]
    if warm:
        return min(warm, key=lambda c: (c.n(), c.index))
    bests = [c.best[0] for c in cands if c.best is not None]
    g = min(bests) if bests else None
    total = max(2, sum(c.n() for c in active))

    def score(c: CandidateState) -> tuple[float, int]:
        r = (g / c.best[0]) if (g is not None and c.best is not None) else 0.0
        return r + exploration * math.sqrt(math.log(total) / max(1, c.n())), -c.index

    return max(active, key=score)


def nearest_unseen(c: CandidateState, rng: random.Random,
                   check: Callable[[CandidateState, dict[str, int]], str | None]) -> dict[str, int] | None:
    """A feasible point not tried yet, nearest (in index space) to the incumbent.

    ``check`` is the driver's memoized feasibility check (None when feasible, else why not);
    it records each verdict, so the points found infeasible on the way stay known."""
    seen = set(c.done) | set(c.in_flight) | set(c.infeasible) | set(c.parked)
    if len(seen) >= c.size:
        return None
    ref_params = dict(zip(c.names, c.best[1], strict=True)) if c.best else c.spec.default_params()
    ref = [c.encode(ref_params)[n] for n in c.names]

    def params_of(idx: tuple[int, ...]) -> dict[str, int]:
        return {n: d[i] for n, d, i in zip(c.names, c.domains, idx, strict=True)}

    if c.size <= ENUM_LIMIT:
        points = list(product(*(range(len(d)) for d in c.domains)))
        rng.shuffle(points)
        points.sort(key=lambda p: sum(abs(a - b) for a, b in zip(p, ref, strict=True)))
        tries = iter(points)
    else:
        tries = (tuple(rng.randrange(len(d)) for d in c.domains) for _ in range(2000))
    for idx in tries:
        params = params_of(idx)
        key = c.key(params)
        if key in seen:
            continue
        if check(c, params) is None:
            return params
        seen.add(key)
    return None
