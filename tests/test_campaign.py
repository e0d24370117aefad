"""Campaigns: the sharing policy, a campaign on a real PostgreSQL server, and
``ascendcraft campaign`` stopped by a signal mid-run and resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from ascendcraft.cluster import ExecutorConfig
from study_keys import evaluated_keys

from ascendcraft.app.errors import UserError
from ascendcraft.campaign import CampaignConfig, plan, run_campaign, state
from ascendcraft.campaign.run import plan_units
from ascendcraft.campaign.state import CampaignState

try:  # the module-scoped fixture that starts a real PostgreSQL server
    from test_search_postgres import pg_url  # noqa: F401
except ImportError:  # tests/ imported as a package
    from tests.test_search_postgres import pg_url  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]


# ---- the policy --------------------------------------------------------------------------
def test_round_one_is_a_fair_share_of_its_part_of_the_night():
    night = 1000.0
    g = plan.first_round_grant(night, 4, 10, night)
    assert g == plan.Grant(5, plan.FIRST_ROUND * night / 4)
    # a unit that used less leaves its time to those after it
    g2 = plan.first_round_grant(night - 50, 3, 10, night)
    assert g2.seconds == pytest.approx((plan.FIRST_ROUND * night - 50) / 3)
    # out of time: still enough to start the defaults, so every op is covered
    assert plan.first_round_grant(0.0, 5, 1, night) == plan.Grant(1, plan.MIN_SHARE_S)


def test_still_improving_reads_the_last_third_of_the_trials():
    assert plan.still_improving([])  # nothing known yet
    assert not plan.still_improving([None, None, None])  # nothing correct: no more time
    assert plan.still_improving([None, 9, 9, 9, 9, 8])  # improved at the end
    assert not plan.still_improving([5, 4, 4, 4, 4, 4])  # settled early
    assert plan.still_improving([5, 4, 4, 4, 3, 3])  # within the last third (index 4 of 6)


def test_round_two_goes_to_the_improving_else_to_all():
    assert plan.second_round(["a", "b", "c"], ["b"], 90) == {"b": 90}
    assert plan.second_round(["a", "b"], [], 90) == {"a": 45, "b": 45}
    assert plan.second_round(["a"], ["a"], 0) == {}
    assert plan.second_round([], ["a"], 90) == {}


def test_best_curve_follows_completion_order_and_ignores_failures():
    rows = [
        {"evaluated": True, "status": "ok", "time_us": 5.0, "datetime_complete": "2026-01-01T00:00:02"},
        {"evaluated": True, "status": "wrong", "time_us": 1.0, "datetime_complete": "2026-01-01T00:00:01"},
        {"evaluated": False, "status": "infeasible", "datetime_complete": "2026-01-01T00:00:00"},
        {"evaluated": True, "status": "ok", "time_us": 7.0, "datetime_complete": "2026-01-01T00:00:03"},
        {"evaluated": True, "status": "ok", "time_us": 4.0, "datetime_complete": "2026-01-01T00:00:04"},
    ]
    assert plan.best_curve(rows) == [None, 5.0, 5.0, 4.0]


def test_resume_refuses_what_it_cannot_continue(tmp_path):
    cfg = CampaignConfig(out=tmp_path, hours=0.01, ops=("relu",), resume=True)
    with pytest.raises(UserError, match="nothing to resume"):
        run_campaign(cfg)
    (tmp_path / "campaign.json").write_text("{not json")
    with pytest.raises(UserError, match="cannot be read as a campaign record"):
        run_campaign(cfg)
    fresh = CampaignConfig(out=tmp_path, hours=0.01, ops=("relu",))
    with pytest.raises(UserError, match="cannot be read as a campaign record"):
        run_campaign(fresh)  # nor is a damaged record overwritten
    state.save(tmp_path, CampaignState(0.01, 10, plan_units(fresh)))
    with pytest.raises(UserError, match="already holds a campaign"):
        run_campaign(fresh)
    with pytest.raises(UserError, match="other ops or SoCs"):
        run_campaign(CampaignConfig(out=tmp_path, hours=0.01, ops=("add",), resume=True))


# ---- a campaign on PostgreSQL --------------------------------------------------------------
def test_campaign_on_postgres_and_its_resume(pg_url, tmp_path):
    from ascendcraft.search.storage import sqlalchemy_url

    out = tmp_path / "night"
    cfg = CampaignConfig(out=out, hours=0.004, ops=("relu", "add"), budget_per_op=4,
                         storage=pg_url, executor=ExecutorConfig(kind="local"))
    lines: list[str] = []
    result = run_campaign(cfg, say=lines.append)
    st = result.state
    assert st.finished and not st.stopped
    assert set(st.units) == {"relu@Ascend910B2", "add@Ascend910B2"}
    for u in st.units.values():
        assert u.state == "done" and u.trials >= 1 and u.summary["best"]["correct"], u
        assert not (out / "runs" / u.key / "study.db").exists()  # the studies are in PostgreSQL
    names = {s.study_name: s.n_trials for s in
             optuna.get_all_study_summaries(storage=sqlalchemy_url(pg_url))}
    for key in st.units:
        mine = [n for n in names if n.startswith(f"night-{key}::")]
        assert mine and sum(names[n] for n in mine) >= st.units[key].trials
    report = (out / "report.md").read_text()
    assert "relu@Ascend910B2" in report and "add@Ascend910B2" in report
    assert "modeled, performance model" in report
    for png in ("time_per_op.png", "speedup.png"):
        assert (out / "plots" / png).read_bytes()[:4] == b"\x89PNG"

    # resumed with a longer night: the same studies continue, no unit starts over
    before = {k: u.trials for k, u in st.units.items()}
    again = run_campaign(CampaignConfig(out=out, hours=0.01, budget_per_op=4, storage=pg_url,
                                        resume=True, executor=ExecutorConfig(kind="local")))
    assert len(again.state.starts) == 2
    for k, u in again.state.units.items():
        assert u.trials >= before[k] and u.trials <= 4


# ---- the command, stopped and resumed ------------------------------------------------------
def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "tests") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_campaign_command_stopped_mid_run_and_resumed(tmp_path):
    out = tmp_path / "camp"
    ops = ["relu", "add", "sum_dim"]
    cmd = [sys.executable, "-m", "ascendcraft.cli", "campaign", "--ops", ",".join(ops),
           "--hours", "0.02", "--budget-per-op", "6", "--workers", "1", "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env())
    seen = []
    deadline = time.monotonic() + 240
    assert proc.stdout is not None
    # stop it as soon as the first unit has started: with a warm build cache the rest of
    # the night takes seconds, so a later signal could land after the campaign has ended
    for line in proc.stdout:
        seen.append(line)
        if "round 1: relu@" in line or time.monotonic() > deadline:
            proc.send_signal(signal.SIGINT)
            break
    rest, err = proc.communicate(timeout=240)
    assert proc.returncode == 130, (seen, rest, err)
    assert "continue with --resume" in err
    st = json.loads((out / "campaign.json").read_text())
    assert st["stopped"] == "interrupted by SIGINT" and not st["finished"]
    assert (out / "report.md").exists()  # a partial report already

    done = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, env=_env(),
                          timeout=400)
    assert done.returncode == 0, done.stderr
    st = json.loads((out / "campaign.json").read_text())
    assert st["finished"] and not st["stopped"] and len(st["starts"]) == 2
    units = {u["key"]: u for u in st["units"]}
    assert set(units) == {f"{op}@Ascend910B2" for op in ops}
    report = (out / "report.md").read_text()
    for op in ops:
        u = units[f"{op}@Ascend910B2"]
        assert u["state"] == "done" and u["trials"] >= 1, u
        assert f"| {op}@Ascend910B2 | done |" in report
    # the run stopped mid-way lost nothing: every trial of it ended, none twice
    for op in ops:
        db = out / "runs" / f"{op}@Ascend910B2" / "study.db"
        keys = evaluated_keys(db)
        assert len(keys) == len(set(keys)) == units[f"{op}@Ascend910B2"]["trials"]
