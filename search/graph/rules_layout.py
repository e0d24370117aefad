"""Decomposition rules of ATen ops that move no numbers: casts, views, constants.

Views and reshapes become ``view``/``expand`` primitives (the same data seen with another
shape: no code); a permutation is only a view when it keeps every non-unit dim in order.
Factory calls (``zeros``, ``full_like``, ``fill_``...) fold to constants.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from .formulas import Arg, Fn, Rule, X, Y, arg, dtype_of, registrar, shape_of
from .prims import PrimGraph, Value
from .trace import Unsupported

RULES: dict[str, Rule] = {}
rule = registrar(RULES)


def to_dtype(g: PrimGraph, x: Value, dtype: torch.dtype | None) -> Value:
    """``x`` cast to ``dtype`` (None: unchanged)."""
    if dtype is None or dtype == x.dtype:
        return x
    if dtype == torch.bool:
        return g.cmp("ne", x, 0.0)
    if dtype.is_floating_point:
        if dtype == torch.float64:
            raise Unsupported("a cast to float64, which the DSL does not have")
        if x.is_mask:
            return g.as_float(x, dtype)
        if g.op(x) == "index":  # counts.float(): the integer input read as numbers, cast on load
            return g.numbers(x, dtype)
        if g.op(x) == "input" and x.dtype == torch.float32 and dtype in (torch.float16, torch.bfloat16):
            # an f32 input narrowed (`x.half()`): rounded here; a computed value's cast rounds
            # at the op that computed it (its storage node)
            return g.round_to(x, dtype)
        return Value(x.node, x.shape, x.real, dtype)
    if x.is_mask:  # F.one_hot's int64 of a comparison: the mask, read as 1.0 / 0.0 where used as numbers
        return x
    raise Unsupported(f"a cast to {str(dtype).replace('torch.', '')} (integer results are "
                      "not produced by the graph frontend)")


def _fill_number(g: PrimGraph, fill_value: Any, value: Any) -> float:
    v = fill_value if fill_value is not None else value
    if isinstance(v, Value):
        raise Unsupported("a tensor filled from another tensor's value")
    return float(v)


def _constant(g: PrimGraph, value: float, shape: Any, dtype: torch.dtype | None,
              like: Value | None) -> Value:
    """``value`` everywhere in ``shape``; the dtype asked for, else ``like``'s, else f32."""
    fallback = like.dtype if like is not None else torch.float32
    return g.const(value, tuple(shape), dtype or fallback)


FILL = Fn(_fill_number, Arg("fill_value"), Arg("value"))

#: ATen op -> its value as a formula of the call's arguments (X = ``self``, Y = ``other``)
FORMULAS: dict[str, Any] = {
    **dict.fromkeys(("_to_copy", "to", "_to_dtype", "type", "convert_element_type"),
                    Fn(to_dtype, X, Arg("dtype"))),
    "type_as": Fn(to_dtype, X, dtype_of(Y)),
    **dict.fromkeys(("clone", "contiguous", "alias", "detach", "lift_fresh", "lift_fresh_copy",
                     "positive", "_conj", "conj", "resolve_conj", "resolve_neg", "dropout_eval",
                     "_unsafe_view_copy"), X),
    "expand_as": Fn(lambda g, x, shape: g.expand(x, shape), X, shape_of(Y)),
    # constants: (value, shape, dtype asked for, tensor whose dtype is the default)
    "zeros_like": Fn(_constant, 0.0, shape_of(X), Arg("dtype"), X),
    "ones_like": Fn(_constant, 1.0, shape_of(X), Arg("dtype"), X),
    "full_like": Fn(_constant, FILL, shape_of(X), Arg("dtype"), X),
    "zeros": Fn(_constant, 0.0, Arg("size"), Arg("dtype"), None),
    "ones": Fn(_constant, 1.0, Arg("size"), Arg("dtype"), None),
    **dict.fromkeys(("full", "new_full"), Fn(_constant, FILL, Arg("size"), Arg("dtype"), None)),
    "new_zeros": Fn(_constant, 0.0, Arg("size"), Arg("dtype"), X),
    "new_ones": Fn(_constant, 1.0, Arg("size"), Arg("dtype"), X),
    "scalar_tensor": Fn(_constant, arg("s"), (), Arg("dtype"), None),
    "fill": Fn(_constant, FILL, shape_of(X), None, X),
    "zero": Fn(_constant, 0.0, shape_of(X), None, X),
    # uninitialised: an error only if something reads it
    **dict.fromkeys(("empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"),
                    lambda g, a: None),
}
RULES.update(FORMULAS)


