"""One status vocabulary end to end: whatever status an objective returns (``dsl_error``
included, which used to become "objective returned unknown status" and lose its message)
reaches the trial record, ``trials.jsonl``, the summaries, the T4 export and the CLI with
its message."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from ascendcraft.cluster import LocalExecutor
from ascendcraft.search.driver import run_search
from ascendcraft.search.space import Candidate, TrialOutcome, TunableSpec, checked_outcome

from ascendcraft import cli
from ascendcraft.app.objective import KernelObjective
from ascendcraft.status import FAILED, Status

#: every status an evaluation can end with (``interrupted`` is the driver's, ``infeasible``
#: comes from ``feasible``)
EVALUATED = [Status.OK] + sorted(FAILED - {Status.INTERRUPTED}, key=lambda s: s.value)
MODES = {s: i for i, s in enumerate(EVALUATED)}


def _message(status: Status) -> str:
    return f"the {status.value} reason, line 3:7" if status is not Status.OK else ""


@dataclass
class EveryStatus:
    """Mode ``i`` ends with ``EVALUATED[i]``; the last mode is infeasible."""

    def feasible(self, candidate, params):
        return "refused before any build" if params["mode"] == len(EVALUATED) else None

    def evaluate(self, candidate, params, timeout_s):
        status = EVALUATED[params["mode"]]
        time_us = 5.0 if status is Status.OK else None
        return TrialOutcome(status, time_us, "modeled" if time_us else "", _message(status))

    def revalidate(self, candidate, params):
        return TrialOutcome(Status.OK, None)


CAND = Candidate("every/status", "k", tunables=(
    TunableSpec("mode", tuple(range(len(EVALUATED) + 1)), MODES[Status.DSL_ERROR]),))


def test_every_status_reaches_the_record_the_summaries_and_t4(tmp_path):
    r = run_search(EveryStatus(), [CAND], budget=len(EVALUATED) + 5, sampler="grid",
                   run_dir=tmp_path, executor=LocalExecutor(), plots=False)
    assert r.evaluated == len(EVALUATED) and r.exhausted and r.infeasible >= 1
    failed = [s for s in EVALUATED if s is not Status.OK]
    assert r.failed == {s.value: 1 for s in failed}

    rows = [json.loads(line) for line in (tmp_path / "trials.jsonl").read_text().splitlines()]
    by_status = {row["status"]: row for row in rows if row["evaluated"]}
    assert set(by_status) == {s.value for s in EVALUATED}
    for s in failed:
        assert by_status[s.value]["message"] == _message(s), s
        assert by_status[s.value]["state"] == "FAIL"

    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["failed"] == {s.value: 1 for s in failed}
    default = summary["defaults"]["every/status"]
    assert default["status"] == "dsl_error" and default["message"] == _message(Status.DSL_ERROR)
    text = (tmp_path / "summary.txt").read_text()
    assert "failed: " + ", ".join(f"{s.value} 1" for s in failed) in text
    assert f"dsl_error ({_message(Status.DSL_ERROR)})" in text  # the default's line

    t4 = json.loads((tmp_path / "results_t4.json").read_text())["results"]
    messages = [m["value"] for e in t4 for m in e["measurements"] if m["name"] == "message"]
    assert set(messages) == {_message(s) for s in failed} | {"refused before any build"}
    assert {e["invalidity"] for e in t4} == {"correct", "constraints", "compile", "correctness",
                                             "timeout", "runtime"}


def test_unknown_status_is_a_crash_that_names_it():
    out = TrialOutcome(Status.OK, 1.0)
    out.status = "segfaulted"  # an objective that bypassed the constructor
    got = checked_outcome(out)
    assert got.status is Status.CRASH and "unknown status 'segfaulted'" in got.message
    with pytest.raises(ValueError, match="unknown status 'bogus'.*dsl_error"):
        TrialOutcome("bogus", None)
    assert checked_outcome(TrialOutcome("dsl_error", None, "", "line 1:1: x")).status is Status.DSL_ERROR


def test_a_dsl_error_reaches_the_cli_with_its_message(capsys, tmp_path, monkeypatch):
    """``ascendcraft tune`` on a task whose every trial is a DSL error: the table, the JSON and
    the trial log say ``dsl_error`` with the message; no winner, exit 1."""
    why = "line 4:9: unknown function 'frobnicate'"

    def evaluate(self, candidate, params, timeout_s):
        return TrialOutcome(Status.DSL_ERROR, None, "", why)

    monkeypatch.setattr(KernelObjective, "evaluate", evaluate)
    run_dir = tmp_path / "r"
    argv = ["tune", "--op", "relu", "--shape", "64x64", "--budget", "2", "--workers", "1",
            "--out", str(run_dir)]
    assert cli.main(argv) == 1
    out = capsys.readouterr().out
    assert "failed: dsl_error 2" in out and f"dsl_error ({why})" in out
    assert "no correct kernel found" in out
    rows = [json.loads(line) for line in (run_dir / "trials.jsonl").read_text().splitlines()]
    assert [(r["status"], r["message"]) for r in rows if r["evaluated"]] == [("dsl_error", why)] * 2

    assert cli.main([*argv[:-1], str(tmp_path / "j"), "--json"]) == 1
    summary = json.loads(capsys.readouterr().out)
    assert summary["failed"] == {"dsl_error": 2} and not summary["best"]["correct"]
    assert {d["status"] for d in summary["defaults"].values()} <= {"dsl_error", "infeasible",
                                                                  "not evaluated"}
