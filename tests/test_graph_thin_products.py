"""Products with one output column (einsum row dots, per-batch dots of 2-D inputs viewed as
batches) or one output row (a vector times a matrix) are reductions the graph frontend serves;
the cube path refuses a batched product of 2-D inputs with its reason, instead of offering
kernels that cannot take them, and batches a 4-D product (attention's q @ k) over its leading
dims."""

from __future__ import annotations

from pathlib import Path

import pytest
from ascendcraft.search.cube_builtin import propose_cube, traced_spec
from ascendcraft.search.graph import propose_from_graph
from kernel_runs import assert_all_pass, inline_task

from ascendcraft.tasks.taskfile import load_task_file

CASES = [
    # (forward, inputs): einsum row dot, per-batch dot of [B, K] rows
    ('torch.einsum("ij,ij->i", a, b)', "torch.randn(300, 257), torch.randn(300, 257)"),
    ("(a.unsqueeze(1) @ b.unsqueeze(2)).squeeze(-1) * 0.5", "torch.randn(40, 96).half(), torch.randn(40, 96).half()"),
]


@pytest.mark.parametrize("forward,inputs", CASES)
def test_thin_products_are_reductions(tmp_path: Path, forward: str, inputs: str) -> None:
    task = inline_task(tmp_path, forward, inputs, "a, b")
    spec = traced_spec(task)
    assert isinstance(spec, str) and "not 3-D" in spec, spec
    cands = propose_from_graph(task)
    assert cands
    assert_all_pass(task, cands)


def test_a_vector_matrix_product_per_batch_is_refused_with_reasons(tmp_path: Path) -> None:
    """One output row per batch, a different vector each batch ([6, 1, 130] @ [6, 130, 70]): the
    cube path refuses it with its reason, and so does the graph frontend, which serves a vector
    times a matrix (one output row) only with one vector (einsum('k,kn->n'), the corpus)."""
    from ascendcraft.search.builtin import ProposerError

    task = inline_task(tmp_path, "(a.unsqueeze(1) @ b).squeeze(1)", "torch.randn(6, 130), torch.randn(6, 130, 70)",
                       "a, b")
    spec = traced_spec(task)
    assert isinstance(spec, str) and "not 3-D" in spec, spec
    with pytest.raises(ProposerError, match="a vector times a matrix per batch"):
        propose_from_graph(task)


def test_a_vector_times_a_matrix_is_a_middle_axis_reduction() -> None:
    """einsum('k,kn->n'): a sum over the matrix's first dim, the vector read one value a step."""
    task = load_task_file(Path(__file__).parent / "taskfiles" / "corpus" / "einsum_vector_times_matrix.py")
    cands = propose_from_graph(task)
    assert any("load_step(" in c.source for c in cands), cands[0].source
    assert_all_pass(task, [c for c in cands if not c.name.endswith("_flat")][:2])


@pytest.mark.parametrize("forward,inputs", [
    ("a @ b", "torch.randn(2, 3, 40, 24), torch.randn(2, 3, 24, 56)"),
    # attention logits: k stored [B, H, N, D], read transposed; fp16 on a 5-D batch
    ("(a @ b.transpose(-2, -1)) * 0.125", "torch.randn(2, 1, 3, 48, 64).half(), torch.randn(2, 1, 3, 40, 64).half()"),
])
def test_products_of_4d_and_5d_inputs_batch_over_their_leading_dims(tmp_path: Path, forward: str,
                                                                    inputs: str) -> None:
    task = inline_task(tmp_path, forward, inputs, "a, b")
    spec = traced_spec(task)
    assert not isinstance(spec, str) and spec.batched, spec
    assert_all_pass(task, propose_cube(task), at_task_shape=True)


def test_a_one_batch_bmm_is_a_plain_product(tmp_path: Path) -> None:
    # einsum folds A's leading dims into the rows of a [1, b*i*j, l] view of a 4-D input
    task = inline_task(tmp_path, 'torch.einsum("bijl,lk->bijk", a, b)',
                       "torch.randn(2, 5, 3, 40), torch.randn(40, 24)", "a, b")
    spec = traced_spec(task)
    assert not isinstance(spec, str) and not spec.batched, spec
    assert_all_pass(task, propose_cube(task), seeds=(0,), at_task_shape=True)


@pytest.mark.parametrize("forward,inputs", [
    ("torch.diag(a) @ b", "torch.randn(300), torch.randn(300, 130)"),            # KernelBench L1 #12
    ("(b @ torch.diag(a)) * 2.0", "torch.randn(300), torch.randn(77, 300)"),
    ("torch.mm(b, torch.diag(a)).half()", "torch.randn(130), torch.randn(77, 130)"),
])
def test_a_diagonal_factor_is_a_row_or_column_scaling(tmp_path: Path, forward: str, inputs: str) -> None:
    task = inline_task(tmp_path, forward, inputs, "a, b")
    assert_all_pass(task, propose_from_graph(task))


def test_a_diagonal_matrix_read_otherwise_is_refused(tmp_path: Path) -> None:
    from ascendcraft.search.builtin import ProposerError

    task = inline_task(tmp_path, "torch.diag(a) + b", "torch.randn(64), torch.randn(64, 64)", "a, b")
    with pytest.raises(ProposerError, match="diagonal matrix"):
        propose_from_graph(task)


def test_a_vector_operand_is_declined_by_the_cube(tmp_path: Path) -> None:
    """einsum("bij,j->bi") with a 1-D weight: the cube templates take matrices, so the cube
    proposer declines with that reason (before, it offered candidates none of which fit the
    shapes, and check said FAIL) and the graph frontend serves a product and a row sum."""
    task = inline_task(tmp_path, 'torch.einsum("bij,j->bi", a, b)', "torch.randn(5, 7, 300), torch.randn(300)", "a, b")
    spec = traced_spec(task)
    assert isinstance(spec, str) and "is a vector (shape [300])" in spec, spec
    cands = propose_from_graph(task)
    assert any("row_sum(" in c.source for c in cands)
    assert_all_pass(task, cands[:1])
