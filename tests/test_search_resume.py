"""Resume after SIGKILL: the driver runs in a subprocess, is killed mid-trial, and resumed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
from ascendcraft.cluster import LocalExecutor
from ascendcraft.search.driver import run_search
from optuna.trial import TrialState
from test_search_toy import ToyObjective, _key, toy_candidates

TESTS = str(Path(__file__).resolve().parent)

SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from test_search_toy import ToyObjective, toy_candidates
from ascendcraft.cluster import LocalExecutor
from ascendcraft.search.driver import run_search
run_search(ToyObjective(delay_s={delay}, marker={marker!r}), toy_candidates(), budget={budget}, run_dir={run_dir!r},
           study_name="r", storage={storage!r}, executor=LocalExecutor(), plots=False)
"""


def _all_trials(storage: str) -> list[tuple[str, optuna.trial.FrozenTrial]]:
    """Read every trial; retried because opening SQLite storage while the driver process
    writes its schema can race ("table trials already exists")."""
    import sqlalchemy.exc

    for attempt in range(20):
        try:
            return _read_trials(storage)
        except sqlalchemy.exc.OperationalError:
            if attempt == 19:
                raise
            time.sleep(0.1)
    return []


def _read_trials(storage: str) -> list[tuple[str, optuna.trial.FrozenTrial]]:
    out = []
    for c in toy_candidates():
        try:
            study = optuna.load_study(study_name=f"r::{c.name}", storage=storage)
        except KeyError:
            continue
        out += [(c.name, t) for t in study.get_trials(deepcopy=False)]
    return out


def _evaluated(trials) -> list[tuple]:
    return [
        _key(name, t.user_attrs["result"]["params"])
        for name, t in trials
        if t.state.is_finished() and (t.user_attrs.get("result") or {}).get("evaluated")
    ]


def test_resume_after_sigkill_finishes_exactly_the_budget(tmp_path):
    budget = 16
    run_dir = tmp_path / "run"
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    marker = tmp_path / "started.txt"
    code = SCRIPT.format(tests=TESTS, delay=1.0, budget=budget, run_dir=str(run_dir),
                         storage=storage, marker=str(marker))
    proc = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        # Kill right after an evaluation starts (the marker gets a line as it begins), so it
        # is inside its 1 s evaluation: watching the marker only keeps the reaction time far
        # below that even on a loaded machine (reading the storage here would not).
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            started = len(marker.read_text().splitlines()) if marker.exists() else 0
            if started >= 6:
                break
            time.sleep(0.01)
        assert proc.poll() is None, "driver finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    before = _all_trials(storage)
    done_before = _evaluated(before)
    running = [(n, t) for n, t in before if t.state == TrialState.RUNNING]
    assert 5 <= len(done_before) < budget
    assert running, "the kill should have left a trial RUNNING"
    running_keys = {_key(n, {k: d for k, d in zip(t.params, _decode(n, t.params), strict=True)})
                    for n, t in running}

    obj = ToyObjective()
    r = run_search(obj, toy_candidates(), budget=budget, run_dir=run_dir, study_name="r",
                   storage=storage, resume=True, executor=LocalExecutor(), plots=False)
    after = _all_trials(storage)
    evaluated = _evaluated(after)
    assert r.evaluated == budget == len(evaluated)
    assert len(set(evaluated)) == budget  # nothing evaluated twice across the two runs
    assert not set(obj.calls) & set(done_before)  # finished trials were kept, not re-run
    assert running_keys <= set(obj.calls)  # the interrupted ones were re-run with the same params
    assert all(t.state != TrialState.RUNNING and t.state != TrialState.WAITING for _, t in after)
    interrupted = [(n, t) for n, t in after if t.user_attrs.get("status") == "interrupted"]
    assert len(interrupted) == len(running) == r.interrupted
    for name, t in interrupted:
        assert t.state == TrialState.FAIL
        requeued = [u for n, u in after if n == name and u.user_attrs.get("requeued_from") == t.number]
        assert len(requeued) == 1 and requeued[0].params == t.params
        assert requeued[0].state in (TrialState.COMPLETE, TrialState.FAIL)


def _decode(name: str, idx_params: dict) -> list[int]:
    spec = {c.name: c for c in toy_candidates()}[name]
    return [t.ordered()[idx_params[t.name]] for t in spec.tunables]
