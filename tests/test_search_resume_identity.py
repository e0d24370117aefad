"""Resume never mixes or drops data: a changed setup, an empty or damaged store and a resume
with nothing are refused with a message saying what is wrong; SIGINT keeps a partial summary
and a resume completes the budget with no trial lost or run twice."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from ascendcraft.cluster import LocalExecutor
from ascendcraft.search.driver import run_search
from ascendcraft.search.errors import SearchSetupError
from ascendcraft.search.identity import RUN_FILE
from optuna.trial import TrialState
from test_search_toy import ToyObjective, _key, toy_candidates

TESTS = str(Path(__file__).resolve().parent)
IDENTITY = {"task": "op relu", "task_sha256": None, "shapes": [[4096, 4096]], "dtype": "fp32",
            "soc": "Ascend910B2", "ascendcraft_version": "0.1.0", "model_version": "1"}


def _run(tmp_path: Path, budget: int = 6, resume: bool = False, identity=IDENTITY, cands=None,
         objective=None):
    return run_search(objective or ToyObjective(), cands or toy_candidates(), budget=budget,
                      run_dir=tmp_path / "run", study_name="r", resume=resume, identity=identity,
                      executor=LocalExecutor(), plots=False)


def _n_trials(db: Path) -> int:
    storage = f"sqlite:///{db}"
    return sum(len(optuna.load_study(study_name=n, storage=storage).trials)
               for n in optuna.get_all_study_names(storage))


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"shapes": [[100, 100]]}, "shapes [4096x4096] -> [100x100]"),
        ({"task": "op gelu"}, "task op relu -> op gelu"),
        ({"soc": "Ascend910B3"}, "soc Ascend910B2 -> Ascend910B3"),
        ({"dtype": "fp16"}, "dtype fp32 -> fp16"),
        ({"model_version": "2"}, "model_version 1 -> 2"),
    ],
)
def test_resume_with_another_setup_is_refused(tmp_path, change, expected):
    _run(tmp_path)
    db = tmp_path / "run" / "study.db"
    before = _n_trials(db)
    with pytest.raises(SearchSetupError) as err:
        _run(tmp_path, budget=10, resume=True, identity={**IDENTITY, **change})
    assert expected in str(err.value) and "cannot resume" in str(err.value)
    assert _n_trials(db) == before  # nothing was added, re-queued or closed
    # the matching setup still resumes
    assert _run(tmp_path, budget=10, resume=True).evaluated == 10


def test_resume_with_another_candidate_set_is_refused(tmp_path):
    _run(tmp_path)
    fast, slow = toy_candidates()
    with pytest.raises(SearchSetupError, match="candidates removed: toy/slow"):
        _run(tmp_path, resume=True, cands=[fast])
    edge = toy_candidates(edge=True)
    with pytest.raises(SearchSetupError, match="candidates added: toy/edge"):
        _run(tmp_path, resume=True, cands=edge)
    changed = dataclasses.replace(fast, source=fast.source + "# another version\n")
    with pytest.raises(SearchSetupError, match="candidate sources changed: toy/fast"):
        _run(tmp_path, resume=True, cands=[changed, slow])


def test_resume_without_identity_checks_candidates_and_the_run_file(tmp_path):
    """The storage record is compared, and run.json in the run directory too."""
    _run(tmp_path)
    record = json.loads((tmp_path / "run" / RUN_FILE).read_text())
    assert record["identity"]["shapes"] == [[4096, 4096]]
    assert set(record["identity"]["candidates"]) == {"toy/fast", "toy/slow"}
    assert record["study"] == "r"
    with pytest.raises(SearchSetupError, match="shapes"):
        _run(tmp_path, resume=True, identity={**IDENTITY, "shapes": [[8, 8]]})


def test_resume_with_nothing_to_resume_says_so(tmp_path):
    with pytest.raises(SearchSetupError, match="nothing to resume"):
        _run(tmp_path, resume=True)
    assert not (tmp_path / "run" / RUN_FILE).exists()  # a refused resume writes no record


def test_new_run_over_an_old_one_is_refused(tmp_path):
    _run(tmp_path)
    with pytest.raises(SearchSetupError, match="already has .* trials.*resume"):
        _run(tmp_path)


def test_truncated_store_is_reported_not_replaced(tmp_path):
    _run(tmp_path)
    db = tmp_path / "run" / "study.db"
    for side in ("-wal", "-shm"):  # a checkpointed, closed database is one file
        Path(f"{db}{side}").unlink(missing_ok=True)
    db.write_bytes(b"")
    for resume in (True, False):
        with pytest.raises(SearchSetupError, match=r"empty \(0 bytes\).*not replaced"):
            _run(tmp_path, resume=resume)
    assert db.stat().st_size == 0


def test_half_truncated_store_is_reported(tmp_path):
    _run(tmp_path, budget=30)
    db = tmp_path / "run" / "study.db"
    for side in ("-wal", "-shm"):
        Path(f"{db}{side}").unlink(missing_ok=True)
    data = db.read_bytes()
    assert len(data) > 8192
    db.write_bytes(data[: len(data) // 2])
    with pytest.raises(SearchSetupError, match="cannot be read as a study store.*damaged.*not replaced"):
        _run(tmp_path, budget=40, resume=True)
    assert db.stat().st_size == len(data) // 2


def test_corrupt_store_is_reported_not_replaced(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    junk = os.urandom(4096)
    (run / "study.db").write_bytes(junk)
    with pytest.raises(SearchSetupError, match="damaged or is not an SQLite database"):
        _run(tmp_path, resume=True)
    assert (run / "study.db").read_bytes() == junk


def test_damaged_run_file_is_reported(tmp_path):
    _run(tmp_path)
    (tmp_path / "run" / RUN_FILE).write_text("{not json")
    with pytest.raises(SearchSetupError, match="run.json is damaged"):
        _run(tmp_path, budget=8, resume=True)


SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from test_search_toy import ToyObjective, toy_candidates
from ascendcraft.cluster import LocalExecutor
from ascendcraft.search.driver import run_search
from ascendcraft.search.errors import SearchInterrupted
try:
    run_search(ToyObjective(delay_s={delay}, marker={marker!r}), toy_candidates(), budget={budget},
               run_dir={run_dir!r}, study_name="r", identity={identity!r}, executor=LocalExecutor(), plots=False)
except SearchInterrupted as e:
    print("INTERRUPTED", e.signal_name, e.result.evaluated, e.result.partial)
    sys.exit(130)
print("FINISHED")
"""


