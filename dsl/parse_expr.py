"""Expressions of the DSL (text → ``ir.Expr``), shared by every stage of every kernel, and the
literal rules (integers, numbers, tunable domains) and constant folding the parser applies.

The function names come from the op table (``ops.py``); the rest of the language (loads,
fills, casts, groups of per-row values, ``sinkhorn``) is spelled here. Nothing is executed:
constants are folded with the table's Python forms and every result is checked to be a
finite real number.
"""

from __future__ import annotations

import ast
import math

from . import ir, ops
from .errors import DslError  # noqa: F401 - re-exported: the parser's error type
from .ir import Loc

DTYPE_NAMES = {"f32": "f32", "f16": "f16", "bf16": "bf16", "i32": "i32", "i64": "i64", "i8": "i8",
               "u8": "u8", "bool": "bool", "fp32": "f32", "fp16": "f16"}
UNARY_FUNCS = ops.spelled("unary")
BINARY_FUNCS = ops.spelled("binary")
REDUCE_FUNCS = ops.spelled("reduce", "row_")
GRID_FUNCS = ops.spelled("reduce", "total_")
SCAN_FUNCS = ops.spelled("scan")
#: reverse scans: ``rscan_sum(v, carry[, lanes])`` runs from each row's end
REV_SCAN_FUNCS = {"r" + f: op for f, op in SCAN_FUNCS.items()}
#: segment counts of the blocked scan (``scan_sum(v, carry, lanes)``): whole vector repeats
SCAN_LANES = (64, 128, 256, 512)
LOAD_FUNCS = {"load": "tile", "load_bcast": "bcast", "load_per_row": "per_row"}
GROUP_LOADS = {"load_cols": "cols", "load_group": "group"}
CONSTANTS = {"inf": math.inf, "pi": math.pi}
BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div"}
CMPOPS = {ast.Lt: "lt", ast.Gt: "gt", ast.LtE: "le", ast.GtE: "ge", ast.Eq: "eq",
          ast.NotEq: "ne"}
MAX_DEPTH = 64
MAX_INT = 2**31 - 1  # integer literals: sizes, tunable values, dims
MAX_DOMAIN = 4096  # values of one tunable
MAX_RANK = 16  # size(x, d): |d| bound
MAX_GROUP = 256  # values per row of load_cols / load_group / load_members
STRUCTURAL = ("tunable", "pow2", "choice", "span", "tiles", "rows", "slabs", "windows", "chunks", "steps",
              "taps", "store", "blocks", "workspace", "unroll", "k_stages", "k_steps", "accumulator",
              "to_l1", "to_l0a", "to_l0b", "mmad", "matrix")


def loc_of(node: ast.AST) -> Loc:
    return Loc(getattr(node, "lineno", 0), getattr(node, "col_offset", 0) + 1)


