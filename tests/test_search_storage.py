"""The driver's two studies per candidate (in-memory for the sampler, persistent for the
record), the defaults it evaluates first, and the timings it records."""

from __future__ import annotations

import json

import optuna
from ascendcraft.cluster import LocalExecutor
from ascendcraft.search.driver import run_search
from ascendcraft.search.record import sampler_view
from ascendcraft.search.space import Candidate, TrialOutcome, TunableSpec
from ascendcraft.search.warmup import waited_part
from optuna.trial import TrialState
from test_search_toy import EDGE, FAST, SLOW, ToyObjective, _key, toy_candidates


def _stored(run_dir, study_name, candidates):
    storage = f"sqlite:///{run_dir / 'study.db'}"
    return {
        c.name: optuna.load_study(study_name=f"{study_name}::{c.name}", storage=storage).trials
        for c in candidates
    }


def test_persistent_record_is_complete_and_consistent(tmp_path):
    obj = ToyObjective()
    cands = toy_candidates(edge=True)
    r = run_search(
        obj,
        cands,
        budget=30,
        run_dir=tmp_path,
        study_name="p",
        executor=LocalExecutor(),
        timeout_per_trial_s=0.3,
        plots=False,
    )
    stored = _stored(tmp_path, "p", cands)
    evaluated = 0
    for c in cands:
        trials = stored[c.name]
        assert [t.number for t in trials] == list(range(len(trials)))
        by_number = {t.number: t for t in trials}
        for t in trials:
            assert t.state in (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)
            assert t.datetime_start is not None and t.datetime_complete is not None
            res = t.user_attrs["result"]
            domains = {tun.name: tun.ordered() for tun in c.tunables}
            decoded = {n: domains[n][i] for n, i in t.params.items()}
            assert decoded == res["params"]  # stored index params match the decoded ones
            if t.state == TrialState.COMPLETE:
                assert t.value == res["time_us"]
            if "duplicate_of" in t.user_attrs:
                orig = by_number[t.user_attrs["duplicate_of"]]
                assert orig.user_attrs["result"]["evaluated"] and orig.params == t.params
                assert orig.state == t.state and orig.value == t.value
            evaluated += bool(res.get("evaluated"))
    assert evaluated == r.evaluated == 30
    # each point is evaluated once, except a trial stopped by its limit, which runs once more
    retried = {(c.name, tuple(sorted(t.user_attrs["result"]["params"].items())))
               for c in cands for t in stored[c.name]
               if (t.user_attrs["result"].get("metrics") or {}).get("retried")}
    twice = {k for k in obj.calls if obj.calls.count(k) > 1}
    assert twice <= retried and all(obj.calls.count(k) == 2 for k in twice)
    # the trial log written as the run went agrees with the storage
    rows = [json.loads(line) for line in (tmp_path / "trials.jsonl").read_text().splitlines()]
    assert sum(row["evaluated"] for row in rows) == 30


class _Spy(optuna.samplers.RandomSampler):
    """Records what the sampler's study holds when it samples."""

    seen: list = []

    def sample_independent(self, study, trial, param_name, param_distribution):
        _Spy.seen.append(
            [(t.state, dict(t.user_attrs), t.constraints) for t in study.get_trials(deepcopy=False)]
        )
        return super().sample_independent(study, trial, param_name, param_distribution)


def test_failed_evaluations_fail_in_storage_but_are_infeasible_to_the_sampler(tmp_path):
    spec = Candidate(EDGE.name, EDGE.source, tunables=(TunableSpec("mode", (0, 3, 4, 5, 6), 0),))
    _Spy.seen = []
    r = run_search(
        ToyObjective(),
        [spec],
        budget=10,
        sampler=lambda seed, c: _Spy(seed=seed),
        run_dir=tmp_path,
        study_name="f",
        executor=LocalExecutor(),
        plots=False,
    )
    assert r.failed == {"build_error": 1}
    stored = _stored(tmp_path, "f", [spec])[spec.name]
    bad = [t for t in stored if t.user_attrs["status"] == "build_error"]
    assert len(bad) == 1 and bad[0].state == TrialState.FAIL and not bad[0].constraints
    assert sampler_view(bad[0]).state == TrialState.PRUNED
    assert sampler_view(bad[0]).constraints == {"failed": 1.0}
    last = _Spy.seen[-1]
    assert TrialState.FAIL not in {state for state, _, _ in last}
    assert any(state == TrialState.PRUNED and cons.get("failed") == 1.0 for state, _, cons in last)


