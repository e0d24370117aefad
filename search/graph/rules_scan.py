"""Decomposition rules of scans, and of the data movement a scan rewrite folds away.

``cumsum``/``cumprod``/``cummax`` are ``scan`` primitives (``cummin`` a negated ``cummax``).
``flip`` is data movement, which the DSL does not have: it is kept only as a marker that a
reversed scan (``flip(cumsum(flip(x)))``: a scan from the end of the dim, ``rscan_*`` in the
DSL, nothing subtracted) folds away; an exclusive scan (``cat([0, cumsum(x)[:-1]])`` =
``cumsum(x) - x``) folds away the ``slice`` markers of :mod:`.rules_slice`.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from .formulas import Rule, registrar
from .prims import PrimGraph, Value
from .rules_layout import to_dtype
from .trace import Unsupported

RULES: dict[str, Rule] = {}
rule = registrar(RULES)


def _scan(red: str, cast: bool) -> Rule:
    """A running ``red`` of ``self`` along ``dim`` (after its ``dtype`` cast, if ``cast``)."""
    def fn(g: PrimGraph, a: dict) -> Value:
        x = to_dtype(g, a["self"], a.get("dtype")) if cast else a["self"]
        return g.scan(red, x, int(a["dim"]))
    return fn


RULES["cumsum"] = _scan("sum", cast=True)
RULES["cumprod"] = _scan("prod", cast=True)
def running_index(g: PrimGraph, x: Value, values: Value, dim: int) -> Value:
    """The indices of ``cummax``/``cummin``: the last position so far where ``x`` equals the
    running extreme (on ties PyTorch's kernels return the latest index: cummax of
    [1, 1, 0, 1] gives [0, 1, 1, 3]), a running max of positions, stored as int64."""
    if not x.shape or x.shape[dim % len(x.shape)] > 2 ** 24:
        raise Unsupported("cummax/cummin indices of a 0-dim tensor or over an extent above 2**24")
    hit = g.cmp("eq", x, values)
    last = g.scan("max", g.where(hit, g.position(x, dim), -math.inf), dim)
    g.index_results.add(last.node)
    return Value(last.node, last.shape, last.real, torch.int64)


@rule("cummax")
def _cummax(g: PrimGraph, a: dict) -> list:
    x, dim = a["self"], int(a["dim"])
    values = g.scan("max", x, dim)
    return [values, running_index(g, x, values, dim)]


@rule("cummin")
def _cummin(g: PrimGraph, a: dict) -> list:
    x, dim = a["self"], int(a["dim"])
    values = g.unary("neg", g.scan("max", g.unary("neg", x), dim))
    return [values, running_index(g, x, values, dim)]


@rule("logcumsumexp")
def _logcumsumexp(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    dim = int(a["dim"])
    if len(x.shape) == 0:
        return x
    m = g.reduce("max", x, [dim], True)
    s = g.scan("sum", g.unary("exp", g.binary("sub", x, m)), dim)
    return g.binary("add", g.unary("log", s), m)


def _norm_dims(x: Value, dims: Any) -> tuple[int, ...]:
    rank = len(x.shape)
    dims = [dims] if isinstance(dims, int) else list(dims)
    return tuple(sorted({d % rank for d in dims if x.shape[d % rank] != 1}))


@rule("flip")
def _flip(g: PrimGraph, a: dict) -> Value:
    """Only a reversed scan, flip(scan(flip(x, d), d), d) = the scan from the end of d, is
    supported (and flip(flip(x)) = x); any other flip is data movement."""
    x = a["self"]
    dims = _norm_dims(x, a["dims"])
    if not dims:
        return x
    if g.op(x) == "flip" and g.attr(x, "dims") == dims:
        return g.value(g.g.nodes[x.node]["args"][0])
    if g.op(x) == "scan" and len(dims) == 1 and g.attr(x, "dim") == dims[0]:
        inner = g.value(g.g.nodes[x.node]["args"][0])
        if g.op(inner) == "flip" and g.attr(inner, "dims") == dims:
            v = g.value(g.g.nodes[inner.node]["args"][0])
            return g.scan(g.attr(x, "red"), v, dims[0], reverse=not g.attr(x, "reverse", False))
    return g.marker("flip", x, x.shape, dims=dims)


def _is_slice(g: PrimGraph, v: Value, dim: int, start: int, end: int) -> Value | None:
    if g.op(v) != "slice":
        return None
    d = g.g.nodes[v.node]
    if (d["dim"], d["start"], d["end"], d["step"]) != (dim, start, end, 1):
        return None
    return g.value(d["args"][0])


@rule("cat", "concat", "concatenate")
def _cat(g: PrimGraph, a: dict) -> Value:
    """Only an exclusive cumsum, cat([0, cumsum(x, d)[:-1]], d) (or cat([0, cumsum(x[:-1])]))
    = cumsum(x, d) - x, is supported; any other concatenation is data movement."""
    parts = [t for t in a["tensors"] if isinstance(t, Value) and math.prod(t.shape) != 0]
    dim = int(a.get("dim", 0))
    if len(parts) == 2:
        zero, rest = parts
        rank = len(rest.shape)
        d = dim % rank
        n = rest.shape[d] + 1
        if g.const_value(zero) == 0.0 and zero.shape[d] == 1:
            v = None
            sliced = _is_slice(g, rest, d, 0, n - 1)  # cumsum(x)[:-1]
            if sliced is not None and g.op(sliced) == "scan" and g.attr(sliced, "dim") == d:
                if g.attr(sliced, "red") == "sum":
                    v = g.value(g.g.nodes[sliced.node]["args"][0])
            elif g.op(rest) == "scan" and g.attr(rest, "dim") == d and \
                    g.attr(rest, "red") == "sum":  # cumsum(x[:-1])
                inner = g.value(g.g.nodes[rest.node]["args"][0])
                base = None
                if g.op(inner) == "slice":
                    src = g.value(g.g.nodes[inner.node]["args"][0])
                    base = _is_slice(g, inner, d, 0, src.shape[d] - 1)
                v = base
            if v is not None and v.shape[d] == n:
                return g.binary("sub", g.scan("sum", v, d), v)
    raise Unsupported("a concatenation (other than the exclusive-cumsum form "
                      "cat([zeros, cumsum(x)[:-1]])) is data movement, which has no DSL form")


__all__ = ["RULES"]
