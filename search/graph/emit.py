"""Compose DSL text from an analysed primitive graph (:class:`~.patterns.Plan`).

Structures (one candidate each):

- ``tiles``: one fused expression per output over flat tiles;
- ``rows``: whole rows per tile, reductions inline (``row_sum(...)``);
- ``chunked``: rows split into column chunks, one ``chunks`` pass per level of dependent
  reductions (softmax: max, then sum, then the output), accumulators as row values;
- ``slabs``: a middle-axis reduction, one ``steps`` pass per level, tile accumulators.

Inside a scope a value used more than once (or nested too deeply) gets a name; everything
else is inlined, so an elementwise chain becomes one expression. Every float input is
computed in f32 (``cast(load(x, t), f32)``) and every output is cast back on store.
"""

from __future__ import annotations

import keyword
import math
import re
from dataclasses import dataclass, field

import networkx as nx
import torch

from ...tasks.task import Task
from .patterns import Plan
from .prims import TRANSPARENT
from .trace import Unsupported

DSL_DTYPE = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16",
             torch.int32: "i32", torch.int8: "i8", torch.uint8: "u8", torch.bool: "bool"}
SYM = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
CMP_SYM = {"lt": "<", "gt": ">", "le": "<=", "ge": ">=", "eq": "==", "ne": "!="}
INIT = {"sum": 0.0, "max": -math.inf, "min": math.inf, "prod": 1.0}
RESERVED = {
    "t", "c", "k", "kernel", "tunable", "pow2", "choice", "span", "tiles", "rows", "slabs",
    "chunks", "steps", "load", "load_bcast", "load_per_row", "store", "where", "cast",
    "maximum", "minimum", "leaky_relu", "row_sum", "row_max", "row_min", "row_fill",
    "tile_fill", "width", "inf", "pi", "In", "Out", "Scalar", "exp", "log", "abs", "sqrt",
    "rsqrt", "reciprocal", "relu", "tanh", "sigmoid", "erf", "f32", "f16", "bf16", "i32",
    "i8", "u8", "bool", "TILE", "ROWS", "CHUNK", "CORES", "DEPTH",
}
MAX_INLINE_DEPTH = 12


def literal(v: float) -> str:
    if math.isnan(v):
        raise Unsupported("a NaN constant has no DSL form")
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(float(v))


def ident(name: str, taken: set[str]) -> str:
    """A DSL identifier for ``name`` that is neither reserved nor taken."""
    base = re.sub(r"\W", "_", name) or "v"
    if base[0].isdigit():
        base = "v_" + base
    base = base.lstrip("_") or "v"
    out = base
    i = 1
    while out in RESERVED or out in taken or keyword.iskeyword(out) or out.startswith("__"):
        out = f"{base}_{i}"
        i += 1
    taken.add(out)
    return out


@dataclass
class Scope:
    at: str  # the loop variable loads of this scope address
    indent: int
    names: dict[int, str] = field(default_factory=dict)
    inner: bool = True  # may evaluate inner (tile / column) values

    def child(self, at: str) -> Scope:
        return Scope(at, self.indent + 1, dict(self.names), True)