def is_call(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


class ExprParser:
    """The expression half of the parser (mixed into ``parser._Parser``), which provides
    ``params``, ``tunables``, ``workspaces``, ``values``, ``unroll``, ``_loop_var`` and
    ``_tensor_name``."""

    params: dict
    tunables: dict
    workspaces: dict
    values: set
    unroll: dict

    def _expr(self, node: ast.AST, depth: int = 0) -> ir.Expr:
        if depth > MAX_DEPTH:
            raise DslError("expression nests too deeply", loc_of(node))
        return fold_constants(self._expr_raw(node, depth + 1))

    def _expr_raw(self, node: ast.AST, depth: int) -> ir.Expr:
        loc = loc_of(node)
        if isinstance(node, ast.Constant):
            return ir.Const(loc, number_literal(node))
        if isinstance(node, ast.Name):
            return self._name(node, loc)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.USub):
                return ir.Unary(loc, "neg", self._expr(node.operand, depth))
            if isinstance(node.op, ast.UAdd):
                return self._expr(node.operand, depth)
            raise DslError(f"operator {type(node.op).__name__} is not supported", loc)
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Pow):
                return self._power(node, depth)
            op = BINOPS.get(type(node.op))
            if op is None:
                raise DslError(f"operator {type(node.op).__name__} is not supported (+ - * / ** only)", loc)
            return ir.Binary(loc, op, self._expr(node.left, depth), nonzero_divisor(op, self._expr(node.right, depth)))
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                raise DslError("chained comparisons are not supported", loc)
            return ir.Compare(loc, CMPOPS[type(node.ops[0])], self._expr(node.left, depth),
                              self._expr(node.comparators[0], depth))
        if isinstance(node, ast.Subscript):
            return self._index(node, depth)
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        raise DslError(f"'{type(node).__name__}' is not a DSL expression", loc)

    def _name(self, node: ast.Name, loc: Loc) -> ir.Expr:
        n = node.id
        if n in CONSTANTS:
            return ir.Const(loc, CONSTANTS[n])
        if n in self.unroll:
            return ir.Const(loc, float(self.unroll[n]))
        if n in self.values:
            return ir.Var(loc, n)
        if n in self.params:
            if self.params[n].kind == "scalar":
                return ir.ScalarRef(loc, n)
            raise DslError(f"'{n}' is a GM tensor: bring it into UB with load({n}, t)", loc)
        if n in self.workspaces:
            raise DslError(f"'{n}' is a GM workspace: load it with load({n}, c)", loc)
        if n in self.tunables:
            raise DslError(f"tunable '{n}' can only size loops", loc)
        raise DslError(f"unknown name '{n}'", loc)

    def _power(self, node: ast.BinOp, depth: int) -> ir.Expr:
        loc = loc_of(node)
        base = self._expr(node.left, depth)
        if isinstance(node.right, ast.Constant) and type(node.right.value) is int \
                and 1 <= node.right.value <= 4:
            if isinstance(base, ir.Const):
                return ir.Const(loc, fold_number("pow", (base.value, float(node.right.value)), loc))
            return base if node.right.value == 1 else ir.Power(loc, base, node.right.value)
        exp_ = self._expr(node.right, depth)
        if isinstance(base, ir.Const) and isinstance(exp_, ir.Const):
            return ir.Const(loc, fold_number("pow", (base.value, exp_.value), loc))
        return ir.Binary(loc, "pow", base, exp_)  # the checker allows it on host scalars only

    def _index(self, node: ast.Subscript, depth: int) -> ir.Expr:
        """``g[i]`` / ``g[a:b]`` with compile-time bounds, on a group of per-row values."""
        loc = loc_of(node)
        arg = self._expr(node.value, depth)
        s = node.slice
        if isinstance(s, ast.Slice):
            if s.step is not None or s.lower is None or s.upper is None:
                raise DslError("group slices are g[a:b] with compile-time a < b", loc)
            a, b = self._static_int(s.lower), self._static_int(s.upper)
        else:
            a = self._static_int(s)
            b = a + 1
        if not 0 <= a < b:
            raise DslError(f"bad group index [{a}:{b}]", loc)
        return ir.Index(loc, arg, a, b)

    def _static_int(self, node: ast.AST) -> int:
        """An integer known at compile time: literals, unroll variables, + - * // %."""
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return int_literal(node)
        if isinstance(node, ast.Name) and node.id in self.unroll:
            return self.unroll[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod):
            a, b = self._static_int(node.left), self._static_int(node.right)
            if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and b == 0:
                raise DslError("division by zero", loc_of(node))
            v = {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b, ast.FloorDiv: a // b,
                 ast.Mod: a % b}[type(node.op)]
            if abs(v) > MAX_INT:
                raise DslError(f"compile-time integer out of range (|v| <= {MAX_INT})", loc_of(node))
            return v
        raise DslError(f"expected a compile-time integer (literal or unroll variable), got {ast.unparse(node)!r}",
                       loc_of(node))

    def _dtype_arg(self, node: ast.AST, f: str) -> str:
        if not isinstance(node, ast.Name) or node.id not in DTYPE_NAMES:
            raise DslError(f"{f}() takes a dtype name such as f32", loc_of(node))
        return DTYPE_NAMES[node.id]

    def _call(self, node: ast.Call, depth: int) -> ir.Expr:
        loc = loc_of(node)
        if not isinstance(node.func, ast.Name):
            raise DslError("only calls of DSL functions are allowed", loc)
        f = node.func.id
        args = node.args
        if node.keywords:
            raise DslError(f"{f}() takes positional arguments only", loc)

        def want(*ns: int) -> None:
            if len(args) not in ns:
                n = " or ".join(map(str, ns))
                raise DslError(f"{f}() takes {n} argument{'s' if ns != (1,) else ''}, got {len(args)}", loc)

        def sub(i: int) -> ir.Expr:
            return self._expr(args[i], depth)

        if f == "load_per_row" and len(args) == 3:
            return ir.LoadPerRowEvery(loc, sub(2), self._tensor_name(args[0], "in"), self._loop_var(args[1]))
        if f in LOAD_FUNCS:
            want(2, 3) if f in ("load", "load_per_row") else want(2)
            if not isinstance(args[0], ast.Name):
                raise DslError(f"{f}(x, at) takes an In tensor", loc)
            part = self._static_int(args[2]) if len(args) == 3 else None
            return ir.Load(loc, self._tensor_name(args[0], "in", workspace=f == "load"), self._loop_var(args[1]),
                           LOAD_FUNCS[f], part)
        if f in GROUP_LOADS or f == "load_members":
            want(3) if f in GROUP_LOADS else want(2)
            g = self._static_int(args[-1])
            if not 1 <= g <= MAX_GROUP:
                raise DslError(f"group size 1..{MAX_GROUP}", loc)
            tensor = self._tensor_name(args[0], "in", workspace=f != "load_members")
            at = self._loop_var(args[1]) if f in GROUP_LOADS else ""
            return ir.Load(loc, tensor, at, GROUP_LOADS.get(f, "members"), None, g)
        if f in UNARY_FUNCS:
            want(1)
            return ir.Unary(loc, UNARY_FUNCS[f], sub(0))
        if f == "leaky_relu":
            want(2)
            slope = sub(1)
            if not isinstance(slope, ir.Const):
                raise DslError("leaky_relu(x, slope) takes a constant slope", loc)
            return ir.LeakyRelu(loc, sub(0), slope.value)
        if f in BINARY_FUNCS:
            want(2)
            return ir.Binary(loc, BINARY_FUNCS[f], sub(0), sub(1))
        if f == "where":
            want(3)
            cond = sub(0)
            if not isinstance(cond, ir.Compare):
                raise DslError("where(cond, a, b) needs a comparison as its condition, e.g. x > 0", loc)
            return ir.Select(loc, cond, sub(1), sub(2))
        if f == "cast":
            want(2)
            return ir.Cast(loc, sub(0), self._dtype_arg(args[1], f))
        if f in REDUCE_FUNCS:
            want(1)
            return ir.RowReduce(loc, REDUCE_FUNCS[f], sub(0))
        if f in ("row_fill", "tile_fill"):
            if len(args) not in (1, 2):
                raise DslError(f"{f}(value[, dtype]) takes a constant and an optional dtype", loc)
            v = sub(0)
            if not isinstance(v, ir.Const):
                raise DslError(f"{f}() takes a constant value", loc)
            dtype = self._dtype_arg(args[1], f) if len(args) == 2 else "f32"
            return ir.Fill(loc, f.split("_")[0], v.value, dtype)
        if f == "width":
            want(1)
            return ir.Extent(loc, self._loop_var(args[0]))
        if f == "load_scalar":
            want(1)
            return ir.ScalarLoad(loc, self._tensor_name(args[0], "in"))
        if f == "position":
            want(1)
            return ir.Position(loc, self._loop_var(args[0]))
        if f == "load_step":
            want(2)
            return ir.StepLoad(loc, self._tensor_name(args[0], "in"), self._loop_var(args[1]))
        if f == "row_position":
            want(3)
            return ir.RowPosition(loc, sub(1), sub(2), self._loop_var(args[0]))
        if f == "window_recip":
            want(1, 2)
            padded = self._static_int(args[1]) if len(args) == 2 else 0
            if padded not in (0, 1):
                raise DslError("window_recip(t, padded): padded is 0 (taps inside the input) or 1 "
                               "(inside the padded input)", loc)
            return ir.WindowRecip(loc, self._loop_var(args[0]), bool(padded))
        if f in GRID_FUNCS:
            want(1)
            return ir.GridReduce(loc, GRID_FUNCS[f], sub(0))
        if f == "numel":
            want(1)
            return ir.Numel(loc, self._tensor_name(args[0]))
        if f == "size":
            want(2)
            d = args[1]
            neg = isinstance(d, ast.UnaryOp) and isinstance(d.op, ast.USub)
            lit = d.operand if neg else d
            if not (isinstance(lit, ast.Constant) and type(lit.value) is int):
                raise DslError("size(x, d) takes an integer literal dim", loc)
            dim = -lit.value if neg else lit.value
            if not -MAX_RANK <= dim < MAX_RANK:
                raise DslError(f"size(x, {dim}): a dim is in {-MAX_RANK}..{MAX_RANK - 1}", loc)
            return ir.Numel(loc, self._tensor_name(args[0]), dim)
        if f in SCAN_FUNCS or f in REV_SCAN_FUNCS:
            want(2, 3, 4)
            lanes = self._static_int(args[2]) if len(args) >= 3 else 0
            if len(args) >= 3 and lanes not in SCAN_LANES:
                raise DslError(f"{f}(v, carry, lanes): lanes is one of {', '.join(map(str, SCAN_LANES))}", loc)
            once = self._static_int(args[3]) if len(args) == 4 else 1
            if once not in (0, 1):
                raise DslError(f"{f}(v, carry, lanes, tables_once): tables_once is 1 (the Gather tables "
                               "built once per chunk width) or 0 (rebuilt in every chunk)", loc)
            rev = f in REV_SCAN_FUNCS
            return ir.Scan(loc, (REV_SCAN_FUNCS if rev else SCAN_FUNCS)[f], sub(0), sub(1), lanes, reverse=rev,
                           tables_once=bool(once))
        if f == "row_last":
            want(1)
            return ir.RowLast(loc, sub(0))
        if f == "row_first":
            want(1)
            return ir.RowLast(loc, sub(0), first=True)
        if f == "pick":
            want(3, 4)
            ignore = None
            if len(args) == 4:
                neg = isinstance(args[3], ast.UnaryOp) and isinstance(args[3].op, ast.USub)
                ignore = -self._static_int(args[3].operand) if neg else self._static_int(args[3])
            return ir.Pick(loc, self._tensor_name(args[0], "in"), self._loop_var(args[1]),
                           self._tensor_name(args[2], "in"), ignore)
        if f == "gather_rows":
            want(4)
            dim = self._static_int(args[3])
            if not 0 <= dim < MAX_RANK:
                raise DslError(f"gather_rows(x, t, idx, dim): dim is in 0..{MAX_RANK - 1}", loc)
            return ir.GatherRows(loc, self._tensor_name(args[0], "in"), self._loop_var(args[1]),
                                 self._tensor_name(args[2], "in"), dim)
        if f == "index_add_rows":
            want(5)
            dim = self._static_int(args[4])
            if not 0 <= dim < MAX_RANK:
                raise DslError(f"index_add_rows(acc, src, t, idx, dim): dim is in 0..{MAX_RANK - 1}", loc)
            return ir.IndexAddRows(loc, sub(0), self._tensor_name(args[1], "in"), self._loop_var(args[2]),
                                   self._tensor_name(args[3], "in"), dim)
        if f == "load_slice":
            want(3)
            return ir.LoadSlice(loc, sub(2), self._tensor_name(args[0], "in"), self._loop_var(args[1]))
        if f == "load_bcast_every":
            want(3)
            return ir.LoadBcastEvery(loc, sub(2), self._tensor_name(args[0], "in"), self._loop_var(args[1]))
        if f == "load_every":
            want(3)
            return ir.LoadEvery(loc, sub(2), self._tensor_name(args[0], "in"), self._loop_var(args[1]))
        if f == "load_rows_bcast":
            want(3, 6, 8)
            window = None
            if len(args) > 3:  # one level of rows: m = n (a block is the whole window)
                n, p_ = sub(3), sub(4)
                window = (n, p_, sub(5), sub(6), sub(7)) if len(args) == 8 else \
                    (n, p_, sub(5), n, ir.Binary(loc, "mul", n, p_))
            return ir.LoadRowsBcast(loc, sub(2), self._tensor_name(args[0], "in"), self._loop_var(args[1]),
                                    window)
        if f == "select_cols":
            want(3)
            return ir.GatherCols(loc, self._tensor_name(args[0], "in"), self._loop_var(args[1]),
                                 self._tensor_name(args[2], "in"), shared=True)
        if f == "gather_cols":
            want(3, 4)
            wrap = self._static_int(args[3]) if len(args) == 4 else 0
            if wrap not in (0, 1):
                raise DslError("gather_cols(x, t, idx, wrap): wrap is 0 (out of range stops the "
                               "kernel) or 1 (indices taken modulo the row)", loc)
            return ir.GatherCols(loc, self._tensor_name(args[0], "in"), self._loop_var(args[1]),
                                 self._tensor_name(args[2], "in"), bool(wrap))
        if f == "sinkhorn":
            want(3)
            n, iters = self._static_int(args[1]), self._static_int(args[2])
            if not 1 <= n <= 16 or not 0 <= iters <= 1000:
                raise DslError("sinkhorn(g, n, iters) takes 1 <= n <= 16 and 0 <= iters <= 1000", loc)
            return ir.Sinkhorn(loc, sub(0), n, iters)
        if f in STRUCTURAL:
            raise DslError(f"{f}() cannot be used here", loc)
        raise DslError(f"unknown function '{f}'", loc)



