"""Reduced-shape rules: rank, broadcast relations, fixed dims, alignment classes, tails."""

from __future__ import annotations

import math

import pytest
import torch

from ascendcraft.tasks import InputSpec, Task, get_task, reduced_shapes
from ascendcraft.tasks.shapes import (
    alignment_class,
    check_rules,
    fixed_extents,
    labeled_reduced_shapes,
    size_floor,
)
from ascendcraft.tasks.task import TaskError


def _task(inputs: list[InputSpec], ref=lambda *xs: xs[0], init=None) -> Task:  # noqa: ANN001
    return Task("t", "elementwise", ref, inputs, init_args=init or {})


def test_alignment_class() -> None:
    assert alignment_class(1, 4) == "one"
    assert alignment_class(1000, 4) == "aligned"  # 4000 B = 125 x 32 B
    assert alignment_class(1000, 2) == "unaligned"  # 2000 B
    assert alignment_class(1008, 2) == "aligned"
    assert alignment_class(999, 4) == "odd"
    assert alignment_class(12, 4) == "unaligned"
    assert alignment_class(12, 8) == "aligned"  # int64: 4 per block


@pytest.mark.parametrize("name", ["relu", "layer_norm", "cross_entropy", "max_middim",
                                  "avg_pool3d", "group_norm", "l2_norm", "adam", "masked_cumsum"])
def test_rank_class_budget_kept_for_registry(name: str) -> None:
    task = get_task(name)
    sets = reduced_shapes(task)
    assert len(sets) >= 2
    for shapes in sets:
        assert not check_rules(task, shapes), (name, shapes)
        fixed = math.prod(task.inputs[0].shape[1:2]) if name == "group_norm" else 1
        assert max(math.prod(s) for s in shapes) <= (1 << 17) * fixed


def test_rank_kept_and_never_grows() -> None:
    t = _task([InputSpec("x", (3, 5, 7, 4099))])
    for (s,) in reduced_shapes(t):
        assert len(s) == 4 and all(n <= o for n, o in zip(s, (3, 5, 7, 4099), strict=True))


def test_broadcast_ones_stay_ones_and_equal_dims_stay_equal() -> None:
    x = InputSpec("x", (4096, 1, 8192))
    b = InputSpec("b", (1, 2048, 8192))
    c = InputSpec("c", (8192,))
    t = _task([x, b, c], ref=lambda x, b, c: x + b + c)
    for xs, bs, cs in reduced_shapes(t):
        assert xs[1] == 1 and bs[0] == 1
        assert xs[2] == bs[2] == cs[0]


def test_positional_linking_keeps_unrelated_equal_dims_free() -> None:
    # a square (n, n) single input: the two dims are not tied, so tails are possible
    t = _task([InputSpec("x", (16384, 16384))])
    tail = dict(labeled_reduced_shapes(t))["tail"][0]
    assert tail[0] != tail[1] and math.prod(tail) <= 1 << 17


def test_value_tying_fallback_when_reference_needs_it() -> None:
    # matmul of square operands: positional linking would untie K; the meta check catches it
    a, b = InputSpec("a", (4096, 4096)), InputSpec("b", (4096, 4096))
    t = Task("mm", "matmul", lambda a, b: a @ b, [a, b])
    for sa, sb in reduced_shapes(t):
        assert sa[1] == sb[0]


def test_constructor_args_fix_dims() -> None:
    x = InputSpec("x", (512, 64, 100, 100))
    t = _task([x], ref=lambda x, **k: x,
              init={"num_features": 64, "eps": 1e-5, "dim": 1, "normalized_shape": (100,)})
    assert fixed_extents(t) == {64, 100}
    for (s,) in reduced_shapes(t):
        assert s[1] == 64 and s[3] == 100  # both kept; dim=1 is an index, not an extent


def test_dim_args_are_not_extents() -> None:
    x = InputSpec("x", (2, 4096, 3))
    t = _task([x], init={"dim": 2, "reduce_dim": 3})
    assert fixed_extents(t) == set()


def test_kernel_size_sets_floor() -> None:
    t = get_task("max_pool3d").with_shape("4x4x9x9x9")
    assert size_floor(t) == 3
    for (s,) in reduced_shapes(t):
        assert min(s[2:]) >= 3