def _evaluated(storage: str) -> list[tuple]:
    out = []
    for c in toy_candidates():
        study = optuna.load_study(study_name=f"r::{c.name}", storage=storage)
        out += [_key(c.name, t.user_attrs["result"]["params"]) for t in study.trials
                if t.state.is_finished() and (t.user_attrs.get("result") or {}).get("evaluated")]
    return out


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_keeps_a_partial_summary_and_resume_completes_the_budget(tmp_path, signum):
    budget = 14
    run_dir = tmp_path / "run"
    marker = tmp_path / "started.txt"
    code = SCRIPT.format(tests=TESTS, delay=0.5, budget=budget, run_dir=str(run_dir),
                         marker=str(marker), identity=IDENTITY)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            started = len(marker.read_text().splitlines()) if marker.exists() else 0
            if started >= 5:  # the 5th evaluation has begun: it is in flight
                break
            time.sleep(0.01)
        assert proc.poll() is None, "the run finished before the signal"
        os.kill(proc.pid, signum)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    name = signal.Signals(signum).name
    assert proc.returncode == 130, err
    assert f"INTERRUPTED {name}" in out and "Traceback" not in err
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["partial"] == f"interrupted by {name}"
    assert 4 <= summary["evaluated"] < budget
    text = (run_dir / "summary.txt").read_text()
    assert text.startswith(f"PARTIAL RESULT: interrupted by {name}")
    storage = f"sqlite:///{run_dir / 'study.db'}"
    trials = [(c.name, t) for c in toy_candidates()
              for t in optuna.load_study(study_name=f"r::{c.name}", storage=storage).trials]
    assert all(t.state != TrialState.RUNNING for _, t in trials)  # bookkeeping finished
    interrupted = [(n, t) for n, t in trials if t.user_attrs.get("status") == "interrupted"]
    assert len(interrupted) == 1 and name in interrupted[0][1].user_attrs["message"]
    rows = [json.loads(line) for line in (run_dir / "trials.jsonl").read_text().splitlines()]
    assert sum(r["status"] == "interrupted" for r in rows) == 1
    done_before = _evaluated(storage)
    assert len(done_before) == summary["evaluated"]

    obj = ToyObjective()
    r = _run(tmp_path, budget=budget, resume=True, objective=obj)
    evaluated = _evaluated(storage)
    assert r.evaluated == budget == len(evaluated) and r.partial is None
    assert len(set(evaluated)) == budget  # nothing evaluated twice across the two runs
    assert not set(obj.calls) & set(done_before)  # finished trials were kept
    iname, itrial = interrupted[0]
    # the interrupted trial was re-run once, with its parameters
    rerun = [t for n, t in ((c.name, t) for c in toy_candidates() for t in optuna.load_study(
        study_name=f"r::{c.name}", storage=storage).trials) if t.user_attrs.get("requeued_from") == itrial.number
        and n == iname]
    assert len(rerun) == 1 and rerun[0].params == itrial.params
    assert _key(iname, rerun[0].user_attrs["result"]["params"]) in obj.calls
    assert not json.loads((run_dir / "summary.json").read_text())["partial"]
    # a second resume has nothing left to re-queue
    again = ToyObjective()
    assert _run(tmp_path, budget=budget, resume=True, objective=again).evaluated == budget
    assert again.calls == []
