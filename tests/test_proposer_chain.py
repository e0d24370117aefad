"""The Proposer seam: the protocol, the chain's order, origins, and its one-paragraph error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from ascendcraft.search.builtin import default_proposers, propose
from ascendcraft.search.cube_builtin import CubeProposer
from ascendcraft.search.graph import GraphProposer
from ascendcraft.search.proposer import (
    Candidate,
    Declined,
    Proposer,
    ProposerChain,
    ProposerError,
)
from ascendcraft.search.recipes import RecipeProposer

from ascendcraft.tasks.registry import get_task
from ascendcraft.tasks.taskfile import load_task_file

TASKFILES = Path(__file__).parent / "taskfiles"
SORT = TASKFILES / "refused" / "sort_rows.py"


def test_builtin_chain_is_recipes_then_cube_then_graph_then_cube_vector() -> None:
    ps = default_proposers()
    assert [p.name for p in ps] == ["recipe", "cube", "graph", "cube+vector"]
    assert all(isinstance(p, Proposer) for p in ps)


def test_candidates_record_the_proposer_that_made_them() -> None:
    assert {c.origin for c in propose(get_task("softmax"))} == {"recipe"}
    assert {c.origin for c in propose(get_task("matmul"))} == {"cube"}
    assert {c.origin for c in propose(get_task("mhc_post"))} == {"cube"}
    graph = propose(load_task_file(TASKFILES / "absmax_lastdim.py"))
    assert graph and {c.origin for c in graph} == {"graph"}


def test_each_proposer_declines_what_is_not_its_own() -> None:
    matmul, relu = get_task("matmul"), get_task("relu")
    with pytest.raises(Declined, match="no vector recipe computes this reference"):
        RecipeProposer().propose(matmul)
    with pytest.raises(Declined, match="the reference has no matrix product"):
        CubeProposer().propose(relu)
    with pytest.raises(Declined, match=r"aten\.mm\.default: matrix products run on the cube"):
        GraphProposer().propose(matmul)


class _Crashing:
    """A proposer with a bug (the chain must survive it)."""

    name = "crashing"

    def propose(self, task):
        return {}["lr"]


class _Empty:
    name = "empty"

    def propose(self, task):
        return []


def test_a_crashing_or_empty_proposer_does_not_stop_the_chain() -> None:
    task = get_task("relu")
    chain = ProposerChain([_Crashing(), _Empty(), *default_proposers()])
    assert chain.propose(task) == propose(task)
    with pytest.raises(ProposerError) as err:
        ProposerChain([_Crashing(), _Empty()]).propose(task)
    msg = str(err.value)
    assert "crashing: failed internally (KeyError: 'lr')" in msg
    assert "empty: proposed no candidates" in msg


def test_a_new_proposer_joins_as_one_more_entry() -> None:
    """How the LLM proposer will join: one object with a name and propose(), in the list."""

    class Fixed:
        name = "llm"

        def propose(self, task):
            return [Candidate(f"{task.name}/llm", "# a program the checker will judge\n")]

    task = load_task_file(SORT)
    [cand] = ProposerChain([*default_proposers(), Fixed()]).propose(task)
    assert cand.name == "sort_rows/llm" and cand.origin == "llm"


def test_nothing_expresses_a_sort_one_paragraph_naming_every_reason() -> None:
    task = load_task_file(SORT)
    with pytest.raises(ProposerError) as err:
        propose(task)
    msg = str(err.value)
    assert "\n" not in msg and "Traceback" not in msg
    assert msg.startswith("No proposer could build a kernel for task 'sort_rows' — ")
    assert "recipe: no vector recipe computes this reference (its ATen graph: sort.default)" in msg
    assert "cube: the reference has no matrix product" in msg
    assert "graph: cannot build a kernel: aten.sort.default" in msg
    assert msg.endswith(".")


def test_cli_check_ends_with_that_paragraph_and_exit_code_2() -> None:
    r = subprocess.run([sys.executable, "-m", "ascendcraft.cli", "check", "--task", str(SORT)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    [line] = r.stderr.strip().splitlines()
    assert "No proposer could build a kernel for task 'sort_rows'" in line
