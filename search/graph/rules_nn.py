"""Decomposition rules of neural-network ops: pooling windows and losses.

Pooling is one ``pool`` primitive (a window reduction over the last dims, per-dim kernels,
strides, paddings and dilations; padding reads as the op's identity, and so do ceil_mode's
extra windows); an average pool whose divisor changes at the borders
(``count_include_pad=False`` with padding, ceil_mode) multiplies in ``pool_recip``, 1 / each
window's in-bounds taps. A loss is a pointwise term followed by its ``reduction`` (none,
mean or sum); ``nll_loss`` gathers by class index (``pick``) through the elementwise work
before it.
"""

from __future__ import annotations

import math
from typing import Any

from ...dsl.lowering.tiling import pooled_size
from .formulas import Arg, Fn, Formula, Rule, X, abs_, arg, exp, log, registrar
from .prims import BINARY, UNARY, PrimGraph, Value
from .rules_reduce import mean
from .trace import Unsupported

RULES: dict[str, Rule] = {}
rule = registrar(RULES)


# ---------------------------------------------------------------- pooling
def _triple(v: Any, n: int, default: list[int] | None = None) -> list[int]:
    if v is None or (isinstance(v, (list, tuple)) and len(v) == 0):
        return list(default) if default is not None else [0] * n
    if isinstance(v, int):
        return [v] * n
    v = [int(x) for x in v]
    return v * n if len(v) == 1 else v


def _pool(g: PrimGraph, a: dict, red: str) -> Value:
    x = a["self"]
    k = _triple(a["kernel_size"], 1)
    n = len(k)
    s = _triple(a.get("stride"), n, k)
    p = _triple(a.get("padding"), n)
    dil = _triple(a.get("dilation"), n, [1] * n)
    rank = len(x.shape)
    out = list(x.shape)
    ceil = bool(a.get("ceil_mode"))  # kept whether or not this shape gains a window (same graph)
    for i in range(n):
        d = rank - n + i
        out[d] = pooled_size(x.shape[d], (k[i] - 1) * dil[i] + 1, s[i], p[i], ceil)
    keep = [i for i in range(n) if not (k[i] == 1 and s[i] == 1 and p[i] == 0)]
    if keep and keep != list(range(keep[0], n)):
        raise Unsupported(f"pooling with kernel {k} pools non-adjacent dims")
    k, s, p, dil = ([k[i] for i in keep], [s[i] for i in keep], [p[i] for i in keep],
                    [dil[i] for i in keep])
    if not k:
        return x
    if any(pi * 2 > ki for pi, ki in zip(p, k, strict=True)):
        raise Unsupported(f"pooling with padding {p} > kernel {k} / 2")
    return g.pool(red, x, k, s, p, tuple(out), ceil, dil)


@rule("max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
      "max_pool2d_with_indices", "max_pool3d_with_indices")
def _max_pool(g: PrimGraph, a: dict) -> list:
    return [_pool(g, a, "max"), INDICES]


#: why a max pooling's second output is not computed (read as the reason if it is used)
INDICES = ("max pooling's indices (return_indices=True) have no DSL form: a windows loop "
           "keeps each window's maximum, not where it is")


