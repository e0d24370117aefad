"""Recognise the structure of a primitive graph: which distribution loop it needs and what
*form* every value takes in it.

- **tiles**: elementwise chains over same-shape tensors (and scalars) - one fused
  expression over flat tiles.
- **rows** (``rows(x, dims=d)``: ``x`` as ``[N, W]``, ``W`` the product of the last ``d``
  dims): reductions over the last dims (sum/max/min, mean, norms, softmax, layer/RMS norm)
  and broadcasts of ``[W]``-like operands (``load_bcast``, form ``c``) or ``[N, 1]``-like
  operands (``load_per_row``, form ``o``) against full tiles (form ``t``).
- **slabs** (``slabs(x, dim=a)``: ``x`` as ``[A, K, B]``): a reduction over one middle
  axis; per-step tiles are form ``t``, reduced ``[A, B]`` values form ``o``.

Forms: ``s`` scalar (inlined), ``t`` a tile of the loop (inner: full rows/chunks, or one
step of a slab), ``o`` one value per row (rows) or an ``[A, B]`` tile (slabs), ``c`` a
column vector (rows only). Each binary op's broadcast is checked against the form of its
operands with the torch shapes, so a DSL broadcast always means the same thing as the
torch one. Graphs are analysed at several shape sets; a constant that changes with the
shapes (``x.shape[-1]`` used in Python arithmetic) is re-expressed with ``width(t)`` when
it is the reduced extent ``E`` (or ``1/E``, ``E-1``, ``sqrt(E)``...).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import networkx as nx
import torch

from ...tasks.task import Shape, Task
from .prims import BINARY, TRANSPARENT, UNARY, PrimGraph, Value
from .trace import Unsupported

OUTPUT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@dataclass(frozen=True)
class Domain:
    """The distribution loop: ``kind`` over the task input ``ref`` (index into task.inputs),
    ``dim`` = trailing dims per row (rows) or the reduced axis (slabs)."""

    kind: str
    ref: int
    dim: int = 0

    def extents(self, shape: Shape) -> dict[str, int]:
        n = math.prod(shape)
        if self.kind == "tiles":
            return {"full": n, "outer": 0, "col": 0, "E": 0}
        if self.kind == "rows":
            w = math.prod(shape[len(shape) - self.dim:])
            return {"full": n, "outer": n // w, "col": w, "E": w, "N": n // w, "W": w}
        a = math.prod(shape[:self.dim])
        k = shape[self.dim]
        b = math.prod(shape[self.dim + 1:])
        return {"full": n, "outer": a * b, "col": 0, "E": k, "A": a, "K": k, "B": b}

    def describe(self, shape: Shape) -> str:
        e = self.extents(shape)
        if self.kind == "tiles":
            return "tiles"
        if self.kind == "rows":
            return f"rows(dims={self.dim}) [N={e['N']}, W={e['W']}]"
        return f"slabs(dim={self.dim}) [A={e['A']}, K={e['K']}, B={e['B']}]"


@dataclass
class Plan:
    """Everything the emitter needs: the graph, the loop, forms and outputs."""

    pg: PrimGraph
    domain: Domain
    forms: dict[int, str]
    outputs: list[tuple[int, str, torch.dtype]]
    order: list[int]  # live nodes, operands before users
    materialize: set[int] = field(default_factory=set)  # scalar-only nodes lifted to 'o'/'t'
    per_row_inputs: bool = False
    full_shape: Shape = ()
    aten_ops: tuple[str, ...] = ()  # the traced ATen ops (for the kernel's docstring)

    @property
    def reductions(self) -> list[int]:
        return [n for n in self.order if self.pg.op(n) == "reduce"]


# ---------------------------------------------------------------- liveness and structure
def live_nodes(pg: PrimGraph) -> list[int]:
    keep: set[int] = set()
    for v in pg.outputs:
        keep.add(v.node)
        keep |= nx.ancestors(pg.g, v.node)
    return [n for n in nx.topological_sort(pg.g) if n in keep]


def _signature(pg: PrimGraph) -> list[tuple]:
    sig = []
    for n in sorted(pg.g.nodes):
        d = pg.g.nodes[n]
        attrs = tuple(sorted((k, v) for k, v in d.items()
                             if k not in ("shape", "real", "value", "dtype", "args")))
        sig.append((d["op"], d["args"], attrs))
    return sig


def check_same_structure(pgs: Sequence[PrimGraph], shape_sets: Sequence[Sequence[Shape]]) -> None:
    base = _signature(pgs[0])
    for pg, shapes in zip(pgs[1:], shape_sets[1:], strict=True):
        if _signature(pg) != base or len(pg.outputs) != len(pgs[0].outputs):
            dims = ", ".join("x".join(map(str, s)) or "()" for s in shapes)
            raise Unsupported(f"the reference computes a different graph at input shapes {dims} "
                              "than at the task's shapes (shape-dependent Python control flow)")


# ---------------------------------------------------------------- domain candidates
def _suffix_reduction(shape: Shape, dims: Sequence[int]) -> bool:
    if not dims:
        return False
    lo = min(dims)
    return all(i in dims or shape[i] == 1 for i in range(lo, len(shape)))


def _rows_dim(s: Shape, w: int, n: int) -> int | None:
    if math.prod(s) != n:
        return None
    for d in range(1, len(s) + 1):
        if math.prod(s[len(s) - d:]) == w:
            return d
    return None


def _slabs_dim(s: Shape, a: int, k: int, b: int) -> int | None:
    if math.prod(s) != a * k * b:
        return None
    for i in range(len(s)):
        if math.prod(s[:i]) == a and s[i] == k and math.prod(s[i + 1:]) == b:
            return i
    return None


def _tensor_inputs(task: Task, shapes: Sequence[Shape], used: set[int]) -> list[int]:
    idx = [i for i, s in enumerate(task.inputs) if s.is_tensor]
    return sorted(idx, key=lambda i: (i not in used, i))


def domain_candidates(pg: PrimGraph, live: list[int], task: Task, shapes: Sequence[Shape]
                      ) -> list[Domain]:
    """Loops that could run this graph, best first (checked afterwards by form inference)."""
    used = {pg.attr(n, "index") for n in live if pg.op(n) == "input"}
    inputs = _tensor_inputs(task, shapes, used)
    reductions = [n for n in live if pg.op(n) == "reduce"]
    if not reductions:
        full = max((math.prod(pg.attr(n, "real")) for n in live), default=1)
        refs = [i for i in inputs if math.prod(shapes[i]) == full]
        if not refs:
            raise Unsupported("no input tensor has the shape of the result (an outer-product "
                              "style broadcast of smaller inputs)")
        ref = refs[0]
        out = [Domain("tiles", ref)]
        out += [Domain("rows", ref, d) for d in range(1, len(shapes[ref]))]
        return out
    found: list[tuple[str, tuple[int, ...]]] = []
    for r in reductions:
        x = pg.value(pg.g.nodes[r]["args"][0])
        dims = pg.attr(r, "dims")
        red = pg.attr(r, "red")
        shape = x.shape
        big = [d for d in dims if shape[d] != 1]
        kept = [s for i, s in enumerate(shape) if i not in dims and s != 1]
        if not kept and math.prod(shape) > 1:
            raise Unsupported(f"a {red} over every element (dims {list(dims)} of a "
                              f"{list(shape)} tensor) is a grid-wide reduction to one scalar, "
                              "which needs a total_sum construct the DSL does not have yet")
        if _suffix_reduction(shape, big):
            w = math.prod(shape[d] for d in dims)
            key = ("rows", (w, math.prod(shape)))
        elif len(big) == 1:
            i = big[0]
            key = ("slabs", (math.prod(shape[:i]), shape[i], math.prod(shape[i + 1:])))
        else:
            raise Unsupported(f"a {red} over dims {list(dims)} of a {list(shape)} tensor is "
                              "neither a reduction over the last dims (rows) nor over one "
                              "middle axis (slabs)")
        if red == "prod" and key[0] == "rows":
            raise Unsupported("a product over the last dim: the DSL has row_sum/row_max/row_min "
                              "but no row product")
        found.append(key)
    if len(set(found)) > 1:
        raise Unsupported("the graph reduces over different axes ("
                          + "; ".join(f"{k} {v}" for k, v in sorted(set(found))) + "), which one "
                          "distribution loop cannot do")
    kind, ext = found[0]
    for i in inputs:
        if kind == "rows":
            d = _rows_dim(shapes[i], ext[0], ext[1])
        else:
            d = _slabs_dim(shapes[i], *ext)
        if d is not None:
            return [Domain(kind, i, d)]
    what = (f"rows of {ext[0]} elements" if kind == "rows" else
            f"an axis of {ext[1]} between {ext[0]} outer and {ext[2]} inner elements")
    raise Unsupported(f"the reduction runs over {what} of a reshaped view (e.g. channel "
                      "groups), which does not line up with the dims of any input tensor")


# ---------------------------------------------------------------- shape-derived constants
_FORMULAS: list[tuple[str, Callable[[float], float]]] = [
    ("E", lambda e: e), ("1/E", lambda e: 1 / e), ("E-1", lambda e: e - 1),
    ("1/(E-1)", lambda e: 1 / (e - 1) if e != 1 else math.inf),
    ("sqrt(E)", math.sqrt), ("1/sqrt(E)", lambda e: 1 / math.sqrt(e)),
]


def _close(a: float, b: float) -> bool:
    return a == b or (math.isfinite(a) and math.isfinite(b) and
                      abs(a - b) <= 1e-6 * max(abs(a), abs(b)))


def shape_constants(pgs: Sequence[PrimGraph], exts: Sequence[dict[str, int]],
                    live: Sequence[int]) -> dict[int, str]:
    """Constants whose value changes with the shapes, mapped to a formula of the extent E."""
    out: dict[int, str] = {}
    for n in live:
        if pgs[0].op(n) != "const":
            continue
        vals = [pg.attr(n, "value") for pg in pgs]
        if all(_close(v, vals[0]) for v in vals):
            continue
        for name, f in _FORMULAS:
            try:
                if all(e["E"] and _close(f(float(e["E"])), v) for e, v in zip(exts, vals,
                                                                                 strict=True)):
                    out[n] = name
                    break
            except (ValueError, ZeroDivisionError):
                continue
        else:
            raise Unsupported(f"a constant ({vals[0]:g} at the task's shapes, {vals[1]:g} at "
                              "smaller ones) depends on the input shape in a way the kernel "
                              "cannot express (it is not the reduced extent, e.g. "
                              "x.shape[-1], or a simple function of it)")
    return out


def rewrite_constants(pg: PrimGraph, formulas: dict[int, str]) -> PrimGraph:
    """A copy of ``pg`` with each listed constant replaced by its extent formula."""
    if not formulas:
        return pg
    pg = copy.deepcopy(pg)
    for n, name in formulas.items():
        e = pg.extent()
        new: Value
        if name == "E":
            new = e
        elif name == "1/E":
            new = pg.binary("div", 1.0, e)
        elif name == "E-1":
            new = pg.binary("sub", e, 1.0)
        elif name == "1/(E-1)":
            new = pg.binary("div", 1.0, pg.binary("sub", e, 1.0))
        elif name == "sqrt(E)":
            new = pg.unary("sqrt", e)
        else:
            new = pg.unary("rsqrt", e)
        for s in list(pg.g.successors(n)):
            d = pg.g.nodes[s]
            d["args"] = tuple(new.node if a == n else a for a in d["args"])
            pos = pg.g.edges[n, s]["pos"]
            pg.g.remove_edge(n, s)
            if pg.g.has_edge(new.node, s):
                pg.g.edges[new.node, s]["pos"] += pos
            else:
                pg.g.add_edge(new.node, s, pos=pos)
        pg.outputs = [new if v.node == n else v for v in pg.outputs]
    return pg


# ---------------------------------------------------------------- forms
def _pad(p: Shape, rank: int) -> Shape:
    return (1,) * (rank - len(p)) + tuple(p)


def _fits(form: str, p: Shape, o: Shape, domain: Domain, ext: dict[str, int]) -> bool:
    """Does broadcasting an operand of real shape ``p`` and form ``form`` against a tile of
    real shape ``o`` mean what the DSL broadcast of that form means?"""
    p = _pad(p, len(o))
    if form == "t":
        return p == tuple(o)
    if domain.kind == "rows":
        w = ext["W"]
        for k in range(len(o) + 1):
            if math.prod(o[k:]) != w:
                continue
            if form == "o" and all(p[i] == o[i] for i in range(k)) and \
                    all(p[i] == 1 for i in range(k, len(o))):
                return True
            if form == "c" and all(p[i] == 1 for i in range(k)) and \
                    all(p[i] == o[i] for i in range(k, len(o))):
                return True
        return False
    if domain.kind == "slabs" and form == "o":
        a, k_, b = ext["A"], ext["K"], ext["B"]
        for i in range(len(o)):
            if math.prod(o[:i]) == a and o[i] == k_ and math.prod(o[i + 1:]) == b and p[i] == 1 \
                    and all(p[j] == o[j] for j in range(len(o)) if j != i):
                return True
        return False
    return False


_FORM_NAMES = {"t": "a full tile", "o": "a per-row value", "c": "a per-column vector",
               "s": "a scalar"}


def _what(pg: PrimGraph, n: int) -> str:
    op = pg.op(n)
    if op == "input":
        return f"input {pg.attr(n, 'name')!r}"
    return f"a {op} of shape {list(pg.attr(n, 'shape'))}"


def infer_forms(pg: PrimGraph, live: list[int], domain: Domain, shapes: Sequence[Shape]
                ) -> tuple[dict[int, str], set[int]]:
    """The form of every live node in ``domain`` (raises Unsupported when one has none)."""
    ref_shape = tuple(shapes[domain.ref])
    ext = domain.extents(ref_shape)
    full, outer, col = ext["full"], ext["outer"], ext["col"]
    kind = domain.kind
    lifted = "t" if kind == "tiles" else "o"
    need = {"t": full, "o": outer, "c": col}
    forms: dict[int, str] = {}
    materialize: set[int] = set()
    names = {"o": "per-row" if kind == "rows" else "reduced [A, B]"}

    def check_numel(n: int, f: str) -> None:
        real = pg.attr(n, "real")
        if f in need and math.prod(real) != need[f]:
            raise Unsupported(f"{_what(pg, n)} has {math.prod(real)} distinct elements, which "
                              f"is not {_FORM_NAMES[f]} of the {domain.describe(ref_shape)} loop "
                              "(a partial broadcast)")

    for n in live:
        d = pg.g.nodes[n]
        op = d["op"]
        args = d["args"]
        if op == "input":
            m = math.prod(d["real"])
            if m == full:
                f = "t"
            elif kind == "rows" and m == outer and m == col:
                f = "c" if _fits("c", d["real"], ref_shape, domain, ext) else "o"
            elif kind == "rows" and m == col:
                f = "c"
            elif m == outer and kind != "tiles":
                f = "o"
            elif m == 1:
                raise Unsupported(f"input {d['name']!r} is a one-element tensor: the DSL cannot "
                                  "broadcast one value read from GM over the whole loop (give it "
                                  "as a Python number to make it a Scalar parameter)")
            else:
                raise Unsupported(f"input {d['name']!r} of shape {list(d['shape'])} does not fit "
                                  f"the {domain.describe(ref_shape)} loop: it is neither full "
                                  "size nor " + ("a per-row/per-column operand"
                                                 if kind == "rows" else "a reduced-shape operand"
                                                 if kind == "slabs" else "a scalar"))
            forms[n] = f
            continue
        if op in ("const", "scalar"):
            forms[n] = "s"
            continue
        if op == "extent":
            if kind == "tiles":
                raise Unsupported("a reduced extent (width) is used outside any reduction")
            forms[n] = "s"
            continue
        if op in TRANSPARENT:
            forms[n] = forms[args[0]]
            continue
        if op == "reduce":
            x = args[0]
            if forms[x] != "t":
                raise Unsupported(f"a {d['red']} over {_FORM_NAMES[forms[x]]} (the graph reduces "
                                  "twice, over different axes)")
            xs = pg.attr(x, "shape")
            dims = d["dims"]
            if kind == "rows":
                big = [i for i in dims if xs[i] != 1]
                ok = _suffix_reduction(xs, big) and math.prod(xs[i] for i in dims) == ext["W"]
            elif kind == "slabs":
                big = [i for i in dims if xs[i] != 1]
                ok = len(big) == 1 and math.prod(xs[:big[0]]) == ext["A"] and \
                    xs[big[0]] == ext["K"] and math.prod(xs[big[0] + 1:]) == ext["B"]
            else:
                ok = False
            if not ok:
                raise Unsupported(f"a {d['red']} over dims {list(dims)} of a {list(xs)} value "
                                  f"does not match the {domain.describe(ref_shape)} loop")
            forms[n] = "o"
            continue
        fs = [forms[a] for a in args]
        nonscalar = {f for f in fs if f != "s"}
        if not nonscalar:
            f = lifted
            materialize.add(n)
        elif "t" in nonscalar or nonscalar == {"o", "c"}:
            f = "t"
        else:
            (f,) = nonscalar
        if op in ("cmp", "where") and kind == "rows" and f != "t":
            raise Unsupported(f"a {'comparison' if op == 'cmp' else 'where()'} over "
                              f"{names.get(f, 'per-column')} values (the DSL compares and "
                              "selects full tiles only)")
        uniform = math.prod(pg.attr(n, "real")) == 1  # a lifted runtime scalar
        if not uniform:
            check_numel(n, f)
        if f != "s" and not uniform:
            o = pg.attr(n, "real")
            for a in args:
                fa = forms[a]
                if fa in ("s",) or fa == f or math.prod(pg.attr(a, "real")) == 1:
                    continue
                if not _fits(fa, pg.attr(a, "real"), o, domain, ext):
                    raise Unsupported(f"{_what(pg, a)} ({_FORM_NAMES[fa]}) is broadcast "
                                      f"against a {list(pg.attr(n, 'shape'))} value along "
                                      "other dims than the DSL's " + _FORM_NAMES[fa]
                                      + " broadcast")
        forms[n] = f
    return forms, materialize


def make_plan(pg: PrimGraph, live: list[int], domain: Domain, shapes: Sequence[Shape],
              out_dtypes: Sequence[torch.dtype]) -> Plan:
    forms, materialize = infer_forms(pg, live, domain, shapes)
    ref_shape = tuple(shapes[domain.ref])
    ext = domain.extents(ref_shape)
    outputs = []
    for i, (v, dt) in enumerate(zip(pg.outputs, out_dtypes, strict=True)):
        f = forms[v.node]
        if dt not in OUTPUT_DTYPES:
            raise Unsupported(f"output {i} is {str(dt).replace('torch.', '')}; the graph "
                              "frontend produces float32/float16/bfloat16 outputs only")
        numel = math.prod(v.shape)
        if f == "t" and numel == ext["full"] and v.real == v.shape:
            pass
        elif f == "o" and numel == ext["outer"] and v.real == v.shape:
            pass
        else:
            what = {"s": "a constant", "c": "a per-column vector"}.get(f, f"a {list(v.shape)} "
                                                                         "broadcast value")
            raise Unsupported(f"output {i} is {what}, which the {domain.describe(ref_shape)} "
                              "loop cannot store")
        outputs.append((v.node, f, dt))
    per_row = any(pg.op(n) == "input" and forms[n] == "o" for n in live) and domain.kind == "rows"
    return Plan(pg, domain, forms, outputs, live, materialize, per_row, ref_shape)


def analyse(task: Task, pgs: Sequence[PrimGraph], shape_sets: Sequence[Sequence[Shape]],
            out_dtypes: Sequence[torch.dtype]) -> Plan:
    """Pick the loop and the forms, consistently at every traced shape set."""
    check_same_structure(pgs, shape_sets)
    live = live_nodes(pgs[0])
    candidates = domain_candidates(pgs[0], live, task, shape_sets[0])
    errors: list[Unsupported] = []
    for dom in candidates:
        try:
            exts = [dom.extents(tuple(s[dom.ref])) for s in shape_sets]
            formulas = shape_constants(pgs, exts, live)
            graphs = [rewrite_constants(pg, formulas) for pg in pgs]
            plans = []
            for pg, shapes in zip(graphs, shape_sets, strict=True):
                lv = live_nodes(pg)
                plans.append(make_plan(pg, lv, dom, shapes, out_dtypes))
            for p in plans[1:]:
                if p.forms != plans[0].forms:
                    raise Unsupported("a value changes its broadcast form between input shapes "
                                      "(an ambiguous broadcast, e.g. a square operand)")
            return plans[0]
        except Unsupported as e:
            errors.append(e)
    # the first rows candidate explains broadcasts better than the tiles one
    raise errors[min(1, len(errors) - 1)]


__all__ = ["BINARY", "UNARY", "Domain", "Plan", "analyse"]
