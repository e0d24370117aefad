"""Gathers and scatter-accumulates in the graph frontend (search/graph/rules_gather.py):
index_select / embedding / x[idx] become ``gather_rows`` (``select_cols`` on the last dim),
gather / take_along_dim on the last dim ``gather_cols``, index_add and the expanded-index scatter_add ``index_add_rows``; what has
no form yet ends in one sentence naming the op. Index inputs are drawn by the checker from the
seed, inside the dim they index at every checked shape (the corpus files run end to end in
tests/test_taskfiles_corpus.py; one runs here)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from ascendcraft.search.builtin import propose
from ascendcraft.search.graph import build_plan
from ascendcraft.search.graph.trace import Unsupported

from ascendcraft.app.checking import CheckConfig, check
from ascendcraft.tasks.shapes import reduced_shapes
from ascendcraft.tasks.taskfile import load_task_file

CORPUS = Path(__file__).parent / "taskfiles" / "corpus"


def _file(tmp_path: Path, forward: str, inputs: str, args: str = "x, idx") -> Path:
    p = tmp_path / "t.py"
    p.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
                 f"    def forward(self, {args}):\n        return {forward}\n\n"
                 f"def get_inputs():\n    return [{inputs}]\n\n"
                 "def get_init_inputs():\n    return []\n")
    return p


@pytest.mark.parametrize("name,op", [
    ("gather_embedding_padding", "gather_rows(emb_weight, t, tokens, 0)"),
    ("gather_index_select_dim1", "gather_rows(x, t, idx, 1)"),
    ("gather_tensor_index_3d", "gather_rows(planes, t, which, 0)"),
    ("gather_lastdim", "gather_cols(scores, t, cand, 0)"),
    ("gather_index_select_cols_2d", "select_cols(feats, t, cols)"),  # index_select on the last dim
    ("gather_take_along_dim_fp16", "gather_cols(x, t, idx, 1)"),  # take_along_dim wraps (remainder)
    ("scatter_index_add_dim1", "index_add_rows(load(base, t), updates, t, slots, 1)"),
    ("scatter_add_segment_sum", "edge_feat, t, edge_dst, 0)"),
])
def test_corpus_gathers_become_their_dsl_op(name: str, op: str) -> None:
    cands = propose(load_task_file(CORPUS / f"{name}.py"))
    assert [c.origin for c in cands] == ["graph"] * len(cands)
    assert op in cands[0].source, cands[0].source


@pytest.mark.parametrize("forward,inputs,phrase", [
    ("torch.gather(x, 1, idx)", "torch.randn(8, 32), torch.randint(0, 32, (5, 32))",
     "only indices with the tensor's leading dims"),
    ("torch.index_select(x, 0, idx.clamp(max=3))", "torch.randn(8, 32), torch.randint(0, 8, (5,))",
     "indices that are computed"),
    ("torch.index_select(torch.exp(x), 0, idx)", "torch.randn(8, 32), torch.randint(0, 8, (5,))",
     "index_select of a computed value"),
    ("torch.gather(x, 0, idx)", "torch.randn(8, 32), torch.randint(0, 8, (5, 32))",
     "gather along a dim other than the last"),
    ("torch.zeros_like(x).scatter_add(0, idx, x)", "torch.randn(8, 32), torch.randint(0, 8, (8, 32))",
     "element scatter"),
    ("torch.nn.functional.embedding(idx, x).sum(1)", "torch.randn(40, 16), torch.randint(0, 40, (6, 5))",
     "reduction of a gathered value"),
])
def test_what_has_no_form_is_one_sentence(tmp_path: Path, forward: str, inputs: str, phrase: str) -> None:
    task = load_task_file(_file(tmp_path, forward, inputs))
    with pytest.raises(Unsupported, match=phrase):
        build_plan(task)


def test_index_inputs_vary_with_the_seed_and_stay_in_range() -> None:
    task = load_task_file(CORPUS / "gather_index_select_dim1.py")
    for shapes in [list(task.shapes), *reduced_shapes(task)]:
        a, b = (task.make_inputs(shapes, seed=s) for s in (0, 1))
        extent = shapes[0][1]
        assert not torch.equal(a[1], b[1])
        for inputs in (a, b):
            assert inputs[1].min() >= 0 and inputs[1].max() < extent


def test_an_embedding_task_passes_check_end_to_end() -> None:
    task = load_task_file(CORPUS / "gather_embedding_functional_i32.py")
    report = check(task, CheckConfig(soc="Ascend910B2", full=False, shape_given=False, timing=False))
    assert report.to_dict()["correct"], report.to_dict()
