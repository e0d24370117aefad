"""One job, as every executor runs it: an evaluation that never raises.

An exception from the objective, a broken return value or an unknown status becomes a
``crash`` outcome with the reason, and a job stopped at its limit a ``timeout`` outcome, so
the driver only ever sees outcomes.
"""

from __future__ import annotations

import traceback

from ..search.protocols import Objective
from ..search.space import Candidate, TrialOutcome, checked_outcome, crash_outcome
from ..status import Status


class JobTimeout(BaseException):
    """Raised into an evaluation that ran past its limit; a BaseException so the objective's
    own ``except Exception`` cannot swallow it."""


def timeout_outcome(timeout_s: float, how: str) -> TrialOutcome:
    return TrialOutcome(Status.TIMEOUT, None, "", f"exceeded {timeout_s:g}s ({how})")


def safe_evaluate(objective: Objective, candidate: Candidate, params: dict[str, int],
                  timeout_s: float) -> TrialOutcome:
    """``objective.evaluate`` that never raises (except :class:`JobTimeout`)."""
    try:
        return checked_outcome(objective.evaluate(candidate, params, timeout_s))
    except JobTimeout:
        raise
    except Exception as exc:  # noqa: BLE001 - any objective failure is a trial result
        tb = traceback.format_exc(limit=3)
        return crash_outcome(f"{type(exc).__name__}: {exc}\n{tb}".strip())