@pytest.mark.parametrize("dtype,size", [(torch.float32, 65536), (torch.float16, 65536),
                                        (torch.float32, 65535), (torch.float32, 65530),
                                        (torch.bfloat16, 4098), (torch.int64, 4096)])
def test_alignment_class_kept_per_dtype(dtype: torch.dtype, size: int) -> None:
    kind = "tensor" if dtype.is_floating_point else "index"
    t = _task([InputSpec("x", (64, size), dtype, kind=kind, dist="randint" if kind == "index"
                         else "randn", high=5)])
    isz = torch.empty((), dtype=dtype).element_size()
    for (s,) in reduced_shapes(t):
        assert alignment_class(s[1], isz) == alignment_class(size, isz)
        assert alignment_class(s[0], isz) == alignment_class(64, isz)


def test_tail_set_exercises_tails() -> None:
    sets = dict(labeled_reduced_shapes(get_task("relu")))
    assert set(sets) == {"regular", "tail", "outer"}
    last = sets["tail"][0][-1]
    assert 900 <= last <= 1000 and last % 8 == 0 and (last // 8) % 2 == 1  # 1000 = 8 x 125
    assert last % 64 != 0
    rows = sets["outer"][0][0]
    assert 900 <= rows <= 1001 and rows % 64 != 0
    odd = dict(labeled_reduced_shapes(get_task("l1_norm")))["tail"][0]
    assert odd[1] % 2 == 1 and 900 <= odd[1] < 1000
    fp16 = dict(labeled_reduced_shapes(get_task("relu").with_shape("4096x32768", "fp16")))
    t16 = fp16["tail"][0][-1]
    assert t16 % 16 == 0 and (t16 // 16) % 2 == 1  # 32 B aligned for fp16, odd block count


def test_budget_respected() -> None:
    for budget in (1 << 16, 1 << 18):
        for shapes in reduced_shapes(get_task("avg_pool2d"), budget_elems=budget):
            assert math.prod(shapes[0]) <= budget


def test_scalars_and_rank0_inputs() -> None:
    t = get_task("adam")
    for shapes in reduced_shapes(t):
        assert shapes[4] == ()
    r0 = _task([InputSpec("x", (4096, 333)), InputSpec("s", ())], ref=lambda x, s: x * s)
    for xs, ss in reduced_shapes(r0):
        assert ss == () and xs[1] % 2 == 1


def test_small_tasks_keep_their_shape() -> None:
    t = _task([InputSpec("x", (4, 10))])
    assert reduced_shapes(t) == [[(4, 10)]]


def _glu_halves(x: torch.Tensor) -> torch.Tensor:
    a, b = torch.split(x, [1536, 1536], dim=-1)  # 1536 is fixed by the task, not a dim of x
    return a * torch.sigmoid(b)


def _last_thousand(x: torch.Tensor) -> torch.Tensor:
    return x.narrow(-1, x.shape[-1] - 1000, 1000)


def _half_plus(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a[..., : a.shape[-1] // 2] + b


@pytest.mark.parametrize(("ref", "shapes"), [
    (_glu_halves, [(512, 3072)]),
    (_last_thousand, [(64, 48, 4097)]),
    (_half_plus, [(300, 2000), (300, 1000)]),
])
def test_innermost_extent_kept_when_no_reduced_set_is_accepted(ref, shapes) -> None:  # noqa: ANN001
    """Rule 6: a last dim tied to a size it does not equal keeps its full extent."""
    task = _task([InputSpec(f"x{i}", s) for i, s in enumerate(shapes)], ref=ref)
    sets = labeled_reduced_shapes(task)
    assert [label for label, _ in sets][0] == "inner"
    for _, reduced in sets:
        assert [s[-1] for s in reduced] == [s[-1] for s in shapes]
        assert math.prod(reduced[0]) < math.prod(shapes[0])
        for new, old in zip(reduced, shapes, strict=True):  # rank kept, nothing grows
            assert len(new) == len(old) and all(n <= o for n, o in zip(new, old, strict=True))
        task.run_reference(task.make_inputs(reduced))


def test_innermost_fallback_refused_for_huge_last_dims() -> None:
    task = _task([InputSpec("x", (2, 1 << 23))], ref=lambda x: x.narrow(-1, 0, 5_000_000) * 2)
    with pytest.raises(TaskError, match="could not derive reduced shapes"):
        labeled_reduced_shapes(task)
