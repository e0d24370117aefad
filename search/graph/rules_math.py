"""Decomposition rules of elementwise ATen ops: arithmetic, activations, comparisons, masks.

Composite activations are written the way the DSL computes them (``expm1(a)`` as
``exp(a) - 1``, ``log1p(a)`` as ``log(1 + a)``, ``hardswish`` with ``maximum``/``minimum``...).
Fixed expressions are formulas in :data:`FORMULAS` (see :mod:`.formulas`); rules that branch
on their arguments are functions registered with ``@rule``.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from .formulas import (
    Arg,
    Fn,
    Prim,
    Rule,
    X,
    Y,
    abs_,
    arg,
    clamp,
    clamp_values,
    erf,
    exp,
    log,
    maximum,
    minimum,
    registrar,
    sigmoid,
    tanh,
    unary,
    where,
)
from .prims import CMPS, UNARY, PrimGraph, Value
from .rules_slice import slice_of
from .trace import Unsupported

RULES: dict[str, Rule] = {}
rule = registrar(RULES)


def scaled(g: PrimGraph, v: Any, k: Any) -> Any:
    """``v * k``, or ``v`` itself when the multiplier is 1 (``alpha``/``value`` defaults)."""
    return v if k in (None, 1) else g.binary("mul", v, float(k))


def elu(g: PrimGraph, x: Value, alpha: float, scale: float, input_scale: float) -> Value:
    pos = g.binary("mul", x, scale)
    e = g.binary("sub", g.unary("exp", g.binary("mul", x, input_scale)), 1.0)
    neg = g.binary("mul", e, alpha * scale)
    return g.where(g.cmp("gt", x, 0.0), pos, neg, x.dtype)


def gelu(g: PrimGraph, x: Value, approximate: str | None) -> Value:
    if approximate == "tanh":
        cube = g.binary("mul", g.binary("mul", x, x), x)
        inner = g.binary("mul", g.binary("add", x, g.binary("mul", cube, 0.044715)),
                         0.7978845608028654)
        return g.binary("mul", g.binary("mul", x, 0.5), g.binary("add", g.unary("tanh", inner), 1.0))
    cdf = g.binary("add", g.unary("erf", g.binary("mul", x, 0.7071067811865476)), 1.0)
    return g.binary("mul", g.binary("mul", x, 0.5), cdf)


def softplus(g: PrimGraph, x: Value, beta: float, threshold: float) -> Value:
    bx = g.binary("mul", x, beta)
    soft = g.unary("log", g.binary("add", g.unary("exp", bx), 1.0))
    if beta != 1.0:
        soft = g.binary("div", soft, beta)
    return g.where(g.cmp("gt", bx, threshold), x, soft, x.dtype)


def _logit(g: PrimGraph, x: Value, eps: Any) -> Value:
    """log(z / (1 - z)), z = x clamped to [eps, 1 - eps] when eps is given (torch.logit)."""
    z = x if eps is None else clamp_values(g, x, float(eps), 1.0 - float(eps))
    return g.unary("log", g.binary("div", z, g.binary("sub", 1.0, z)))


def _log_sigmoid(g: PrimGraph, x: Value) -> Value:
    soft = g.unary("log", g.binary("add", g.unary("exp", g.unary("neg", g.unary("abs", x))), 1.0))
    return g.binary("sub", g.binary("min", x, 0.0), soft)


SELU_ALPHA, SELU_SCALE = 1.6732632423543772, 1.0507009873554805

#: ATen op -> its value as a formula of the call's arguments (X = ``self``, Y = ``other``)
FORMULAS: dict[str, Any] = {
    "add": X + Fn(scaled, Y, Arg("alpha", 1)),
    "sub": X - Fn(scaled, Y, Arg("alpha", 1)),
    "rsub": Y - Fn(scaled, X, Arg("alpha", 1)),
    "mul": X * Y,
    **dict.fromkeys(("maximum", "fmax", "max_other"), maximum(X, Y)),
    **dict.fromkeys(("minimum", "fmin", "min_other"), minimum(X, Y)),
    **{op: unary(op)(X) for op in UNARY},
    "negative": -X,
    "absolute": abs_(X),
    "expm1": exp(X) - 1.0,
    "log1p": log(1.0 + X),
    "log2": log(X) * (1.0 / math.log(2.0)),
    "log10": log(X) * (1.0 / math.log(10.0)),
    "exp2": exp(X * math.log(2.0)),
    "cosh": (exp(X) + exp(-X)) * 0.5,
    "sinh": (exp(X) - exp(-X)) * 0.5,
    "square": X * X,
    "erfc": 1.0 - erf(X),
    # activations
    **dict.fromkeys(("clamp", "clip"), clamp(X, Arg("min"), Arg("max"))),
    "clamp_min": clamp(X, Arg("min"), None),
    "clamp_max": clamp(X, None, Arg("max")),
    "hardtanh": clamp(X, Arg("min_val", -1.0), Arg("max_val", 1.0)),
    "relu6": clamp(X, 0.0, 6.0),
    "threshold": where(X > Arg("threshold"), X, Arg("value"), X),
    "leaky_relu": Fn(lambda g, x, slope: g.leaky_relu(x, slope), X, arg("negative_slope", 0.01)),
    "elu": Fn(elu, X, arg("alpha", 1.0), arg("scale", 1.0), arg("input_scale", 1.0)),
    "celu": Fn(lambda g, x, alpha: elu(g, x, alpha, 1.0, 1.0 / alpha), X, arg("alpha", 1.0)),
    "selu": Fn(elu, X, SELU_ALPHA, SELU_SCALE, 1.0),
    "gelu": Fn(gelu, X, Arg("approximate")),
    "silu": X * sigmoid(X),
    "softplus": Fn(softplus, X, arg("beta", 1.0), arg("threshold", 20.0)),
    "mish": X * tanh(Fn(softplus, X, 1.0, 20.0)),
    "hardswish": X * clamp(X + 3.0, 0.0, 6.0) / 6.0,
    "hardsigmoid": clamp(X + 3.0, 0.0, 6.0) / 6.0,
    "log_sigmoid": Fn(_log_sigmoid, X),
    "hardshrink": where(abs_(X) > arg("lambd", 0.5), X, 0.0, X),
    "logit": Fn(_logit, X, Arg("eps")),
    "_prelu_kernel": where(X > 0.0, X, Arg("weight") * X, X),
    "addcmul": X + Fn(scaled, Arg("tensor1") * Arg("tensor2"), Arg("value", 1)),
    "addcdiv": X + Fn(scaled, Arg("tensor1") / Arg("tensor2"), Arg("value", 1)),
    "lerp": X + Arg("weight") * (Arg("end") - X),
    # comparisons and masks
    **{op: Prim("cmp", op, X, Y) for op in CMPS},
    "less": X < Y, "greater": X > Y, "less_equal": X <= Y, "greater_equal": X >= Y,
    "not_equal": Prim("cmp", "ne", X, Y),
    "where": where(Arg("condition"), X, Y),
    "masked_fill": where(Arg("mask"), Arg("value"), X, X),
}
RULES.update(FORMULAS)
RULES["log_sigmoid_forward"] = lambda g, a: [_log_sigmoid(g, a["self"]), None]


@rule("div", "true_divide")
def _div(g: PrimGraph, a: dict) -> Value:
    mode = a.get("rounding_mode")
    if mode is not None:
        raise Unsupported(f"division with rounding_mode={mode!r} (floor/trunc) has no DSL form")
    return g.binary("div", a["self"], a["other"])


@rule("nan_to_num")
def _nan_to_num(g: PrimGraph, a: dict) -> Value:
    """NaN -> ``nan`` (0), +inf -> ``posinf``, -inf -> ``neginf`` (the dtype's largest and
    lowest finite values unless given): a NaN is the one value that differs from itself."""
    x = a["self"]
    if not x.dtype.is_floating_point:
        return x
    info = torch.finfo(x.dtype)
    nan = a.get("nan")
    pos, neg = a.get("posinf"), a.get("neginf")
    y = g.where(g.cmp("eq", x, math.inf), float(info.max if pos is None else pos), x)
    y = g.where(g.cmp("eq", x, -math.inf), float(info.min if neg is None else neg), y)
    return g.where(g.cmp("ne", x, x), float(0.0 if nan is None else nan), y)


@rule("sign", "sgn")
def _sign(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    neg = g.where(g.cmp("lt", x, 0.0), -1.0, 0.0, x.dtype)
    return g.where(g.cmp("gt", x, 0.0), 1.0, neg, x.dtype)


@rule("softshrink")
def _softshrink(g: PrimGraph, a: dict) -> Value:
    x, lam = a["self"], float(a.get("lambd", 0.5))
    inner = g.where(g.cmp("lt", x, -lam), g.binary("add", x, lam), 0.0, x.dtype)
    return g.where(g.cmp("gt", x, lam), g.binary("sub", x, lam), inner, x.dtype)


@rule("hypot")
def _hypot(g: PrimGraph, a: dict) -> Value:
    """sqrt(x^2 + y^2) as hi * sqrt(1 + (lo/hi)^2): squaring fp32 values above ~1.8e19 would
    overflow where torch's hypot does not; equal magnitudes (inf and inf too) are hi * sqrt 2."""
    x, y = g.unary("abs", a["self"]), g.unary("abs", a["other"])
    hi, lo = g.binary("max", x, y), g.binary("min", x, y)
    r = g.binary("div", lo, hi)
    scaled_hi = g.binary("mul", hi, g.unary("sqrt", g.binary("add", g.binary("mul", r, r), 1.0)))
    out = g.where(g.cmp("eq", lo, hi), g.binary("mul", hi, math.sqrt(2.0)), scaled_hi, hi.dtype)
    return g.where(g.cmp("eq", hi, 0.0), 0.0, out, hi.dtype)


