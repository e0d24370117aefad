"""The DSL's op table: one row per operation, read by the parser, the checker and the lowering.

Each :class:`OpSpec` says everything the pipeline needs to know about one DSL op: how it is
spelled, how many operands it takes, which dtypes it accepts on the vector unit, the AscendC
call it lowers to (or that it is a composition of other calls, lowered by hand), its form on
a scalar (the host tiling's C++ and the constant folder's Python), the ATen ops it stands for
(for the graph frontend: :func:`by_aten`), and the identity a reduction starts from.

Adding an elementwise op that is one AscendC instruction is one row here (plus the
emulator's implementation of the call, its trace op identity, and a test): the parser
accepts ``name(x)``, the checker applies ``dtypes``, and both vector code generators emit
``api(dst, src, n)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

VECTOR_DTYPES = ("f32", "f16", "i32")  # dtypes with vector arithmetic
FLOATS = ("f32", "f16")
# erf by Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7): erf(x) = 1 - (a1 t + ... + a5 t^5) exp(-x^2),
# t = 1 / (1 + p x) for x >= 0 (the lowering's composition for erf and gelu)
ERF_P = 0.3275911
ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


@dataclass(frozen=True)
class OpSpec:
    """One DSL operation."""

    name: str  # the IR op name (``ir.Unary.op`` / ``ir.Binary.op`` / ...)
    kind: str  # unary | binary | compare | reduce | scan
    spellings: tuple[str, ...]  # DSL function names (empty: an operator only, e.g. ``-x``)
    arity: int
    dtypes: tuple[str, ...] = VECTOR_DTYPES  # dtypes it accepts on the vector unit
    api: str = ""  # the one AscendC call (``Exp(dst, src, n)``); "" = a composition
    scalar_api: str = ""  # AscendC call with a scalar operand (``Adds(dst, src, s, n)``)
    composite: str = ""  # what a composition is built from (documentation)
    fold: Callable[..., float] | None = None  # Python value on constants (constant folding)
    host: str = ""  # C++ on host doubles, ``{0}``/``{1}`` = operands ("" = not on the host)
    kernel_scalar: str = ""  # AcxFn of a kernel-side scalar (8-lane vector op), "" = none
    aten: tuple[str, ...] = ()  # ATen op names (``aten.<name>``) this op implements
    identity: float | None = None  # reductions and scans: the value a fold starts from
    infix: str = ""  # binary C++ operator on scalars (``+``), "" = a function


def _sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


OPS: tuple[OpSpec, ...] = (
    # ---- unary: one instruction each
    OpSpec("exp", "unary", ("exp",), 1, FLOATS, "Exp", fold=math.exp, host="__builtin_exp({0})",
           kernel_scalar="ACX_FN_EXP", aten=("exp",)),
    OpSpec("log", "unary", ("log",), 1, FLOATS, "Ln", fold=math.log, host="__builtin_log({0})",
           kernel_scalar="ACX_FN_LN", aten=("log",)),
    OpSpec("abs", "unary", ("abs",), 1, VECTOR_DTYPES, "Abs", fold=abs, host="__builtin_fabs({0})",
           kernel_scalar="ACX_FN_ABS", aten=("abs",)),
    OpSpec("sqrt", "unary", ("sqrt",), 1, FLOATS, "Sqrt", fold=math.sqrt, host="__builtin_sqrt({0})",
           kernel_scalar="ACX_FN_SQRT", aten=("sqrt",)),
    OpSpec("rsqrt", "unary", ("rsqrt",), 1, FLOATS, "Rsqrt", fold=lambda x: 1 / math.sqrt(x),
           host="(1.0 / __builtin_sqrt({0}))", kernel_scalar="ACX_FN_RSQRT", aten=("rsqrt",)),
    OpSpec("reciprocal", "unary", ("reciprocal",), 1, FLOATS, "Reciprocal", fold=lambda x: 1 / x,
           host="(1.0 / {0})", kernel_scalar="ACX_FN_RECIP", aten=("reciprocal",)),
    OpSpec("relu", "unary", ("relu",), 1, VECTOR_DTYPES, "Relu", fold=lambda x: max(x, 0.0),
           host="__builtin_fmax({0}, 0.0)", aten=("relu",)),
    # ---- unary: compositions (lowered by hand in the compute passes)
    OpSpec("neg", "unary", (), 1, VECTOR_DTYPES, scalar_api="Muls", composite="Muls(x, -1)",
           fold=lambda x: -x, host="(-{0})", aten=("neg",)),
    OpSpec("tanh", "unary", ("tanh",), 1, FLOATS, composite="2 / (1 + exp(-2x)) - 1",
           fold=math.tanh, host="__builtin_tanh({0})", aten=("tanh",)),
    OpSpec("sigmoid", "unary", ("sigmoid",), 1, FLOATS, composite="1 / (1 + exp(-x))",
           fold=_sigmoid, host="(1.0 / (1.0 + __builtin_exp(-{0})))", aten=("sigmoid",)),
    OpSpec("erf", "unary", ("erf",), 1, FLOATS,
           composite="Abramowitz & Stegun 7.1.26 on |x| (|error| <= 1.5e-7), sign restored",
           fold=math.erf, host="__builtin_erf({0})", aten=("erf",)),
    OpSpec("gelu", "unary", ("gelu",), 1, ("f32",), composite="relu(x) - 0.5 |x| q(|x| / sqrt 2) (erf form)",
           fold=lambda x: 0.5 * x * (1 + math.erf(x / math.sqrt(2))), aten=("gelu",)),
    OpSpec("silu", "unary", ("silu",), 1, ("f32",), composite="x * sigmoid(x)",
           fold=lambda x: x / (1 + math.exp(-x)), aten=("silu",)),
    # ---- binary
    OpSpec("add", "binary", (), 2, VECTOR_DTYPES, "Add", "Adds", fold=lambda a, b: a + b, host="({0} + {1})",
           aten=("add",), infix="+"),
    OpSpec("sub", "binary", (), 2, VECTOR_DTYPES, "Sub", "Adds", composite="x - s = Adds(x, -s)",
           fold=lambda a, b: a - b, host="({0} - {1})", aten=("sub",), infix="-"),
    OpSpec("mul", "binary", (), 2, VECTOR_DTYPES, "Mul", "Muls", fold=lambda a, b: a * b, host="({0} * {1})",
           aten=("mul",), infix="*"),
    OpSpec("div", "binary", (), 2, FLOATS, "Div", "Muls", composite="x / s = Muls(x, 1 / s)",
           fold=lambda a, b: a / b, host="({0} / {1})", aten=("div",), infix="/"),
    OpSpec("max", "binary", ("maximum",), 2, VECTOR_DTYPES, "Max", "Maxs", fold=max,
           host="__builtin_fmax({0}, {1})", aten=("maximum",)),
    OpSpec("min", "binary", ("minimum",), 2, VECTOR_DTYPES, "Min", "Mins", fold=min,
           host="__builtin_fmin({0}, {1})", aten=("minimum",)),
    OpSpec("pow", "binary", (), 2, (), composite="host scalars only (x ** n on tiles: repeated Mul)",
           fold=lambda a, b: a ** b, host="__builtin_pow({0}, {1})", aten=("pow",)),
    # ---- comparisons (only inside where(cond, a, b)): Compare / CompareScalar + Select
    *(OpSpec(c, "compare", (), 2, FLOATS, "Compare", "CompareScalar", aten=(c,))
      for c in ("lt", "gt", "le", "ge", "eq", "ne")),
    # ---- row reductions (row_*), grid reductions (total_*) and scans (scan_*)
    OpSpec("sum", "reduce", ("row_sum", "total_sum"), 1, VECTOR_DTYPES, "ReduceSum", identity=0.0,
           aten=("sum",)),
    OpSpec("max", "reduce", ("row_max", "total_max"), 1, VECTOR_DTYPES, "ReduceMax", identity=-math.inf,
           aten=("amax", "max")),
    OpSpec("min", "reduce", ("row_min", "total_min"), 1, VECTOR_DTYPES, "ReduceMin", identity=math.inf,
           aten=("amin", "min")),
    OpSpec("sum", "scan", ("scan_sum",), 1, ("f32",), "Add", identity=0.0, aten=("cumsum",)),
    OpSpec("prod", "scan", ("scan_prod",), 1, ("f32",), "Mul", identity=1.0, aten=("cumprod",)),
    OpSpec("max", "scan", ("scan_max",), 1, ("f32",), "Max", identity=-math.inf, aten=("cummax",)),
)


def table(kind: str) -> dict[str, OpSpec]:
    """The ops of one kind by IR name."""
    return {o.name: o for o in OPS if o.kind == kind}


UNARY = table("unary")
BINARY = table("binary")
COMPARE = table("compare")
REDUCE = table("reduce")
SCAN = table("scan")


def spelled(kind: str, prefix: str = "") -> dict[str, str]:
    """DSL function name -> IR op name, for the ops of ``kind`` whose spelling starts with
    ``prefix`` (``spelled("reduce", "row_")`` = {"row_sum": "sum", ...})."""
    return {s: o.name for o in OPS if o.kind == kind for s in o.spellings if s.startswith(prefix)}


def by_aten(name: str) -> list[OpSpec]:
    """The DSL ops that implement ``aten.<name>`` (``"aten.exp.default"`` works too), for the
    graph frontend; empty if the DSL has no single op for it."""
    base = name.removeprefix("aten.").split(".")[0]
    return [o for o in OPS if base in o.aten]


def fold(op: str, args: tuple[float, ...]) -> float:
    """The value of a unary or binary op on constants (raises what Python raises)."""
    spec = UNARY[op] if len(args) == 1 else BINARY[op]
    assert spec.fold is not None, op
    return spec.fold(*args)


def host_cpp(op: str, args: tuple[str, ...]) -> str:
    """C++ of a unary or binary op on host doubles (the tiling header's derived scalars)."""
    spec = UNARY[op] if len(args) == 1 else BINARY[op]
    if not spec.host:
        raise ValueError(f"{op} has no host form")
    return spec.host.format(*args)


def kernel_scalar_ok(op: str) -> bool:
    """Whether ``op`` can run on a kernel-side scalar (a total_* result, width(t))."""
    if op in BINARY:
        return bool(BINARY[op].infix) or op in ("max", "min")
    return op == "neg" or bool(UNARY[op].kernel_scalar) if op in UNARY else False
