"""Compose DSL text from an analysed primitive graph (:class:`~.patterns.Plan`).

Structures (one candidate each):

- ``tiles``: one fused expression per output over flat tiles;
- ``rows``: whole rows per tile, reductions inline (``row_sum(...)``), scans from a zero
  carry (``scan_sum(v, row_fill(0.0))``);
- ``chunked``: rows split into column chunks, one ``chunks`` pass per level of dependent
  reductions (softmax: max, then sum, then the output), accumulators as row values, scans
  carried across chunks (``row_last``);
- ``channels``: ``rows(x, rows=1, axis=a)``, one strided row per channel, walked in chunks
  like ``chunked`` (batch-norm statistics);
- ``slabs``: a middle-axis reduction, one ``steps`` pass per level, tile accumulators (a scan
  is a running accumulator stored at each step);
- ``slabs_hold``: the same passes over one block of every step a tile (``slabs(hold=True)``),
  copied once and read by every pass: x crosses GM once (offered up to ``HOLD_MAX_STEPS``);
- ``windows``: pooling, ``for w in taps(t)`` folding every window offset;
- ``<chunked|slabs|slabs_rows|slabs_flat>-online``: the same, with each max reduction and the
  sum of exp(x - max) of the same x (``online_pairs``: logsumexp, softmax, log_softmax however
  written) folded into one pass, the sum rescaled to the running max (``search/onepass.py``):
  one read of x fewer; offered beside the two-pass form, the search decides.

Whole-tensor reductions (``total_sum/max/min``) end a distribution loop: a value that needs
one is computed in a further loop with the same header, the scalars in between (and scalar
outputs, stored after the last loop) as plain statements outside the loops.

Inside a scope a value used more than once (or nested too deeply) gets a name; everything
else is inlined, so an elementwise chain becomes one expression. Every float input is
computed in f32 (``cast(load(x, t), f32)``) and every output is cast back on store.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import networkx as nx
import torch

from ...tasks.task import Task
from ..core_counts import CORES_TUNABLE, balanced_cores, with_cores_default
from ..onepass import LOWEST_F32
from .names import doc_text, dsl_name
from .patterns import (
    Plan,
    broadcast_rows_block,
    col_block,
    per_row_block,
    row_position_dim,
    rows_bcast_block,
    segment_block,
    slice_window,
)
from .prims import TRANSPARENT
from .trace import Unsupported

DSL_DTYPE = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16",
             torch.int32: "i32", torch.int8: "i8", torch.uint8: "u8", torch.bool: "bool",
             torch.int64: "i64"}
SYM = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
CMP_SYM = {"lt": "<", "gt": ">", "le": "<=", "ge": ">=", "eq": "==", "ne": "!="}
INIT = {"sum": 0.0, "max": -math.inf, "min": math.inf, "prod": 1.0}
RESERVED = {
    "t", "c", "k", "kernel", "tunable", "pow2", "choice", "span", "tiles", "rows", "slabs",
    "chunks", "steps", "load", "load_bcast", "load_per_row", "store", "where", "cast",
    "maximum", "minimum", "leaky_relu", "row_sum", "row_max", "row_min", "row_fill",
    "tile_fill", "width", "inf", "pi", "In", "Out", "Scalar", "exp", "log", "abs", "sqrt",
    "rsqrt", "reciprocal", "relu", "tanh", "sigmoid", "erf", "f32", "f16", "bf16", "i32",
    "i8", "u8", "bool", "i64", "TILE", "ROWS", "CHUNK", "CORES", "DEPTH", "total_sum",
    "total_max", "total_min", "numel", "size", "scan_sum", "scan_prod", "scan_max", "row_last",
    "rscan_sum", "rscan_prod", "rscan_max", "row_first",
    "pick", "windows", "taps", "w", "position", "load_scalar", "gather_rows", "gather_cols",
    "index_add_rows", "load_rows_bcast", "select_cols", "window_recip", "load_slice", "load_every",
    "row_position", "load_bcast_every", "load_step",
}
SCAN_INIT = {"sum": 0.0, "prod": 1.0, "max": -math.inf}
#: ops whose value is never an eager fp16 rounding step (data, constants, masks)
ROUND_EXEMPT = ("input", "slice", "const", "scalar", "extent", "position", "index", "pick", "cmp", "ind",
                "gather", "gather_cols", "pool_recip")
MAX_INLINE_DEPTH = 12
#: slabs_hold is offered up to this many steps: a held block of 2048 elements (its default)
#: still has 8 positions of B a step, one 32 B block of fp32
HOLD_MAX_STEPS = 256
SCAN_LANES = 64  # segments of the blocked scan in the "-blocked" structures


def literal(v: float) -> str:
    if math.isnan(v):
        raise Unsupported("a NaN constant has no DSL form")
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(float(v))


def ident(name: str, taken: set[str], public: bool = True) -> str:
    """A DSL identifier for ``name`` (a task input's, the task's) that the DSL accepts and
    that is neither reserved nor taken (see :mod:`.names`)."""
    return dsl_name(name, taken, RESERVED, public=public)


@dataclass
class Scope:
    at: str  # the loop variable loads of this scope address ("" outside loops)
    indent: int
    names: dict[int, str] = field(default_factory=dict)
    inner: bool = True  # may evaluate inner (tile / column) values
    top: bool = False  # outside every loop: scalars only (host or total_* results)

    def child(self, at: str) -> Scope:
        return Scope(at, self.indent + 1, dict(self.names), True)


class Emitter:
    """Writes one DSL program for one structure of a plan."""

    def __init__(self, plan: Plan, task: Task, structure: str) -> None:
        self.plan = plan
        self.pg = plan.pg
        self.task = task
        # "<structure>-blocked": the same program with blocked scans (scan_*(v, carry, lanes))
        structure, _, variant = structure.partition("-")
        self.lanes = SCAN_LANES if variant == "blocked" else 0
        # "<chunked|slabs...>-online": a max and the sum of exp(x - max) in one pass (online_pairs)
        self.online = variant == "online"
        self.online_used = False  # a pass of this program folds a max and its sum of exp
        self.online_plain = True  # every online sum term is exp(a - mn) of a named a (block_max's form)
        self.pool_variant = variant if structure == "windows" else ""  # "separable" | "ring" | ""
        # "slabs_rows" is slabs with several steps a copy (slabs(rows=...)), written alike
        # "<rows|slabs>_flat": the same, its tiles' rows read as one aligned burst (flat=True)
        self.flat = structure in ("rows_flat", "slabs_flat")
        # "slabs_hold": every step of a tile in one block, copied once and read by every pass
        self.hold = structure == "slabs_hold"
        self.blocked = structure in ("slabs_rows", "slabs_flat", "slabs_hold")
        self.structure = "slabs" if self.blocked else "rows" if structure == "rows_flat" else structure
        self.kind = plan.domain.kind
        self.lines: list[str] = []
        self.taken: set[str] = set()
        self.counter = 0
        self.pos = {n: i for i, n in enumerate(plan.order)}
        self.param: dict[int, str] = {}  # task input index -> DSL parameter name
        self.outputs: list[str] = []
        self.head = ""
        # scans of the pass being written: (carry or accumulator, scan value, init, reverse)
        self.scans: list[tuple[str, str, float, bool]] = []

    # ------------------------------------------------------------ helpers
    def base(self, n: int) -> int:
        return self.pg.storage(n)

    def args(self, n: int) -> list[int]:
        return [self.base(a) for a in self.pg.g.nodes[n]["args"]]

    def form(self, n: int) -> str:
        return self.plan.forms[n]

    def fresh(self, prefix: str) -> str:
        while True:
            name = f"{prefix}{self.counter}"
            self.counter += 1
            if name not in self.taken and name not in RESERVED:
                self.taken.add(name)
                return name

    def emit(self, scope: Scope | int, line: str) -> None:
        indent = scope.indent if isinstance(scope, Scope) else scope
        self.lines.append("    " * indent + line)

    @property
    def rowlike(self) -> bool:
        return self.kind in ("rows", "channels")

    @property
    def fill(self) -> str:
        return "row_fill" if self.rowlike else "tile_fill"

    def shape_expr(self, n: int, scope: Scope) -> str:
        inner, host = self.plan.exprs[n]
        e = host if scope.top or inner is None else inner
        if e is None:
            raise Unsupported("a shape-derived constant (the loop's width) is used outside the "
                              "loops, where only numel()/size() host scalars exist")
        return self.hosted(e)

    def hosted(self, e: str) -> str:
        """A host expression of the plan (``{pN}``: task input N) with the inputs' DSL names."""
        return e.format(**{f"p{i}": name for i, name in self.param.items() if i >= 0})

    # ------------------------------------------------------------ expressions
    def lift(self, e: str) -> str:
        """A runtime scalar as a value of the loop (row value, or tile)."""
        return f"({self.fill}(0.0) + {e})"

    def as_tile(self, n: int, scope: Scope, row: bool = False) -> str:
        """An operand that must be a full tile or a literal (where/compare); ``row``: of a where()
        over per-row values, where operands stay per-row values."""
        n = self.base(n)
        e = self.ex(n, scope)
        if row:
            return e
        f = self.form(n)
        if (self.rowlike and f in ("o", "c")) or f == "g" or \
                (f == "s" and self.pg.op(n) != "const") or n in self.plan.exprs:
            return f"(tile_fill(0.0) + {e})"
        return e

    def cond(self, m: int, scope: Scope, row: bool = False) -> str:
        m = self.base(m)
        if self.pg.op(m) == "cmp":
            a, b = self.args(m)
            ea, eb = self.as_tile(a, scope, row), self.as_tile(b, scope, row)
            if all(self.form(x) in ("s", "g") for x in (a, b)) and not ea.startswith("(tile"):
                ea = f"({'row' if row else 'tile'}_fill(0.0) + {ea})"  # a lifted comparison of scalars
            return f"{ea} {CMP_SYM[self.pg.attr(m, 'cmp')]} {eb}"
        return f"{self.as_tile(m, scope, row)} > 0.5"

    def scalar_ex(self, n: int, scope: Scope) -> str:
        """A kernel-side scalar (a function of total_* results), outside the loops."""
        op = self.pg.op(n)
        args = [self.ex(a, scope) for a in self.args(n)]
        if op in SYM:
            return f"({args[0]} {SYM[op]} {args[1]})"
        if op in ("max", "min"):
            return f"{'maximum' if op == 'max' else 'minimum'}({bare(args[0])}, {bare(args[1])})"
        a = args[0]
        if op == "round":  # ex() casts it to its 16-bit dtype and back, as eager's cast rounds
            return a
        if op == "neg":
            return f"(0.0 - {a})"
        if op == "relu":
            return f"maximum({bare(a)}, 0.0)"
        if op == "sigmoid":
            return f"(1.0 / (1.0 + exp(0.0 - {a})))"
        if op == "tanh":
            return f"(2.0 / (1.0 + exp({a} * -2.0)) - 1.0)"
        return f"{op}({bare(a)})"

    def ex(self, n: int, scope: Scope, rounded: bool = True) -> str:
        """The expression of ``n``; an ATen op's fp16/bf16 result rounded as eager rounds it
        (``cast(cast(e, f16), f32)``) unless ``rounded`` is False (a store casts anyway)."""
        n = self.base(n)
        if n in scope.names:
            return scope.names[n]
        e = self._ex(n, scope)
        d = self.pg.g.nodes[n]
        if rounded and n in self.pg.rounded and d["op"] not in ROUND_EXEMPT and \
                self.form(n) not in ("s", "g") and d["dtype"] in DSL_DTYPE and \
                not (d["op"] == "where" and self.exact_in(n, d["dtype"])):
            return f"cast(cast({bare(e)}, {DSL_DTYPE[d['dtype']]}), f32)"
        return e

    def exact_in(self, n: int, dtype: torch.dtype, depth: int = 0) -> bool:
        """Is every value ``n`` can take already a ``dtype`` number (so rounding it is the
        identity)? A where() choosing between such values is (masked_fill of an fp16 tensor
        with -inf): inputs of that dtype, constants it represents, values rounded to it."""
        n = self.base(n)
        d = self.pg.g.nodes[n]
        if d["op"] == "const":
            c = float(d["value"])
            return math.isnan(c) or float(torch.tensor(c, dtype=dtype)) == c
        if d["op"] in ("input", "slice"):
            return d["dtype"] == dtype
        if d["op"] == "where" and depth < MAX_INLINE_DEPTH:
            return all(self.exact_in(a, dtype, depth + 1) for a in d["args"][1:])
        return n in self.pg.rounded and d["dtype"] == dtype and d["op"] not in ROUND_EXEMPT and \
            self.form(n) not in ("s", "g")

    def _ex(self, n: int, scope: Scope) -> str:
        d = self.pg.g.nodes[n]
        op = d["op"]
        if op == "const":
            if n in self.plan.exprs:
                return self.shape_expr(n, scope)
            return literal(d["value"])
        if op == "scalar":
            return self.param[-1 - d["index"]]
        if op == "extent":
            return self.shape_expr(n, scope)
        if op == "input":
            return self.load(n, scope)
        if op == "slice" and self.form(n) == "r":  # evenly spaced rows of a window (patterns._window_form)
            x, _ = slice_window(self.pg, n)
            xd = self.pg.g.nodes[x]
            win = ", ".join(self.hosted(w) for w in self.plan.windows[n])
            e = f"load_rows_bcast({self.param[xd['index']]}, {scope.at}, {self.rows_divisor(n)}, {win})"  # n, p, o, m, q
            return e if xd["dtype"] == torch.float32 else f"cast({e}, f32)"
        if op == "slice":  # a window of a task input (patterns._slice_form)
            x = self.pg.g.nodes[d["args"][0]]
            col = self.hosted(self.plan.exprs[n][1])
            e = f"load_slice({self.param[x['index']]}, {scope.at}, {col})"
            return e if x["dtype"] == torch.float32 else f"cast({e}, f32)"
        if op == "position":
            if self.form(n) == "o":  # an index along a row dim: one value per row
                ref = tuple(self.plan.full_shape)
                big = row_position_dim(self.pg, n, self.plan.domain, self.plan.domain.extents(ref), ref)
                assert big is not None
                return f"row_position(t, {self._ref_sizes(big + 1, len(ref) - 1)}, {self._ref_sizes(big, big + 1)})"
            return f"position({scope.at})"
        if op == "pool_recip":
            return f"window_recip({scope.at}{', 1' if d['padded'] else ''})"
        if op == "pick":
            x, idx = self.args(n)
            skip = self.pg.attr(n, "ignore")
            e = f"pick({self.param[self.pg.attr(x, 'index')]}, t, " \
                f"{self.param[self.pg.attr(idx, 'index')]}{'' if skip is None else f', {int(skip)}'})"
            return e if self.pg.attr(x, "dtype") == torch.float32 else f"cast({e}, f32)"
        if op == "gather":
            x, idx = self.args(n)
            idx = self.pg.g.nodes[idx]
            while idx["op"] == "view":
                idx = self.pg.g.nodes[idx["args"][0]]
            e = f"gather_rows({self.param[self.pg.attr(x, 'index')]}, {scope.at}, " \
                f"{self.param[idx['index']]}, {d['dim']})"
            return e if self.pg.attr(x, "dtype") == torch.float32 else f"cast({e}, f32)"
        if op == "index_add":
            acc, src, idx = self.args(n)
            idx = self.pg.g.nodes[idx]
            while idx["op"] == "view":
                idx = self.pg.g.nodes[idx["args"][0]]
            a = bare(self.ex(acc, scope))
            if self.form(acc) != "t":
                a = f"tile_fill(0.0) + {a}"
            return (f"index_add_rows({a}, {self.param[self.pg.attr(src, 'index')]}, {scope.at}, "
                    f"{self.param[idx['index']]}, {d['dim']})")
        if op == "gather_cols":
            x, idx = self.args(n)
            if self.pg.attr(n, "shared"):
                leaf = self.pg.g.nodes[idx]
                while leaf["op"] == "view":
                    leaf = self.pg.g.nodes[leaf["args"][0]]
                e = f"select_cols({self.param[self.pg.attr(x, 'index')]}, {scope.at}, " \
                    f"{self.param[leaf['index']]})"
            else:
                e = f"gather_cols({self.param[self.pg.attr(x, 'index')]}, {scope.at}, " \
                    f"{self.param[self.pg.attr(idx, 'index')]}, {int(self.pg.attr(n, 'wrap'))})"
            return e if self.pg.attr(x, "dtype") == torch.float32 else f"cast({e}, f32)"
        if self.form(n) == "g":
            if not scope.top:
                raise AssertionError("whole-tensor scalars are named before the loop uses them")
            return self.scalar_ex(n, scope)
        args = self.args(n)
        lift = n in self.plan.materialize
        if op == "reduce":
            if not self.rowlike or self.structure != "rows":
                raise AssertionError("loop reductions are accumulated, not inlined")
            return f"row_{d['red']}({bare(self.ex(args[0], scope))})"
        if op in ("scan", "pool"):
            raise AssertionError(f"a {op} is named where it is computed")
        if op == "leaky_relu":
            return f"leaky_relu({bare(self.ex(args[0], scope))}, {literal(d['slope'])})"
        row = self.form(n) == "o" and self.kind == "rows"  # a choice per row (an ignored target)
        if op == "ind":
            if self.pg.op(args[0]) == "input":
                return self.ex(args[0], scope)
            return f"where({self.cond(args[0], scope, row)}, 1.0, 0.0)"
        if op == "where":
            return (f"where({self.cond(args[0], scope, row)}, {bare(self.as_tile(args[1], scope, row))}, "
                    f"{bare(self.as_tile(args[2], scope, row))})")
        if op == "cmp":
            raise AssertionError("comparisons are emitted inside where()")
        if len(args) == 1:
            a = self.ex(args[0], scope)
            if lift:
                a = self.lift(a)
            if op == "neg":
                return f"(-{a})"
            if op == "round":  # ex() casts it to its 16-bit dtype and back, as eager's cast rounds
                return a
            return f"{op}({bare(a)})"
        a, b = (self.ex(x, scope) for x in args)
        if lift:
            a = self.lift(a)
        elif self.rowlike and {self.form(args[0]), self.form(args[1])} == {"o", "c"}:
            if self.form(args[0]) == "o":
                a = f"(tile_fill(0.0) + {a})"
            else:
                b = f"(tile_fill(0.0) + {b})"
        if op in SYM:
            return f"({a} {SYM[op]} {b})"
        return f"{'maximum' if op == 'max' else 'minimum'}({bare(a)}, {bare(b)})"

    def load(self, n: int, scope: Scope) -> str:
        d = self.pg.g.nodes[n]
        name = self.param[d["index"]]
        f = self.form(n)
        if f == "s":  # a one-element tensor: a kernel scalar, already f32
            return f"load_scalar({name})"
        if f == "b":  # a per-channel operand repeated along every row: one resident row
            e = f"load_bcast_every({name}, t, {self.col_divisor(n)})"
            return e if d["dtype"] == torch.float32 else f"cast({e}, f32)"
        if f == "e":  # a per-channel operand inside the rows: runs of elements share a value
            e = f"load_every({name}, {scope.at}, {self.every_divisor(n)})"
            return e if d["dtype"] == torch.float32 else f"cast({e}, f32)"
        if f == "k":  # one value per step of the reduced axis (inside the steps loop only), read as f32
            return f"load_step({name}, k)"
        if f == "r":  # rows broadcast on both sides of a block of leading dims
            e = f"load_rows_bcast({name}, {scope.at}, {self.rows_divisor(n)})"
            return e if d["dtype"] == torch.float32 else f"cast({e}, f32)"
        if f in ("t", "w"):
            e = f"load({name}, {scope.at})"
        elif f == "c":
            e = f"load_bcast({name}, {scope.at})"
        elif f == "o" and self.kind == "rows" and \
                math.prod(d["real"]) != self.plan.domain.extents(self.plan.full_shape)["outer"]:
            e = f"load_per_row({name}, t, {self.row_divisor(n)})"  # broadcast over some row dims
        elif self.kind in ("rows", "channels"):
            e = f"load_per_row({name}, t)"
        else:
            e = f"load({name}, t)"
        if d["dtype"] != torch.float32:
            e = f"cast({e}, f32)"
        return e

    def row_divisor(self, n: int) -> str:
        """The host product of the loop tensor's sizes between a per-row operand's block of
        dims and the row dims (load_per_row's d)."""
        dom = self.plan.domain
        o = tuple(self.plan.full_shape)
        block = per_row_block(self.pg, n, o, math.prod(o[len(o) - dom.dim:]))
        if block is None:
            raise AssertionError("a per-row operand without its block of dims")
        return self._ref_sizes(block[1], block[2])

    def col_divisor(self, n: int) -> str:
        """The host product of the loop tensor's sizes after a repeated per-channel operand's
        block of dims (load_bcast_every's d)."""
        o = tuple(self.plan.full_shape)
        block = col_block(self.pg, n, o, self.plan.domain.extents(o)["W"])
        if block is None:
            raise AssertionError("a repeated per-channel operand without its block of dims")
        return self._ref_sizes(block[1], len(o))

    def every_divisor(self, n: int) -> str:
        """The host product of the loop tensor's sizes after a per-channel operand's block of
        dims (load_every's d)."""
        o = tuple(self.plan.full_shape)
        block = segment_block(self.pg, n, o)
        if block is None:
            raise AssertionError("a per-channel operand without its block of dims")
        return self._ref_sizes(block[1], len(o))

    def rows_divisor(self, n: int) -> str:
        """The host product of the loop tensor's sizes between an operand's block of dims
        and its row dims (load_rows_bcast's d)."""
        dom = self.plan.domain
        o = tuple(self.plan.pg.outputs[dom.ref].shape) if dom.on_output else \
            tuple(self.task.inputs[dom.ref].shape)
        w = math.prod(o[len(o) - dom.dim:])
        if dom.regrouped:  # the operand's row split like the loop's: loop row g reads its row g % groups
            return "1.0"
        block = rows_bcast_block(self.pg, n, o, w) if self.pg.op(n) == "input" else \
            broadcast_rows_block(self.pg.attr(n, "real"), o, w)
        if block is None and self.pg.op(n) == "slice":
            return "1.0"  # a window of the loop's own shape: loop row g reads its row g
        if block is None:
            raise AssertionError("a row-broadcast operand without its block of dims")
        return self._ref_sizes(block[1], block[2])

    def _ref_sizes(self, lo: int, hi: int) -> str:
        """``size(ref, lo) * ... * size(ref, hi - 1)`` of the loop's tensor (``1.0`` when empty)."""
        dom = self.plan.domain
        ref = self.outputs[dom.ref] if dom.on_output else self.param[dom.ref]
        return " * ".join(f"size({ref}, {j})" for j in range(lo, hi)) or "1.0"

    # ------------------------------------------------------------ scopes
    def needed(self, roots: list[int], scope: Scope) -> tuple[list[int], list[int]]:
        """Nodes to evaluate in ``scope`` for ``roots`` (operands first), and the outer
        values they read that are not yet named (for inner scopes of multi-pass loops)."""
        seen: set[int] = set()
        outer: set[int] = set()
        stack = [self.base(r) for r in roots]
        while stack:
            n = stack.pop()
            if n in seen or n in scope.names:
                continue
            op = self.pg.op(n)
            if op in ("const", "scalar", "extent", "index"):
                continue
            if op in ("gather", "gather_cols", "index_add"):  # reads its tensor and indices itself
                seen.add(n)
                if op == "index_add":
                    stack.append(self.args(n)[0])
                continue
            if self.form(n) == "g":
                raise AssertionError("whole-tensor scalars are named before the loop")
            lifted = op == "ind" and self.form(self.args(n)[0]) == "o"  # a where() on tiles
            if self.multipass and scope.inner and self.form(n) == "o" and op != "cmp" and \
                    not lifted:
                outer.add(n)  # (a comparison is written inside its where(): its operands are)
                continue
            if op == "reduce" and self.multipass:
                raise AssertionError("reduction used before its pass")
            seen.add(n)
            stack.extend(self.args(n))
        order = sorted(seen, key=self.pos.__getitem__)
        return order, sorted(outer, key=self.pos.__getitem__)

    def scan_stmt(self, n: int, scope: Scope) -> str:
        """Emit the scan ``n`` (a running op along the row or the slab axis); its name."""
        red = self.pg.attr(n, "red")
        rev = bool(self.pg.attr(n, "reverse", False))  # from the row's end (a flipped cumsum)
        init = SCAN_INIT[red]
        e = bare(self.ex(self.args(n)[0], scope))
        if self.structure == "slabs":
            acc = self.fresh("acc")
            upd = {"sum": f"{acc} + {e}", "prod": f"{acc} * {e}", "max": f"maximum({acc}, {e})"}
            self.emit(scope, f"{acc} = {upd[red]}")
            self.scans.append((acc, acc, init, rev))
            return acc
        name = self.fresh("cs")
        fn = f"{'r' if rev else ''}scan_{red}"
        lanes = f", {self.lanes}" if self.lanes else ""
        if self.structure == "rows":
            self.emit(scope, f"{name} = {fn}({e}, row_fill({literal(init)}){lanes})")
            return name
        carry = self.fresh("carry")
        self.emit(scope, f"{name} = {fn}({e}, {carry}{lanes})")
        self.scans.append((carry, name, init, rev))
        return name

    def evaluate(self, roots: list[int], scope: Scope, force: bool = False) -> None:
        """Name the values of ``roots``' evaluation that are shared or deep; with ``force``
        name the roots themselves too."""
        nodes, outer = self.needed(roots, scope)
        if outer:
            raise AssertionError("outer values must be evaluated first")
        uses: dict[int, int] = {}
        for n in nodes:
            for a in self.args(n):
                uses[a] = uses.get(a, 0) + 1
        for r in roots:
            r = self.base(r)
            uses[r] = uses.get(r, 0) + 1
        depth: dict[int, int] = {}
        roots_set = {self.base(r) for r in roots}
        for n in nodes:
            op = self.pg.op(n)
            if op == "scan":
                scope.names[n] = self.scan_stmt(n, scope)
                depth[n] = 0
                continue
            dd = 1 + max((depth.get(a, 0) for a in self.args(n)), default=0)
            nameable = op not in ("cmp", "index") and \
                not (self.form(n) == "s" and n not in self.plan.materialize)
            if nameable and (uses.get(n, 0) > 1 or dd > MAX_INLINE_DEPTH or
                             (force and n in roots_set)):
                name = self.fresh("a" if op in ("input", "slice") else "v")
                self.emit(scope, f"{name} = {bare(self.ex(n, scope))}")
                scope.names[n] = name
                dd = 0
            depth[n] = dd

    @property
    def multipass(self) -> bool:
        return self.structure in ("chunked", "slabs", "channels")

    # ------------------------------------------------------------ program
    def header(self) -> None:
        task = self.task
        params = []
        for i, spec in enumerate(task.inputs):
            if spec.kind == "scalar":
                name = ident(spec.name, self.taken)
                self.param[-1 - i] = name
                params.append(f"{name}: Scalar[f32]")
                continue
            dt = DSL_DTYPE.get(spec.dtype)
            if dt is None:
                raise Unsupported(f"input {spec.name!r} is {str(spec.dtype).replace('torch.', '')}, "
                                  "which has no DSL type")
            name = ident(spec.name, self.taken)
            self.param[i] = name
            params.append(f"{name}: In[{dt}]")
        for j, (_, _, dt) in enumerate(self.plan.outputs):
            name = ident("y" if len(self.plan.outputs) == 1 else f"y{j}", self.taken)
            self.outputs.append(name)
            params.append(f"{name}: Out[{DSL_DTYPE[dt]}]")
        kname = ident(task.name.lower(), set(), public=False)
        ops = ", ".join(self.plan.aten_ops) or "no ops"
        what = {"tiles": "one fused elementwise pass over flat tiles",
                "rows": "whole rows per tile, reductions inline",
                "chunked": "rows in column chunks, one pass per dependent reduction",
                "channels": "one strided row per channel, walked in column chunks",
                "slabs": "one steps pass per dependent reduction over the middle axis",
                "windows": "pooling windows, one pass over the window offsets"}
        doc = f"Graph frontend ({what[self.structure]}"
        if self.online:
            doc += "; a max and the sum of exp(x - max) in one pass, the sum rescaled to the running max"
        if self.plan.loops > 1:
            doc += f"; {self.plan.loops} loops, each after a whole-tensor reduction"
        doc += f") for: {ops}."
        if any(self.pg.op(n) == "pick" for n in self.plan.order):
            doc += " Class targets must be classes or the loss's ignore_index (anything else stops the kernel)."
        doc = doc_text(doc, limit=2000)
        self.lines += [f'@kernel(category="{task.category}")',
                       f"def {kname}({', '.join(params)}):",
                       f'    """{doc}"""']

    def _chunked_rows(self) -> int:
        """Default rows per tile of a chunked loop: as many as fill a default 4096-value chunk with
        whole rows (rows of 256 -> 16), one for rows of 4096 or more. Narrow rows one at a time are
        one short copy each, bound by its latency (modeled: softmax of a 32768 x 256 product in the
        cube rows stage, 297.7 -> 144.2 us)."""
        dom = self.plan.domain
        if dom.kind != "rows":
            return 1
        w = max(1, dom.extents(self.plan.full_shape)["W"])
        rows = 1
        while rows < 64 and rows * 2 * w <= 4096:
            rows *= 2
        return rows

    def _col_operands(self) -> bool:
        """Does a chunked loop read a column operand (``load_bcast``, a LayerNorm's weight):
        one copy of its chunk a tile, shared by the tile's rows? Wide rows then go
        ``COL_SHARED_ROWS`` a tile in ``COL_SHARED_CHUNK`` chunks, not one in 4096: a 64 KiB
        row of a LayerNorm read one at a time copies the weight and bias chunk for every row
        (modeled: LayerNorm over [65536, 32768] fp16, 11375 -> 8532 us)."""
        return self.plan.domain.kind == "rows" and any(f == "c" for f in self.plan.forms.values())

    def _chunked_tile(self) -> tuple[int, int]:
        """Default (ROWS, CHUNK) of a chunked loop: :meth:`_chunked_rows` in chunks of 4096, or
        (see :meth:`_col_operands`) wide rows with a column operand several a tile."""
        rows = self._chunked_rows()
        if rows == 1 and self._col_operands():
            return COL_SHARED_ROWS, COL_SHARED_CHUNK
        return rows, 4096

    def loop(self) -> None:
        dom = self.plan.domain
        ref = self.outputs[dom.ref] if dom.on_output else self.param[dom.ref]
        cores = f"{CORES_TUNABLE}, default=48)"
        depth = "DEPTH = tunable(choice(1, 2), default=2)"
        s = self.structure
        tail = "cores=CORES, depth=DEPTH"
        if s == "tiles":
            tun = ["TILE = tunable(pow2(256, 16384), default=4096)"]
            head = f"for t in tiles({ref}, tile=TILE, {tail}):"
        elif s in ("rows", "chunked"):
            if s == "rows":  # narrow rows: as many as fill a 4096-value tile (one short copy each is latency)
                tun = [f"ROWS = tunable(pow2(1, 64), default={max(4 if self._tile_outputs else 8, self._chunked_rows())})"]
            else:
                rows, chunk = self._chunked_tile()
                tun = [f"ROWS = tunable(pow2(1, 64), default={rows})",
                       f"CHUNK = tunable(pow2(256, 16384), default={chunk})"]
            dims = f", dims={dom.dim}" if dom.dim != 1 or dom.groups != 1 else ""
            if dom.groups != 1:
                dims += f", groups={dom.groups}"
            if self.flat:
                dims += ", flat=True"
            head = f"for t in rows({ref}, rows=ROWS{dims}, {tail}):"
        elif s == "channels":
            tun = ["CHUNK = tunable(pow2(256, 16384), default=4096)"]
            head = f"for t in rows({ref}, rows=1, axis={dom.dim}, {tail}):"
        elif s == "windows":
            pool = next(n for n in self.plan.order if self.pg.op(n) == "pool")
            a = self.pg.g.nodes[pool]
            fill = "-inf" if a["red"] == "max" else "0.0"
            tun = ["ROWS = tunable(pow2(1, 64), default=4)",
                   "CHUNK = tunable(pow2(64, 4096), default=256)"]
            how = " carry=True," if self.pool_variant == "carry" else ""
            if self.pool_variant in ("separable", "ring"):  # the (kd, kh) rows folded first, then the kw taps
                how = f" combine={'max' if a['red'] == 'max' else 'sum'},"
            if self.pool_variant == "ring":  # staged rows reused by every kh, shared rows / planes kept
                how += " reuse=True, carry=True,"
                tun = ["ROWS = tunable(pow2(1, 64), default=8)" if a["dims"] == 2 else
                       "ROWS = tunable(pow2(1, 64), default=32)", tun[1]]
            if a.get("ceil"):  # ceil_mode: the windows that end past the padding too
                how += " ceil=True,"
            if max(a.get("dilation", (1,))) > 1:
                how += f" dilation={_per_dim(a['dilation'])},"
            k, st, pd = (_per_dim(a[f]) for f in ("kernel", "stride", "padding"))
            head = (f"for t in windows({ref}, dims={a['dims']}, kernel={k}, "
                    f"stride={st}, padding={pd}, fill={fill},{how} "
                    f"rows=ROWS, chunk=CHUNK, {tail}):")
        elif self.flat:  # defaults as the recipes' flat slabs (search/flat.py)
            tun = ["ROWS = tunable(pow2(1, 256), default=4)"]
            slabs = dom.extents(self.plan.full_shape)["A"]
            cores = with_cores_default(cores, balanced_cores(slabs))
            head = f"for t in slabs({ref}, dim={dom.dim}, tile=32, rows=ROWS, flat=True, {tail}):"
        elif self.hold:  # TILE: the block's elements (K x positions); a third slot keeps two copies in flight
            # a block of 4096 when it gives every step whole 512 B bursts (full bandwidth), else 2048
            k = dom.extents(self.plan.full_shape)["K"]
            block = 4096 if k * 16 * self._unit <= 4096 else 2048
            tun = [f"TILE = tunable(pow2(512, 32768), default={block})"]
            depth = "DEPTH = tunable(choice(1, 2, 3), default=3)"
            head = f"for t in slabs({ref}, dim={dom.dim}, tile=TILE, hold=True, {tail}):"
            cores = with_cores_default(cores, balanced_cores(self._slab_items(block // max(1, k))))
        elif self.blocked:  # defaults as the recipes' slabs_blocked template
            tile = self._blocked_tile()  # a block of 4096 values either way: the UB plan of the 64 x 64 default
            tun = [f"TILE = tunable(pow2(32, 4096), default={tile})",
                   f"ROWS = tunable(pow2(1, 256), default={4096 // tile})"]
            head = f"for t in slabs({ref}, dim={dom.dim}, tile=TILE, rows=ROWS, {tail}):"
            cores = with_cores_default(cores, balanced_cores(self._slab_items(tile)))
        else:
            tun = ["TILE = tunable(pow2(64, 16384), default=2048)"]
            head = f"for t in slabs({ref}, dim={dom.dim}, tile=TILE, {tail}):"
        for line in [*tun, cores, depth]:
            self.emit(1, line)
        self.head = head

    def _blocked_tile(self) -> int:
        """The blocked slabs structure's default TILE: 128 positions (512 B of fp32: whole
        full-bandwidth bursts) when B has that many, else the recipes' 64; ROWS makes the
        block 4096 values either way (32 or 64 steps a copy)."""
        return 128 if self.plan.domain.extents(self.plan.full_shape)["B"] >= 128 else 64

    def blocked_items(self) -> int:
        """Work items of the blocked slabs structure at its default TILE (what a K split fills)."""
        return self._slab_items(self._blocked_tile())

    def _slab_items(self, per: int) -> int:
        """Work items of a slabs loop at the task's shape whose tiles take ``per`` positions of
        B (rounded as the tiling does: whole 512 B when that many, else whole 32 B): what the
        CORES default balances (the fewest cores that take as many rounds as 48 do)."""
        e = self.plan.domain.extents(self.plan.full_shape)
        u = self._unit
        step = 16 * u if per >= 16 * u else u
        tile = max(u, min(per // step * step, -(-e["B"] // u) * u))
        return e["A"] * -(-e["B"] // tile)

    @property
    def _unit(self) -> int:
        """The tiling's U as the defaults estimate it: elements of 32 B of the narrowest float
        input (the tiling takes every tensor's dtype; a default need only be close)."""
        return 32 // min((t.dtype.itemsize for t in self.task.inputs if t.dtype.is_floating_point), default=4)

    @property
    def _tile_outputs(self) -> bool:
        return any(f == "t" for _, f, _ in self.plan.outputs)

    def store_expr(self, j: int, scope: Scope) -> str:
        n, _, dt = self.plan.outputs[j]
        if dt == torch.bool:  # a mask: its 1.0/0.0 tile, stored as bytes
            return f"cast(where({self.cond(n, scope)}, 1.0, 0.0), bool)"
        # the store's cast rounds the value as eager's last op does, unless the output is wider
        # than that op's result (`(x * 0.1).float()` of fp16 x: the fp16 product, then widened)
        e = bare(self.ex(n, scope, rounded=dt == torch.float32))
        return f"cast({e}, {DSL_DTYPE[dt]})" if dt != torch.float32 else e

    def total(self, r: int, e: str, scope: Scope, top: Scope) -> None:
        """``name = total_red(e)`` at the loop level; the name is a scalar after the loop."""
        name = self.fresh("tot")
        self.emit(scope, f"{name} = total_{self.pg.attr(r, 'red')}({bare(e)})")
        top.names[r] = name

    def loop_roots(self, j: int) -> tuple[list[int], list[int]]:
        """Whole-tensor reductions loop ``j`` computes, and the outputs it stores."""
        lv = self.plan.level
        grids = [r for r in self.plan.order if self.plan.is_grid(r) and lv[r] == j]
        outs = [k for k, (n, f, _) in enumerate(self.plan.outputs) if f != "g" and lv[n] == j - 1]
        return grids, outs

    def single_pass(self, j: int, top: Scope) -> None:
        scope = Scope("t", 2, dict(top.names), inner=True)
        grids, outs = self.loop_roots(j)
        if self.structure == "windows":
            pool = next(n for n in self.plan.order if self.pg.op(n) == "pool")
            red = self.pg.attr(pool, "red")
            acc = self.fresh("acc")
            self.emit(scope, f"{acc} = tile_fill({literal(INIT[red])})")
            self.emit(scope, "for w in taps(t):")
            tap = Scope("w", 3, dict(scope.names), inner=True)
            x = self.args(pool)[0]
            self.evaluate([x], tap)
            e = bare(self.ex(x, tap))
            self.emit(tap, f"{acc} = {acc} + {e}" if red == "sum" else f"{acc} = maximum({acc}, {e})")
            scope.names[pool] = acc
        xs = [self.args(r)[0] for r in grids]
        self.evaluate(xs + [self.plan.outputs[k][0] for k in outs], scope)
        for r, x in zip(grids, xs, strict=True):
            e = self.ex(x, scope)
            if self.kind == "rows" and self.form(x) == "t":
                e = f"row_{self.pg.attr(r, 'red')}({bare(e)})"
            self.total(r, e, scope, top)
        for k in outs:
            self.emit(scope, f"store({self.outputs[k]}, t, {self.store_expr(k, scope)})")

    def _loop_reductions(self, roots: list[int], names: dict[int, str]) -> list[int]:
        """Loop-level reductions (row / slab / channel) the roots need, not yet computed."""
        out: set[int] = set()
        seen: set[int] = set()
        stack = [self.base(r) for r in roots]
        while stack:
            n = stack.pop()
            if n in seen or n in names or self.form(n) == "g":
                continue
            seen.add(n)
            if self.pg.op(n) == "reduce":
                out.add(n)
            stack.extend(self.args(n))
        return sorted(out, key=self.pos.__getitem__)

    def multi_pass(self, j: int, top: Scope) -> None:
        outer = Scope("t", 2, dict(top.names), inner=False)
        steps = self.structure == "slabs"
        inner_var = "k" if steps else "c"
        inner_loop = "for k in steps(t):" if steps else "for c in chunks(t, CHUNK):"
        grids, outs = self.loop_roots(j)
        xs = {r: self.args(r)[0] for r in grids}
        parts = [r for r in grids if self.form(xs[r]) == "t"]  # accumulated per row first
        roots = [xs[r] for r in grids] + [self.plan.outputs[k][0] for k in outs]
        reds = self._loop_reductions(roots, outer.names) + parts
        pairs = online_pairs(self.pg, reds) if self.online else {}
        # an arg-extreme's index folded into its extreme's pass (steps only: a step's slice is one
        # element a column, so "the step where the running extreme last grew" is the first index)
        apairs = arg_pairs(self.pg, reds) if steps else {}
        # a centred sum of squares folded into its mean's pass as shifted moments (norms in chunks)
        # (steps: in the plain steps loop only, the shift update is no fold a blocked copy can split)
        mpairs = moment_pairs(self.pg, reds) if self.online and (self.rowlike and not steps or
                                                                 steps and not self.blocked) else {}
        level: dict[int, int] = {}
        for r in sorted(reds, key=self.pos.__getitem__):  # plan.order is topological
            below = {x: level[x] for x in reds if x in level and x != r and _reaches(self.pg.g, x, r)}
            level[r] = 1 + max(below.values(), default=0)
            for pd in (pairs, apairs, mpairs):
                if r in pd:  # folded into its partner's pass unless it needs another value of that level
                    m = pd[r]
                    if 1 + max((v for x, v in below.items() if x != m), default=0) <= level[m]:
                        level[r] = level[m]
                    else:
                        del pd[r]
        maxes = {m: s for s, m in pairs.items()}
        means = {m: s for s, m in mpairs.items()}  # mean's sum -> its centred sum of squares
        self.online_used = self.online_used or bool(pairs) or bool(mpairs)
        part_acc: dict[int, str] = {}

        def prepare(roots: list[int], hide: dict[int, str] | None = None) -> Scope:
            """Evaluate (named) the outer values an inner pass reads, then open the pass
            (``hide``: maxes of the pass itself, which are no outer values)."""
            probe = outer.child(inner_var)
            probe.names.update(hide or {})
            _, needs = self.needed(roots, probe)
            if needs:
                self.evaluate(needs, outer, force=True)
            return outer.child(inner_var)

        def open_pass(scope: Scope, body: list[str]) -> None:
            """The scan carries / accumulators, the inner loop header, its body."""
            rev = {r for *_, r in self.scans}
            if len(rev) > 1:
                raise Unsupported("a forward and a reverse scan in one pass over the row")
            for carry, _, init, _ in self.scans:
                self.emit(outer, f"{carry} = {self.fill}({literal(init)})")
            self.emit(outer, inner_loop[:-2] + ", reverse=True):" if rev == {True} else inner_loop)
            self.lines += body
            for carry, value, _, r in self.scans:
                if carry != value:
                    self.emit(scope, f"{carry} = row_{'first' if r else 'last'}({value})")
            self.scans = []

        def capture(fn: Callable[[], None]) -> list[str]:
            saved = self.lines
            self.lines = []
            fn()
            out, self.lines = self.lines, saved
            return out

        for lv in sorted(set(level.values())):
            group = [r for r in reds if level[r] == lv]
            rts = [self.args(r)[0] for r in group]
            scope = prepare([x for r, x in zip(group, rts, strict=True) if r not in apairs and r not in mpairs],
                            {m: "" for m in group if m in maxes})
            accs = []
            shift = {}  # mean's sum -> (its shift k, the first-chunk flag)
            for r in group:
                if r in means:
                    shift[r] = (self.fresh("k"), self.fresh("first"))
                    self.emit(outer, f"{shift[r][0]} = {self.fill}(0.0)")
                    self.emit(outer, f"{shift[r][1]} = {self.fill}(1.0)")
                acc = self.fresh("r")
                accs.append(acc)
                init = LOWEST_F32 if r in maxes else "0.0" if r in apairs else literal(INIT[self.pg.attr(r, 'red')])
                self.emit(outer, f"{acc} = {self.fill}({init})")

            acc_of = dict(zip(group, accs, strict=True))

            def body(group=group, accs=accs, rts=rts, scope=scope, shift=shift, acc_of=acc_of) -> None:
                plain = [(r, acc, x) for r, acc, x in zip(group, accs, rts, strict=True)
                         if r not in pairs and r not in maxes and r not in apairs and r not in mpairs
                         and r not in means]
                args = [self.args(apairs[r])[0] for r in group if r in apairs]  # the extreme's operand
                self.evaluate([x for *_, x in plain] + [x for r, _, x in zip(group, accs, rts, strict=True)
                                                         if r in maxes] + args, scope,
                              force=bool(maxes) or bool(args))
                for r in (r for r in group if r in means):  # shifted moments (search/onepass.py)
                    k, first = shift[r]
                    a = self.fresh("a")
                    self.emit(scope, f"{a} = {bare(self.ex(self.args(r)[0], scope))}")
                    sample = f"row_last({a})" if self.rowlike else a  # steps: the first step's value
                    self.emit(scope, f"{k} = {k} + {first} * {sample}")
                    self.emit(scope, f"{first} = {first} * 0.0")
                    d = self.fresh("d")
                    self.emit(scope, f"{d} = {a} - {k}")
                    sq = f"row_sum({d} * {d})" if self.rowlike else f"{d} * {d}"
                    self.emit(scope, f"{acc_of[r]} = {acc_of[r]} + {f'row_sum({d})' if self.rowlike else d}")
                    self.emit(scope, f"{acc_of[means[r]]} = {acc_of[means[r]]} + {sq}")
                for r in (r for r in group if r in apairs):  # before its extreme's update: the old one
                    m = apairs[r]
                    a = bare(self.ex(self.args(m)[0], scope))
                    cmp = ">" if self.pg.attr(m, "red") == "max" else "<"
                    self.emit(scope, f"{acc_of[r]} = where({a} {cmp} {acc_of[m]}, position({inner_var}), {acc_of[r]})")
                for r in (r for r in group if r in maxes):
                    self.online_stmts(r, maxes[r], acc_of[r], acc_of[maxes[r]], scope)
                for r, acc, x in plain:
                    e = self.ex(x, scope)
                    red = self.pg.attr(r, "red")
                    if self.rowlike:
                        e = f"row_{red}({bare(e)})"
                    elif red != "sum":
                        e = bare(e)
                    if red == "sum":
                        self.emit(scope, f"{acc} = {acc} + {e}")
                    elif red == "prod":
                        self.emit(scope, f"{acc} = {acc} * {e}")
                    else:
                        self.emit(scope, f"{acc} = {'maximum' if red == 'max' else 'minimum'}"
                                         f"({acc}, {e})")
            open_pass(scope, capture(body))
            for r in (r for r in group if r in means):  # the centred sum, then the plain one
                s1, s2, k = acc_of[r], acc_of[means[r]], shift[r][0]
                self.emit(outer, f"{s2} = maximum({s2} - {s1} * {s1} / width(t), 0.0)")
                self.emit(outer, f"{s1} = {s1} + {k} * width(t)")
            for r, acc in zip(group, accs, strict=True):
                if r in parts:
                    part_acc[r] = acc
                else:
                    outer.names[r] = acc
        inner_outs = [k for k in outs if self.plan.outputs[k][1] == "t"]
        outer_outs = [k for k in outs if self.plan.outputs[k][1] == "o"]
        if inner_outs:
            rts = [self.plan.outputs[k][0] for k in inner_outs]
            scope = prepare(rts)

            def body_out(rts=rts, scope=scope) -> None:
                self.evaluate(rts, scope)
                for k in inner_outs:
                    self.emit(scope, f"store({self.outputs[k]}, {inner_var}, "
                                     f"{self.store_expr(k, scope)})")
            open_pass(scope, capture(body_out))
        outer_roots = [xs[r] for r in grids if r not in parts] + \
            [self.plan.outputs[k][0] for k in outer_outs]
        if outer_roots:
            self.evaluate(outer_roots, outer)
        for r in grids:
            self.total(r, part_acc[r] if r in parts else self.ex(xs[r], outer), outer, top)
        for k in outer_outs:
            self.emit(outer, f"store({self.outputs[k]}, t, {self.store_expr(k, outer)})")

    def online_stmts(self, rm: int, rs: int, m: str, acc: str, scope: Scope) -> None:
        """One step of the online log-sum-exp (see search/onepass.py): the running max ``m`` of
        the max reduction ``rm``'s operand (named in ``scope``) and the sum ``acc`` of ``rs``'s
        exp(x - max) rescaled to it, the sum's operand written with the new max ``mn``."""
        x = self.args(rm)[0]
        a = self.ex(x, scope)
        mn = self.fresh("mn")
        self.emit(scope, f"{mn} = maximum({m}, {f'row_max({bare(a)})' if self.rowlike else bare(a)})")
        term = Scope(scope.at, scope.indent, dict(scope.names), scope.inner)
        term.names[self.base(rm)] = mn
        arg = self.args(rs)[0]
        self.evaluate([arg], term)
        e = bare(self.ex(arg, term))
        self.online_plain = self.online_plain and e == f"exp({a} - {mn})"
        if self.rowlike:
            e = f"row_sum({e})"
        self.emit(scope, f"{acc} = {acc} * exp({m} - {mn}) + {e}")
        self.emit(scope, f"{m} = {mn}")

    def name_scalars(self, j: int, top: Scope) -> None:
        """After loop ``j``: name the whole-tensor scalars later loops read."""
        lv = self.plan.level
        need: set[int] = set()
        for m in self.plan.order:
            if self.pg.op(m) in TRANSPARENT or self.form(m) == "g":
                continue
            for a in self.args(m):
                if self.form(a) == "g" and lv[a] == j and a not in top.names:
                    need.add(a)
        for n in sorted(need, key=self.pos.__getitem__):
            name = self.fresh("g")
            self.emit(top, f"{name} = {bare(self.ex(n, top))}")
            top.names[n] = name

    def program(self) -> str:
        self.header()
        self.loop()
        top = Scope("", 1, inner=False, top=True)
        for j in range(1, self.plan.loops + 1):
            self.emit(1, self.head)
            if self.multipass:
                self.multi_pass(j, top)
            else:
                self.single_pass(j, top)
            self.name_scalars(j, top)
        if self.online and not self.online_used:
            raise Unsupported("no max and sum of exp(x - max) to fold into one pass")
        self.online_plain = self.online_plain and self.online_used
        for k, (n, f, _) in enumerate(self.plan.outputs):
            if f == "g":
                self.emit(top, f"store({self.outputs[k]}, {bare(self.ex(n, top))})")
        return "\n".join(self.lines) + "\n"


def _arg(pg, n: int, i: int = 0) -> int:
    """The data node (through views) of operand ``i`` of node ``n``."""
    return pg.storage(pg.g.nodes[n]["args"][i])


def online_pairs(pg, reds: list[int]) -> dict[int, int]:
    """Sum reductions of ``exp(x - m)`` with ``m`` a max reduction of the same ``x`` over the
    same dims (logsumexp, softmax, log_softmax, however they are written): sum -> its max,
    the pairs the online form folds into one pass."""
    arg = functools.partial(_arg, pg)
    out = {}
    for s in reds:
        if pg.attr(s, "red") != "sum" or pg.op(e := arg(s)) != "exp" or pg.op(d := arg(e)) != "sub":
            continue
        m = arg(d, 1)
        if m in reds and pg.op(m) == "reduce" and pg.attr(m, "red") == "max" and \
                pg.attr(m, "dims") == pg.attr(s, "dims") and arg(m) == arg(d, 0):
            out[s] = m
    return out


def moment_pairs(pg, reds: list[int]) -> dict[int, int]:
    """Sum reductions of ``(x - m) * (x - m)`` with ``m = s / extent(s)`` and ``s`` a sum
    reduction of the same ``x`` over the same dims (a variance, however a norm writes it): the
    centred sum -> the plain sum, which one chunks pass computes together from moments shifted
    by a sample of the row (search/onepass.py: ``Σ(x-k)``, ``Σ(x-k)²``)."""
    arg = functools.partial(_arg, pg)
    out = {}
    for r in reds:
        if pg.attr(r, "red") != "sum" or pg.op(p := arg(r)) != "mul" or arg(p) != arg(p, 1) \
                or pg.op(d := arg(p)) != "sub" or pg.op(m := arg(d, 1)) != "div" or pg.op(arg(m, 1)) != "extent":
            continue
        s, x = arg(m), arg(d)
        if s in reds and pg.op(s) == "reduce" and pg.attr(s, "red") == "sum" and arg(s) == x and \
                pg.attr(s, "dims") == pg.attr(r, "dims") and pg.storage(pg.attr(arg(m, 1), "of")) == s:
            out[r] = s
    return out


def arg_pairs(pg, reds: list[int]) -> dict[int, int]:
    """The min reductions of ``where(x == m, position, inf)`` with ``m`` a max (min) reduction of
    the same ``x`` over the same one dim (argmax / argmin: the first index of the extreme): index
    -> its extreme, the pairs one steps pass computes together (``i = where(x > m, position(k),
    i)`` before ``m = maximum(m, x)``)."""
    arg = functools.partial(_arg, pg)
    out = {}
    for r in reds:
        if pg.attr(r, "red") != "min" or pg.op(w := arg(r)) != "where" or pg.op(c := arg(w)) != "cmp" \
                or pg.attr(c, "cmp") != "eq" or pg.op(arg(w, 1)) != "position" or pg.op(arg(w, 2)) != "const" \
                or pg.attr(arg(w, 2), "value") != math.inf:
            continue
        x, m = arg(c), arg(c, 1)
        if m in reds and pg.op(m) == "reduce" and pg.attr(m, "red") in ("max", "min") and \
                pg.attr(m, "dims") == pg.attr(r, "dims") and len(pg.attr(r, "dims")) == 1 and arg(m) == x \
                and pg.attr(arg(w, 1), "dim") == pg.attr(r, "dims")[0]:
            out[r] = m
    return out


def _reaches(g: nx.DiGraph, a: int, b: int) -> bool:
    return nx.has_path(g, a, b)


def _balanced(s: str) -> bool:
    depth = 0
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


#: a chunked loop with a column operand: rows a tile and chunk length for wide rows (_col_operands)
COL_SHARED_ROWS, COL_SHARED_CHUNK = 8, 1024


def bare(e: str) -> str:
    """``e`` without redundant outer parentheses (where it is a whole argument)."""
    while e.startswith("(") and e.endswith(")") and _balanced(e[1:-1]):
        e = e[1:-1]
    return e


def structures(plan: Plan) -> list[str]:
    """Sensible structures for a plan, best guess first."""
    kind = plan.domain.kind
    ext = plan.domain.extents(plan.full_shape)
    online = has_online_pair(plan)
    if kind == "slabs" and not any(plan.pg.op(n) == "scan" for n in plan.order):
        # folds and stores only: also several steps a copy, and read flat when a row of B is
        # not 512 B aligned (B not a multiple of 256 elements: 512 B in fp16; search/flat.py);
        # an argmax's step index is then a block's rows (position(k): row j is step k0 + j)
        out = ["slabs", "slabs_rows"] + (["slabs_flat"] if ext["B"] % 256 and not _byte_tiles(plan) else [])
        # a max and the sum of exp(x - max): beside the two passes, one (the search decides)
        out += [f"{s}-online" for s in out if online]
        # a short reduced axis: a tile's every step held in UB, x read once whatever the passes
        return out + (["slabs_hold"] if ext["K"] <= HOLD_MAX_STEPS else [])
    if kind == "windows":
        return ["windows", *pool_variants(plan)]
    if kind in ("tiles", "slabs", "channels"):
        return [kind]
    w = ext["W"]
    if any(f == "b" for f in plan.forms.values()):
        return ["rows"]  # load_bcast_every: a resident row, whole rows only
    scans = any(plan.pg.op(n) == "scan" for n in plan.order)  # scans need 4 extra row buffers
    order = ["chunked", "rows"] if w > (2048 if scans else 8192) else ["rows", "chunked"]
    reduce_only = all(f != "t" for _, f, _ in plan.outputs) and not any(
        plan.pg.op(n) in ("gather", "index_add") for n in plan.order)
    every = any(f == "e" for f in plan.forms.values())  # load_every: not in flat rows loops
    if w % 256 and w <= 8192 and plan.domain.groups == 1 and not scans and reduce_only and not every \
            and not _byte_tiles(plan):
        # row reductions of rows not 512 B aligned: whole rows, one aligned burst a tile
        order.insert(order.index("rows") + 1, "rows_flat")
    if online and kind == "rows":  # softmax / logsumexp in chunks: the statistics in one pass
        order.insert(order.index("chunked") + 1, "chunked-online")
    # scans: the blocked scan offered beside Hillis-Steele (the search decides)
    return [v for s in order for v in ((s, f"{s}-blocked") if scans and "-" not in s else (s,))]


def _byte_tiles(plan: Plan) -> bool:
    """Does the loop read a 1-byte input (a bool mask) as tiles? A flat read gathers every tile
    input, and Gather has no 1-byte form."""
    return any(plan.pg.op(n) == "input" and plan.forms.get(n) == "t" and
               plan.pg.attr(n, "dtype") in (torch.bool, torch.uint8, torch.int8) for n in plan.order)


def has_online_pair(plan: Plan) -> bool:
    """Whether the plan holds a loop-level max and a sum of exp(x - max) (see online_pairs), or
    a mean's sum and a centred sum of squares (see moment_pairs): an online structure to offer."""
    reds = [n for n in plan.order if plan.pg.op(n) == "reduce" and plan.forms[n] != "g"]
    return bool(online_pairs(plan.pg, reds)) or bool(moment_pairs(plan.pg, reds))


def pool_variants(plan: Plan) -> list[str]:
    """A 2-D / 3-D pool of the task's input itself also as the separable fold (the (kd, kh)
    rows combined elementwise, then the kw taps) and, for overlapping windows, as the
    separable ring with what the next tile shares kept in UB (as the recipes offer them).
    Not when the taps read a computed value: folding rows first would change its meaning.
    1-D: the windows with a chunk's first 512 B kept from the chunk before (any taps body)."""
    pool = next(n for n in plan.order if plan.pg.op(n) == "pool")
    a = plan.pg.g.nodes[pool]
    out = _pool_variants(plan, pool, a)
    if max(a.get("dilation", (1,))) > 1:  # dilated taps: each (kd, kh) row staged on its own
        return [v for v in out if v == "windows-separable"]
    return out


def _pool_variants(plan: Plan, pool: int, a: dict) -> list[str]:
    if a["dims"] == 1:
        return ["windows-carry"]
    src = plan.pg.storage(a["args"][0])
    # a max fold runs Max on the staged input's dtype: none for bf16 on the vector unit; a sum of
    # 16-bit rows folds in fp32 (the lowering casts each row up), as eager's average pools do
    if a["dims"] < 2 or plan.pg.op(src) != "input" or (
            a["red"] == "max" and plan.pg.g.nodes[src].get("dtype") == torch.bfloat16):
        return []
    # the ring reuses staged input rows across overlapping windows along H
    return ["windows-separable"] + (["windows-ring"] if a["stride"][-2] < a["kernel"][-2] else [])


def _per_dim(v: tuple[int, ...]) -> str:
    """A windows() kernel / stride / padding: one integer if every pooled dim shares it."""
    return str(v[0]) if len(set(v)) == 1 else "(" + ", ".join(map(str, v)) + ")"


def emit_program(plan: Plan, task: Task, structure: str) -> str:
    return Emitter(plan, task, structure).program()