def _logaddexp(g: PrimGraph, a: dict, base2: bool) -> Value:
    """max(x, y) + log(1 + exp(-|x - y|)) (in base 2 for logaddexp2): never exp of a large
    value; equal operands (both -inf or +inf too, where x - y is NaN) give x + log(2)."""
    x, y = a["self"], a["other"]
    k = math.log(2.0) if base2 else 1.0
    d = g.unary("abs", g.binary("sub", x, y))
    soft = g.unary("log", g.binary("add", g.unary("exp", g.binary("mul", d, -k)), 1.0))
    out = g.binary("add", g.binary("max", x, y), g.binary("mul", soft, 1.0 / k) if base2 else soft)
    return g.where(g.cmp("eq", x, y), g.binary("add", x, 1.0 if base2 else math.log(2.0)), out, out.dtype)


RULES["logaddexp"] = lambda g, a: _logaddexp(g, a, base2=False)
RULES["logaddexp2"] = lambda g, a: _logaddexp(g, a, base2=True)


@rule("glu")
def _glu(g: PrimGraph, a: dict) -> Value:
    """F.glu(x, dim): the first half of ``dim`` times the sigmoid of the second (two windows
    of the input, as ``x.chunk(2, dim)`` reads them)."""
    x, dim = a["self"], int(a.get("dim", -1))
    h = x.shape[dim % len(x.shape)] // 2
    return g.binary("mul", slice_of(g, x, dim, 0, h), g.unary("sigmoid", slice_of(g, x, dim, h, 2 * h)))


