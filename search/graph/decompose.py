"""ATen graph -> primitive graph: one decomposition rule per ATen op.

Each rule receives the call's arguments bound by schema name (tensors already turned into
:class:`~.prims.Value`) and builds primitives. Composite activations are written the way
the DSL computes them (``expm1(a)`` as ``exp(a) - 1``, ``log1p(a)`` as ``log(1 + a)``,
``hardswish`` with ``maximum``/``minimum``...), normalisations as reductions plus
elementwise work (softmax: max, exp, sum, divide; layer norm: mean, centred second moment,
``rsqrt``). An op without a rule raises :class:`~.trace.Unsupported` naming it and why.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from .prims import BINARY, UNARY, PrimGraph, Value
from .trace import AtenGraph, Ref, Unsupported

Rule = Callable[[PrimGraph, dict[str, Any]], Any]
RULES: dict[str, Rule] = {}

#: ops the frontend knowingly does not handle, with the reason given to the user
REASONS: dict[str, str] = {}
for _n in ("argmax", "argmin", "sort", "topk", "kthvalue", "median", "mode", "nonzero",
           "unique", "_unique2"):
    REASONS[_n] = "index/sorting results have no DSL form"
for _n in ("mm", "bmm", "addmm", "matmul", "linear", "addbmm", "baddbmm", "mv", "dot",
           "convolution", "_convolution", "conv2d", "einsum", "_scaled_dot_product_flash_attention"):
    REASONS[_n] = "matrix products run on the cube unit; the graph frontend writes vector kernels only"
for _n in ("adaptive_avg_pool2d", "_adaptive_avg_pool2d", "adaptive_max_pool2d",
           "_adaptive_avg_pool3d", "adaptive_max_pool3d", "fractional_max_pool2d",
           "max_unpool2d", "lp_pool2d"):
    REASONS[_n] = "adaptive/fractional pooling windows have no fixed kernel and stride"
for _n in ("cat", "stack", "slice", "select", "narrow", "index", "index_select", "gather",
           "scatter", "scatter_add", "flip", "roll", "constant_pad_nd", "pad", "repeat",
           "split", "split_with_sizes", "unbind", "chunk", "diagonal", "tril", "triu",
           "index_put", "masked_scatter", "take", "unfold", "as_strided", "embedding"):
    REASONS[_n] = "data movement (slicing, concatenation, indexing) has no DSL form"
for _n in ("nll_loss2d_forward", "multi_margin_loss", "multilabel_margin_loss_forward",
           "ctc_loss", "_ctc_loss"):
    REASONS[_n] = "this loss gathers by class index over spatial dims, which has no DSL form"
for _n in ("rand", "rand_like", "randn", "randn_like", "bernoulli", "dropout", "native_dropout",
           "randint", "normal", "uniform", "rrelu_with_noise", "exponential"):
    REASONS[_n] = "random numbers cannot be reproduced by a kernel"
for _n in ("_local_scalar_dense", "item"):
    REASONS[_n] = "reading a tensor value on the host (.item()) makes the graph data-dependent"


def rule(*names: str) -> Callable[[Rule], Rule]:
    def deco(fn: Rule) -> Rule:
        for n in names:
            RULES[n] = fn
        return fn
    return deco


# ---------------------------------------------------------------- arithmetic
@rule("add")
def _add(g: PrimGraph, a: dict) -> Value:
    other = a["other"]
    alpha = a.get("alpha", 1)
    if alpha not in (None, 1):
        other = g.binary("mul", other, float(alpha))
    return g.binary("add", a["self"], other)


@rule("sub")
def _sub(g: PrimGraph, a: dict) -> Value:
    other = a["other"]
    alpha = a.get("alpha", 1)
    if alpha not in (None, 1):
        other = g.binary("mul", other, float(alpha))
    return g.binary("sub", a["self"], other)


@rule("rsub")
def _rsub(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    alpha = a.get("alpha", 1)
    if alpha not in (None, 1):
        x = g.binary("mul", x, float(alpha))
    return g.binary("sub", a["other"], x)


@rule("mul")
def _mul(g: PrimGraph, a: dict) -> Value:
    return g.binary("mul", a["self"], a["other"])


@rule("div", "true_divide")
def _div(g: PrimGraph, a: dict) -> Value:
    mode = a.get("rounding_mode")
    if mode is not None:
        raise Unsupported(f"division with rounding_mode={mode!r} (floor/trunc) has no DSL form")
    return g.binary("div", a["self"], a["other"])


@rule("maximum", "fmax", "max_other")
def _maximum(g: PrimGraph, a: dict) -> Value:
    return g.binary("max", a["self"], a["other"])


@rule("minimum", "fmin", "min_other")
def _minimum(g: PrimGraph, a: dict) -> Value:
    return g.binary("min", a["self"], a["other"])


for _op in ("exp", "log", "abs", "sqrt", "rsqrt", "reciprocal", "relu", "neg", "sigmoid",
            "tanh", "erf"):
    RULES[_op] = (lambda op: lambda g, a: g.unary(op, a["self"]))(_op)
RULES["negative"] = RULES["neg"]
RULES["absolute"] = RULES["abs"]


@rule("expm1")
def _expm1(g: PrimGraph, a: dict) -> Value:
    return g.binary("sub", g.unary("exp", a["self"]), 1.0)


@rule("log1p")
def _log1p(g: PrimGraph, a: dict) -> Value:
    return g.unary("log", g.binary("add", 1.0, a["self"]))


@rule("log2")
def _log2(g: PrimGraph, a: dict) -> Value:
    return g.binary("mul", g.unary("log", a["self"]), 1.0 / math.log(2.0))


@rule("log10")
def _log10(g: PrimGraph, a: dict) -> Value:
    return g.binary("mul", g.unary("log", a["self"]), 1.0 / math.log(10.0))


@rule("exp2")
def _exp2(g: PrimGraph, a: dict) -> Value:
    return g.unary("exp", g.binary("mul", a["self"], math.log(2.0)))


@rule("cosh")
def _cosh(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    return g.binary("mul", g.binary("add", g.unary("exp", x), g.unary("exp", g.unary("neg", x))),
                    0.5)


@rule("sinh")
def _sinh(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    return g.binary("mul", g.binary("sub", g.unary("exp", x), g.unary("exp", g.unary("neg", x))),
                    0.5)


@rule("square")
def _square(g: PrimGraph, a: dict) -> Value:
    return g.binary("mul", a["self"], a["self"])


@rule("erfc")
def _erfc(g: PrimGraph, a: dict) -> Value:
    return g.binary("sub", 1.0, g.unary("erf", a["self"]))


@rule("sign", "sgn")
def _sign(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    neg = g.where(g.cmp("lt", x, 0.0), -1.0, 0.0, x.dtype)
    return g.where(g.cmp("gt", x, 0.0), 1.0, neg, x.dtype)


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


@rule("pow")
def _pow(g: PrimGraph, a: dict) -> Value:
    base, exp_ = a["self"], a["exponent"]
    if isinstance(exp_, Value):
        c = g.const_value(exp_)
        if c is None:
            if isinstance(base, Value):
                raise Unsupported("x ** y with a tensor exponent has no exact DSL form")
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


# ---------------------------------------------------------------- activations
def _clamp(g: PrimGraph, x: Value, lo: Any, hi: Any) -> Value:
    if lo is not None:
        x = g.binary("max", x, lo)
    if hi is not None:
        x = g.binary("min", x, hi)
    return x


@rule("clamp", "clip")
def _clamp_rule(g: PrimGraph, a: dict) -> Value:
    return _clamp(g, a["self"], a.get("min"), a.get("max"))


@rule("clamp_min")
def _clamp_min(g: PrimGraph, a: dict) -> Value:
    return _clamp(g, a["self"], a["min"], None)


@rule("clamp_max")
def _clamp_max(g: PrimGraph, a: dict) -> Value:
    return _clamp(g, a["self"], None, a["max"])


@rule("hardtanh")
def _hardtanh(g: PrimGraph, a: dict) -> Value:
    return _clamp(g, a["self"], a.get("min_val", -1.0), a.get("max_val", 1.0))


@rule("relu6")
def _relu6(g: PrimGraph, a: dict) -> Value:
    return _clamp(g, a["self"], 0.0, 6.0)


@rule("threshold")
def _threshold(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    return g.where(g.cmp("gt", x, a["threshold"]), x, a["value"], x.dtype)


@rule("leaky_relu")
def _leaky_relu(g: PrimGraph, a: dict) -> Value:
    return g.leaky_relu(a["self"], float(a.get("negative_slope", 0.01)))


def elu(g: PrimGraph, x: Value, alpha: float, scale: float, input_scale: float) -> Value:
    pos = g.binary("mul", x, scale)
    e = g.binary("sub", g.unary("exp", g.binary("mul", x, input_scale)), 1.0)
    neg = g.binary("mul", e, alpha * scale)
    return g.where(g.cmp("gt", x, 0.0), pos, neg, x.dtype)


@rule("elu")
def _elu(g: PrimGraph, a: dict) -> Value:
    return elu(g, a["self"], float(a.get("alpha", 1.0)), float(a.get("scale", 1.0)),
               float(a.get("input_scale", 1.0)))


@rule("celu")
def _celu(g: PrimGraph, a: dict) -> Value:
    alpha = float(a.get("alpha", 1.0))
    return elu(g, a["self"], alpha, 1.0, 1.0 / alpha)


@rule("selu")
def _selu(g: PrimGraph, a: dict) -> Value:
    return elu(g, a["self"], 1.6732632423543772, 1.0507009873554805, 1.0)


def gelu(g: PrimGraph, x: Value, approximate: str) -> Value:
    if approximate == "tanh":
        cube = g.binary("mul", g.binary("mul", x, x), x)
        inner = g.binary("mul", g.binary("add", x, g.binary("mul", cube, 0.044715)),
                         0.7978845608028654)
        return g.binary("mul", g.binary("mul", x, 0.5), g.binary("add", g.unary("tanh", inner), 1.0))
    cdf = g.binary("add", g.unary("erf", g.binary("mul", x, 0.7071067811865476)), 1.0)
    return g.binary("mul", g.binary("mul", x, 0.5), cdf)


@rule("gelu")
def _gelu(g: PrimGraph, a: dict) -> Value:
    return gelu(g, a["self"], a.get("approximate") or "none")


@rule("silu")
def _silu(g: PrimGraph, a: dict) -> Value:
    return g.binary("mul", a["self"], g.unary("sigmoid", a["self"]))


def softplus(g: PrimGraph, x: Value, beta: float, threshold: float) -> Value:
    bx = g.binary("mul", x, beta)
    soft = g.unary("log", g.binary("add", g.unary("exp", bx), 1.0))
    if beta != 1.0:
        soft = g.binary("div", soft, beta)
    return g.where(g.cmp("gt", bx, threshold), x, soft, x.dtype)


@rule("softplus")
def _softplus(g: PrimGraph, a: dict) -> Value:
    return softplus(g, a["self"], float(a.get("beta", 1.0)), float(a.get("threshold", 20.0)))


@rule("mish")
def _mish(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    return g.binary("mul", x, g.unary("tanh", softplus(g, x, 1.0, 20.0)))


@rule("hardswish")
def _hardswish(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    return g.binary("div", g.binary("mul", x, _clamp(g, g.binary("add", x, 3.0), 0.0, 6.0)), 6.0)


@rule("hardsigmoid")
def _hardsigmoid(g: PrimGraph, a: dict) -> Value:
    return g.binary("div", _clamp(g, g.binary("add", a["self"], 3.0), 0.0, 6.0), 6.0)


@rule("log_sigmoid_forward")
def _log_sigmoid(g: PrimGraph, a: dict) -> list:
    x = a["self"]
    soft = g.unary("log", g.binary("add", g.unary("exp", g.unary("neg", g.unary("abs", x))), 1.0))
    return [g.binary("sub", g.binary("min", x, 0.0), soft), None]


@rule("log_sigmoid")
def _log_sigmoid1(g: PrimGraph, a: dict) -> Value:
    return _log_sigmoid(g, a)[0]


@rule("hardshrink")
def _hardshrink(g: PrimGraph, a: dict) -> Value:
    x, lam = a["self"], float(a.get("lambd", 0.5))
    return g.where(g.cmp("gt", g.unary("abs", x), lam), x, 0.0, x.dtype)


@rule("softshrink")
def _softshrink(g: PrimGraph, a: dict) -> Value:
    x, lam = a["self"], float(a.get("lambd", 0.5))
    inner = g.where(g.cmp("lt", x, -lam), g.binary("add", x, lam), 0.0, x.dtype)
    return g.where(g.cmp("gt", x, lam), g.binary("sub", x, lam), inner, x.dtype)


@rule("addcmul")
def _addcmul(g: PrimGraph, a: dict) -> Value:
    prod = g.binary("mul", a["tensor1"], a["tensor2"])
    value = a.get("value", 1)
    if value not in (None, 1):
        prod = g.binary("mul", prod, float(value))
    return g.binary("add", a["self"], prod)


@rule("addcdiv")
def _addcdiv(g: PrimGraph, a: dict) -> Value:
    q = g.binary("div", a["tensor1"], a["tensor2"])
    value = a.get("value", 1)
    if value not in (None, 1):
        q = g.binary("mul", q, float(value))
    return g.binary("add", a["self"], q)


@rule("lerp")
def _lerp(g: PrimGraph, a: dict) -> Value:
    x, end = a["self"], a["end"]
    return g.binary("add", x, g.binary("mul", a["weight"], g.binary("sub", end, x)))


@rule("xlogy")
def _xlogy(g: PrimGraph, a: dict) -> Value:
    x, y = a["self"], a["other"]
    prod = g.binary("mul", x, g.unary("log", y))
    if isinstance(x, Value) and g.const_value(x) is None:
        return g.where(g.cmp("eq", x, 0.0), 0.0, prod)
    return prod


# ---------------------------------------------------------------- comparisons and masks
for _op in ("lt", "gt", "le", "ge", "eq", "ne"):
    RULES[_op] = (lambda op: lambda g, a: g.cmp(op, a["self"], a["other"]))(_op)
RULES.update({"less": RULES["lt"], "greater": RULES["gt"], "less_equal": RULES["le"],
              "greater_equal": RULES["ge"], "not_equal": RULES["ne"]})


@rule("where")
def _where(g: PrimGraph, a: dict) -> Value:
    return g.where(a["condition"], a["self"], a["other"])


@rule("masked_fill")
def _masked_fill(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    return g.where(a["mask"], a["value"], x, x.dtype)


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


# ---------------------------------------------------------------- dtype and layout
def to_dtype(g: PrimGraph, x: Value, dtype: torch.dtype | None) -> Value:
    if dtype is None or dtype == x.dtype:
        return x
    if dtype == torch.bool:
        return g.cmp("ne", x, 0.0)
    if dtype.is_floating_point:
        if dtype == torch.float64:
            raise Unsupported("a cast to float64, which the DSL does not have")
        if x.is_mask:
            return g.as_float(x, dtype)
        return Value(x.node, x.shape, x.real, dtype)
    raise Unsupported(f"a cast to {str(dtype).replace('torch.', '')} (integer results are "
                      "not produced by the graph frontend)")


@rule("_to_copy", "to", "_to_dtype", "type", "convert_element_type")
def _to_copy(g: PrimGraph, a: dict) -> Value:
    return to_dtype(g, a["self"], a.get("dtype"))


@rule("type_as")
def _type_as(g: PrimGraph, a: dict) -> Value:
    return to_dtype(g, a["self"], a["other"].dtype)


@rule("clone", "contiguous", "alias", "detach", "lift_fresh", "lift_fresh_copy", "positive",
      "_conj", "conj", "resolve_conj", "resolve_neg", "dropout_eval", "_unsafe_view_copy")
def _identity(g: PrimGraph, a: dict) -> Value:
    return a["self"]


@rule("copy")
def _copy(g: PrimGraph, a: dict) -> Value:
    x, src = a["self"], a["src"]
    if not isinstance(src, Value):
        return g.const(float(src), x.shape, x.dtype)
    src = to_dtype(g, src, x.dtype)
    return src if src.shape == x.shape else g.expand(src, x.shape)


@rule("view", "_unsafe_view", "reshape", "_reshape_alias", "view_copy", "reshape_as",
      "view_as")
def _view(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    if "other" in a and isinstance(a.get("other"), Value):
        shape = a["other"].shape
    else:
        shape = list(a.get("size") or a.get("shape") or [])
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        shape = [math.prod(x.shape) // max(known, 1) if s == -1 else s for s in shape]
    return g.view(x, shape)


@rule("unsqueeze")
def _unsqueeze(g: PrimGraph, a: dict) -> Value:
    x, d = a["self"], a["dim"]
    rank = len(x.shape) + 1
    d = d % rank
    return g.view(x, x.shape[:d] + (1,) + x.shape[d:])


@rule("squeeze")
def _squeeze(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    dims = a.get("dim")
    if dims is None:
        return g.view(x, [s for s in x.shape if s != 1])
    if isinstance(dims, int):
        dims = [dims]
    rank = len(x.shape)
    drop = {d % rank for d in dims if rank and x.shape[d % rank] == 1}
    return g.view(x, [s for i, s in enumerate(x.shape) if i not in drop])


@rule("flatten")
def _flatten(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    rank = len(x.shape)
    if rank == 0:
        return g.view(x, [1])
    s, e = a.get("start_dim", 0) % rank, a.get("end_dim", -1) % rank
    return g.view(x, x.shape[:s] + (math.prod(x.shape[s:e + 1]),) + x.shape[e + 1:])


@rule("unflatten")
def _unflatten(g: PrimGraph, a: dict) -> Value:
    x, d, sizes = a["self"], a["dim"], list(a["sizes"])
    d %= len(x.shape)
    if -1 in sizes:
        known = math.prod(s for s in sizes if s != -1)
        sizes = [x.shape[d] // known if s == -1 else s for s in sizes]
    return g.view(x, x.shape[:d] + tuple(sizes) + x.shape[d + 1:])


@rule("expand", "broadcast_to", "expand_copy")
def _expand(g: PrimGraph, a: dict) -> Value:
    return g.expand(a["self"], a.get("size") or a.get("shape"))


@rule("expand_as")
def _expand_as(g: PrimGraph, a: dict) -> Value:
    return g.expand(a["self"], a["other"].shape)


def _permute(g: PrimGraph, x: Value, perm: list[int]) -> Value:
    rank = len(x.shape)
    perm = [p % rank for p in perm]
    moved = [p for p in perm if x.shape[p] != 1]
    if moved != sorted(moved):
        raise Unsupported(f"a permutation {perm} of a {list(x.shape)} tensor reorders data "
                          "(transposed layouts are not supported)")
    return g.view(x, [x.shape[p] for p in perm])


@rule("permute")
def _permute_rule(g: PrimGraph, a: dict) -> Value:
    return _permute(g, a["self"], list(a["dims"]))


@rule("transpose", "swapaxes", "swapdims")
def _transpose(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    rank = len(x.shape)
    perm = list(range(rank))
    d0, d1 = a["dim0"] % rank, a["dim1"] % rank
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return _permute(g, x, perm)


@rule("t")
def _t(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    return _permute(g, x, list(range(len(x.shape)))[::-1])


# ---------------------------------------------------------------- constants
def _fill_value(a: dict) -> float:
    v = a.get("fill_value", a.get("value"))
    if isinstance(v, Value):
        raise Unsupported("a tensor filled from another tensor's value")
    return float(v)


@rule("full", "new_full")
def _full(g: PrimGraph, a: dict) -> Value:
    return g.const(_fill_value(a), tuple(a["size"]), a.get("dtype") or torch.float32)


@rule("full_like")
def _full_like(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    return g.const(_fill_value(a), x.shape, a.get("dtype") or x.dtype)


RULES["zeros_like"] = lambda g, a: g.const(0.0, a["self"].shape, a.get("dtype") or a["self"].dtype)
RULES["ones_like"] = lambda g, a: g.const(1.0, a["self"].shape, a.get("dtype") or a["self"].dtype)
RULES["zeros"] = lambda g, a: g.const(0.0, tuple(a["size"]), a.get("dtype") or torch.float32)
RULES["ones"] = lambda g, a: g.const(1.0, tuple(a["size"]), a.get("dtype") or torch.float32)
RULES["new_zeros"] = lambda g, a: g.const(0.0, tuple(a["size"]), a.get("dtype") or a["self"].dtype)
RULES["new_ones"] = lambda g, a: g.const(1.0, tuple(a["size"]), a.get("dtype") or a["self"].dtype)


@rule("scalar_tensor")
def _scalar_tensor(g: PrimGraph, a: dict) -> Value:
    return g.const(float(a["s"]), (), a.get("dtype") or torch.float32)


@rule("fill")
def _fill(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    return g.const(_fill_value(a), x.shape, x.dtype)


@rule("zero")
def _zero(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    return g.const(0.0, x.shape, x.dtype)


@rule("empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided")
def _empty(g: PrimGraph, a: dict) -> None:
    return None  # uninitialised: an error only if something reads it


# ---------------------------------------------------------------- reductions
def _dims(x: Value, dims: Any) -> list[int]:
    if dims is None:
        return list(range(len(x.shape)))
    if isinstance(dims, int):
        return [dims]
    return list(dims) or list(range(len(x.shape)))


def _keep(g: PrimGraph, r: Value, x: Value, dims: list[int], keepdim: bool) -> Value:
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


@rule("sum")
def _sum(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    return g.reduce("sum", x, _dims(x, a.get("dim")), bool(a.get("keepdim", False)))


@rule("mean")
def _mean(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    return mean(g, x, _dims(x, a.get("dim")), bool(a.get("keepdim", False)))


@rule("amax")
def _amax(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    return g.reduce("max", x, _dims(x, a.get("dim")), bool(a.get("keepdim", False)))


@rule("amin")
def _amin(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    return g.reduce("min", x, _dims(x, a.get("dim")), bool(a.get("keepdim", False)))


def _max_min(red: str) -> Rule:
    def fn(g: PrimGraph, a: dict) -> Any:
        x = a["self"]
        if "other" in a and a.get("other") is not None:
            return g.binary(red, x, a["other"])
        if "dim" not in a:
            return g.reduce(red, x, None, False)
        return [g.reduce(red, x, _dims(x, a["dim"]), bool(a.get("keepdim", False))), None]
    return fn


RULES["max"] = _max_min("max")
RULES["min"] = _max_min("min")


@rule("prod")
def _prod(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    return g.reduce("prod", x, _dims(x, a.get("dim")), bool(a.get("keepdim", False)))


@rule("logsumexp")
def _logsumexp(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    dims = _dims(x, a.get("dim"))
    m = g.reduce("max", x, dims, True)
    s = g.reduce("sum", g.unary("exp", g.binary("sub", x, m)), dims, True)
    return _keep(g, g.binary("add", g.unary("log", s), m), x, dims, bool(a.get("keepdim", False)))


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


@rule("var")
def _var(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    dims = _dims(x, a.get("dim"))
    v, _ = var(g, x, dims, _correction(a), True)
    return _keep(g, v, x, dims, bool(a.get("keepdim", False)))


@rule("std")
def _std(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    dims = _dims(x, a.get("dim"))
    v, _ = var(g, x, dims, _correction(a), True)
    return _keep(g, g.unary("sqrt", v), x, dims, bool(a.get("keepdim", False)))


@rule("var_mean")
def _var_mean(g: PrimGraph, a: dict) -> list:
    x = a["self"]
    dims = _dims(x, a.get("dim"))
    keep = bool(a.get("keepdim", False))
    v, m = var(g, x, dims, _correction(a), True)
    return [_keep(g, v, x, dims, keep), _keep(g, m, x, dims, keep)]


@rule("std_mean")
def _std_mean(g: PrimGraph, a: dict) -> list:
    x = a["self"]
    dims = _dims(x, a.get("dim"))
    keep = bool(a.get("keepdim", False))
    v, m = var(g, x, dims, _correction(a), True)
    return [_keep(g, g.unary("sqrt", v), x, dims, keep), _keep(g, m, x, dims, keep)]


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


@rule("linalg_vector_norm")
def _linalg_vector_norm(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    return vector_norm(g, x, float(a.get("ord", 2)), _dims(x, a.get("dim")),
                       bool(a.get("keepdim", False)))


@rule("norm")
def _norm(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    p = a.get("p")
    p = 2.0 if p is None else (float(p) if not isinstance(p, str) else 2.0)
    return vector_norm(g, x, p, _dims(x, a.get("dim")), bool(a.get("keepdim", False)))


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
    return [out, m, rstd]


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
    return [out, rstd] if "_fused" in str(a.get("__op__", "")) else out


def _channel(g: PrimGraph, w: Value, rank: int) -> Value:
    """A per-channel [C] vector shaped to broadcast against [N, C, ...]."""
    return g.view(w, list(w.shape) + [1] * (rank - 2))


@rule("native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_functional",
      "_native_batch_norm_legit_no_training")
def _batch_norm(g: PrimGraph, a: dict) -> list:
    x = a["input"]
    rank = len(x.shape)
    training = a.get("training", False) if "training" in a else False
    rm, rv = a.get("running_mean"), a.get("running_var")
    eps = float(a["eps"])
    if training or rm is None:
        dims = [0] + list(range(2, rank))
        v, m = var(g, x, dims, 0.0, True)
        invstd = g.unary("rsqrt", g.binary("add", v, eps))
        stats = [g.view(m, [x.shape[1]]), g.view(invstd, [x.shape[1]])]
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
    return [out, g.view(m, [n, groups]), g.view(rstd, [n, groups])]


# ---------------------------------------------------------------- scans
def _scan_arg(g: PrimGraph, a: dict) -> Value:
    return to_dtype(g, a["self"], a.get("dtype"))


@rule("cumsum")
def _cumsum(g: PrimGraph, a: dict) -> Value:
    return g.scan("sum", _scan_arg(g, a), int(a["dim"]))


@rule("cumprod")
def _cumprod(g: PrimGraph, a: dict) -> Value:
    return g.scan("prod", _scan_arg(g, a), int(a["dim"]))


@rule("cummax")
def _cummax(g: PrimGraph, a: dict) -> list:
    return [g.scan("max", a["self"], int(a["dim"])), None]


@rule("cummin")
def _cummin(g: PrimGraph, a: dict) -> list:
    x = a["self"]
    return [g.unary("neg", g.scan("max", g.unary("neg", x), int(a["dim"]))), None]


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
    """Only a reversed scan, flip(cumsum(flip(x, d), d), d) = sum(x, d) - cumsum(x, d) + x,
    is supported (and flip(flip(x)) = x); any other flip is data movement."""
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
            red = g.attr(x, "red")
            if red != "sum":
                raise Unsupported(f"a reversed cum{red} (flip + scan + flip) has no exact "
                                  "DSL form; only a reversed cumsum is rewritten")
            total = g.reduce("sum", v, [dims[0]], True)
            return g.binary("add", g.binary("sub", total, g.scan("sum", v, dims[0])), v)
    return g.marker("flip", x, x.shape, dims=dims)


@rule("slice")
def _slice(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    rank = len(x.shape)
    dim = int(a.get("dim", 0)) % rank
    n = x.shape[dim]
    start = a.get("start")
    end = a.get("end")
    step = int(a.get("step") or 1)
    start = 0 if start is None else int(start)
    end = n if end is None else int(end)
    start = max(0, start + n if start < 0 else start)
    end = min(n, end + n if end < 0 else end)
    if start == 0 and end >= n and step == 1:
        return x
    size = max(0, (end - start + step - 1) // step)
    shape = x.shape[:dim] + (size,) + x.shape[dim + 1:]
    return g.marker("slice", x, shape, dim=dim, start=start, end=end, step=step)


@rule("narrow")
def _narrow(g: PrimGraph, a: dict) -> Value:
    start, length = int(a["start"]), int(a["length"])
    return _slice(g, {"self": a["self"], "dim": a["dim"], "start": start,
                      "end": start + length, "step": 1})


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
    if a.get("ceil_mode"):
        raise Unsupported("pooling with ceil_mode=True (partial windows at the end) has no "
                          "DSL form")
    if any(d != 1 for d in dil):
        raise Unsupported(f"pooling with dilation {dil} has no DSL form")
    rank = len(x.shape)
    out = list(x.shape)
    for i in range(n):
        d = rank - n + i
        out[d] = (x.shape[d] + 2 * p[i] - k[i]) // s[i] + 1
    keep = [i for i in range(n) if not (k[i] == 1 and s[i] == 1 and p[i] == 0)]
    if keep and keep != list(range(keep[0], n)):
        raise Unsupported(f"pooling with kernel {k} pools non-adjacent dims")
    k, s, p = ([k[i] for i in keep], [s[i] for i in keep], [p[i] for i in keep])
    if not k:
        return x
    if len(set(k)) > 1 or len(set(s)) > 1 or len(set(p)) > 1:
        raise Unsupported(f"pooling with kernel {k}, stride {s}, padding {p}: the DSL's windows "
                          "loop takes one kernel, stride and padding for every pooled dim")
    if p[0] * 2 > k[0]:
        raise Unsupported(f"pooling with padding {p[0]} > kernel {k[0]} / 2")
    return g.pool(red, x, k, s, p, tuple(out))


@rule("max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
      "max_pool2d_with_indices", "max_pool3d_with_indices")
def _max_pool(g: PrimGraph, a: dict) -> list:
    return [_pool(g, a, "max"), None]


@rule("avg_pool1d", "avg_pool2d", "avg_pool3d")
def _avg_pool(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    out = _pool(g, a, "sum")
    if out is x:
        return x
    k = g.attr(out, "kernel")
    pad = g.attr(out, "padding")[0]
    if not a.get("count_include_pad", True) and pad > 0:
        raise Unsupported("avg pooling with count_include_pad=False and padding > 0 (the divisor "
                          "changes at the borders) has no DSL form")
    div = a.get("divisor_override") or math.prod(k)
    return g.binary("div", out, float(div))


# ---------------------------------------------------------------- losses
def _loss_reduce(g: PrimGraph, v: Value, reduction: Any) -> Value:
    r = int(reduction if reduction is not None else 1)
    if r == 0:
        return v
    if r == 2:
        return g.reduce("sum", v, None, False)
    return mean(g, v, list(range(len(v.shape))), False)


@rule("mse_loss")
def _mse_loss(g: PrimGraph, a: dict) -> Value:
    d = g.binary("sub", a["self"], a["target"])
    return _loss_reduce(g, g.binary("mul", d, d), a.get("reduction"))


@rule("l1_loss")
def _l1_loss(g: PrimGraph, a: dict) -> Value:
    return _loss_reduce(g, g.unary("abs", g.binary("sub", a["self"], a["target"])),
                        a.get("reduction"))


@rule("smooth_l1_loss")
def _smooth_l1(g: PrimGraph, a: dict) -> Value:
    d = g.unary("abs", g.binary("sub", a["self"], a["target"]))
    beta = float(a.get("beta", 1.0))
    if beta == 0:
        return _loss_reduce(g, d, a.get("reduction"))
    quad = g.binary("div", g.binary("mul", g.binary("mul", d, d), 0.5), beta)
    v = g.where(g.cmp("lt", d, beta), quad, g.binary("sub", d, 0.5 * beta), d.dtype)
    return _loss_reduce(g, v, a.get("reduction"))


@rule("huber_loss")
def _huber(g: PrimGraph, a: dict) -> Value:
    d = g.unary("abs", g.binary("sub", a["self"], a["target"]))
    delta = float(a.get("delta", 1.0))
    quad = g.binary("mul", g.binary("mul", d, d), 0.5)
    lin = g.binary("mul", g.binary("sub", d, 0.5 * delta), delta)
    return _loss_reduce(g, g.where(g.cmp("lt", d, delta), quad, lin, d.dtype), a.get("reduction"))


@rule("soft_margin_loss")
def _soft_margin(g: PrimGraph, a: dict) -> Value:
    z = g.binary("mul", g.unary("neg", a["target"]), a["self"])
    v = g.unary("log", g.binary("add", g.unary("exp", z), 1.0))
    return _loss_reduce(g, v, a.get("reduction"))


@rule("binary_cross_entropy")
def _bce(g: PrimGraph, a: dict) -> Value:
    x, t = a["self"], a["target"]
    lx = g.binary("max", g.unary("log", x), -100.0)
    l1x = g.binary("max", g.unary("log", g.binary("sub", 1.0, x)), -100.0)
    v = g.unary("neg", g.binary("add", g.binary("mul", t, lx),
                                g.binary("mul", g.binary("sub", 1.0, t), l1x)))
    if a.get("weight") is not None:
        v = g.binary("mul", v, a["weight"])
    return _loss_reduce(g, v, a.get("reduction"))


def pick_through(g: PrimGraph, v: Value, idx: Value) -> Value:
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
        return g.pick(v, idx)
    if op == "view" and args[0].shape == v.shape:
        return pick_through(g, args[0], idx)
    sub = [pick_through(g, x, idx) for x in args]
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
    if not isinstance(target, Value) or g.op(target) != "index":
        raise Unsupported("nll_loss whose targets are not an integer task input")
    picked = g.unary("neg", pick_through(g, x, target))
    return [_loss_reduce(g, picked, a.get("reduction")), None]


# ---------------------------------------------------------------- driver
def decompose(ag: AtenGraph, task_inputs: list[Any]) -> PrimGraph:
    """Build the primitive graph of a traced reference (outputs in ``PrimGraph.outputs``)."""
    g = PrimGraph()
    values: dict[str, list[Any]] = {}
    origin: dict[str, str] = {}
    failed: dict[str, Unsupported] = {}

    def resolve(x: Any, consumer: str) -> Any:
        if isinstance(x, Ref):
            if x.node in failed:  # an op that could not be decomposed is read after all
                raise failed[x.node]
            vals = values.get(x.node)
            v = vals[x.index] if vals is not None and x.index < len(vals) else None
            if v is None:
                what = origin.get(x.node, x.node)
                raise Unsupported(f"{consumer} reads output {x.index} of {what}, which the "
                                  "graph frontend does not compute (an index, an uninitialised "
                                  "buffer or a statistic it has no form for)")
            return v
        if isinstance(x, (list, tuple)):
            return type(x)(resolve(y, consumer) for y in x)
        return x

    graph = ag.graph
    for n in graph.nodes:
        d = graph.nodes[n]
        kind = d["kind"]
        if kind == "input":
            spec = task_inputs[d["index"]]
            shape, dtype = d["outputs"][0]
            if dtype in (torch.int64, torch.int32):
                values[n] = [g.index(d["index"], spec.name, shape, dtype)]
                continue
            if dtype != torch.bool and not dtype.is_floating_point:
                values[n] = [None]
                origin[n] = f"the {str(dtype).replace('torch.', '')} input {spec.name!r} " \
                            "(integer tensors are not supported)"
                continue
            if dtype == torch.float64:
                values[n] = [None]
                origin[n] = f"the float64 input {spec.name!r} (float64 has no DSL type)"
                continue
            values[n] = [g.input(d["index"], spec.name, shape, dtype)]
        elif kind == "scalar_input":
            values[n] = [g.scalar(d["index"], d["name"], d["value"])] if d["outputs"] else []
        elif kind == "const":
            t = d["value"]
            flat = t.reshape(-1)
            if t.numel() >= 1 and bool(torch.all(flat == flat[0])):
                values[n] = [g.const(float(flat[0]), tuple(t.shape), t.dtype)]
            else:
                values[n] = [None]
                origin[n] = f"a constant tensor of shape {list(t.shape)} with varying values"
        elif kind == "param":
            shape, dtype = d["outputs"][0]
            if d.get("value") is not None:
                values[n] = [g.const(float(d["value"]), shape, dtype)]
            else:
                values[n] = [None]
                label = f"module parameter {d['name']!r}" if d.get("name") else "a module tensor"
                origin[n] = (f"{label} of shape {list(shape)} (a kernel can only read the task's "
                             "inputs; a parameter with varying values would be an extra input)")
        else:
            origin[n] = d["name"]
            try:
                values[n] = _apply(g, d, resolve, n)
            except Unsupported as e:  # only an error if a live value reads it (e.g. not
                failed[n] = e        # BatchNorm's running-statistics updates)
                values[n] = [None] * max(1, len(d["outputs"]))
    outs = []
    for i, ref in enumerate(ag.outputs):
        v = resolve(ref, f"output {i}")
        outs.append(v)
    g.outputs = outs
    return g


def _apply(g: PrimGraph, d: dict, resolve: Callable[[Any, str], Any], n: str) -> list[Any]:
    func = d["target"]
    name = d["name"]
    packet = func.overloadpacket.__name__
    base = packet[:-1] if d.get("mutates") and packet.endswith("_") and packet != "_" else packet
    if packet in ("copy_",):
        base = "copy"
    fn = RULES.get(base)
    if fn is None:
        base2 = base.lstrip("_")
        fn = RULES.get(base2)
    if fn is None:
        reason = REASONS.get(base) or REASONS.get(base.lstrip("_"))
        if reason is None:
            reason = "the graph frontend has no rule for this op"
        raise Unsupported(f"{name}: {reason}")
    args = {k: resolve(v, name) for k, v in d["args"].items()}
    args["__op__"] = name
    try:
        out = fn(g, args)
    except Unsupported as e:
        msg = str(e)
        raise Unsupported(msg if msg.startswith("aten.") else f"{name}: {msg}") from None
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as e:
        raise Unsupported(f"{name}: its arguments are outside what the graph frontend "
                          f"handles ({type(e).__name__}: {e})") from None
    outs = out if isinstance(out, list) else [out]
    if len(outs) < len(d["outputs"]):
        outs = outs + [None] * (len(d["outputs"]) - len(outs))
    for v, (shape, _) in zip(outs, d["outputs"], strict=False):
        if isinstance(v, Value) and tuple(v.shape) != tuple(shape):
            raise Unsupported(f"{name}: internal shape mismatch ({list(v.shape)} vs "
                              f"{list(shape)}) in its decomposition")
    return outs
