"""Decomposition rules of reductions and normalisations.

A reduction keeps its reduced dims as 1 (one ``reduce`` node, shared by ``mean``/``var``); a
``view`` drops them when ``keepdim`` is False. Normalisations are reductions plus elementwise
work (softmax: max, exp, sum, divide; layer norm: mean, centred second moment, ``rsqrt``).
Every rule that reduces ``self`` over its ``dim`` argument is a row of :data:`OVER_DIMS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from .formulas import Rule, registrar
from .prims import PrimGraph, Value
from .rules_math import power
from .trace import Ref, Unsupported

RULES: dict[str, Rule] = {}
rule = registrar(RULES)


def dims_of(x: Value, dims: Any) -> list[int]:
    """A ``dim`` argument as a list (None or empty: every dim)."""
    if dims is None:
        return list(range(len(x.shape)))
    if isinstance(dims, int):
        return [dims]
    return list(dims) or list(range(len(x.shape)))


def keep(g: PrimGraph, r: Value, x: Value, dims: list[int], keepdim: bool) -> Value:
    """A keepdim=True reduction result viewed as keepdim=False when asked."""
    if keepdim:
        return r
    rank = len(x.shape)
    norm = {d % rank for d in dims} if rank else set()
    return g.view(r, [s for i, s in enumerate(x.shape) if i not in norm])


def mean(g: PrimGraph, x: Value, dims: list[int], keepdim: bool) -> Value:
    r = g.reduce("sum", x, dims, keepdim)
    return g.binary("div", r, g.extent(r))


def var(g: PrimGraph, x: Value, dims: list[int], correction: float, keepdim: bool
        ) -> tuple[Value, Value]:
    """(variance, mean), both keepdim=True."""
    m = mean(g, x, dims, True)
    d = g.binary("sub", x, m)
    ss = g.reduce("sum", g.binary("mul", d, d), dims, True)
    e = g.extent(ss)
    denom = e if correction == 0 else g.binary("sub", e, float(correction))
    return g.binary("div", ss, denom), m


def _correction(a: dict) -> float:
    c = a.get("correction")
    if c is None:
        unbiased = a.get("unbiased")
        return 0.0 if unbiased is False else 1.0
    return float(c)


def vector_norm(g: PrimGraph, x: Value, p: float, dims: list[int], keepdim: bool) -> Value:
    if p == 2:
        return g.unary("sqrt", g.reduce("sum", g.binary("mul", x, x), dims, keepdim))
    ax = g.unary("abs", x)
    if p == 1:
        return g.reduce("sum", ax, dims, keepdim)
    if p == math.inf:
        return g.reduce("max", ax, dims, keepdim)
    if p == -math.inf:
        return g.reduce("min", ax, dims, keepdim)
    if p > 0:
        s = g.reduce("sum", power(g, ax, p) if p == int(p) else
                     g.unary("exp", g.binary("mul", g.unary("log", ax), p)), dims, keepdim)
        return g.unary("exp", g.binary("div", g.unary("log", s), p))
    raise Unsupported(f"a vector norm of order {p}")


def _logsumexp(g: PrimGraph, x: Value, dims: list[int], keepdim: bool, a: dict) -> Value:
    m = g.reduce("max", x, dims, True)
    s = g.reduce("sum", g.unary("exp", g.binary("sub", x, m)), dims, True)
    return keep(g, g.binary("add", g.unary("log", s), m), x, dims, keepdim)


def _moments(root: bool, with_mean: bool) -> Callable[..., Any]:
    """var / std (``root``), alone or with the mean (``var_mean``, ``std_mean``)."""
    def body(g: PrimGraph, x: Value, dims: list[int], keepdim: bool, a: dict) -> Any:
        v, m = var(g, x, dims, _correction(a), True)
        if root:
            v = g.unary("sqrt", v)
        out = keep(g, v, x, dims, keepdim)
        return [out, _stat(g, keep(g, m, x, dims, keepdim), x.dtype)] if with_mean else out
    return body


def _norm_order(p: Any) -> float:
    return 2.0 if p is None or isinstance(p, str) else float(p)


#: ATen op -> its value from (graph, self, dims, keepdim, all arguments): the rules that
#: reduce ``self`` over their ``dim`` argument (every dim when absent)
OVER_DIMS: dict[str, Callable[..., Any]] = {
    "sum": lambda g, x, dims, k, a: g.reduce("sum", x, dims, k),
    "amax": lambda g, x, dims, k, a: g.reduce("max", x, dims, k),
    "amin": lambda g, x, dims, k, a: g.reduce("min", x, dims, k),
    "prod": lambda g, x, dims, k, a: g.reduce("prod", x, dims, k),
    "mean": lambda g, x, dims, k, a: mean(g, x, dims, k),
    "logsumexp": _logsumexp,
    "var": _moments(False, False),
    "std": _moments(True, False),
    "var_mean": _moments(False, True),
    "std_mean": _moments(True, True),
    "linalg_vector_norm": lambda g, x, dims, k, a: vector_norm(g, x, float(a.get("ord", 2)), dims, k),
    "norm": lambda g, x, dims, k, a: vector_norm(g, x, _norm_order(a.get("p")), dims, k),
}


def over_dims(body: Callable[..., Any]) -> Rule:
    """The rule that applies ``body`` to ``self`` over the call's ``dim`` and ``keepdim``."""
    def fn(g: PrimGraph, a: dict) -> Any:
        x = a["self"]
        return body(g, x, dims_of(x, a.get("dim")), bool(a.get("keepdim", False)), a)
    return fn


