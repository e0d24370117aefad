"""Decomposition rules as data: formulas over an ATen call's arguments.

Most ATen ops decompose into a fixed expression of their arguments (``expm1(x)`` is
``exp(x) - 1``, ``hardsigmoid(x)`` is ``clamp(x + 3, 0, 6) / 6``). Such a rule is written as
a formula - ``exp(X) - 1.0`` - built from :data:`X` / :func:`arg` (the call's arguments by
schema name), Python numbers and the primitive operations below; a formula is itself a rule,
so a table of them is a table of rules. A formula builds its operands left to right, so it adds the same
primitive nodes, in the same order, as the equivalent hand-written calls on
:class:`~.prims.PrimGraph`.

Rules that branch on their arguments (a rounding mode, a reduction kind) stay functions; a
:class:`Fn` node lets a formula call one of those helpers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .prims import PrimGraph, Value

Rule = Callable[[PrimGraph, dict[str, Any]], Any]


def registrar(table: dict[str, Rule]) -> Callable[..., Callable[[Rule], Rule]]:
    """``@rule("a", "b")``: register a function as the rule of ATen ops ``a`` and ``b``."""
    def rule(*names: str) -> Callable[[Rule], Rule]:
        def deco(fn: Rule) -> Rule:
            for n in names:
                table[n] = fn
            return fn
        return deco
    return rule


def _build(f: Any, g: PrimGraph, a: dict[str, Any]) -> Any:
    return f.build(g, a) if isinstance(f, Formula) else f


class Formula:
    """An expression over a call's arguments; ``build`` adds its primitives to ``g``."""

    def build(self, g: PrimGraph, a: dict[str, Any]) -> Any:
        raise NotImplementedError

    def __call__(self, g: PrimGraph, a: dict[str, Any]) -> Any:  # a formula is a rule
        return self.build(g, a)

    def __neg__(self) -> Formula:
        return Prim("unary", "neg", self)


def _operator(method: str, op: str, reflected: bool) -> Callable[[Formula, Any], Formula]:
    if reflected:
        return lambda self, other: Prim(method, op, other, self)
    return lambda self, other: Prim(method, op, self, other)


#: Python operators on formulas: ``X + 1.0`` is ``add(X, 1.0)``, ``1.0 - X`` is ``sub(1.0, X)``
#: (arithmetic has a reflected form; ``X > 0.0`` is ``cmp gt``)
_OPERATORS = {"add": ("binary", "add"), "sub": ("binary", "sub"), "mul": ("binary", "mul"),
              "truediv": ("binary", "div"), "lt": ("cmp", "lt"), "gt": ("cmp", "gt"),
              "le": ("cmp", "le"), "ge": ("cmp", "ge")}
for _name, (_method, _op) in _OPERATORS.items():
    setattr(Formula, f"__{_name}__", _operator(_method, _op, False))
    if _method == "binary":
        setattr(Formula, f"__r{_name}__", _operator(_method, _op, True))


class Arg(Formula):
    """Argument ``name`` of the call (``default`` when absent), through ``cast`` if given."""

    def __init__(self, name: str, default: Any = None, cast: Callable[[Any], Any] | None = None):
        self.name, self.default, self.cast = name, default, cast

    def build(self, g: PrimGraph, a: dict[str, Any]) -> Any:
        v = a.get(self.name, self.default)
        return self.cast(v) if self.cast is not None and v is not None else v


class Prim(Formula):
    """``g.<method>(op, *operands)``: one primitive of built operands."""

    def __init__(self, method: str, op: str, *operands: Any) -> None:
        self.method, self.op, self.operands = method, op, operands

    def build(self, g: PrimGraph, a: dict[str, Any]) -> Any:
        return getattr(g, self.method)(self.op, *(_build(x, g, a) for x in self.operands))


class Fn(Formula):
    """``fn(g, *operands)``: a helper rule applied to built operands."""

    def __init__(self, fn: Callable[..., Any], *operands: Any) -> None:
        self.fn, self.operands = fn, operands

    def build(self, g: PrimGraph, a: dict[str, Any]) -> Any:
        return self.fn(g, *(_build(x, g, a) for x in self.operands))


def clamp_values(g: PrimGraph, x: Value, lo: Any, hi: Any) -> Value:
    """``x`` clamped to ``[lo, hi]`` (either bound may be None: no bound)."""
    if lo is not None:
        x = g.binary("max", x, lo)
    if hi is not None:
        x = g.binary("min", x, hi)
    return x


def _where_like(g: PrimGraph, cond: Value, a: Any, b: Any, like: Value | None) -> Value:
    return g.where(cond, a, b, like.dtype if like is not None else None)


X = Arg("self")
Y = Arg("other")


def arg(name: str, default: Any = None) -> Arg:
    """A numeric argument as a Python float (``default`` when absent)."""
    return Arg(name, default, float)


def unary(op: str) -> Callable[[Any], Formula]:
    return lambda f: Prim("unary", op, f)


exp, log, abs_, sqrt, erf, sigmoid, tanh = (unary(o) for o in
                                            ("exp", "log", "abs", "sqrt", "erf", "sigmoid", "tanh"))


def maximum(a: Any, b: Any) -> Formula:
    return Prim("binary", "max", a, b)


def minimum(a: Any, b: Any) -> Formula:
    return Prim("binary", "min", a, b)


def ne(a: Any, b: Any) -> Formula:
    return Prim("cmp", "ne", a, b)


def clamp(x: Any, lo: Any, hi: Any) -> Formula:
    return Fn(clamp_values, x, lo, hi)


def where(cond: Any, a: Any, b: Any, like: Any = None) -> Formula:
    """``where(cond, a, b)`` in the dtype of ``like`` (default: torch's promotion)."""
    return Fn(_where_like, cond, a, b, like)


def shape_of(f: Any) -> Formula:
    """The torch shape of a tensor argument."""
    return Fn(lambda g, v: v.shape, f)


def dtype_of(f: Any) -> Formula:
    """The torch dtype of a tensor argument."""
    return Fn(lambda g, v: v.dtype, f)


__all__ = ["X", "Y", "Arg", "Fn", "Formula", "Prim", "Rule", "abs_", "arg", "clamp",
           "clamp_values", "dtype_of", "erf", "exp", "log", "maximum", "minimum", "ne",
           "registrar", "shape_of", "sigmoid", "sqrt", "tanh", "unary", "where"]