@rule("xlogy")
def _xlogy(g: PrimGraph, a: dict) -> Value:
    x, y = a["self"], a["other"]
    prod = g.binary("mul", x, g.unary("log", y))
    if isinstance(x, Value) and g.const_value(x) is None:
        return g.where(g.cmp("eq", x, 0.0), 0.0, prod)
    return prod


def power(g: PrimGraph, x: Value, p: float) -> Value:
    """x ** p for the exponents the DSL can express exactly enough."""
    if p == 0:
        return g.const(1.0, x.shape, x.dtype)
    if p == int(p) and 1 <= abs(p) <= 8:
        n = int(abs(p))
        out, base = None, x
        while n:  # square-and-multiply
            if n & 1:
                out = base if out is None else g.binary("mul", out, base)
            n >>= 1
            if n:
                base = g.binary("mul", base, base)
        assert out is not None
        return out if p > 0 else g.unary("reciprocal", out)
    if p == 0.5:
        return g.unary("sqrt", x)
    if p == -0.5:
        return g.unary("rsqrt", x)
    if p * 2 == int(p * 2) and abs(p) <= 8.5:  # half-integer: x^n * sqrt(x)
        whole = power(g, x, math.floor(abs(p)))
        out = g.binary("mul", whole, g.unary("sqrt", x))
        return out if p > 0 else g.unary("reciprocal", out)
    raise Unsupported(f"x ** {p} (a fractional exponent of a possibly negative base) has no "
                      "exact DSL form")


#: ops whose result is >= 0 (or NaN) whatever their operands; and those that keep it so
_NONNEG_ALWAYS = frozenset({"exp", "sigmoid", "abs", "relu", "sqrt", "rsqrt", "ind"})
_NONNEG_IF_ALL = frozenset({"add", "mul", "div", "min", "reciprocal", "where"})


def nonnegative(g: PrimGraph, v: Value, depth: int = 0) -> bool:
    """Is ``v`` provably >= 0 or NaN for every input (``abs(x) + 0.1``, ``exp(x) * y**2``)?"""
    op = g.op(v)
    if op in ("const", "scalar"):
        return g.const_value(v) >= 0
    if op in _NONNEG_ALWAYS:
        return True
    if depth > 32 or op not in _NONNEG_IF_ALL | {"max", "view", "expand"}:
        return False
    args = [g.value(n) for n in g.g.nodes[v.node]["args"]]
    if op == "mul" and args[0].node == args[1].node:
        return True  # a square
    if op == "where":
        args = args[1:]
    kids = [nonnegative(g, a, depth + 1) for a in args]
    return any(kids) if op == "max" else all(kids)