RULES.update({name: over_dims(body) for name, body in OVER_DIMS.items()})


def _max_min(red: str) -> Rule:
    """``max``/``min``: elementwise with ``other``, a full reduction, or over ``dim`` (with
    indices, which have no form)."""
    def fn(g: PrimGraph, a: dict) -> Any:
        x = a["self"]
        if "other" in a and a.get("other") is not None:
            return g.binary(red, x, a["other"])
        if "dim" not in a:
            return g.reduce(red, x, None, False)
        k = bool(a.get("keepdim", False))
        d = a["dim"]
        return [g.reduce(red, x, dims_of(x, d), k), arg_extreme(g, x, red, d, k)]
    return fn


RULES["max"] = _max_min("max")
RULES["min"] = _max_min("min")

#: the largest extent whose indices f32 holds exactly
MAX_INDEX_EXTENT = 2 ** 24


def arg_extreme(g: PrimGraph, x: Value, red: str, dim: Any, keepdim: bool) -> Value:
    """argmax/argmin over one dim: the smallest position where the slice equals its max (min),
    so ties give the first index, PyTorch's documented rule. The value is computed in f32 and
    stored as int64. NaN is not matched: PyTorch returns the first NaN's index; here a NaN
    never equals the extreme, so the index of a slice holding one is unspecified."""
    if dim is None or isinstance(dim, (list, tuple)):
        raise Unsupported(f"arg{red} over every element (dim=None): the index of a whole-tensor "
                          "extreme needs a total_* of positions, which the DSL does not have")
    if not x.dtype.is_floating_point:
        raise Unsupported(f"arg{red} of a {str(x.dtype).replace('torch.', '')} tensor (integer "
                          "tensors are read only as class targets)")
    d = dim % len(x.shape) if x.shape else 0
    if not x.shape or x.shape[d] > MAX_INDEX_EXTENT:
        raise Unsupported(f"arg{red} over an extent above 2**24 (f32 holds indices exactly below it)"
                          if x.shape else f"arg{red} of a 0-dim tensor")
    hit = g.cmp("eq", x, g.reduce(red, x, [d], True))
    first = g.reduce("min", g.where(hit, g.position(x, d), math.inf), [d], True)
    v = keep(g, first, x, [d], keepdim)
    g.index_results.add(v.node)
    return Value(v.node, v.shape, v.real, torch.int64)


@rule("topk")
def _topk(g: PrimGraph, a: dict) -> list[Value]:
    """``topk(x, 1, dim)``: the extreme over ``dim`` (kept as a dim of 1), as ``max(dim,
    keepdim=True)``. Its index is not served: on ties topk's choice is not PyTorch's documented
    first index (eager CPU picks a later one), so no kernel can match it exactly; larger k sorts."""
    x, k = a["self"], int(a["k"])
    if k != 1:
        raise Unsupported(f"topk with k = {k}: selecting more than the extreme sorts, which has no DSL form")
    red = "max" if a.get("largest", True) else "min"
    return [g.reduce(red, x, dims_of(x, a.get("dim", -1)), True),
            "topk's index among tied values is not specified (max(dim) and argmax give the first)"]


