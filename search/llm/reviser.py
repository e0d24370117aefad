"""The LLM session inside a search: repair rounds as candidates fail, optimisation rounds as
the budget is spent.

The driver shows :class:`LlmReviser` the search after every batch of finished trials
(:class:`~ascendcraft.search.protocols.SearchView`). Two things make it ask the model:

* one of the session's candidates has been evaluated and nothing of it worked, its first
  trial failing to build, run or match the reference: it goes back with that trial's exact
  error (the session bounds how deep a line of repairs goes). A candidate whose program the
  objective could not even read, or one that was repaired, gets no more trials;
* an optimisation round is due — round k of R once ``k / (R + 1)`` of the budget is spent,
  or as soon as the search has nothing left to try — and a correct kernel exists (from any
  proposer): it goes back with its figures, asking for as many faster structures as the
  remaining budget can give a trial each (at most ``candidates``).

New candidates join the same search and share its budget.
"""

from __future__ import annotations

from ...status import Status
from ..protocols import CandidateView, Revision, SearchView
from ..space import TrialOutcome
from .prompt import Failure, Incumbent
from .session import LlmSession

#: Statuses of a first trial that send a candidate back (what no tiling can fix is likely).
REPAIRABLE = frozenset({Status.DSL_ERROR, Status.BUILD_ERROR, Status.CHECK_ERROR, Status.WRONG,
                        Status.CRASH, Status.TIMEOUT})


def failure_of(outcome: TrialOutcome, params: dict[str, int]) -> Failure:
    """A trial's failure as a repair round states it."""
    m = outcome.metrics or {}
    return Failure.of(outcome.status, outcome.message, params, m.get("max_abs_err"),
                      m.get("max_rel_err"))


class LlmReviser:
    """Repair and optimisation rounds of ``session`` while a search runs."""

    def __init__(self, session: LlmSession) -> None:
        self.session = session
        self.config = session.config

    def revise(self, view: SearchView) -> Revision:
        add, retire = [], []
        room = view.remaining
        for cv in view.candidates:
            if room <= len(add):
                break
            failed = self._failed_first(cv)
            if failed is None:
                continue
            params, outcome = failed
            fixes = self.session.repair(cv.candidate.name, failure_of(outcome, params))
            add += fixes
            if fixes or outcome.status is Status.DSL_ERROR:
                retire.append(cv.candidate.name)
        if self._optimise_due(view):
            best = self._best(view)
            n = min(self.config.candidates, room - len(add))
            if best is not None and n >= 1:
                add += self.session.optimise(best, n)
        return Revision(tuple(add), tuple(retire))

    def _failed_first(self, cv: CandidateView) -> tuple[dict[str, int], TrialOutcome] | None:
        """The first trial of one of the session's candidates, if it failed in a way worth a
        repair and nothing of the candidate has worked since."""
        lin = self.session.lineages.get(cv.candidate.name)
        if lin is None or lin.sent_back or not cv.trials:
            return None
        if any(o.ok for _p, o in cv.trials):
            return None
        params, outcome = cv.trials[0]
        return (params, outcome) if outcome.status in REPAIRABLE else None

    def _optimise_due(self, view: SearchView) -> bool:
        done, rounds = self.session.optimise_rounds, self.config.optimise_rounds
        if done >= rounds:
            return False
        return view.idle or view.evaluated >= view.budget * (done + 1) / (rounds + 1)

    @staticmethod
    def _best(view: SearchView) -> Incumbent | None:
        best = None
        for cv in view.candidates:
            b = cv.best()
            if b is not None and (best is None or b[1].time_us < best[2].time_us):
                best = (cv, b[0], b[1])
        if best is None:
            return None
        cv, params, outcome = best
        return Incumbent(cv.candidate.name, cv.candidate.origin or "builtin", cv.candidate.source,
                         params, float(outcome.time_us), outcome.timing, dict(outcome.metrics))
