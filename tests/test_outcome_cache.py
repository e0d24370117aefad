"""The outcome cache: reruns reuse deterministic outcomes, nothing else, whatever the file."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from ascendcraft.search.space import CACHED_METRIC, Candidate, TrialOutcome, TunableSpec

from ascendcraft.app import outcome_cache as oc
from ascendcraft.app.outcome_cache import CachedObjective, OutcomeCache, OutcomeCacheWarning
from ascendcraft.status import Status

MODEL = "model-v-test"
CAND = Candidate("k/one", "kernel one(x) { t = $T }\n", tunables=(TunableSpec("T", (1, 2, 4), 1),))
BASE = {"task": "op relu", "shapes": [[8, 8]], "dtype": "float32", "soc": "Ascend910B2",
        "model_version": MODEL, "ascendcraft_version": "0.test"}


@dataclass
class Counting:
    """An objective that says what it is told to, and counts how often it was asked."""

    outcome: TrialOutcome = field(default_factory=lambda: TrialOutcome(
        Status.OK, 12.5, "modeled", "", {"model_version": MODEL, "eager_us": 30.0}))
    calls: int = 0
    revalidations: int = 0

    def feasible(self, candidate, params):
        return None

    def evaluate(self, candidate, params, timeout_s):
        self.calls += 1
        o = self.outcome
        return TrialOutcome(o.status, o.time_us, o.timing, o.message, dict(o.metrics))

    def revalidate(self, candidate, params):
        self.revalidations += 1
        return TrialOutcome(Status.OK, None, "modeled", "")


def _cached(tmp_path: Path, inner: Counting, base: dict | None = None) -> CachedObjective:
    return CachedObjective(inner, OutcomeCache(tmp_path / "outcomes.sqlite"), dict(base or BASE), MODEL)


def test_rerun_hits_and_is_reported_as_cached(tmp_path):
    inner = Counting()
    first = _cached(tmp_path, inner).evaluate(CAND, {"T": 2}, 60.0)
    assert inner.calls == 1 and CACHED_METRIC not in first.metrics
    again = _cached(tmp_path, inner).evaluate(CAND, {"T": 2}, 60.0)  # a new run, same file
    assert inner.calls == 1
    assert again.status is Status.OK and again.time_us == 12.5 and again.timing == "modeled"
    assert again.metrics[CACHED_METRIC] is True
    assert again.metrics["model_version"] == MODEL  # the figure keeps its label
    # re-validation is cached too, under its own key (it is not the search's check)
    obj = _cached(tmp_path, inner)
    assert obj.revalidate(CAND, {"T": 2}).status is Status.OK
    assert obj.revalidate(CAND, {"T": 2}).metrics[CACHED_METRIC] is True
    assert inner.revalidations == 1 and inner.calls == 1


@pytest.mark.parametrize("change", [
    {"model_version": "model-v-next"}, {"soc": "Ascend310P3"}, {"shapes": [[16, 8]]},
    {"dtype": "float16"}, {"ascendcraft_version": "0.next"}, {"task": "op gelu"},
])
def test_miss_when_what_the_trial_measures_differs(tmp_path, change):
    inner = Counting()
    _cached(tmp_path, inner).evaluate(CAND, {"T": 2}, 60.0)
    _cached(tmp_path, inner, {**BASE, **change}).evaluate(CAND, {"T": 2}, 60.0)
    assert inner.calls == 2


def test_miss_when_params_or_source_differ(tmp_path):
    inner = Counting()
    obj = _cached(tmp_path, inner)
    obj.evaluate(CAND, {"T": 2}, 60.0)
    obj.evaluate(CAND, {"T": 4}, 60.0)
    other = Candidate(CAND.name, CAND.source + "# edited\n", tunables=CAND.tunables)
    obj.evaluate(other, {"T": 2}, 60.0)
    assert inner.calls == 3
    obj.evaluate(CAND, {"T": 4}, 60.0)
    assert inner.calls == 3


@pytest.mark.parametrize("outcome", [
    TrialOutcome(Status.TIMEOUT, None, "", "timed out after 120 s (timing run)"),
    TrialOutcome(Status.CRASH, None, "", "worker died"),
    TrialOutcome(Status.INTERRUPTED, None, "", "interrupted by SIGINT"),
    TrialOutcome(Status.TRACE_LIMIT, None, "", "trace over its limit"),
    TrialOutcome(Status.CHECK_ERROR, None, "", "cannot load k.so: No such file"),
    TrialOutcome(Status.BUILD_ERROR, None, "", "compiler timed out after 300 s (compiler processes killed)"),
    TrialOutcome(Status.BUILD_ERROR, None, "", "compilation of k.cpp failed (SIGXCPU: CPU-time limit):\n"),
    TrialOutcome(Status.BUILD_ERROR, None, "", "compilation of k.cpp failed:\nvirtual memory exhausted"),
    TrialOutcome(Status.OK, 3.0, "measured", "", {}),  # a measurement is not repeatable
    TrialOutcome(Status.OK, 3.0, "modeled", "", {"model_version": "older"}),
], ids=lambda o: f"{o.status.value}:{o.message[:20]}")
def test_outcomes_a_rerun_may_not_repeat_are_not_cached(tmp_path, outcome):
    inner = Counting(outcome)
    obj = _cached(tmp_path, inner)
    obj.evaluate(CAND, {"T": 1}, 60.0)
    obj.evaluate(CAND, {"T": 1}, 60.0)
    assert inner.calls == 2
    assert len(obj.cache) == 0


@pytest.mark.parametrize("outcome", [
    TrialOutcome(Status.WRONG, None, "", "output 0: max abs err 0.5"),
    TrialOutcome(Status.INFEASIBLE, None, "", "UB overflow"),
    TrialOutcome(Status.DSL_ERROR, None, "", "line 3: unknown op"),
    TrialOutcome(Status.BUILD_ERROR, None, "", "compilation of k.cpp failed:\nk.cpp:3: error: x"),
], ids=lambda o: o.status.value)
def test_deterministic_failures_are_cached(tmp_path, outcome):
    inner = Counting(outcome)
    obj = _cached(tmp_path, inner)
    obj.evaluate(CAND, {"T": 1}, 60.0)
    hit = obj.evaluate(CAND, {"T": 1}, 60.0)
    assert inner.calls == 1
    assert hit.status is outcome.status and hit.message == outcome.message


def test_damaged_file_is_replaced_with_a_warning(tmp_path):
    path = tmp_path / "outcomes.sqlite"
    path.write_bytes(b"this is not an SQLite database, it is garbage\x00" * 200)
    inner = Counting()
    obj = CachedObjective(inner, OutcomeCache(path), dict(BASE), MODEL)
    with pytest.warns(OutcomeCacheWarning, match="started a fresh cache"):
        out = obj.evaluate(CAND, {"T": 2}, 60.0)
    assert out.status is Status.OK and inner.calls == 1
    assert list(tmp_path.glob("outcomes.sqlite.damaged-*"))  # kept aside, not deleted
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert obj.evaluate(CAND, {"T": 2}, 60.0).metrics[CACHED_METRIC] is True  # the fresh one works


def test_damaged_entry_is_a_miss(tmp_path):
    cache = OutcomeCache(tmp_path / "outcomes.sqlite")
    cache.put("k", {"status": "ok"})
    cache._connect().execute("UPDATE outcomes SET value='{not json'")
    assert cache.get("k") is None
    assert len(cache) == 0


def test_unusable_location_is_no_cache_not_a_failure(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    inner = Counting()
    obj = CachedObjective(inner, OutcomeCache(blocker / "sub" / "outcomes.sqlite"), dict(BASE), MODEL)
    with pytest.warns(OutcomeCacheWarning, match="goes on without it"):
        assert obj.evaluate(CAND, {"T": 2}, 60.0).status is Status.OK
    assert obj.evaluate(CAND, {"T": 2}, 60.0).status is Status.OK  # warned once, then quiet
    assert inner.calls == 2


def test_size_is_bounded_least_recently_used_go(tmp_path):
    cache = OutcomeCache(tmp_path / "outcomes.sqlite", max_entries=10)
    for i in range(25):
        cache.put(f"k{i}", {"i": i})
    cache.get("k0")  # used again: kept
    cache.prune()
    assert len(cache) == 10
    assert cache.get("k0") == {"i": 0} and cache.get("k24") == {"i": 24}
    assert cache.get("k1") is None


def test_env_disables_or_moves_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(oc.CACHE_ENV, "off")
    assert oc.cache_path() is None
    monkeypatch.setenv(oc.CACHE_ENV, str(tmp_path / "x.sqlite"))
    assert oc.cache_path() == tmp_path / "x.sqlite"
    monkeypatch.delenv(oc.CACHE_ENV)
    monkeypatch.setenv("ASCENDCRAFT_CACHE", str(tmp_path / "root"))
    assert oc.cache_path() == tmp_path / "root" / oc.FILE_NAME


def test_pickles_without_its_connection(tmp_path):
    import pickle

    obj = _cached(tmp_path, Counting())
    obj.evaluate(CAND, {"T": 2}, 60.0)
    copy = pickle.loads(pickle.dumps(obj))
    assert copy.cache._conn is None
    assert copy.evaluate(CAND, {"T": 2}, 60.0).metrics[CACHED_METRIC] is True


WRITER = textwrap.dedent("""
    import sys, warnings
    warnings.simplefilter("error")
    from ascendcraft.app.outcome_cache import OutcomeCache
    cache = OutcomeCache(sys.argv[1])
    tag = sys.argv[2]
    for i in range(300):
        cache.put(f"{tag}{i}", {"i": i, "tag": tag})
        cache.get(f"{tag}{i // 2}")
    print("done")