def int_literal(node: ast.AST, lo: int = -MAX_INT, hi: int = MAX_INT) -> int:
    """An integer literal (``-n`` included) within [lo, hi]; DslError otherwise."""
    neg = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
    lit = node.operand if neg else node
    if not (isinstance(lit, ast.Constant) and type(lit.value) is int):
        raise DslError("expected an integer literal", loc_of(node))
    v = -lit.value if neg else lit.value
    if not lo <= v <= hi:
        raise DslError(f"integer {v if abs(v) < 10**12 else 'literal'} is out of range ({lo}..{hi})", loc_of(node))
    return v


def number_literal(node: ast.Constant) -> float:
    """A numeric constant as a finite float; DslError for strings, bools, complex, overflow."""
    v = node.value
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        shown = repr(v) if not isinstance(v, (str, bytes)) else f"a {type(v).__name__} literal"
        raise DslError(f"only numeric constants are allowed, got {shown}", loc_of(node))
    try:
        f = float(v)
    except OverflowError:
        raise DslError("numeric constant is out of the float range", loc_of(node)) from None
    if not math.isfinite(f):
        raise DslError("numeric constant is out of the float range", loc_of(node))
    return f


def parse_domain(node: ast.AST, int_of, lowest: int) -> ir.Domain:
    """``pow2(lo, hi)``, ``choice(...)`` or ``span(lo, hi, step)``, sized arithmetically
    (never enumerated) before it is accepted: at most MAX_DOMAIN values."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in ("pow2", "choice", "span")) or node.keywords:
        raise DslError("a tunable's domain is pow2(lo, hi), choice(a, b, ...) or span(lo, hi, step)", loc_of(node))
    if len(node.args) > MAX_DOMAIN:
        raise DslError(f"choice() has {len(node.args)} values; the limit is {MAX_DOMAIN}", loc_of(node))
    args = tuple(int_of(x) for x in node.args)
    kind = node.func.id
    if kind == "pow2" and (len(args) != 2 or args[0] < 1 or args[0] > args[1]):
        raise DslError("pow2(lo, hi) needs 1 <= lo <= hi", loc_of(node))
    if kind == "span" and (len(args) != 3 or args[2] < 1 or args[0] > args[1]):
        raise DslError("span(lo, hi, step) needs lo <= hi and step >= 1", loc_of(node))
    if kind == "choice" and (not args or len(set(args)) != len(args)):
        raise DslError("choice(...) needs distinct values", loc_of(node))
    if any(v < lowest or v > MAX_INT for v in args):
        raise DslError(f"tunable values are integers in {lowest}..{MAX_INT}", loc_of(node))
    domain = ir.Domain(kind, args)
    n = domain.size()
    if n < 1 or n > MAX_DOMAIN:
        raise DslError(f"domain {domain} has {n} values; it needs 1 to {MAX_DOMAIN}", loc_of(node))
    return domain


def fold_number(op: str, args: tuple[float, ...], loc: Loc) -> float:
    """Constant folding of one DSL operation. A result that is not a real number (``0.0 /
    0.0``, ``(-8.0) ** 0.5``, ``log(-1.0)``) or that overflows from finite operands
    (``10.0 ** 400``) is a DslError, never a silent inf or NaN."""
    shown = f"{op}({', '.join(f'{a:g}' for a in args)})"
    if op == "div" and args[1] == 0:
        raise DslError(f"{shown}: division by the constant 0", loc)
    try:
        v = ops.fold(op, args)
    except (ValueError, ZeroDivisionError, OverflowError):
        v = math.nan
    if not isinstance(v, (int, float)) or math.isnan(v) or (math.isinf(v) and all(map(math.isfinite, args))):
        raise DslError(f"{shown} is not a finite real number", loc)
    return float(v)


def nonzero_divisor(op: str, rhs: ir.Expr, loc: Loc | None = None) -> ir.Expr:
    """``x / 0.0`` is a mistake in a kernel (inf or NaN everywhere): refuse a constant 0 divisor."""
    if op == "div" and isinstance(rhs, ir.Const) and rhs.value == 0:
        raise DslError("division by the constant 0", loc or rhs.loc)
    return rhs


def fold_constants(e: ir.Expr) -> ir.Expr:
    """Constant-fold arithmetic on constants, so ``sqrt(2.0 / pi)`` is one number."""
    if isinstance(e, ir.Binary) and isinstance(e.lhs, ir.Const) and isinstance(e.rhs, ir.Const):
        return ir.Const(e.loc, fold_number(e.op, (e.lhs.value, e.rhs.value), e.loc))
    if isinstance(e, ir.Unary) and isinstance(e.arg, ir.Const):
        return ir.Const(e.loc, fold_number(e.op, (e.arg.value,), e.loc))
    return e