class _CountingChecks(ToyObjective):
    """The toy objective, recording every point its feasibility is asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.checks: list = []

    def feasible(self, candidate, params):
        self.checks.append(_key(candidate.name, params))
        return super().feasible(candidate, params)


def test_each_point_is_checked_for_feasibility_once(tmp_path):
    obj = _CountingChecks()
    run_search(
        obj,
        [FAST],
        budget=60,
        run_dir=tmp_path,
        executor=LocalExecutor(),
        plots=False,
    )
    assert len(obj.checks) == len(set(obj.checks))


def test_defaults_first_and_in_the_summary(tmp_path):
    obj = ToyObjective()
    r = run_search(
        obj, toy_candidates(), budget=20, run_dir=tmp_path, executor=LocalExecutor()
    )
    assert obj.calls[:2] == [
        _key(FAST.name, FAST.default_params()),
        _key(SLOW.name, SLOW.default_params()),
    ]
    for c in (FAST, SLOW):
        d = r.defaults[c.name]
        assert d["status"] == "ok" and d["params"] == c.default_params()
        assert d["time_us"] == obj.model_time(c, c.default_params())
    name, t = r.best_default()
    assert name == FAST.name and r.best.outcome.time_us <= t
    text = (tmp_path / "summary.txt").read_text()
    assert "defaults (evaluated first):" in text and "best default" in text
    assert "WORSE" not in text
    assert (
        json.loads((tmp_path / "summary.json").read_text())["defaults"][FAST.name]["time_us"] == t
    )


def test_infeasible_default_is_reported_with_its_stand_in_and_the_search_goes_on(tmp_path):
    spec = Candidate(
        "toy/fast",
        FAST.source,
        tunables=(
            TunableSpec("tile", (8, 16, 256), 256),
            TunableSpec("unroll", (1, 4), 4),
            TunableSpec("depth", (1, 2), 1),
        ),
    )
    r = run_search(
        ToyObjective(),
        [spec],
        budget=5,
        run_dir=tmp_path,
        executor=LocalExecutor(),
        plots=False,
    )
    d = r.defaults["toy/fast"]  # stood in for by the nearest feasible point
    assert "UB overflow" in d["infeasible_default"]
    assert d["status"] == "ok" and d["params"] == {"tile": 16, "unroll": 4, "depth": 1}
    assert r.best_default() == ("toy/fast", d["time_us"])
    assert r.best is not None and r.evaluated == 5


def test_timing_components_are_recorded(tmp_path):
    r = run_search(
        ToyObjective(delay_s=0.01),
        toy_candidates(),
        budget=12,
        run_dir=tmp_path,
        executor=LocalExecutor(),
        plots=False,
    )
    t = r.times
    assert t.sampler_s > 0 and t.storage_s > 0 and t.feasible_s > 0 and t.loop_s > 0
    assert t.evaluate_s >= 12 * 0.01 and t.workers == 1
    parts = (
        t.setup_s
        + t.warmup_wait_s
        + t.sampler_s
        + t.storage_s
        + t.feasible_s
        + t.submit_s
        + t.report_s
    )
    assert parts <= t.overhead_s + 1e-6
    one_off = t.executor_startup_s + t.executor_close_s
    assert abs(t.wall_s - (t.overhead_s + t.wait_s + t.revalidate_s + one_off)) < 1e-6
    # both warm-up figures come from the warm-up thread's own two clock readings (the wait is
    # the part after the executor was ready), so this holds by construction, not by timing luck
    assert t.warmup_s >= t.warmup_wait_s >= 0


def test_warmup_wait_never_exceeds_the_warmup():
    """The readings of the flaky run (warm-up 14.6 us, measured wait 15.5 us) and every order
    of start, end and executor-ready: the waited part is within [0, end - start]."""
    start, end = 100.0, 100.0 + 1.456e-05
    for ready in (99.0, start, start + 5e-06, end, end + 1.552e-05):
        w = waited_part(start, end, ready)
        assert 0.0 <= w <= end - start
    assert waited_part(start, end, 99.0) == end - start  # executor ready first: all waited
    assert waited_part(start, end, end + 1.0) == 0.0  # warm-up done first: nothing waited
    assert abs(waited_part(0.0, 3.0, 1.0) - 2.0) < 1e-12


def test_resume_rebuilds_the_samplers_view(tmp_path):
    kw = dict(
        run_dir=tmp_path, study_name="r", executor=LocalExecutor(), plots=False
    )
    first = ToyObjective()
    run_search(first, toy_candidates(), budget=10, **kw)
    second = ToyObjective()
    r = run_search(second, toy_candidates(), budget=25, resume=True, **kw)
    assert r.evaluated == 25 and len(second.calls) == 15
    assert not set(first.calls) & set(second.calls)
    assert r.defaults[FAST.name]["trial_number"] == 0  # found again from the stored record


def test_grid_sampler_resumes_where_it_stopped(tmp_path):
    kw = dict(
        sampler="grid",
        run_dir=tmp_path,
        study_name="g",
        executor=LocalExecutor(),
        plots=False,
    )
    spec = Candidate("c", "k", tunables=(TunableSpec("x", tuple(range(12)), 0),))

    class Lin(ToyObjective):
        def evaluate(self, candidate, params, timeout_s):
            self.calls.append(_key(candidate.name, params))
            return TrialOutcome("ok", 1.0 + params["x"])

    first, second = Lin(), Lin()
    run_search(first, [spec], budget=6, **kw)
    r = run_search(second, [spec], budget=12, resume=True, **kw)
    assert r.evaluated == 12 and r.exhausted is False
    assert len(set(first.calls) | set(second.calls)) == 12
    # the grid's visited points came back with the stored trials (only the enqueued default,
    # not a grid point, may be proposed again by the grid)
    assert r.duplicates <= 1


def test_finish_trial_writes_attrs_and_state_at_once(tmp_path):
    """One transaction on SQLite gives what the public calls give; a finished trial cannot
    be finished again (nothing half-written); other storages take the public calls."""
    import pytest
    from ascendcraft.search.storage import finish_trial
    from optuna.storages import InMemoryStorage, RDBStorage

    attrs = {"status": "ok", "message": "", "result": {"params": {"T": 8}, "time_us": 1.5}}
    for storage in (RDBStorage(f"sqlite:///{tmp_path / 's.db'}"), InMemoryStorage()):
        study = optuna.create_study(storage=storage, study_name="s")
        tid = study._storage.create_new_trial(study._study_id)
        finish_trial(study._storage, tid, attrs, TrialState.COMPLETE, [1.5])
        t = study.trials[0]
        assert t.state is TrialState.COMPLETE and t.value == 1.5 and t.user_attrs == attrs
        assert t.datetime_complete is not None
        with pytest.raises(RuntimeError):
            finish_trial(study._storage, tid, {"status": "wrong"}, TrialState.FAIL, None)
        assert study.trials[0].user_attrs["status"] == "ok"


def test_enumerating_unseen_points_uses_the_one_memoized_check(tmp_path):
    """A point whose verdict the driver already holds (here: feasible, as the warm-up records
    a default) is not checked again when the sampler is stuck and the driver enumerates the
    nearest unseen point; a point checked during the enumeration is remembered."""
    from ascendcraft.search.allocation import MISS_CAP
    from ascendcraft.search.driver import _Search
    from ascendcraft.search.storage import open_storage

    from ascendcraft.status import Status

    obj = _CountingChecks()
    store, url = open_storage(None, tmp_path)
    search = _Search(obj, [FAST], budget=5, sampler="tpe", seed=0, storage=store, storage_url=url,
                     study_name="m", resume=False, run_dir=tmp_path, timeout_per_trial_s=5.0,
                     executor=LocalExecutor(), progress=None, n_init=1, exploration=0.5,
                     revalidate_top=1)
    try:
        c = search.cands[0]
        c.waiting = 0  # the enqueued default is not asked here: the sampler is "stuck"
        c.feasible.add(c.default_key)  # e.g. the warm-up's verdict on the defaults
        c.misses = MISS_CAP
        _live, key, params = search._propose(c)
        assert key == c.default_key  # the incumbent's own point is the nearest unseen one
        assert obj.checks == []  # served from the driver's memo, not the objective
        c.done[key] = (0, TrialOutcome(Status.OK, 1.0))
        c.in_flight.pop(key, None)
        c.waiting, c.misses = 0, MISS_CAP
        _live, key2, params2 = search._propose(c)
        assert key2 != key and key2 in c.feasible
        assert obj.checks == [_key(FAST.name, params2)]
    finally:
        search.log.close()