class Emitter:
    """Writes one DSL program for one structure of a plan."""

    def __init__(self, plan: Plan, task: Task, structure: str) -> None:
        self.plan = plan
        self.pg = plan.pg
        self.task = task
        self.structure = structure
        self.kind = plan.domain.kind
        self.lines: list[str] = []
        self.taken: set[str] = set()
        self.counter = 0
        self.pos = {n: i for i, n in enumerate(plan.order)}
        self.param: dict[int, str] = {}  # task input index -> DSL parameter name
        self.outputs: list[str] = []

    # ------------------------------------------------------------ helpers
    def base(self, n: int) -> int:
        while self.pg.op(n) in TRANSPARENT:
            n = self.pg.g.nodes[n]["args"][0]
        return n

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
    def fill(self) -> str:
        return "row_fill" if self.kind == "rows" else "tile_fill"

    # ------------------------------------------------------------ expressions
    def lift(self, e: str) -> str:
        """A runtime scalar as a value of the loop (row value, or tile)."""
        return f"({self.fill}(0.0) + {e})"

    def as_tile(self, n: int, scope: Scope) -> str:
        """An operand that must be a full tile (where/compare in a rows loop)."""
        e = self.ex(n, scope)
        if self.kind == "rows" and self.form(n) in ("o", "c"):
            return f"(tile_fill(0.0) + {e})"
        return e

    def cond(self, m: int, scope: Scope) -> str:
        m = self.base(m)
        if self.pg.op(m) == "cmp":
            a, b = self.args(m)
            return f"{self.as_tile(a, scope)} {CMP_SYM[self.pg.attr(m, 'cmp')]} " \
                   f"{self.as_tile(b, scope)}"
        return f"{self.as_tile(m, scope)} > 0.5"

    def ex(self, n: int, scope: Scope) -> str:
        n = self.base(n)
        if n in scope.names:
            return scope.names[n]
        d = self.pg.g.nodes[n]
        op = d["op"]
        if op == "const":
            return literal(d["value"])
        if op == "scalar":
            return self.param[-1 - d["index"]]
        if op == "extent":
            return "width(t)"
        if op == "input":
            return self.load(n, scope)
        args = self.args(n)
        lift = n in self.plan.materialize
        if op == "reduce":
            if self.kind != "rows":
                raise AssertionError("slab reductions are accumulated, not inlined")
            return f"row_{d['red']}({bare(self.ex(args[0], scope))})"
        if op == "leaky_relu":
            return f"leaky_relu({bare(self.ex(args[0], scope))}, {literal(d['slope'])})"
        if op == "ind":
            if self.pg.op(args[0]) == "input":
                return self.ex(args[0], scope)
            return f"where({self.cond(args[0], scope)}, 1.0, 0.0)"
        if op == "where":
            return (f"where({self.cond(args[0], scope)}, {bare(self.as_tile(args[1], scope))}, "
                    f"{bare(self.as_tile(args[2], scope))})")
        if op == "cmp":
            raise AssertionError("comparisons are emitted inside where()")
        if len(args) == 1:
            a = self.ex(args[0], scope)
            if lift:
                a = self.lift(a)
            if op == "neg":
                return f"(-{a})"
            return f"{op}({bare(a)})"
        a, b = (self.ex(x, scope) for x in args)
        if lift:
            a = self.lift(a)
        elif self.kind == "rows" and {self.form(args[0]), self.form(args[1])} == {"o", "c"}:
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
        if f == "t":
            e = f"load({name}, {scope.at})"
        elif f == "c":
            e = f"load_bcast({name}, {scope.at})"
        elif self.kind == "rows":
            e = f"load_per_row({name}, t)"
        else:
            e = f"load({name}, t)"
        if d["dtype"] != torch.float32:
            e = f"cast({e}, f32)"
        return e

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
            if op in ("const", "scalar", "extent"):
                continue
            if self.multipass and scope.inner and self.form(n) == "o":
                outer.add(n)
                continue
            if op == "reduce" and self.multipass:
                raise AssertionError("reduction used before its pass")
            seen.add(n)
            stack.extend(self.args(n))
        order = sorted(seen, key=self.pos.__getitem__)
        return order, sorted(outer, key=self.pos.__getitem__)

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
            dd = 1 + max((depth.get(a, 0) for a in self.args(n)), default=0)
            nameable = op != "cmp" and not (self.form(n) == "s" and n not in self.plan.materialize)
            if nameable and (uses.get(n, 0) > 1 or dd > MAX_INLINE_DEPTH or
                             (force and n in roots_set)):
                name = self.fresh("a" if op == "input" else "v")
                self.emit(scope, f"{name} = {bare(self.ex(n, scope))}")
                scope.names[n] = name
                dd = 0
            depth[n] = dd

    @property
    def multipass(self) -> bool:
        return self.structure in ("chunked", "slabs")

    # ------------------------------------------------------------ program
    def header(self) -> None:
        task = self.task
        params = []
        scalar_i = 0
        for i, spec in enumerate(task.inputs):
            if spec.kind == "scalar":
                name = ident(spec.name, self.taken)
                self.param[-1 - i] = name
                params.append(f"{name}: Scalar[f32]")
                scalar_i += 1
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
        kname = ident(task.name.lower(), set())
        ops = ", ".join(self.plan.aten_ops) or "no ops"
        what = {"tiles": "one fused elementwise pass over flat tiles",
                "rows": "whole rows per tile, reductions inline",
                "chunked": "rows in column chunks, one pass per dependent reduction",
                "slabs": "one steps pass per dependent reduction over the middle axis"}
        doc = f"Graph frontend ({what[self.structure]}) for: {ops}."
        doc = re.sub(r"[^A-Za-z0-9_.,:;()/ +-]", "", doc)
        self.lines += [f'@kernel(category="{task.category}")',
                       f"def {kname}({', '.join(params)}):",
                       f'    """{doc}"""']

    def loop(self) -> None:
        ref = self.param[self.plan.domain.ref]
        cores = "CORES = tunable(choice(1, 2, 4, 8, 16, 24, 32, 40, 48), default=48)"
        depth = "DEPTH = tunable(choice(1, 2), default=2)"
        s = self.structure
        if s == "tiles":
            tun = ["TILE = tunable(pow2(256, 16384), default=4096)"]
            head = f"for t in tiles({ref}, tile=TILE, cores=CORES, depth=DEPTH):"
        elif s in ("rows", "chunked"):
            if s == "rows":
                tun = [f"ROWS = tunable(pow2(1, 64), default={4 if self._tile_outputs else 8})"]
            else:
                tun = ["ROWS = tunable(pow2(1, 16), default=1)",
                       "CHUNK = tunable(pow2(256, 16384), default=4096)"]
            dims = f", dims={self.plan.domain.dim}" if self.plan.domain.dim != 1 else ""
            head = f"for t in rows({ref}, rows=ROWS{dims}, cores=CORES, depth=DEPTH):"
        else:
            tun = ["TILE = tunable(pow2(64, 16384), default=2048)"]
            head = (f"for t in slabs({ref}, dim={self.plan.domain.dim}, tile=TILE, cores=CORES, "
                    "depth=DEPTH):")
        for line in [*tun, cores, depth, head]:
            self.emit(1, line)

    @property
    def _tile_outputs(self) -> bool:
        return any(f == "t" for _, f, _ in self.plan.outputs)

    def store_expr(self, j: int, scope: Scope) -> str:
        n, _, dt = self.plan.outputs[j]
        e = bare(self.ex(n, scope))
        return f"cast({e}, {DSL_DTYPE[dt]})" if dt != torch.float32 else e

    def single_pass(self) -> None:
        scope = Scope("t", 2, inner=True)
        self.evaluate([n for n, _, _ in self.plan.outputs], scope)
        for j in range(len(self.plan.outputs)):
            self.emit(scope, f"store({self.outputs[j]}, t, {self.store_expr(j, scope)})")

    def multi_pass(self) -> None:
        outer = Scope("t", 2, inner=False)
        inner_var = "c" if self.structure == "chunked" else "k"
        inner_loop = "for c in chunks(t, CHUNK):" if inner_var == "c" else "for k in steps(t):"
        reds = self.plan.reductions
        level: dict[int, int] = {}
        for r in reds:  # plan.order is topological
            below = [level[x] for x in reds if x in level and _reaches(self.pg.g, x, r)]
            level[r] = 1 + max(below, default=0)
        passes = sorted({lv for lv in level.values()})

        def prepare(roots: list[int]) -> Scope:
            """Evaluate (named) the outer values an inner pass reads, then open the pass."""
            probe = outer.child(inner_var)
            _, needs = self.needed(roots, probe)
            if needs:
                self.evaluate(needs, outer, force=True)
            return outer.child(inner_var)

        for lv in passes:
            group = [r for r in reds if level[r] == lv]
            roots = [self.args(r)[0] for r in group]
            scope = prepare(roots)
            accs = []
            for r in group:
                acc = self.fresh("r")
                accs.append(acc)
                init = literal(INIT[self.pg.attr(r, "red")])
                self.emit(outer, f"{acc} = {self.fill}({init})")
            self.emit(outer, inner_loop)
            self.evaluate(roots, scope)
            for r, acc, x in zip(group, accs, roots, strict=True):
                e = self.ex(x, scope)
                red = self.pg.attr(r, "red")
                if self.kind == "rows":
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
            for r, acc in zip(group, accs, strict=True):
                outer.names[r] = acc
        inner_outs = [j for j, (_, f, _) in enumerate(self.plan.outputs) if f == "t"]
        outer_outs = [j for j, (_, f, _) in enumerate(self.plan.outputs) if f == "o"]
        if inner_outs:
            roots = [self.plan.outputs[j][0] for j in inner_outs]
            scope = prepare(roots)
            self.emit(outer, inner_loop)
            self.evaluate(roots, scope)
            for j in inner_outs:
                self.emit(scope, f"store({self.outputs[j]}, {inner_var}, "
                                 f"{self.store_expr(j, scope)})")
        if outer_outs:
            roots = [self.plan.outputs[j][0] for j in outer_outs]
            self.evaluate(roots, outer)
            for j in outer_outs:
                self.emit(outer, f"store({self.outputs[j]}, t, {self.store_expr(j, outer)})")

    def program(self) -> str:
        self.header()
        self.loop()
        if self.multipass:
            self.multi_pass()
        else:
            self.single_pass()
        return "\n".join(self.lines) + "\n"


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


def bare(e: str) -> str:
    """``e`` without redundant outer parentheses (where it is a whole argument)."""
    while e.startswith("(") and e.endswith(")") and _balanced(e[1:-1]):
        e = e[1:-1]
    return e


def structures(plan: Plan) -> list[str]:
    """Sensible structures for a plan, best guess first."""
    kind = plan.domain.kind
    if kind == "tiles":
        return ["tiles"]
    if kind == "slabs":
        return ["slabs"]
    if plan.per_row_inputs:
        return ["rows"]  # load_per_row is not allowed in a chunked rows loop
    w = plan.domain.extents(plan.full_shape)["W"]
    return ["chunked", "rows"] if w > 8192 else ["rows", "chunked"]


def emit_program(plan: Plan, task: Task, structure: str) -> str:
    return Emitter(plan, task, structure).program()
