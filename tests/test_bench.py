"""``ascendcraft bench`` for real: a bench of a few registry ops killed (SIGKILL, its
process group) mid-run, its partial report regenerated from the run directory, then
resumed to the end with no trial lost or run twice; and a bench of a folder of task files
that includes a file the frontend refuses and a broken one (counted as not compiled, each
with its reason)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from study_keys import evaluated_keys

from ascendcraft.version import source_revision

ROOT = Path(__file__).resolve().parents[1]
TASKFILES = ROOT / "tests" / "taskfiles"


def _bench(*args: str) -> list[str]:
    return [sys.executable, "-m", "ascendcraft.cli", "bench", *args]


def test_bench_killed_mid_run_regenerated_and_resumed(tmp_path):
    out = tmp_path / "bench"
    ops = ["relu", "add"]
    cmd = _bench("--suite", "builtin", "--only", ",".join(ops), "--budget", "2",
                 "--workers", "1", "--out", str(out))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, cwd=tmp_path)
    seen = []
    deadline = time.monotonic() + 300
    assert proc.stdout is not None
    for line in proc.stdout:  # kill it, trials and all, once the second op has started
        seen.append(line)
        if "round 1: add@" in line or time.monotonic() > deadline:
            time.sleep(0.5)  # its record says it is running: the kill is mid-unit
            os.killpg(proc.pid, signal.SIGKILL)
            break
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, seen
    assert not (out / "BENCHMARK.md").exists()  # a killed run writes nothing at the end

    # the partial report, from the run directory alone
    partial = subprocess.run(_bench("--report", str(out)), capture_output=True, text=True,
                             timeout=300, cwd=tmp_path)
    assert partial.returncode == 0, partial.stderr
    data = json.loads((out / "bench.json").read_text())
    assert not data["finished"] and "--resume" in data["status"]
    by_name = {t["name"]: t for t in data["tasks"]}
    assert set(by_name) == set(ops)
    assert by_name["relu"]["state"] == "done" and by_name["relu"]["correct"]
    assert by_name["add"]["state"] == "stopped mid-run" and not by_name["add"]["correct"]

    done = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, timeout=600,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads((out / "bench.json").read_text())
    assert data["finished"] and data["starts"] == 2 and data["budget"] == 2
    assert data["timing"].startswith("modeled, model ")
    overall = data["groups"][-1]
    assert overall["group"] == "all" and overall["tasks"] == 2
    assert overall["compile_rate"] == 1.0 and overall["correct_rate"] == 1.0
    for t in data["tasks"]:
        assert t["state"] == "done" and t["trials"] == 2, t
        assert t["best_us"] > 0 and t["eager_us"] > 0 and 0 < t["roofline_frac"] <= 1
        assert t["speedup"] == t["eager_us"] / t["best_us"] and t["bound"]
        assert t["params"] and t["wall_s"] > 0
        # nothing lost or run twice by the kill: exactly the budget, each point once
        keys = evaluated_keys(out / "runs" / f"{t['name']}@Ascend910B2" / "study.db")
        assert len(keys) == len(set(keys)) == 2
    md = (out / "BENCHMARK.md").read_text()
    assert "status: complete; 2 start(s)" in md and "resumed with" in md
    assert "best µs (modeled, model " in md and "| **all** | 2 | 100% | 100% |" in md
    for plot in ("speedup_by_task.png", "roofline_share.png", "fast_p.png", "budget_quality.png"):
        assert (out / "plots" / plot).stat().st_size > 1000
        assert f"(plots/{plot})" in md
    assert len(data["budget_curve"]) == 2

    # the report can be written elsewhere without touching the run
    again = subprocess.run(_bench("--report", str(out), "--out", str(tmp_path / "copy")),
                           capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert json.loads((tmp_path / "copy" / "bench.json").read_text())["groups"] == data["groups"]


def test_bench_of_a_folder_with_a_refused_and_a_broken_file(tmp_path):
    suite = tmp_path / "tasks"
    suite.mkdir()
    for name in ("celu.py", "where_cubic.py"):
        shutil.copy(TASKFILES / name, suite / name)
    shutil.copy(TASKFILES / "refused" / "sort_rows.py", suite / "sort_rows.py")
    (suite / "broken.py").write_text("import torch\nclass Model(torch.nn.Module:\n    pass\n")
    out = tmp_path / "bench"
    run = subprocess.run(_bench("--suite", "tasks", "--budget", "2", "--workers", "1",
                                "--out", "bench", "--json"),
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    tasks = {t["name"]: t for t in data["tasks"]}
    assert set(tasks) == {"celu", "where_cubic", "sort_rows", "broken"}
    for name in ("celu", "where_cubic"):
        assert tasks[name]["compiled"] and tasks[name]["correct"], tasks[name]
    assert not tasks["broken"]["compiled"] and tasks["broken"]["state"] == "refused"
    assert "refused by the frontend" in tasks["broken"]["why"]
    assert "broken.py" in tasks["broken"]["why"]
    # sort_rows loads but no proposer expresses it: not compiled, and it says why
    assert not tasks["sort_rows"]["compiled"] and not tasks["sort_rows"]["correct"]
    assert tasks["sort_rows"]["why"]
    overall = data["groups"][-1]
    assert overall["tasks"] == 4 and overall["compile_rate"] == 0.5
    assert overall["correct_rate"] == 0.5
    md = (out / "BENCHMARK.md").read_text()
    assert "**broken**" in md and "**sort_rows**" in md
    # the report names the code that produced it (this checkout's commit)
    rev = source_revision()
    assert data["revision"] == rev
    if rev is not None:
        assert re.fullmatch(r"[0-9a-f]{12}(-dirty)?", rev) and f"at commit {rev}" in md
    # given relative paths, no absolute one of this machine reaches the report
    assert str(tmp_path) not in md and str(tmp_path) not in json.dumps(data)
    assert str(Path.home()) not in md