@rule("avg_pool1d", "avg_pool2d", "avg_pool3d")
def _avg_pool(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    out = _pool(g, a, "sum")
    if out is x:
        return x
    if a.get("divisor_override"):
        return g.binary("div", out, float(a["divisor_override"]))
    include = a.get("count_include_pad", True)
    if g.attr(out, "ceil") or (not include and any(g.attr(out, "padding"))):
        # the divisor changes at the borders: 1 / the in-bounds (or in-padding) taps, multiplied in
        return g.binary("mul", out, g.pool_recip(out, padded=include))
    return g.binary("div", out, float(math.prod(g.attr(out, "kernel"))))


@rule("adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool2d", "adaptive_max_pool3d")
def _adaptive(g: PrimGraph, a: dict) -> Value:
    """Adaptive pooling to a fixed ``output_size``: its window (about I / O) follows the
    input's extent, while a windows loop's kernel and stride are compile-time numbers, and
    the kernel is checked at shapes other than the task's. Refused, naming the fixed pooling
    it equals when O divides I (global pooling to 1 is a mean and is traced as one)."""
    x, size = a["self"], [int(o) for o in a["output_size"]]
    dims = list(x.shape[len(x.shape) - len(size):])
    fixed = ""
    if all(o > 0 and i % o == 0 for i, o in zip(dims, size, strict=True)):
        k = [i // o for i, o in zip(dims, size, strict=True)]
        fixed = f" (at {dims} it is the fixed pooling kernel = stride = {k}: write that instead)"
    raise Unsupported(f"adaptive pooling of {dims} to {size}: its window follows the input's "
                      f"shape, a windows loop's kernel and stride are fixed numbers{fixed}")


# ---------------------------------------------------------------- losses
def _loss_reduce(g: PrimGraph, v: Value, reduction: Any) -> Value:
    r = int(reduction if reduction is not None else 1)
    if r == 0:
        return v
    if r == 2:
        return g.reduce("sum", v, None, False)
    return mean(g, v, list(range(len(v.shape))), False)


def _smooth_l1(g: PrimGraph, d: Value, beta: float) -> Value:
    if beta == 0:
        return d
    quad = g.binary("div", g.binary("mul", g.binary("mul", d, d), 0.5), beta)
    return g.where(g.cmp("lt", d, beta), quad, g.binary("sub", d, 0.5 * beta), d.dtype)


def _huber(g: PrimGraph, d: Value, delta: float) -> Value:
    quad = g.binary("mul", g.binary("mul", d, d), 0.5)
    lin = g.binary("mul", g.binary("sub", d, 0.5 * delta), delta)
    return g.where(g.cmp("lt", d, delta), quad, lin, d.dtype)


def _bce(g: PrimGraph, x: Value, t: Value, weight: Value | None) -> Value:
    lx = g.binary("max", g.unary("log", x), -100.0)
    l1x = g.binary("max", g.unary("log", g.binary("sub", 1.0, x)), -100.0)
    v = g.unary("neg", g.binary("add", g.binary("mul", t, lx),
                                g.binary("mul", g.binary("sub", 1.0, t), l1x)))
    return v if weight is None else g.binary("mul", v, weight)


def _bce_logits(g: PrimGraph, x: Value, t: Value, weight: Value | None, pos_weight: Value | None) -> Value:
    """(1 - t) x + (1 + (pw - 1) t) softplus(-x), softplus(-x) = max(-x, 0) + log(1 + exp(-|x|))
    (no overflow for large |x|); the class weight multiplies the term."""
    sp = g.binary("add", g.binary("max", g.unary("neg", x), 0.0),
                  g.unary("log", g.binary("add", g.unary("exp", g.unary("neg", g.unary("abs", x))), 1.0)))
    if pos_weight is not None:
        sp = g.binary("mul", g.binary("add", g.binary("mul", g.binary("sub", pos_weight, 1.0), t), 1.0), sp)
    v = g.binary("add", g.binary("mul", g.binary("sub", 1.0, t), x), sp)
    return v if weight is None else g.binary("mul", v, weight)


T = Arg("target")

#: loss ATen op -> its pointwise term (X = ``self``, T = ``target``), before the reduction
LOSS_TERMS: dict[str, Formula] = {
    "mse_loss": (X - T) * (X - T),
    "l1_loss": abs_(X - T),
    "smooth_l1_loss": Fn(_smooth_l1, abs_(X - T), arg("beta", 1.0)),
    "huber_loss": Fn(_huber, abs_(X - T), arg("delta", 1.0)),
    "soft_margin_loss": log(exp(-T * X) + 1.0),
    "binary_cross_entropy": Fn(_bce, X, T, Arg("weight")),
    "binary_cross_entropy_with_logits": Fn(_bce_logits, X, T, Arg("weight"), Arg("pos_weight")),
}


def _loss(term: Formula) -> Rule:
    return lambda g, a: _loss_reduce(g, term(g, a), a.get("reduction"))


RULES.update({name: _loss(term) for name, term in LOSS_TERMS.items()})


def pick_through(g: PrimGraph, v: Value, idx: Value, ignore: int | None = None) -> Value:
    """``v[i, idx[i]]`` for a [N, C] value built elementwise from [N, C] task inputs and
    per-row / scalar operands: the gather is pushed down to the inputs (``pick``)."""
    if len(v.shape) < 2:
        if math.prod(v.shape) == 1:
            return v  # a scalar broadcasts against the picked [N] values as well
        raise Unsupported("a class-index gather (nll_loss) of a value broadcast from a "
                          f"{list(v.shape)} vector")
    n = v.shape[0]
    if v.real[-1] == 1:  # constant along the class dim: per-row or scalar
        c = g.const_value(v)
        if c is not None:
            return g.const(c, (n,), v.dtype)
        base = v
        while g.op(base) == "expand":
            base = g.value(g.g.nodes[base.node]["args"][0])
        b = (1,) * (2 - len(base.shape)) + tuple(base.shape)
        r = g.view(base, [b[0]])
        return r if b[0] == n else g.expand(r, [n])
    op = g.op(v)
    args = [g.value(x) for x in g.g.nodes[v.node]["args"]]
    if op == "input":
        if len(v.shape) != 2:
            raise Unsupported("a class-index gather (nll_loss) from a tensor that is not 2-D")
        return g.pick(v, idx, ignore)
    if op == "view" and args[0].shape == v.shape:
        return pick_through(g, args[0], idx, ignore)
    if op == "view" and g.op(args[0]) == "input" and len(v.shape) == 2 and args[0].shape[-1] == v.shape[-1]:
        return g.pick(v, idx, ignore)  # [B, T, V] rows viewed as [B * T, V]: the same rows
    sub = [pick_through(g, x, idx, ignore) for x in args]
    if op in UNARY:
        return g.unary(op, sub[0])
    if op == "leaky_relu":
        return g.leaky_relu(sub[0], g.attr(v, "slope"))
    if op in BINARY:
        return g.binary(op, sub[0], sub[1], v.dtype)
    if op == "cmp":
        return g.cmp(g.attr(v, "cmp"), sub[0], sub[1])
    if op == "where":
        return g.where(sub[0], sub[1], sub[2], v.dtype)
    if op == "ind":
        return g.as_float(sub[0], v.dtype)
    raise Unsupported(f"a class-index gather (nll_loss) through a {op} has no DSL form (the "
                      "gather reads a task input: pick(x, t, idx))")


@rule("nll_loss_forward")
def _nll_loss(g: PrimGraph, a: dict) -> list:
    x, target = a["self"], a["target"]
    if a.get("weight") is not None:
        raise Unsupported("nll_loss with class weights (the divisor is a weighted count)")
    if len(x.shape) != 2:
        raise Unsupported("nll_loss over a tensor that is not [N, C]")
    if isinstance(target, Value) and g.op(target) == "view":
        target = g.flat_index(target) or target  # labels.view(-1) (a language model's flattened tokens)
    if not isinstance(target, Value) or g.op(target) != "index":
        raise Unsupported("nll_loss whose targets are not an integer task input")
    skip = int(a.get("ignore_index", -100))
    padded = g.index_special.get(target.node) == skip  # the task pads its targets with ignore_index
    picked = g.unary("neg", pick_through(g, x, target, skip if padded else None))
    # eager's loss of an ignored row is 0 and the mean is over the other rows; with class targets
    # (no padding) the comparison is decided here and this is the plain mean
    valid = g.cmp("ne", target, float(skip))
    loss = g.where(valid, picked, 0.0, picked.dtype)
    r = int(a.get("reduction") if a.get("reduction") is not None else 1)
    if r == 0:
        return [loss, None]
    total = g.reduce("sum", loss, None, False)
    if r == 2:
        return [total, None]
    return [g.binary("div", total, g.reduce("sum", g.as_float(valid), None, False)), None]


__all__ = ["RULES", "pick_through"]