def _tensor_power(g: PrimGraph, x: Value, y: Value) -> Value:
    """``x ** y`` for a tensor exponent: ``exp(y log x)``, exact in torch's sense only for a
    base that cannot be negative (a negative base needs the exponent's parity); ``x ** 0``
    and ``1 ** y`` are 1 even for NaN / inf operands, as in torch."""
    if not nonnegative(g, x):
        raise Unsupported("x ** y with a tensor exponent and a base that may be negative has "
                          "no exact DSL form (the sign of the result depends on whether y is "
                          "an odd integer)")
    r = g.unary("exp", g.binary("mul", y, g.unary("log", x)))
    r = g.where(g.cmp("eq", x, 1.0), 1.0, r)
    return g.where(g.cmp("eq", y, 0.0), 1.0, r)


@rule("pow")
def _pow(g: PrimGraph, a: dict) -> Value:
    base, exp_ = a["self"], a["exponent"]
    if isinstance(exp_, Value):
        c = g.const_value(exp_)
        if c is None:
            if isinstance(base, Value):
                return _tensor_power(g, base, exp_)
            b = float(base)
            if b <= 0:
                raise Unsupported(f"{b} ** y with a non-positive base has no DSL form")
            return g.unary("exp", g.binary("mul", exp_, math.log(b)))
        exp_ = c
    if not isinstance(base, Value):
        return g.const(float(base) ** float(exp_))
    return power(g, base, float(exp_))


@rule("float_power")
def _float_power(g: PrimGraph, a: dict) -> Value:
    raise Unsupported("float_power computes in float64, which the DSL does not have")


# ---------------------------------------------------------------- logical ops on masks
@rule("logical_not", "bitwise_not")
def _not(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    if not x.is_mask:
        raise Unsupported("bitwise operations on integers have no DSL form")
    return g.logical_not(x)


def _mask_args(g: PrimGraph, a: dict) -> tuple[Value, Value]:
    x, y = a["self"], a["other"]
    if not isinstance(y, Value):
        y = g.const(float(y), (), torch.bool)
    for v in (x, y):
        if not v.is_mask:
            raise Unsupported("logical/bitwise operations on non-bool tensors have no DSL form")
    return g.as_float(x), g.as_float(y)


@rule("logical_and", "bitwise_and", "__and__")
def _and(g: PrimGraph, a: dict) -> Value:
    x, y = _mask_args(g, a)
    return g.cmp("gt", g.binary("mul", x, y), 0.5)


@rule("logical_or", "bitwise_or", "__or__")
def _or(g: PrimGraph, a: dict) -> Value:
    x, y = _mask_args(g, a)
    return g.cmp("gt", g.binary("max", x, y), 0.5)


@rule("logical_xor", "bitwise_xor", "__xor__")
def _xor(g: PrimGraph, a: dict) -> Value:
    x, y = _mask_args(g, a)
    return g.cmp("ne", x, y)


# ---------------------------------------------------------------- triangles (causal masks)
def _triangle(g: PrimGraph, a: dict, upper: bool) -> Value:
    """triu / tril over the last two dims: the elements with column - row >= k (<= k) kept,
    the others 0 (False): a comparison of the two indices (``position(t)`` against the row's
    ``row_position``), no mask tensor read."""
    x, k = a["self"], a.get("diagonal") or 0
    if len(x.shape) < 2:
        raise Unsupported("triu / tril of a tensor of fewer than 2 dims")
    if isinstance(k, Value):
        raise Unsupported("triu / tril with a diagonal that is a tensor")
    keep = g.cmp("ge" if upper else "le", g.binary("sub", g.position(x, -1), g.position(x, -2)), float(k))
    if not x.is_mask:
        return g.where(keep, x, 0.0)
    c = g.const_value(x)
    if c is not None:  # a triangle of ones: the comparison itself (or all False)
        return keep if c else x
    return g.cmp("gt", g.binary("mul", g.as_float(x), g.as_float(keep)), 0.5)


@rule("triu")
def _triu(g: PrimGraph, a: dict) -> Value:
    return _triangle(g, a, True)


@rule("tril")
def _tril(g: PrimGraph, a: dict) -> Value:
    return _triangle(g, a, False)


__all__ = ["FORMULAS", "RULES", "elu", "gelu", "power", "scaled", "softplus"]
