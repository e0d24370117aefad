"""The sampler table: which Optuna sampler each ``--sampler`` name means.

To add a sampler: a name in :data:`SAMPLERS` and a branch in :func:`make_sampler` (the CLI's
``--sampler`` choices come from :data:`SAMPLERS`). A sampler sees one candidate's fixed
search space: each tunable as the index into its sorted domain.
"""

from __future__ import annotations

from typing import Any

import optuna
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial, TrialState

from .space import Candidate

SAMPLERS = ("tpe", "random", "grid", "cmaes", "gp")


class _GridSampler(optuna.samplers.GridSampler):
    """GridSampler for ask/tell: its after_trial calls ``study.stop()``, which only works inside
    ``optimize`` (and fails on enqueued trials); the driver detects exhaustion itself."""

    def after_trial(self, study: Any, trial: FrozenTrial, state: TrialState, values: Any) -> None:
        return None


def make_sampler(name: str, seed: int, candidate: Candidate) -> BaseSampler:
    """The sampler for one candidate's study, by name."""
    samplers = optuna.samplers
    if name == "tpe":
        return samplers.TPESampler(
            multivariate=True,
            constant_liar=True,
            seed=seed,
            n_startup_trials=5,  # kernel budgets are small: model early
        )
    if name == "random":
        return samplers.RandomSampler(seed=seed)
    if name == "grid":
        space = {t.name: list(range(len(t.ordered()))) for t in candidate.tunables}
        return _GridSampler(space, seed=seed)
    if name == "cmaes":
        return samplers.CmaEsSampler(
            seed=seed,
            n_startup_trials=3,
            with_margin=True,  # integer (index) parameters
            independent_sampler=samplers.RandomSampler(seed=seed),
        )
    if name == "gp":
        return samplers.GPSampler(seed=seed, n_startup_trials=5)
    raise ValueError(f"unknown sampler {name!r}; choose one of {', '.join(SAMPLERS)}")
