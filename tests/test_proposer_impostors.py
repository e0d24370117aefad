"""Task files named like registry ops that compute something else, or name their
parameters their own way (tests/taskfiles/impostors/): each gets a correct kernel, from the
recipe that really is its computation (with the parameters read from its graph) or from the
graph frontend, and no proposer ever ends in a traceback on any task file."""

from __future__ import annotations

from pathlib import Path

import pytest
from ascendcraft.search.builtin import default_proposers, propose
from ascendcraft.search.proposer import Declined, ProposerError
from ascendcraft.search.recipe_match import first_match
from ascendcraft.search.recipes import RECIPES, RecipeProposer
from checking import check_task

from ascendcraft.tasks.task import TaskError
from ascendcraft.tasks.taskfile import load_task_file

TASKFILES = Path(__file__).parent / "taskfiles"
IMPOSTORS = TASKFILES / "impostors"

#: file -> (recipe op and the parameters read from the task) or (None, why no recipe fits)
EXPECTED: dict[str, tuple[str | None, dict | str]] = {
    "adam": ("adam", {"lr": 3e-3, "beta1": 0.8, "beta2": 0.95, "eps": 1e-7, "step": 7}),
    "sgd_momentum": ("sgd_momentum", {"lr": 0.05, "momentum": 0.8, "weight_decay": 3e-3}),
    "relu": ("leaky_relu", {"negative_slope": 0.3}),
    "clamp_bounds": ("hardtanh", {"min_val": -0.25, "max_val": 0.75}),
    "smooth_relu": ("softplus", {"beta": 2.0, "threshold": 10.0}),
    "elu": ("elu", {"alpha": 2.0 ** 0.5 / 3.0}),
    "triplet_margin_loss": ("triplet_margin_loss", {"margin": 0.35}),
    "sum_dim0": ("sum_dim", {"dim": 0}),
    "rms_norm": (None, "the nearest, rms_norm, has the same ATen graph but the task passes 1 to "
                       "aten.mean.dim where rms_norm passes -1"),
    "hinge_loss": (None, "the nearest, hinge_loss, has the same ATen graph but its kernel needs "
                         "input 1 as a tensor [8192, 4096] float32, the task's is a tensor "
                         "[1, 4096] float32"),
    "hinge_loss_per_sample": (None, "its kernel needs input 1 as a tensor [16384, 2048] float32, "
                                    "the task's is a tensor [16384, 1] float32"),
    "softmax": (None, "the nearest, log_softmax, has the same ATen graph but its kernel works "
                      "along the last dim, the task's log_softmax runs over dim 0 of 2"),
    "sum_dim": (None, "the nearest, sum_dim, has the same ATen graph but its kernel walks a "
                      "strided (not the last) dim, the task's sum_dim runs over the last dim"),
    "cumsum": (None, "its kernel scans dim 1 of a 2-D or 3-D tensor, the task's cumsum scans "
                     "dim 0 of 2"),
    "mul_scalar": (None, "no vector recipe computes this reference (its ATen graph: mul.Tensor)"),
    "relu_functional": (None, "no vector recipe computes this reference (its ATen graph: "
                              "leaky_relu.default)"),
}


def test_every_impostor_file_is_listed() -> None:
    assert sorted(p.stem for p in IMPOSTORS.glob("*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_recipe_only_for_the_computation_it_is(stem: str) -> None:
    task = load_task_file(IMPOSTORS / f"{stem}.py")
    op, detail = EXPECTED[stem]
    cands = propose(task)
    if op is None:
        with pytest.raises(Declined) as err:
            RecipeProposer().propose(task)
        assert detail in err.value.reason
        assert {c.origin for c in cands} == {"graph"}
        return
    m = first_match(task, list(RECIPES), "vector recipe")
    assert m.op == op
    assert {k: m.params[k] for k in detail} == pytest.approx(detail)
    assert {c.origin for c in cands} == {"recipe"}
    assert all(c.name.startswith(f"{stem}/") for c in cands)
    if op != stem:
        assert all(c.name.startswith(f"{stem}/{op}-") for c in cands)


@pytest.mark.slow
@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_impostor_gets_a_correct_kernel(stem: str) -> None:
    """As `ascendcraft check --task FILE`: built in the emulator, several seeds and shapes."""
    report = check_task(load_task_file(IMPOSTORS / f"{stem}.py"), soc="Ascend910B2", full=False,
                        timing=False, explicit_shape=False)
    bad = [(c["candidate"], c["status"], c.get("message", "")[:200]) for c in report["candidates"]
           if not c["correct"]]
    assert report["correct"], f"{stem}: no correct candidate: {bad}"


ALL_FILES = sorted(TASKFILES.rglob("*.py"))


@pytest.mark.parametrize("path", ALL_FILES, ids=[str(p.relative_to(TASKFILES)) for p in ALL_FILES])
def test_no_proposer_ends_in_a_traceback(path: Path) -> None:
    """Every proposer, on every task file here (ones it was not written for included), either
    proposes or declines with a reason; the chain either proposes or raises one paragraph.
    A file of ``refused/`` may already be refused by the loader: then with one paragraph."""
    try:
        task = load_task_file(path)
    except TaskError as e:
        assert path.parent.name == "refused", f"{path.name}: {e}"
        assert "\n" not in str(e) and "Traceback" not in str(e)
        return
    for p in default_proposers():
        try:
            cands = p.propose(task)
        except Declined as e:
            assert e.reason and "\n" not in e.reason and "Traceback" not in e.reason
            assert "failed internally" not in e.reason, (p.name, e.reason)
        else:
            assert cands and all(c.origin == p.name for c in cands)
    try:
        propose(task)
    except ProposerError as e:
        assert "\n" not in str(e)
