"""The search driver against the toy objective, in-process (LocalExecutor)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import jsonschema
import optuna
import pytest
from ascendcraft.cluster import LocalExecutor
from ascendcraft.search.driver import run_search
from ascendcraft.search.report import candidate_filename
from ascendcraft.search.samplers import SAMPLERS
from ascendcraft.search.space import Candidate, TunableSpec
from ascendcraft.search.t4 import RESULTS_SCHEMA
from optuna.trial import TrialState
from test_search_toy import EDGE, FAST, OPTIMUM, SLOW, ToyObjective, _key, toy_candidates

from ascendcraft.status import Status


def _trials(run_dir: Path, study_name: str, candidates) -> list[tuple[str, optuna.trial.FrozenTrial]]:
    storage = f"sqlite:///{run_dir / 'study.db'}"
    out = []
    for c in candidates:
        study = optuna.load_study(study_name=f"{study_name}::{c.name}", storage=storage)
        out += [(c.name, t) for t in study.trials]
    return out


def _evaluated(trials) -> list[tuple[str, tuple]]:
    keys = []
    for name, t in trials:
        res = t.user_attrs.get("result") or {}
        if t.state.is_finished() and res.get("evaluated"):
            keys.append(_key(name, res["params"]))
    return keys


def test_budget_exact_no_duplicates_infeasible_never_evaluated(tmp_path):
    obj = ToyObjective()
    r = run_search(obj, toy_candidates(), budget=30, run_dir=tmp_path, study_name="s",
                   executor=LocalExecutor(), plots=False)
    assert r.evaluated == 30
    assert len(obj.calls) == 30 and len(set(obj.calls)) == 30  # nothing evaluated twice
    trials = _trials(tmp_path, "s", toy_candidates())
    evaluated = _evaluated(trials)
    assert sorted(evaluated) == sorted(obj.calls)
    cands = {c.name: c for c in toy_candidates()}
    for name, t in trials:
        assert t.state in (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)
        status = t.user_attrs["status"]
        assert Status.parse(status) is not Status.INTERRUPTED
        params = t.user_attrs["result"]["params"]
        if status == "infeasible":
            assert t.state == TrialState.PRUNED and t.user_attrs["infeasible"]
            assert _key(name, params) not in obj.calls
            assert obj.feasible(cands[name], params)
        elif status == "ok":
            assert t.state == TrialState.COMPLETE and t.value > 0
        else:
            assert t.state == TrialState.FAIL and t.user_attrs["message"]
    assert r.infeasible == sum(1 for _, t in trials if t.user_attrs["status"] == "infeasible")
    assert sum(r.trials_per_candidate.values()) == 30


def test_failure_categories_and_exhaustion(tmp_path):
    obj = ToyObjective(hang_s=5.0)
    r = run_search(obj, toy_candidates(edge=True), budget=200, sampler="grid", run_dir=tmp_path,
                   study_name="g", executor=LocalExecutor(), timeout_per_trial_s=0.3, plots=False)
    feasible = sum(1 for c in toy_candidates(edge=True) for p in c.all_params() if obj.feasible(c, p) is None)
    assert r.evaluated == feasible < 200 and r.exhausted  # every feasible point exactly once
    # every feasible point evaluated once; the one stopped by its limit was run once more
    assert len(set(obj.calls)) == feasible and len(obj.calls) == feasible + 1
    assert r.failed == {"crash": 1, "timeout": 1, "build_error": 4, "wrong": 2}
    by_status = {t.user_attrs["status"]: t for name, t in _trials(tmp_path, "g", [EDGE])}
    assert "RuntimeError: toy kernel exploded" in by_status["crash"].user_attrs["message"]
    timeout = by_status["timeout"].user_attrs
    assert "not computing" in timeout["message"] and "0.3 s limit" in timeout["message"]
    assert "both runs" in timeout["result"]["metrics"]["retried"]
    assert r.best is not None and (r.best.candidate, r.best.params) == OPTIMUM[:2]
    assert r.best.outcome.time_us == OPTIMUM[2]


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_every_sampler_runs(tmp_path, sampler):
    needs = {"cmaes": "cmaes", "gp": "scipy"}.get(sampler)
    if needs:  # optional extras of optuna; pyproject should list them
        pytest.importorskip(needs, reason=f"sampler {sampler!r} needs the {needs!r} package")
    obj = ToyObjective()
    r = run_search(obj, toy_candidates(), budget=14, sampler=sampler, run_dir=tmp_path,
                   executor=LocalExecutor(), plots=False)
    assert r.evaluated == 14 and len(set(obj.calls)) == 14
    assert r.best is not None and r.best.outcome.time_us < 25


def test_adaptive_allocation_favours_the_better_candidate(tmp_path):
    obj = ToyObjective()
    r = run_search(obj, toy_candidates(), budget=40, run_dir=tmp_path, executor=LocalExecutor(), plots=False)
    n = r.trials_per_candidate
    assert n["toy/slow"] >= 3  # everyone gets its warm-up
    assert n["toy/fast"] > 2 * n["toy/slow"]
    first = [c for c, _ in obj.calls[:2]]
    assert first == ["toy/fast", "toy/slow"]  # defaults first
    assert obj.calls[0] == _key("toy/fast", FAST.default_params())
    assert obj.calls[1] == _key("toy/slow", SLOW.default_params())


def test_duplicates_are_reused_not_reevaluated(tmp_path):
    tiny = Candidate("tiny", "k", tunables=(TunableSpec("x", (1, 2, 4), 2),))
    obj = ToyObjective()

    class Obj(ToyObjective):
        def model_time(self, candidate, params):
            return float(params["x"])

    obj = Obj()
    r = run_search(obj, [tiny], budget=10, sampler="random", run_dir=tmp_path, study_name="d",
                   executor=LocalExecutor(), plots=False)
    assert r.evaluated == 3 and r.exhausted
    assert Counter(obj.calls) == Counter({("tiny", (("x", v),)): 1 for v in (1, 2, 4)})
    trials = _trials(tmp_path, "d", [tiny])
    dups = [t for _, t in trials if "duplicate_of" in t.user_attrs]
    assert len(dups) == r.duplicates
    for t in dups:  # a duplicate carries the original's outcome
        assert t.state == TrialState.COMPLETE and t.value == t.user_attrs["result"]["params"]["x"]


def test_sampler_stuck_in_infeasible_region_falls_back_to_enumeration(tmp_path):
    spec = Candidate("narrow", "k", tunables=(TunableSpec("a", tuple(range(16)), 0),
                                         TunableSpec("b", tuple(range(16)), 0)))

    class Narrow(ToyObjective):
        def feasible(self, candidate, params):
            ok = (params["a"], params["b"]) in {(0, 0), (15, 15), (7, 3)}
            return None if ok else "outside the tiny feasible set"

        def model_time(self, candidate, params):
            return 1.0 + params["a"] + params["b"]

    obj = Narrow()
    r = run_search(obj, [spec], budget=10, run_dir=tmp_path, executor=LocalExecutor(), plots=False)
    assert r.evaluated == 3 and r.exhausted
    assert r.best.params == {"a": 0, "b": 0}


def test_objective_exception_and_bad_return_become_crash(tmp_path):
    class Bad(ToyObjective):
        def evaluate(self, candidate, params, timeout_s):
            self.calls.append(_key(candidate.name, params))
            if params["x"] == 1:
                raise ValueError("boom")
            if params["x"] == 2:
                return "not an outcome"
            return super().evaluate(candidate, params, timeout_s)

        def model_time(self, candidate, params):
            return 3.0

    spec = Candidate("c", "k", tunables=(TunableSpec("x", (1, 2, 3), 1),))
    r = run_search(Bad(), [spec], budget=3, sampler="grid", run_dir=tmp_path, study_name="b",
                   executor=LocalExecutor(), plots=False)
    assert r.failed == {"crash": 2}
    msgs = sorted(t.user_attrs["message"].splitlines()[0] for _, t in _trials(tmp_path, "b", [spec])
                  if t.user_attrs["status"] == "crash" and "duplicate_of" not in t.user_attrs)
    assert msgs == ["ValueError: boom", "objective returned str, not TrialOutcome"]
    assert r.best.params == {"x": 3}


def test_winner_is_fastest_that_stays_correct(tmp_path):
    name, params, _ = OPTIMUM
    obj = ToyObjective(flaky={_key(name, params)})
    spec = Candidate(FAST.name, FAST.source, tunables=FAST.tunables)
    r = run_search(obj, [spec], budget=200, sampler="grid", run_dir=tmp_path,
                   executor=LocalExecutor(), plots=False)
    assert r.per_candidate[name].params == params  # fastest found...
    assert r.best is not None and r.best.params != params  # ...but not correct on fresh inputs
    assert r.revalidated[0]["status"] == "wrong" and r.revalidated[1]["status"] == "ok"
    assert len(r.revalidated) == 3


def test_existing_study_requires_resume(tmp_path):
    kw = dict(budget=4, run_dir=tmp_path, study_name="x", executor=LocalExecutor(), plots=False)
    run_search(ToyObjective(), toy_candidates(), **kw)
    with pytest.raises(ValueError, match="resume=True"):
        run_search(ToyObjective(), toy_candidates(), **kw)
    obj = ToyObjective()
    r = run_search(obj, toy_candidates(), resume=True, **kw)  # budget already spent
    assert r.evaluated == 4 and obj.calls == []


def test_run_directory_reports_and_t4(tmp_path):
    obj = ToyObjective(hang_s=5.0)
    cands = toy_candidates(edge=True)
    r = run_search(obj, cands, budget=24, run_dir=tmp_path, executor=LocalExecutor(),
                   timeout_per_trial_s=0.3)
    for f in ("study.db", "trials.jsonl", "summary.json", "summary.txt", "convergence.png",
              "importance.png", "pipes.png", "results_t4.json", "metadata_t4.json"):
        assert (tmp_path / f).stat().st_size > 0, f
    for c in cands:
        assert (tmp_path / "candidates" / candidate_filename(c.name)).read_text() == c.source
    rows = [json.loads(line) for line in (tmp_path / "trials.jsonl").read_text().splitlines()]
    assert sum(r_["evaluated"] for r_ in rows) == 24
    assert {"number", "candidate", "params", "status", "time_us", "message", "metrics", "wall_s"} <= set(rows[0])
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["evaluated"] == 24 and summary["best"]["candidate"] == r.best.candidate
    text = (tmp_path / "summary.txt").read_text()
    assert "winner: toy/fast" in text and "vs eager" in text and "roofline" in text and "modeled" in text
    t4 = json.loads((tmp_path / "results_t4.json").read_text())
    jsonschema.validate(t4, RESULTS_SCHEMA)
    assert t4["schema_version"] == "1.0.0"
    inval = Counter(e["invalidity"] for e in t4["results"])
    assert inval["correct"] == 24 - sum(r.failed.values())
    assert inval["constraints"] == r.infeasible
    assert all("candidate" in e["configuration"] for e in t4["results"])
    meta = json.loads((tmp_path / "metadata_t4.json").read_text())
    assert meta["schema_version"] == "1.0.0" and "hardware" in meta["metadata"]
    assert r.times.wall_s > 0 and 0 <= r.times.overhead_frac <= 1


def test_importance_plot_with_too_few_trials(tmp_path):
    r = run_search(ToyObjective(), toy_candidates(), budget=2, run_dir=tmp_path,
                   executor=LocalExecutor())
    assert r.evaluated == 2
    assert (tmp_path / "importance.png").exists() and (tmp_path / "convergence.png").exists()


def test_a_time_limit_stops_starting_trials_after_the_first_batch(tmp_path):
    """``time_limit_s``: past it no trial is started, but a run always starts its first
    batch (the defaults first), so even a zero limit has a result; the rest stays for a
    resume with more time."""
    obj = ToyObjective()
    r = run_search(obj, toy_candidates(), budget=20, run_dir=tmp_path, study_name="t",
                   executor=LocalExecutor(), timeout_per_trial_s=5, plots=False,
                   time_limit_s=0)
    assert r.evaluated == 1 and r.time_limited and not r.exhausted
    assert r.best is not None  # the default of the first candidate
    r = run_search(obj, toy_candidates(), budget=20, run_dir=tmp_path, study_name="t",
                   executor=LocalExecutor(), timeout_per_trial_s=5, plots=False, resume=True,
                   time_limit_s=60)
    assert r.evaluated == 20 and not r.time_limited
