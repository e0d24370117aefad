"""The driver's Reviser seam and Candidate.seeds, on the toy objective (no LLM, no kernels):
candidates added while the search runs share its budget and reports; seeds go right after
the defaults; a reviser that fails is dropped, one that cannot keep an idle search alive
is no longer asked; retired candidates get no more trials."""

from __future__ import annotations

import dataclasses
import json

import pytest
from ascendcraft.cluster import LocalExecutor
from ascendcraft.search.driver import IDLE_REVISIONS, run_search
from ascendcraft.search.protocols import Revision, SearchView
from ascendcraft.search.report import summary_text
from ascendcraft.search.space import Candidate, TunableSpec, validate_candidates
from test_search_toy import FAST, OPTIMUM, SLOW, ToyObjective


class AddOnce:
    """Adds ``add`` at the first revision after ``after`` evaluated trials; records views."""

    def __init__(self, add: list[Candidate], after: int = 1, retire: tuple[str, ...] = ()) -> None:
        self.add, self.after, self.retire = add, after, retire
        self.views: list[SearchView] = []
        self.done = False

    def revise(self, view: SearchView) -> Revision:
        self.views.append(view)
        if self.done or view.evaluated < self.after:
            return Revision()
        self.done = True
        self.at = view.evaluated + view.in_flight  # trials handed out so far
        return Revision(tuple(self.add), self.retire)


def search(tmp_path, candidates, reviser, budget=12, obj=None):
    obj = obj or ToyObjective()
    r = run_search(obj, candidates, budget=budget, run_dir=tmp_path, study_name="s",
                   executor=LocalExecutor(), plots=False, reviser=reviser)
    return r, obj


def test_an_added_candidate_shares_the_budget_and_the_reports(tmp_path) -> None:
    rev = AddOnce([SLOW], after=2)
    r, obj = search(tmp_path, [FAST], rev, budget=12)
    assert r.evaluated == 12 and len(obj.calls) == 12
    assert [c.name for c in r.candidates] == ["toy/fast", "toy/slow"]
    assert r.trials_per_candidate["toy/slow"] >= 1 and "toy/slow" in r.defaults
    first_slow = next(i for i, (name, _p) in enumerate(obj.calls) if name == "toy/slow")
    assert first_slow >= 2  # it joined after the trials the reviser had seen
    assert obj.calls[first_slow][1] == tuple(sorted(SLOW.default_params().items()))
    run = json.loads((tmp_path / "run.json").read_text())
    assert set(run["identity"]["candidates"]) == {"toy/fast", "toy/slow"}
    assert (tmp_path / "candidates").is_dir() and len(list((tmp_path / "candidates").iterdir())) == 2
    assert "toy/slow" in (tmp_path / "summary.txt").read_text()
    # what the reviser saw: every finished trial, the budget, what is left
    last = rev.views[-1]
    assert last.budget == 12 and last.remaining <= 12 - last.evaluated
    seen = {cv.candidate.name: len(cv.trials) for cv in last.candidates}
    assert sum(seen.values()) == last.evaluated


def test_seeds_are_tried_right_after_the_defaults(tmp_path) -> None:
    best = OPTIMUM[1]
    seeded = dataclasses.replace(FAST, seeds=(best,))
    r, obj = search(tmp_path, [seeded], None, budget=3)
    fast = [dict(p) for name, p in obj.calls if name == "toy/fast"]
    assert fast[0] == FAST.default_params() and fast[1] == best
    assert r.best is not None and r.best.params == best


def test_a_seed_outside_the_domain_is_refused() -> None:
    bad = dataclasses.replace(FAST, seeds=({"tile": 7},))
    with pytest.raises(ValueError, match="seed tile=7"):
        validate_candidates([bad])


def test_a_failing_reviser_is_dropped_and_the_search_goes_on(tmp_path) -> None:
    class Broken:
        calls = 0

        def revise(self, view: SearchView) -> Revision:
            Broken.calls += 1
            raise RuntimeError("the endpoint caught fire")

    r, obj = search(tmp_path, [FAST, SLOW], Broken(), budget=8)
    assert r.evaluated == 8 and Broken.calls == 1
    assert r.revise_error == "RuntimeError: the endpoint caught fire"
    assert "the reviser failed and was dropped" in summary_text(r, [FAST, SLOW])


def test_an_idle_search_is_not_kept_alive_forever(tmp_path) -> None:
    # every point infeasible (tile*unroll > 512): nothing it adds is ever evaluated
    hopeless = Candidate("toy/hopeless", "kernel h(x) { tile = $tile }\n",
                         tunables=(TunableSpec("tile", (1024,), 1024),))

    class Endless:
        n = 0

        def revise(self, view: SearchView) -> Revision:
            if not view.idle:
                return Revision()
            Endless.n += 1
            return Revision((dataclasses.replace(hopeless, name=f"toy/hopeless{Endless.n}"),))

    tiny = Candidate("toy/slow", SLOW.source, tunables=(TunableSpec("tile", (8,), 8),
                                                         TunableSpec("unroll", (1,), 1)))
    r, obj = search(tmp_path, [tiny], Endless(), budget=50)
    assert r.evaluated == 1 and Endless.n == IDLE_REVISIONS
    assert r.exhausted


def test_a_retired_candidate_gets_no_more_trials(tmp_path) -> None:
    rev = AddOnce([], after=2, retire=("toy/slow",))
    r, obj = search(tmp_path, [FAST, SLOW], rev, budget=12)
    slow_calls = [i for i, (name, _p) in enumerate(obj.calls) if name == "toy/slow"]
    assert r.evaluated == 12 and slow_calls
    assert max(slow_calls) < rev.at, (slow_calls, rev.at)  # none handed out after retiring
