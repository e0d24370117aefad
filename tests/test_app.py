"""The application layer without the CLI: typed configuration in, typed results out, nothing
printed; executors made from configuration; the time's kind taken from the evaluator."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from ascendcraft.cluster import ExecutorConfig, LocalExecutor, make_executor

from ascendcraft.app import (
    CheckConfig,
    LowerConfig,
    Report,
    TaskRef,
    UserError,
    check,
    lower,
    propose,
    searchable,
)
from ascendcraft.app.objective import trial_outcome
from ascendcraft.app.tuning import BestKernel, DefaultResult, Summary
from ascendcraft.evaluate import Outcome
from ascendcraft.status import Status
from ascendcraft.tasks.registry import get_task

SOC = "Ascend910B2"
TESTS = str(Path(__file__).resolve().parent)


# ---------------------------------------------------------------- executors
def test_executors_are_made_from_configuration():
    assert isinstance(make_executor(ExecutorConfig(kind="local", workers=8)), LocalExecutor)
    assert isinstance(make_executor(ExecutorConfig(workers=1)), LocalExecutor)
    ray_ex = make_executor(ExecutorConfig(workers=3, address="127.0.0.1:6379",
                                          resources={"NPU": 1}, max_retries=0))
    assert type(ray_ex).__name__ == "RayExecutor" and ray_ex.capacity == 3
    assert ray_ex.resources == {"NPU": 1} and ray_ex.address == "127.0.0.1:6379"
    assert ray_ex.max_retries == 0
    for bad, why in (({"kind": "slurm"}, "unknown executor 'slurm'"), ({"workers": 0}, "at least 1"),
                     ({"max_retries": -1}, "max_retries")):
        with pytest.raises(ValueError, match=why):
            ExecutorConfig(**bad)


def test_the_search_driver_never_imports_ray():
    """A whole search on the in-process executor, and the driver's and the cluster package's
    imports, leave Ray unimported (only the Ray executor's module may import it)."""
    code = (
        "import sys, tempfile\n"
        f"sys.path.insert(0, {TESTS!r})\n"
        "import ascendcraft.search.driver as d, ascendcraft.cluster as c\n"
        "from test_search_toy import ToyObjective, toy_candidates\n"
        "r = d.run_search(ToyObjective(), toy_candidates(), budget=3, run_dir=tempfile.mkdtemp(),\n"
        "                 executor=c.make_executor(c.ExecutorConfig(kind='local')), plots=False)\n"
        "assert r.evaluated == 3\n"
        "print(sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


# ---------------------------------------------------------------- the objective's outcomes
def _evaluated(status: str, timing: dict, message: str = "") -> Outcome:
    return Outcome(Status.parse(status), message, status == "ok", 0.0, 0.0, timing=timing)


def test_the_kind_of_time_comes_from_the_evaluator():
    measured = trial_outcome(_evaluated("ok", {"timing": "measured", "measured_us": 7.5,
                                                "device": "910B2"}))
    assert (measured.status, measured.time_us, measured.timing) == (Status.OK, 7.5, "measured")
    assert measured.metrics["device"] == "910B2" and "timing" not in measured.metrics
    modeled = trial_outcome(_evaluated("ok", {"kind": "modeled", "modeled_us": 3.0}))
    assert (modeled.time_us, modeled.timing) == (3.0, "modeled")
    untimed = trial_outcome(_evaluated("ok", {"error": "RuntimeError: trace-only run failed"}))
    assert untimed.status is Status.CRASH and untimed.timing == ""
    assert "timing failed: RuntimeError: trace-only run failed" in untimed.message
    wrong = trial_outcome(_evaluated("wrong", {}, "output 0: max_abs_err=1"))
    assert (wrong.status, wrong.time_us, wrong.message) == (Status.WRONG, None, "output 0: max_abs_err=1")
    recheck = trial_outcome(_evaluated("ok", {}), keep_time=False)
    assert recheck.status is Status.OK and recheck.time_us is None


def test_summary_names_its_times_by_their_kind(tmp_path):
    best = BestKernel("relu/tiles", {"TILE": 512}, True, 4.0, 8.0, 2.0, 0.5)
    s = Summary("relu", 10, {"wrong": 1}, 2, best, "measured",
                {"relu/tiles": DefaultResult({"TILE": 1024}, "ok", 5.0)}, None, tmp_path)
    d = s.to_dict()
    assert d["timing"] == "measured" and d["best"]["measured_us"] == 4.0
    assert d["defaults"]["relu/tiles"] == {"params": {"TILE": 1024}, "status": "ok", "measured_us": 5.0}
    none = Summary("relu", 2, {"crash": 2}, 0, BestKernel(), None, {}, None, tmp_path).to_dict()
    assert none["timing"] is None and none["best"]["correct"] is False


# ---------------------------------------------------------------- tasks and candidates
def test_task_ref_travels_without_its_loaded_task():
    ref = TaskRef(op="relu", shape="64x64")
    task = ref.load()
    assert ref.load() is task and task.shapes[0] == (64, 64)
    copy = pickle.loads(pickle.dumps(ref))
    assert copy._loaded is None and copy == ref and copy.load().shapes == task.shapes


def test_candidates_get_their_tunables_from_the_program():
    task = get_task("softmax")
    proposed = propose(task)
    assert all(c.tunables == () for c in proposed)
    ready = searchable(proposed)
    assert [c.name for c in ready] == [c.name for c in proposed]
    rows = next(c for c in ready if c.name == "softmax/rows")
    names = [t.name for t in rows.tunables]
    assert "ROWS" in names and rows.default_params()["ROWS"] in dict(
        (t.name, t.values) for t in rows.tunables)["ROWS"]
    broken = searchable([proposed[0].with_tunables(()), type(proposed[0])("x/broken", "def (:", "file")])
    assert [c.name for c in broken] == [proposed[0].name]  # a program that does not parse is left out


# ---------------------------------------------------------------- verbs print nothing
def test_check_returns_a_typed_report_and_prints_nothing(capsys):
    task = get_task("relu").with_shape("64x64")
    report = check(task, CheckConfig(soc=SOC, shape_given=True, timing=False))
    assert isinstance(report, Report) and report.correct
    assert capsys.readouterr() == ("", "")
    d = report.to_dict()
    assert d["shapes"] == [[[64, 64]]] and d["best"] == report.best.candidate
    assert d["candidates"][0]["status"] == report.candidates[0].status.value == "ok"
    assert "modeled_us" not in d  # not timed: no time, and no kind made up for it
    refused = check(task, CheckConfig(soc=SOC, shape_given=True, timing=False,
                                      candidates=(propose(task)[0].with_tunables(()),
                                                  type(propose(task)[0])("relu/bad", "@kernel\n", "file"))))
    verdicts = {c.candidate: c for c in refused.candidates}
    assert verdicts["relu/bad"].status is Status.DSL_ERROR and verdicts["relu/bad"].message
    assert verdicts["relu/bad"].to_dict() == {"candidate": "relu/bad", "origin": "file",
                                              "status": "dsl_error",
                                              "correct": False, "message": verdicts["relu/bad"].message}


def test_lower_writes_every_form_and_refuses_bad_parameters(capsys, tmp_path):
    cand = propose(get_task("relu"))[0]
    done = lower(cand.name, cand.source, LowerConfig(out=tmp_path / "l", soc=SOC,
                                                     params={"TILE": 512}))
    assert capsys.readouterr() == ("", "")
    assert done.out == tmp_path / "l" and all(p.is_file() for p in done.paths)
    assert "| `TILE` | 512 |" in (tmp_path / "l" / "README.md").read_text()
    with pytest.raises(UserError, match="TILE=3 is outside the domain"):
        lower(cand.name, cand.source, LowerConfig(out=tmp_path / "m", soc=SOC, params={"TILE": 3}))
    assert not (tmp_path / "m").exists()


def test_a_failed_timing_keeps_the_evaluators_reason():
    """A correct kernel whose timing hit the trace cap is a ``trace_limit`` trial (when the
    evaluator names the timing's status), not an anonymous crash."""
    out = _evaluated("ok", {"error": "trace limit: the trace exceeded 50331648 records"})
    out.timing_status = Status.TRACE_LIMIT
    got = trial_outcome(out)
    assert got.status is Status.TRACE_LIMIT and "trace limit" in got.message


def test_lowered_sources_never_land_outside_the_output_directory(tmp_path):
    from ascendcraft.app.lowering import _write_tree

    with pytest.raises(UserError, match="outside --out"):
        _write_tree(tmp_path / "out", {"direct/k.cpp": "ok", "../../escaped.cpp": "no"})
    assert not (tmp_path / "out").exists() and not (tmp_path / "escaped.cpp").exists()
    assert _write_tree(tmp_path / "out", {"a/b.h": "x"}) == [tmp_path / "out" / "a" / "b.h"]