""")


def test_two_processes_write_at_once(tmp_path):
    path = tmp_path / "outcomes.sqlite"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), tag],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for tag in ("a", "b")]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
        assert out.strip() == "done"
    cache = OutcomeCache(path)
    # a write that met a busy file is skipped (a miss later), never an error; on a quiet
    # machine nearly all land
    assert len(cache) > 500
    assert cache.get("a299") in (None, {"i": 299, "tag": "a"})
    assert json.dumps(cache.get("b0")) in ("null", json.dumps({"i": 0, "tag": "b"}))


def test_tune_rerun_is_served_by_the_cache(tmp_path, monkeypatch):
    """The real objective: a second run of the same tune evaluates nothing and finds the
    same winner."""
    from ascendcraft.cluster.config import ExecutorConfig

    from ascendcraft.app.task import TaskRef
    from ascendcraft.app.tuning import TuneConfig, tune

    monkeypatch.setenv(oc.CACHE_ENV, str(tmp_path / "outcomes.sqlite"))
    ref = TaskRef(op="relu", shape="64x256")

    def run(name: str):
        cfg = TuneConfig(soc="Ascend910B2", budget=3, run_dir=tmp_path / name,
                         executor=ExecutorConfig(workers=1))
        summary = tune(ref, cfg)
        rows = [json.loads(line) for line in (tmp_path / name / "trials.jsonl").read_text().splitlines()]
        return summary, [r for r in rows if r["evaluated"]]

    first, rows1 = run("first")
    assert first.best.correct and rows1
    assert not any(r["metrics"].get(CACHED_METRIC) for r in rows1)
    again, rows2 = run("again")
    assert [r["params"] for r in rows2] == [r["params"] for r in rows1]
    assert all(r["metrics"].get(CACHED_METRIC) for r in rows2)
    assert all(r["metrics"].get("model_version") for r in rows2 if r["status"] == "ok")
    assert again.best.time_us == first.best.time_us and again.best.correct


def test_no_cache_flag_and_quiet_reach_the_config():
    from ascendcraft.cli import build_parser

    args = build_parser().parse_args(["tune", "--op", "relu", "--no-cache", "--quiet"])
    assert args.no_cache and args.quiet
    args = build_parser().parse_args(["tune", "--op", "relu"])
    assert not args.no_cache and not args.quiet
