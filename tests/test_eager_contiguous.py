"""The eager baseline runs the library's contiguous copy before a vector op that reads a
non-contiguous view (aclnn APIs pass inputs through ``l0op::Contiguous``; model 2.2): a
permuted LayerNorm pays a copy, a sliced mask pays one, a contiguous input, an expanded
(broadcast) operand, a shape-only read (``zeros_like``) and a matmul's transposed weight
pay none."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ascendcraft.model.eager import eager_us, is_relayout

F32 = torch.float32


def _copies(fn, *shapes) -> list[str]:
    return [o.name for o in eager_us(fn, [(s, F32) for s in shapes]).ops if o.name.startswith("contiguous copy")]


def test_layouts_that_need_a_copy() -> None:
    assert not is_relayout((4, 5, 6), (30, 6, 1))
    assert not is_relayout((4, 1, 6), (6, 99, 1))  # a size-1 dim's stride is meaningless
    assert is_relayout((4, 6, 5), (30, 1, 6))  # a transpose
    assert is_relayout((4, 3), (6, 1))  # a slice of every row
    assert not is_relayout((4, 6), (0, 1))  # an expanded row: broadcast, not copied


def test_a_permuted_layer_norm_pays_a_copy() -> None:
    def f(x):
        return F.layer_norm(x.permute(0, 2, 3, 1), (96,)).permute(0, 3, 1, 2)

    plain = eager_us(lambda x: F.layer_norm(x, (96,)), [((16, 56, 56, 96), F32)])
    permuted = eager_us(f, [((16, 96, 56, 56), F32)])
    assert _copies(f, (16, 96, 56, 56)) == ["contiguous copy of an input of aten.native_layer_norm.default"]
    # the copy reads and writes x once more: about twice the plain op's time
    assert 1.8 < permuted.us / plain.us < 2.2


def test_a_sliced_mask_pays_a_copy_and_a_whole_one_does_not() -> None:
    assert len(_copies(lambda x, m: x.masked_fill(m[:, :64] > 0, 0.0), (64, 64), (64, 128))) == 1
    assert not _copies(lambda x, m: x.masked_fill(m > 0, 0.0), (64, 64), (64, 64))


def test_no_copy_for_broadcasts_shape_reads_or_a_transposed_matmul_weight() -> None:
    assert not _copies(lambda x, b: x + b.expand(64, 32), (64, 32), (1, 32))
    assert not _copies(lambda x: torch.zeros_like(x[:, :5]) + 1, (8, 10))
    assert not _copies(lambda x, w: x @ w.t(), (64, 32), (48, 32))
