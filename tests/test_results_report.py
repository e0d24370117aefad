"""The committed suite reports under ``results/`` parse, are consistent with themselves
(every group's figures recomputed from its tasks) and cover the current suites: every
registry op and every task file of ``tests/taskfiles/``. Adding an op (or a task file)
without regenerating the report fails here, naming the command to run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ascendcraft.bench.metrics import TaskResult, by_category, finished
from ascendcraft.tasks.registry import list_tasks

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"

REGENERATE = {
    "builtin": "ascendcraft bench --suite builtin --budget 20 --workers 2 "
               "--out results/runs/bench-builtin  (add --resume to continue a stopped run), "
               "then: ascendcraft bench --report results/runs/bench-builtin --out results/builtin",
    "taskfiles": "ascendcraft bench --suite tests/taskfiles --budget 20 --workers 2 "
                 "--out results/runs/bench-taskfiles, then: ascendcraft bench --report "
                 "results/runs/bench-taskfiles --out results/taskfiles",
}


def _load(name: str) -> tuple[dict, str]:
    folder = RESULTS / name
    assert (folder / "bench.json").is_file() and (folder / "BENCHMARK.md").is_file(), (
        f"results/{name} has no report; run from the repository root: {REGENERATE[name]}")
    return json.loads((folder / "bench.json").read_text()), (folder / "BENCHMARK.md").read_text()


def _results(data: dict) -> list[TaskResult]:
    keep = set(TaskResult.__dataclass_fields__) - {"curve"}
    return [TaskResult(**{k: v for k, v in t.items() if k in keep}) for t in data["tasks"]]


@pytest.mark.parametrize("name", ["builtin", "taskfiles"])
def test_committed_report_parses_and_is_consistent(name):
    data, md = _load(name)
    for key in ("command", "ascendcraft", "model_version", "timing", "wall_s", "status"):
        assert data.get(key) not in (None, ""), (name, key)
    assert data["soc"] == "Ascend910B2" and data["budget"] == 20
    assert "modeled" in data["timing"] or "measured" in data["timing"]
    assert f"`{data['command']}`" in md and data["timing"] in md
    recomputed = [g.to_dict() for g in by_category(finished(_results(data)))]
    assert recomputed == data["groups"], f"results/{name}: groups do not follow from the tasks"
    for t in data["tasks"]:
        assert f"| {t['name']} | {t['category']} |" in md, (name, t["name"])
    for plot in data["plots"]:
        assert (RESULTS / name / "plots" / plot).is_file(), plot


def test_builtin_report_covers_every_registry_op():
    data, _ = _load("builtin")
    covered = {t["name"] for t in data["tasks"]}
    missing = sorted(t.name for t in list_tasks() if t.name not in covered)
    assert not missing, (f"results/builtin/ does not cover the registry op(s) "
                         f"{', '.join(missing)}: regenerate it; from the repository root run "
                         f"{REGENERATE['builtin']}")


def test_taskfiles_report_covers_every_task_file():
    data, _ = _load("taskfiles")
    covered = {t["name"] for t in data["tasks"]}
    missing = sorted(p.stem for p in (ROOT / "tests" / "taskfiles").glob("*.py")
                     if p.stem not in covered)
    assert not missing, (f"results/taskfiles/ does not cover {', '.join(missing)}: regenerate "
                         f"it; from the repository root run {REGENERATE['taskfiles']}")
