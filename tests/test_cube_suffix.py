"""A matrix product followed by a vector computation (search/cube_suffix.py): the product on the
cube into an fp32 workspace, the rest by the graph frontend, one @cube_kernel of two stages.

Task files in styles the other matmul files do not use: a constructor-argument scale before a
softmax, a 4-D bf16 head product scaled by ``1 / sqrt(size)`` of the head dim (a host scalar of
the cube tiling, which differs across the check's shape sets; the product rounded to bf16 by
Fixpipe into a half workspace, where eager's product call rounds), nn.Linear (addmm: the answered
product adds the module's bias) before a log-sum-exp, inputs named like the cube template's own
variables, and refusals that name what the vector stage after a cube stage lacks.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ascendcraft.dsl.lowering.cube import lower_cube
from ascendcraft.search.builtin import propose
from ascendcraft.search.cube_suffix import CubeVectorProposer, suffix_task
from ascendcraft.search.proposer import Declined

from ascendcraft.app.checking import first_feasible
from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from ascendcraft.tasks.taskfile import load_task_file
from tests.kernel_runs import assert_all_pass, inline_task

CORPUS = Path(__file__).parent / "taskfiles" / "corpus"


def _cands(stem: str):
    task = load_task_file(CORPUS / f"{stem}.py")
    cands = propose(task)
    assert cands and {c.origin for c in cands} == {"cube+vector"}
    return task, cands


def test_scores_then_softmax_is_one_cube_kernel_and_passes() -> None:
    task, cands = _cands("attn_scores_softmax_ctor_scale")
    for c in cands:
        assert "/cube_then_" in c.name and c.source.startswith("@cube_kernel(")
        # eager rounds the bare fp16 product: Fixpipe rounds it into a half workspace
        assert "mm_out = workspace(f16)" in c.source and "store(mm_out, blk, cast(acc, f16))" in c.source
        assert "transpose_b=True" in c.source  # k is read as stored: k.transpose(-1, -2) is B
        assert "VCORES = tunable(" in c.source  # the vector stage's CORES renamed beside the cube's
    assert {c.name.split("/")[-1] for c in cands} == {"cube_then_chunked", "cube_then_chunked-online"}
    assert_all_pass(task, cands)


def test_head_dim_scale_is_a_host_scalar_of_the_cube_tiling() -> None:
    task, cands = _cands("heads_softmax_sqrt_dim_bf16")
    _, sets, pc = suffix_task(task)
    assert pc.batched and pc.b.transpose
    assert {s[0][-1] for s in sets} == {32, 16}  # the head dim differs across the checked sets
    src = next(c.source for c in cands if c.name.endswith("-online"))
    assert "size(queries, 3)" in src
    assert "mm_out = workspace(bf16)" in src  # eager's bf16 product, rounded before the scale
    header = lower_cube(src).header
    assert "derived on the host" in header and "dim_of(dims, ranks" in header
    assert_all_pass(task, cands[:1])


def test_linear_bias_goes_into_the_answered_product_before_logsumexp() -> None:
    task, cands = _cands("linear_logsumexp_keepdim")
    st, _, pc = suffix_task(task)
    assert [s.name for s in st.inputs] == ["x", "linear.weight", "linear.bias", "mm_out"]
    assert "mm_out = workspace(f32)" in cands[-1].source  # fp32 task: the fp32 product
    assert pc.b.transpose  # nn.Linear's [out, in] weight
    ev = Evaluator(task, "Ascend910B2", seeds=(0, 1))
    prep = prepare(cands[-1].name, cands[-1].source)
    params = first_feasible(ev, prep)  # fp32: the template defaults need more than L1 (check does this too)
    assert params is not None and params  # the nearest assignment that fits
    out = ev.evaluate(prep, params, timing=False)
    assert out.status == Status.OK, out.message


def test_inputs_named_like_the_cube_template_words_are_renamed() -> None:
    task, cands = _cands("template_word_inputs_logsoftmax")
    src = cands[0].source
    assert "acc_in: In[f32], blk_in: In[f32], BM_in: In[f32]" in src
    assert "blocks(acc_in, blk_in, m=BM," in src
    assert_all_pass(task, cands[:1])


def test_what_the_vector_stage_lacks_is_named(tmp_path: Path) -> None:
    leaky = inline_task(tmp_path, "torch.where(a @ b > 0, a @ b, 0.1 * (a @ b)).sum(-1)",
                        "torch.randn(64, 48), torch.randn(48, 40)", "a, b")
    with pytest.raises(Declined, match=r"2 matrix products|3 matrix products"):
        CubeVectorProposer().propose(leaky)
    (tmp_path / "w").mkdir()
    scan = inline_task(tmp_path / "w", "torch.cumsum(a @ b, dim=-1)", "torch.randn(64, 48), torch.randn(48, 40)",
                       "a, b")
    with pytest.raises(Declined, match=r"scan_\*\(\) is not available in the rows stage of a @cube_kernel"):
        CubeVectorProposer().propose(scan)
    (tmp_path / "v").mkdir()
    mv = inline_task(tmp_path / "v", "torch.softmax(a @ v, dim=0)", "torch.randn(64, 48), torch.randn(48)", "a, v")
    with pytest.raises(Declined, match="a matrix-vector product is a row reduction"):
        CubeVectorProposer().propose(mv)


def test_an_f32_input_narrowed_to_fp16_rounds_there(tmp_path: Path) -> None:
    """The graph frontend's cast of an f32 input to fp16 rounds (eager's .half()), before the fp16
    product by 0.1 rounds again: the suffix task's f32 product narrowed for an fp16 epilogue."""
    task = inline_task(tmp_path, "(x.half() * 0.1).float()", "torch.randn(64, 300) * 30", "x")
    cands = propose(task)
    assert all("cast(cast(load(x, t), f16), f32) * 0.1" in c.source for c in cands)
    assert_all_pass(task, cands[:1])