#: the largest integer every element of a 16-bit float arange must hold exactly
_EXACT_INT = {torch.float16: 2048, torch.bfloat16: 256}


@rule("arange")
def _arange(g: PrimGraph, a: dict) -> Value:
    """start + step * k for k in 0 .. n - 1: each element's index (``position``) scaled; whole
    numbers only (a fractional start or step would be rounded differently from eager's)."""
    end, start, step = a.get("end"), a.get("start"), a.get("step")
    start = 0 if start is None else start
    step = 1 if step is None else step
    if any(isinstance(v, Value) for v in (start, end, step)):
        raise Unsupported("arange with a tensor bound")
    if end is None or any(float(v) != int(v) for v in (start, end, step)) or step == 0:
        raise Unsupported("arange with fractional bounds or step (only whole numbers are computed exactly)")
    start, end, step = int(start), int(end), int(step)
    n = max(0, -(-(end - start) // step))
    if n == 0:
        raise Unsupported("an empty arange")
    dtype = a.get("dtype")
    top = max(abs(start), abs(start + step * (n - 1)))
    if top >= 1 << 24 or top > _EXACT_INT.get(dtype, 1 << 24):
        raise Unsupported(f"arange up to {top}: past the integers the kernel's f32 "
                          f"(or the asked-for {dtype}) holds exactly")
    k = g.position(g.const(0.0, (n,)), 0)
    return g.binary("add", g.binary("mul", k, float(step)), float(start))


@rule("copy")
def _copy(g: PrimGraph, a: dict) -> Value:
    x, src = a["self"], a["src"]
    if not isinstance(src, Value):
        return g.const(float(src), x.shape, x.dtype)
    src = to_dtype(g, src, x.dtype)
    return src if src.shape == x.shape else g.expand(src, x.shape)


def _known(sizes: list[int], total: int) -> list[int]:
    """A size list with its one ``-1`` resolved against ``total`` elements."""
    if -1 not in sizes:
        return sizes
    known = math.prod(s for s in sizes if s != -1)
    return [total // max(known, 1) if s == -1 else s for s in sizes]


@rule("view", "_unsafe_view", "reshape", "_reshape_alias", "view_copy", "reshape_as",
      "view_as")
def _view(g: PrimGraph, a: dict) -> Value:
    x = a["self"]
    if "other" in a and isinstance(a.get("other"), Value):
        shape = list(a["other"].shape)
    else:
        shape = list(a.get("size") or a.get("shape") or [])
    return g.view(x, _known(shape, math.prod(x.shape)))


@rule("unsqueeze")
def _unsqueeze(g: PrimGraph, a: dict) -> Value:
    x, d = a["self"], a["dim"]
    d %= len(x.shape) + 1
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
    x, d = a["self"], a["dim"]
    d %= len(x.shape)
    sizes = _known(list(a["sizes"]), x.shape[d])
    return g.view(x, x.shape[:d] + tuple(sizes) + x.shape[d + 1:])


@rule("expand", "broadcast_to", "expand_copy")
def _expand(g: PrimGraph, a: dict) -> Value:
    return g.expand(a["self"], a.get("size") or a.get("shape"))


def _permute(g: PrimGraph, x: Value, perm: list[int]) -> Value:
    """A view when the permutation keeps every non-unit dim in order; else a ``permute``
    marker, which :mod:`.permutes` removes when the input it permutes is permuted back."""
    rank = len(x.shape)
    perm = [p % rank for p in perm]
    moved = [p for p in perm if x.shape[p] != 1]
    if moved != sorted(moved):
        return g.marker("permute", x, tuple(x.shape[p] for p in perm), perm=tuple(perm))
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


__all__ = ["FORMULAS", "RULES", "to_dtype"]
