"""An infeasible default is replaced by the feasible point nearest to it, evaluated right
after it and reported in its place (the bench found templates whose defaults overflow UB at
the task's shape: the sampler then spent most of a small budget on infeasible points)."""

from __future__ import annotations

import json

import optuna
from ascendcraft.cluster import LocalExecutor
from ascendcraft.search.driver import run_search
from ascendcraft.search.nearest import nearest_feasible
from ascendcraft.search.space import Candidate, TunableSpec
from test_search_toy import ToyObjective

# rows x chunk must fit in 8192 elements; the default (8, 2048) is four times too big
EPI = Candidate("epi", "k", tunables=(
    TunableSpec("rows", (1, 2, 4, 8, 16), 8),
    TunableSpec("chunk", (256, 512, 1024, 2048), 2048),
    TunableSpec("cores", (8, 16, 24), 24),
))


class Fits(ToyObjective):
    def feasible(self, candidate, params):
        need = params["rows"] * params["chunk"]
        return None if need <= 8192 else f"UB overflow: rows*chunk={need} > 8192"

    def model_time(self, candidate, params):  # fastest at the largest tile that fits
        return 100.0 / (params["rows"] * params["chunk"] / 8192) + 24 / params["cores"]


def _fits(params):
    return Fits().feasible(EPI, params)


def test_nearest_feasible_keeps_feasible_defaults_and_changes_one_tunable_first():
    ok = Candidate("ok", "k", tunables=(TunableSpec("rows", (1, 2, 4), 2),))
    assert nearest_feasible(ok.tunables, lambda p: None) == {"rows": 2}
    got = nearest_feasible(EPI.tunables, _fits)
    assert got == {"rows": 4, "chunk": 2048, "cores": 24}  # one step from the default
    assert nearest_feasible(EPI.tunables, lambda p: "never") is None


def test_nearest_feasible_falls_back_to_joint_changes():
    both = Candidate("both", "k", tunables=(TunableSpec("a", (1, 2, 4, 8), 8),
                                            TunableSpec("b", (1, 2, 4, 8), 8)))
    got = nearest_feasible(both.tunables, lambda p: None if p["a"] + p["b"] <= 8 else "no")
    assert got == {"a": 4, "b": 4}  # each one step from its default: the nearest joint point


def test_an_infeasible_default_gets_a_stand_in_evaluated_next_and_reported(tmp_path):
    obj = Fits()
    r = run_search(obj, [EPI], budget=6, sampler="random", seed=3, run_dir=tmp_path,
                   study_name="s", executor=LocalExecutor(), plots=False)
    stand_in = {"rows": 4, "chunk": 2048, "cores": 24}
    assert obj.calls[0] == ("epi", tuple(sorted(stand_in.items())))  # the first evaluation
    d = r.defaults["epi"]
    assert d["status"] == "ok" and d["params"] == stand_in and d["time_us"] is not None
    assert "UB overflow" in d["infeasible_default"]
    assert r.best_default() == ("epi", d["time_us"])
    text = (tmp_path / "summary.txt").read_text()
    assert "nearest feasible: the defaults do not fit: UB overflow" in text
    assert "no default is correct" not in text
    assert json.loads((tmp_path / "summary.json").read_text())["defaults"]["epi"]["params"] == stand_in
    study = optuna.load_study(study_name="s::epi", storage=f"sqlite:///{tmp_path / 'study.db'}")
    marked = [t for t in study.trials if t.user_attrs.get("default_stand_in")]
    assert len(marked) == 1 and marked[0].user_attrs["result"]["params"] == stand_in


def test_the_stand_in_survives_a_resume_and_is_not_evaluated_twice(tmp_path):
    obj = Fits()
    run_search(obj, [EPI], budget=3, sampler="random", seed=1, run_dir=tmp_path,
               study_name="s", executor=LocalExecutor(), plots=False)
    again = Fits()
    r = run_search(again, [EPI], budget=6, sampler="random", seed=1, run_dir=tmp_path,
                   study_name="s", executor=LocalExecutor(), plots=False, resume=True)
    stand_in = ("epi", (("chunk", 2048), ("cores", 24), ("rows", 4)))
    assert stand_in in obj.calls and stand_in not in again.calls
    assert r.defaults["epi"]["params"] == dict(stand_in[1]) and r.defaults["epi"]["status"] == "ok"


def test_a_candidate_with_no_feasible_point_still_says_its_default_is_infeasible(tmp_path):
    class Never(Fits):
        def feasible(self, candidate, params):
            return "UB overflow everywhere"

    ok = Candidate("ok", "k", tunables=(TunableSpec("x", (1, 2), 1),))

    class Mixed(Never):
        def feasible(self, candidate, params):
            return None if candidate.name == "ok" else super().feasible(candidate, params)

        def model_time(self, candidate, params):
            return 5.0

    r = run_search(Mixed(), [EPI, ok], budget=4, run_dir=tmp_path, executor=LocalExecutor(),
                   plots=False)
    d = r.defaults["epi"]
    assert d["status"] == "infeasible" and "UB overflow everywhere" in d["message"]
    assert "infeasible_default" not in d and d["params"] == EPI.default_params()
    assert r.best.candidate == "ok"
