"""The issue-12 corpus (tests/taskfiles/corpus/): benchmark-style task files written here.

Varied on purpose: module parameters with drawn values (LayerNorm, nn.Linear, BatchNorm eval/train,
nn.Parameter, buffers, a one-element gain), Python-number inputs, broadcasts
along each axis, middle-dim reductions, odd and prime sizes, 1-8 GiB shapes, fp16/bf16, names
that collide with registry ops but compute something else, unusual constructor signatures,
and every matmul form (mm, bmm, addmm, matmul, nn.Linear, transposed, batched against a shared
matrix, matrix-vector, 1000 x 999 x 1001), int64 index results (argmax/argmin, max/min(dim),
cummax/cummin indices, ties drawn on purpose), bool masks, one-element tensor inputs, PReLU and
fp16/bf16 chains that must round as eager does, gathers (index_select on
several dims, embedding with padding_idx, x[idx], gather / take_along_dim on the last dim) and
scatter-accumulates (index_add, the expanded-index scatter_add, into zeros and into a base). The slow test runs ``check`` on each; the fast ones
pin the loader's reading of module state and the cube kernels the matmul files reach.
"""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch
from ascendcraft.search.builtin import propose

from ascendcraft.app.checking import CheckConfig, check
from ascendcraft.tasks import get_task
from ascendcraft.tasks.taskfile import load_task_file

CORPUS = sorted((Path(__file__).parent / "taskfiles" / "corpus").glob("*.py"))
WORKERS = max(1, min(4, os.cpu_count() or 1))


def test_the_corpus_is_large_and_loads_without_allocating() -> None:
    assert len(CORPUS) >= 60
    big = [load_task_file(p) for p in CORPUS if p.stem.startswith("big_")]
    assert big and all(t.total_bytes >= 1 << 30 for t in big)  # metadata only


def test_module_state_is_passed_with_its_values() -> None:
    task = load_task_file(next(p for p in CORPUS if p.stem == "batchnorm2d_eval_stats"))
    names = [s.name for s in task.inputs if s.kind == "state"]
    assert names == ["bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"]
    shapes = [tuple(s.shape) for s in task.inputs]
    shapes[0] = (2, 24, 5, 7)
    inputs = task.make_inputs(shapes)
    module = task.reference.build("cpu").eval()
    assert torch.equal(inputs[3], module.bn.running_mean) and not torch.all(inputs[3] == 0)
    expect = module(inputs[0])
    assert torch.allclose(task.run_reference(inputs)[0], expect)
    inputs[1] = inputs[1] * 2  # the reference reads the passed weight, not the module's own
    assert not torch.allclose(task.run_reference(inputs)[0], expect)


def test_training_batchnorm_reads_only_its_affine_parameters() -> None:
    task = load_task_file(next(p for p in CORPUS if p.stem == "batchnorm1d_train_affine"))
    assert [s.name for s in task.inputs[1:]] == ["bn.weight", "bn.bias"]


def _body(source: str) -> str:
    """A kernel's text after its docstring, parameters renamed by position, parentheses dropped,
    tunable defaults masked (they are computed from the task's shapes, which differ here)."""
    params = re.search(r"def \w+\((.*?)\):", source).group(1)
    body = source.split('"""')[-1]
    for i, p in enumerate(p.split(":")[0].strip() for p in params.split(",")):
        body = re.sub(rf"\b{re.escape(p)}\b", f"P{i}", body)
    body = re.sub(r"default=\d+", "default=D", body)
    return re.sub(r"[()]", "", body)


@pytest.mark.parametrize(("task_file", "op"), [
    ("mm_fp32", "matmul_fp32"), ("matmul_fp16_square", "matmul"), ("linear_gelu_fp32", "linear_bias_gelu"),
    ("matmul_transpose_a_fp32", "matmul_transpose_a")])
def test_matmul_files_reach_the_registry_kernels(task_file: str, op: str) -> None:
    mine = load_task_file(next(p for p in CORPUS if p.stem == task_file))
    theirs = get_task(op)
    if theirs.dtype != mine.dtype:
        theirs = theirs.with_shape(theirs.inputs[0].shape, mine.dtype)
    a, b = propose(mine), propose(theirs)
    assert [c.name.split("/")[1] for c in a] == [c.name.split("/")[1] for c in b]
    assert all(c.origin == "cube" for c in a)
    assert [_body(c.source) for c in a] == [_body(c.source) for c in b]


def _check(path: Path) -> dict:
    config = CheckConfig(soc="Ascend910B2", full=False, shape_given=False, timing=False)
    return check(load_task_file(path), config).to_dict()


@pytest.fixture(scope="module")
def reports() -> dict[Path, dict]:
    with ThreadPoolExecutor(WORKERS) as pool:
        return dict(zip(CORPUS, pool.map(_check, CORPUS), strict=True))


@pytest.mark.slow
@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_corpus_file_passes_check(path: Path, reports: dict) -> None:
    report = reports[path]
    why = "; ".join(f"{c['candidate']}: {c['status']} {str(c.get('message', ''))[:200]}"
                    for c in report["candidates"])
    assert report["correct"], why
    bad = [c for c in report["candidates"] if c["status"] not in ("ok", "infeasible")]
    assert not bad, why


def test_dict_init_inputs_are_keyword_arguments() -> None:
    """get_init_inputs() returning a dict builds Model(**kwargs) (a keyword-only constructor): the
    init args keep the dict's names and values, and the reference is built from them."""
    task = load_task_file(Path(__file__).parent / "taskfiles" / "corpus" / "kwonly_ctor_dict_init_rmsnorm.py")
    assert task.init_args == {"features": 768, "eps": 1e-5}
    model = task.reference.build("meta")
    assert model.eps == 1e-5 and tuple(model.w.shape) == (768,)
