"""A task file's category from what its reference computes — the ATen ops of its trace —
never from its names: a file called ``matmul.py`` that applies a ReLU is an activation, a
``proj`` built by a helper outside the Model class is a matmul. The category picks the LLM
prompt's chapter (the cube's for matrix products) and its examples, and labels reports."""

from __future__ import annotations

import math
from collections.abc import Sequence

from .aten import CUBE_OPS, AtenGraph

#: ATen ops that decide a category wherever they occur, first match wins
_DECIDING: tuple[tuple[str, frozenset[str]], ...] = (
    ("matmul", CUBE_OPS),
    ("loss", frozenset({"mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss_forward",
                        "nll_loss2d_forward", "nll_loss_nd", "binary_cross_entropy",
                        "binary_cross_entropy_with_logits", "kl_div", "soft_margin_loss",
                        "multilabel_margin_loss_forward", "multi_margin_loss", "poisson_nll_loss",
                        "cross_entropy_loss", "hinge_embedding_loss", "margin_ranking_loss"})),
    ("normalization", frozenset({"native_layer_norm", "native_group_norm", "native_batch_norm",
                                 "_native_batch_norm_legit", "_native_batch_norm_legit_no_training",
                                 "_native_batch_norm_legit_functional", "_batch_norm_with_update",
                                 "_fused_rms_norm", "rms_norm"})),
    ("math", frozenset({"cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"})),
)
_REDUCTIONS = frozenset({"sum", "mean", "amax", "amin", "max", "min", "prod", "var", "std",
                         "var_mean", "std_mean", "norm", "linalg_vector_norm", "logsumexp",
                         "argmax", "argmin", "_softmax", "_log_softmax"})
_SOFTMAX = frozenset({"_softmax", "_log_softmax"})


def category_of_graph(ag: AtenGraph, in_shapes: Sequence[tuple[int, ...]],
                      out_shapes: Sequence[tuple[int, ...]]) -> str:
    """The category of a traced reference: a deciding op (product, loss, norm, scan,
    pooling), else its reductions and shapes — one number reduced from two same-shape
    inputs is a loss (losses decomposed into ATen arithmetic); a smaller output of a reduction is a
    reduction; a same-size output of a row statistic is a normalization (softmax an
    activation); several inputs elementwise (a slice too), one an activation."""
    ops = {ag.op(n) for n in ag.op_nodes()}
    for cat, names in _DECIDING:
        if ops & names:
            return cat
    if any("pool" in op for op in ops):
        return "pooling"
    n_in = math.prod(in_shapes[0]) if in_shapes else 0
    n_out = math.prod(out_shapes[0]) if out_shapes else 0
    if n_in and n_out == 1 and ops & _REDUCTIONS and \
            sum(tuple(s) == tuple(in_shapes[0]) for s in in_shapes) >= 2:
        return "loss"  # one number from a prediction and a target of its shape (KL, MSE by hand)
    if n_in and n_out < n_in and ops & _REDUCTIONS:
        return "reduce"
    if ops & _SOFTMAX:
        return "activation"
    if ops & _REDUCTIONS and n_out == n_in:
        return "normalization"
    if len(in_shapes) >= 2:
        return "elementwise"
    return "activation" if in_shapes else "math"