@rule("argmax", "argmin")
def _argmax(g: PrimGraph, a: dict) -> Value:
    red = "max" if "argmax" in str(a["__op__"]) else "min"
    return arg_extreme(g, a["self"], red, a.get("dim"), bool(a.get("keepdim", False)))


@rule("_softmax", "softmax", "_safe_softmax")
def _softmax(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    dims = [a["dim"]]
    e = g.unary("exp", g.binary("sub", x, g.reduce("max", x, dims, True)))
    return g.binary("div", e, g.reduce("sum", e, dims, True))


@rule("_log_softmax", "log_softmax")
def _log_softmax(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    dims = [a["dim"]]
    d = g.binary("sub", x, g.reduce("max", x, dims, True))
    return g.binary("sub", d, g.unary("log", g.reduce("sum", g.unary("exp", d), dims, True)))


# ---------------------------------------------------------------- vector products
@rule("mv")
def _mv(g: PrimGraph, a: dict) -> Value:
    """A matrix-vector product is a row reduction (memory-bound: the vector cores' work,
    a cube block would be 1/16 used)."""
    x = a["self"]
    return keep(g, g.reduce("sum", g.binary("mul", x, a["vec"]), [-1], True), x, [-1], False)


@rule("mm", "bmm")
def _thin_product(g: PrimGraph, a: dict) -> Value:
    """A product with one output column (``einsum('ij,ij->i')``, ``einsum('bij,bj->bi')``, a
    per-batch dot) is a row reduction of an elementwise product; one with one output row (a
    vector times a matrix, ``einsum('k,kn->n')``) a reduction over the middle axis, the vector
    read one value a step: memory-bound, the vector cores' work. Any other product is the cube's."""
    x, y = a["self"], a["mat2"]
    if g.op(x) == "diag":  # torch.diag(v) @ y scales y's rows by v
        v = g.value(g.g.nodes[x.node]["args"][0])
        return g.binary("mul", g.view(v, (v.shape[0], 1)), y)
    if g.op(y) == "diag":  # x @ torch.diag(v) scales x's columns by v
        v = g.value(g.g.nodes[y.node]["args"][0])
        return g.binary("mul", x, g.view(v, (1, v.shape[0])))
    *lead, m, k = x.shape
    if y.shape[-1] != 1:  # one output row: out[..., 0, j] = sum_k x[..., 0, k] * y[..., k, j]
        if math.prod(x.real[:-2]) > 1:
            raise Unsupported("a vector times a matrix per batch (one output row, a different vector "
                              "each batch): the middle-axis loop reads a per-step operand that is the "
                              "same for every batch")
        return g.reduce("sum", g.binary("mul", g.view(x, (*lead, k, 1)), y), [-2], True)
    # out[..., i, 0] = sum_k x[..., i, k] * y[..., k, 0]
    return g.reduce("sum", g.binary("mul", x, g.view(y, (*lead, 1, k))), [-1], True)


def _not_thin(d: dict, producer: Callable[[Ref], str]) -> str | None:
    """A product with more than one output column is the cube's (said before its operands
    are decomposed, so a transposed operand does not hide the reason), unless a factor is a
    diagonal matrix (a row or column scaling)."""
    if any(producer(d["args"][s]) == "diag_embed" for s in ("self", "mat2")):
        return None
    if d["outputs"][0][0][-1] != 1 and d["outputs"][0][0][-2] != 1:
        return ("matrix products run on the cube unit; the graph frontend writes vector kernels "
                "only (it serves products with one output column or row)")
    return None


_thin_product.refuses = _not_thin  # type: ignore[attr-defined]


@rule("diag_embed")
def _diag_embed(g: PrimGraph, a: dict) -> Value:
    """torch.diag(v) of a vector: an [n, n] matrix that only a product may read (as a row or
    column scaling, :func:`_thin_product`); anywhere else it is refused as data movement."""
    v = a["self"]
    if len(v.shape) != 1 or int(a.get("offset", 0)) != 0:
        raise Unsupported("a diagonal matrix other than torch.diag(v) of a vector")
    n = v.shape[0]
    return g.marker("diag", v, (n, n))


@rule("dot", "vdot")
def _dot(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    return keep(g, g.reduce("sum", g.binary("mul", x, a["tensor"]), [0], True), x, [0], False)


# ---------------------------------------------------------------- normalisations
def _stat(g: PrimGraph, v: Value, dtype: torch.dtype) -> Value:
    """A statistic returned beside the normalised output: its own node, so the rounding of a
    16-bit output (eager returns mean / rstd in the input's dtype) does not reach the output,
    which ATen's kernels compute from the unrounded (f32) statistics (a view would not do:
    the rounding marks the storage a view shows)."""
    return g.round_to(v, dtype) if dtype in (torch.float16, torch.bfloat16) else v


@rule("native_layer_norm")
def _native_layer_norm(g: PrimGraph, a: dict) -> list:
    x = a["input"]
    k = len(a["normalized_shape"])
    dims = list(range(len(x.shape) - k, len(x.shape)))
    v, m = var(g, x, dims, 0.0, True)
    rstd = g.unary("rsqrt", g.binary("add", v, float(a["eps"])))
    out = g.binary("mul", g.binary("sub", x, m), rstd)
    if a.get("weight") is not None:
        out = g.binary("mul", out, a["weight"])
    if a.get("bias") is not None:
        out = g.binary("add", out, a["bias"])
    return [out, _stat(g, m, x.dtype), _stat(g, rstd, x.dtype)]


@rule("_fused_rms_norm", "rms_norm")
def _rms_norm(g: PrimGraph, a: dict) -> Any:
    x = a["input"]
    k = len(a["normalized_shape"])
    dims = list(range(len(x.shape) - k, len(x.shape)))
    eps = a.get("eps")
    eps = torch.finfo(x.dtype).eps if eps is None else float(eps)
    ms = mean(g, g.binary("mul", x, x), dims, True)
    rstd = g.unary("rsqrt", g.binary("add", ms, eps))
    out = g.binary("mul", x, rstd)
    if a.get("weight") is not None:
        out = g.binary("mul", out, a["weight"])
    return [out, _stat(g, rstd, x.dtype)] if "_fused" in str(a.get("__op__", "")) else out


def _channel(g: PrimGraph, w: Value, rank: int) -> Value:
    """A per-channel [C] vector shaped to broadcast against [N, C, ...]."""
    return g.view(w, list(w.shape) + [1] * (rank - 2))


@rule("repeat")
def _repeat(g: PrimGraph, a: dict) -> Value:
    """A 1-D vector tiled along its one dim (``w.repeat(N)``): kept as a marker that only the
    batch norm of an instance norm reads (its per-(n, c) weight, see :func:`_instance_norm`);
    anything else is data movement, refused when the loop is analysed."""
    x, reps = a["self"], [int(r) for r in a["repeats"]]
    if len(x.shape) != 1 or len(reps) != 1:
        raise Unsupported("repeat (data movement) other than a 1-D vector tiled along its dim")
    c = g.const_value(x)
    if c is not None:  # (an instance norm's untouched running statistics)
        return g.const(c, (x.shape[0] * reps[0],), x.dtype)
    return g.marker("repeat", x, (x.shape[0] * reps[0],))  # (the count is its shape's: no attribute
    # that changes with the shapes, which would make two traced shape sets look like two graphs)


def _repeated(g: PrimGraph, v: Value) -> Value:
    """The vector a ``repeat`` marker tiles."""
    return g.value(g.g.nodes[v.node]["args"][0])


def _repeats(g: PrimGraph, v: Value, n: int) -> bool:
    """Is ``v`` a ``repeat`` marker tiling its vector ``n`` times?"""
    return g.op(v) == "repeat" and v.shape[0] == n * _repeated(g, v).shape[0]


def _instance_norm(g: PrimGraph, a: dict) -> list | None:
    """F.instance_norm's form: a batch norm of x [N, C, ...] viewed as [1, N * C, ...] with the
    [C] weight and bias repeated N times. Computed on x itself (statistics over its trailing
    dims, the weight per channel) and viewed back: no repeated vector is made. None when the
    call is not of that form."""
    x, w, b = a["input"], a.get("weight"), a.get("bias")
    if not any(v is not None and g.op(v) == "repeat" for v in (w, b)) or g.op(x) != "view":
        return None
    base = g.value(g.g.nodes[x.node]["args"][0])
    n = base.shape[0] if len(base.shape) >= 2 else 0
    if len(x.shape) < 2 or x.shape[0] != 1 or len(base.shape) != len(x.shape) or \
            x.shape[1] != n * base.shape[1] or tuple(x.shape[2:]) != tuple(base.shape[2:]):
        return None
    parts = []
    for v in (w, b):
        if v is not None and not _repeats(g, v, n):
            return None
        parts.append(None if v is None else _repeated(g, v))
    rank = len(base.shape)
    rm, rv = a.get("running_mean"), a.get("running_var")
    own = a.get("training", False) or rm is None  # use_input_stats: each (n, c)'s own statistics
    if own:
        v_, m = var(g, base, list(range(2, rank)), 0.0, True)
    else:  # eval with tracked statistics: the [C] running ones, repeated N times by eager
        stats = []
        for r in (rm, rv):
            c = g.const_value(r)
            if c is None and not _repeats(g, r, n):
                return None
            stats.append(c if c is not None else _channel(g, _repeated(g, r), rank))
        m, v_ = stats
    invstd = g.unary("rsqrt", g.binary("add", v_, float(a["eps"])))
    out = g.binary("mul", g.binary("sub", base, m), invstd)
    if parts[0] is not None:
        out = g.binary("mul", out, _channel(g, parts[0], rank))
    if parts[1] is not None:
        out = g.binary("add", out, _channel(g, parts[1], rank))
    c = x.shape[1]
    if not own:
        return [g.view(out, x.shape), None, None]
    return [g.view(out, x.shape), _stat(g, g.view(m, [c]), x.dtype), _stat(g, g.view(invstd, [c]), x.dtype)]


@rule("native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_functional",
      "_native_batch_norm_legit_no_training")
def _batch_norm(g: PrimGraph, a: dict) -> list:
    inst = _instance_norm(g, a)
    if inst is not None:
        return inst
    x = a["input"]
    rank = len(x.shape)
    training = a.get("training", False) if "training" in a else False
    rm, rv = a.get("running_mean"), a.get("running_var")
    eps = float(a["eps"])
    if training or rm is None:
        dims = [0] + list(range(2, rank))
        v, m = var(g, x, dims, 0.0, True)
        invstd = g.unary("rsqrt", g.binary("add", v, eps))
        stats = [_stat(g, g.view(m, [x.shape[1]]), x.dtype), _stat(g, g.view(invstd, [x.shape[1]]), x.dtype)]
    else:
        m, invstd = _channel(g, rm, rank), g.unary("rsqrt", g.binary("add", _channel(g, rv, rank),
                                                                         eps))
        stats = [None, None]
    out = g.binary("mul", g.binary("sub", x, m), invstd)
    if a.get("weight") is not None:
        out = g.binary("mul", out, _channel(g, a["weight"], rank))
    if a.get("bias") is not None:
        out = g.binary("add", out, _channel(g, a["bias"], rank))
    return [out, *stats]


@rule("native_group_norm")
def _group_norm(g: PrimGraph, a: dict) -> list:
    x = a["input"]
    n, groups = int(a["N"]), int(a["group"])
    xv = g.view(x, [n, groups, math.prod(x.shape) // (n * groups)])
    v, m = var(g, xv, [2], 0.0, True)
    rstd = g.unary("rsqrt", g.binary("add", v, float(a["eps"])))
    out = g.view(g.binary("mul", g.binary("sub", xv, m), rstd), x.shape)
    rank = len(x.shape)
    if a.get("weight") is not None:
        out = g.binary("mul", out, _channel(g, a["weight"], rank))
    if a.get("bias") is not None:
        out = g.binary("add", out, _channel(g, a["bias"], rank))
    return [out, _stat(g, g.view(m, [n, groups]), x.dtype), _stat(g, g.view(rstd, [n, groups]), x.dtype)]


__all__ = ["OVER_DIMS", "RULES", "dims_of", "keep", "mean", "var", "vector_norm"]
