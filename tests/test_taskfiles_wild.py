"""Task files nobody here designed the frontend for (tests/taskfiles/names, wild, pending).

- ``names/``: inputs called ``température``, ``α``, an 79-character name, ``__x``, ``float``,
  ``new``, ``int``, ``FOO_BAR``, ``NULL``, ``workspace``, ``c`` / ``acc`` (the cube template's
  own names), a file name starting with a digit: every proposer's candidates must be DSL the
  checker accepts, and each file must pass ``check --task``;
- ``wild/``: benchmark-style files written against the frontend's limits (broadcasts along
  each axis, one-element tensors, middle-dim reductions, prime sizes, fp16/bf16, registry
  names computing something else, odd constructor signatures): each must pass ``check``;
- ``pending/``: what the current DSL / frontend cannot do yet, each with its reason in a
  comment on the first line (work items for the next wave).

The end-to-end checks run what ``ascendcraft check --task`` runs (builtin proposer chain,
emulator at check's reduced shapes), without the timing model.
"""

from __future__ import annotations

import os
import random
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from ascendcraft.dsl.parser import DslError
from ascendcraft.search.builtin import propose
from ascendcraft.search.graph.names import accepted, doc_text, dsl_name, stem

from ascendcraft.app.checking import CheckConfig, check
from ascendcraft.evaluate import prepare
from ascendcraft.tasks.taskfile import load_task_file

HERE = Path(__file__).parent / "taskfiles"
NAMES = sorted((HERE / "names").glob("*.py"))
WILD = sorted((HERE / "wild").glob("*.py"))
PENDING = sorted((HERE / "pending").glob("*.py"))
WORKERS = max(1, min(4, os.cpu_count() or 1))


def _ids(paths: list[Path]) -> list[str]:
    return [f"{p.parent.name}/{p.stem}" for p in paths]


# ------------------------------------------------------------------ names
HOSTILE = ["température", "α", "σ_β", "x" * 80, "_Model__x", "__x", "float", "new", "int", "FOO_BAR",
           "NULL", "X", "workspace", "torch", "tuple", "19_ReLU", "", "__", "x_", "TILE", "c", "温度",
           "a-b c", "class", "def", "Scalar", "In"]


@pytest.mark.parametrize("public", [True, False])
def test_every_name_becomes_one_the_dsl_accepts(public: bool) -> None:
    taken: set[str] = set()
    rng = random.Random(0)
    alphabet = "aZ_9é-é αß温 Ω__"
    names = HOSTILE + ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 90)))
                       for _ in range(300)]
    out = [dsl_name(n, taken, {"c", "TILE"}, public=public) for n in names + names]
    assert all(accepted(o, public) for o in out)
    assert len(set(out)) == len(out)  # unique, also when the same name comes twice
    assert "c" not in out and "TILE" not in out


def test_names_stay_recognisable() -> None:
    assert [stem(n) for n in ("température", "α", "_Model__x", "FOO_BAR", "x_in")] == \
        ["temperature", "alpha", "Model_x", "foo_bar", "x_in"]
    assert dsl_name("float", set()) == "float_1" and dsl_name("NULL", set()) == "NULL1"
    assert dsl_name("19_ReLU", set(), public=False, prefix="k") == "k_19_ReLU"
    assert doc_text('a """ doc \\ with é') == "a doc with"


@pytest.mark.parametrize("path", NAMES, ids=_ids(NAMES))
def test_hostile_names_give_dsl_the_checker_accepts(path: Path) -> None:
    task = load_task_file(path)
    cands = propose(task)
    assert cands
    for cand in cands:
        try:
            prepare(cand.name, cand.source)
        except DslError as e:  # pragma: no cover - the failure message is the point
            pytest.fail(f"{cand.name}: {e}\n{cand.source}")


# ------------------------------------------------------------------ end to end
def _check(path: Path) -> dict:
    config = CheckConfig(soc="Ascend910B2", full=False, shape_given=False, timing=False)
    return check(load_task_file(path), config).to_dict()


def _why(report: dict) -> str:
    return "; ".join(f"{c['candidate']}: {c['status']} {str(c.get('message', ''))[:200]}"
                     for c in report["candidates"])


@pytest.fixture(scope="module")
def reports() -> dict[Path, dict]:
    """``check`` of every names/ and wild/ file, in parallel (builds dominate)."""
    with ThreadPoolExecutor(WORKERS) as pool:
        files = NAMES + WILD
        return dict(zip(files, pool.map(_check, files), strict=True))


@pytest.mark.slow
@pytest.mark.parametrize("path", NAMES + WILD, ids=_ids(NAMES + WILD))
def test_task_file_passes_check(path: Path, reports: dict) -> None:
    report = reports[path]
    assert report["correct"], _why(report)
    # a candidate may not fit UB at the task's shapes, but none may compute a wrong result
    bad = [c for c in report["candidates"] if c["status"] not in ("ok", "infeasible")]
    assert not bad, _why({"candidates": bad})


# ------------------------------------------------------------------ pending
def test_pending_files_say_why_on_their_first_line() -> None:
    assert PENDING, "the pending set lists what the next wave must make expressible"
    for path in PENDING:
        first = path.read_text().splitlines()[0]
        assert first.startswith("# pending: ") and len(first) > 30, path.name