def test_a_where_after_the_product_runs_in_the_rows_stage(tmp_path: Path) -> None:
    """Compare / Select in the rows stage of a @cube_kernel: a leaky gate by where(), then a row
    sum normalising it (signed data: both branches taken)."""
    task = inline_task(tmp_path, "(lambda s: (lambda g: g / g.abs().sum(-1, keepdim=True))("
                       "torch.where(s > 0, s, 0.1 * s)))(a @ b)", "torch.randn(64, 48), torch.randn(48, 40)", "a, b")
    cands = CubeVectorProposer().propose(task)
    assert all("where(" in c.source for c in cands)
    assert_all_pass(task, cands)


def test_a_bool_mask_input_gates_the_scores(tmp_path: Path) -> None:
    """A bool mask passed as an input (not a cube operand) is read by the rows stage, also
    broadcast over 4-D heads (load_rows_bcast: row (g // d) % R of the mask per tile row)."""
    task = inline_task(tmp_path, "torch.softmax((q @ k.t()).masked_fill(~keep, -1e4), dim=-1)",
                       "torch.randn(96, 64), torch.randn(80, 64), torch.rand(96, 80) > 0.3", "q, k, keep")
    cands = CubeVectorProposer().propose(task)
    assert all("keep: In[bool]" in c.source for c in cands)
    assert_all_pass(task, cands[-1:])
    (tmp_path / "b").mkdir()
    heads = inline_task(tmp_path / "b", "torch.softmax((q @ k.transpose(-1, -2)).masked_fill(~keep, -1e4), dim=-1)",
                        "torch.randn(2, 3, 96, 64), torch.randn(2, 3, 80, 64), torch.rand(96, 80) > 0.3", "q, k, keep")
    cands = CubeVectorProposer().propose(heads)
    assert all("load_rows_bcast(keep," in c.source and "batched=True" in c.source for c in cands)
    # 32 rows of 80 a tile: the 1-byte mask's chunk is 96 wide (32-element multiples), so each of its
    # tile rows starts 32 B-aligned in UB (16-element chunks put every other row 16 B off)
    assert all("ROWS = tunable(pow2(1, 64), default=32)" in c.source for c in cands)
    assert_all_pass(heads, cands[-1:])


def test_narrow_rows_after_a_product_fill_a_chunk_with_rows() -> None:
    """Rows of 256 after the product (a class head then softmax): the rows stage takes 16 rows a
    tile (a 4096-value chunk of whole rows), not one short copy per row (modeled 0.37x -> 0.75x)."""
    task = load_task_file(CORPUS / "class_head_softmax_fp16.py")
    cands = CubeVectorProposer().propose(task)
    assert cands and all("ROWS = tunable(pow2(1, 64), default=16)" in c.source for c in cands)


def test_an_elementwise_rest_that_reads_the_product_twice_runs_as_rows(tmp_path: Path) -> None:
    """y + 2 tanh(y) of y = a @ b is no chain of epilogue steps (y is read twice) and has no
    reduction: the graph frontend's flat tiles do not fit a cube kernel's vector stage, so the
    same graph is planned as rows of the product (before: refused by every proposer)."""
    task = inline_task(tmp_path, "(lambda y: y + 2.0 * torch.tanh(y))(a @ b)",
                       "torch.randn(96, 80) / 8, torch.randn(80, 72) / 8", "a, b")
    cands = CubeVectorProposer().propose(task)
    assert cands and all(" in rows(" in c.source for c in cands)
    assert any(c.name.split("/")[-1].startswith("ring_then_") for c in cands)
    assert_all_pass(task, cands)
