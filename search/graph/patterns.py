"""Recognise the structure of a primitive graph: which distribution loop it needs and what
*form* every value takes in it.

- **tiles**: elementwise chains over same-shape tensors (and scalars) - one fused
  expression over flat tiles.
- **rows** (``rows(x, dims=d)``: ``x`` as ``[N, W]``, ``W`` the product of the last ``d``
  dims): reductions over the last dims (sum/max/min, mean, norms, softmax, layer/RMS norm)
  and broadcasts of ``[W]``-like operands (``load_bcast``, form ``c``) or ``[N, 1]``-like
  operands (``load_per_row``, form ``o``) against full tiles (form ``t``).
- **slabs** (``slabs(x, dim=a)``: ``x`` as ``[A, K, B]``): a reduction or scan over one
  middle axis; per-step tiles are form ``t``, reduced ``[A, B]`` values form ``o``.
- **channels** (``rows(x, rows=1, axis=a)``): a reduction over every axis but one
  (batch-norm statistics), or elementwise work with per-channel ``[C]`` input operands
  (``load_per_row(v, t)``); per-channel values are form ``o``. Elementwise work of that kind
  is also offered as rows of the last dims (``Plan.alternatives``), the per-channel operands
  read per row (``load_per_row(v, t, d)``: form ``o`` broadcast over some row dims).
- **windows**: pooling; the pooled tensor's taps are form ``w``, pooled tiles ``t``.
- groups (``rows(x, dims=d, groups=G)``): rows of a reshaped view (group norm).

A reduction to one value (a loss, a global norm) is a whole-tensor ``total_*``: form ``g``,
a scalar after the loop. Values that read one are computed in a further loop (the grid
``level`` of a node counts the nested whole-tensor reductions it depends on).

Forms: ``s`` scalar (inlined), ``t`` a tile of the loop (inner: full rows/chunks, or one
step of a slab), ``o`` one value per row (rows) or an ``[A, B]`` tile (slabs), ``c`` a
column vector (rows only). Each binary op's broadcast is checked against the form of its
operands with the torch shapes, so a DSL broadcast always means the same thing as the
torch one. Graphs are analysed at several shape sets; a constant that changes with the
shapes (``x.shape[-1]`` used in Python arithmetic) is re-expressed with ``width(t)`` when
it is the reduced extent ``E`` (or ``1/E``, ``E-1``, ``sqrt(E)``...), else with the host
scalars ``numel(x)`` / ``size(x, d)`` (and products of adjacent sizes).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import networkx as nx
import torch

from ...tasks.task import Shape, Task
from .prims import BINARY, TRANSPARENT, UNARY, PrimGraph
from .trace import Unsupported

OUTPUT_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool)
#: a regrouped rows loop (:func:`regroup`) aims at a row for each of this many cores (the
#: 910B's vector cores), with rows of at least REGROUP_MIN_W elements
REGROUP_CORES = 48
REGROUP_MIN_W = 1024


@dataclass(frozen=True)
class Domain:
    """The distribution loop: ``kind`` over the task input ``ref`` (index into task.inputs),
    or over output ``ref`` when ``on_output`` (no input has the result's shape: ``[N, 1] *
    [1, M]`` loops over the ``[N, M]`` result).

    ``dim`` is the number of trailing dims per row (rows), the reduced axis (slabs), the
    per-channel axis (channels: ``rows(x, rows=1, axis=dim)``) or the pooled dims
    (windows); ``groups`` splits each row (rows only, group norm)."""

    kind: str
    ref: int
    dim: int = 0
    groups: int = 1
    on_output: bool = False
    #: rows of elementwise work split into ``groups`` rows each, so a few very wide rows fill
    #: the cores; a row-broadcast operand is then read as rows of its own (load_rows_bcast)
    regrouped: bool = False

    def shape(self, shapes: Sequence[Shape], pg: PrimGraph) -> Shape:
        """The shape of the tensor the loop walks, at input ``shapes`` (graph ``pg``)."""
        return tuple(pg.outputs[self.ref].shape) if self.on_output else tuple(shapes[self.ref])

    def extents(self, shape: Shape) -> dict[str, int]:
        n = math.prod(shape)
        if self.kind in ("tiles", "windows"):
            return {"full": n, "outer": 0, "col": 0, "E": 0}
        if self.kind == "rows":
            w = math.prod(shape[len(shape) - self.dim:]) // self.groups
            return {"full": n, "outer": n // w, "col": w, "E": w, "N": n // w, "W": w}
        if self.kind == "channels":
            c = shape[self.dim]
            return {"full": n, "outer": c, "col": 0, "E": n // c, "A": math.prod(shape[:self.dim]),
                    "K": c, "B": math.prod(shape[self.dim + 1:]), "W": n // c}
        a = math.prod(shape[:self.dim])
        k = shape[self.dim]
        b = math.prod(shape[self.dim + 1:])
        return {"full": n, "outer": a * b, "col": 0, "E": k, "A": a, "K": k, "B": b}

    def describe(self, shape: Shape) -> str:
        e = self.extents(shape)
        if self.kind == "tiles":
            return "tiles"
        if self.kind == "windows":
            return f"windows(dims={self.dim})"
        if self.kind == "rows":
            g = f", groups={self.groups}" if self.groups != 1 else ""
            return f"rows(dims={self.dim}{g}) [N={e['N']}, W={e['W']}]"
        if self.kind == "channels":
            return f"rows(axis={self.dim}) [C={e['K']}, W={e['W']}]"
        return f"slabs(dim={self.dim}) [A={e['A']}, K={e['K']}, B={e['B']}]"

    @property
    def loop_reductions(self) -> bool:
        return self.kind in ("rows", "slabs", "channels")


@dataclass
class Plan:
    """Everything the emitter needs: the graph, the loop, forms and outputs."""

    pg: PrimGraph
    domain: Domain
    forms: dict[int, str]
    outputs: list[tuple[int, str, torch.dtype]]
    order: list[int]  # live nodes, operands before users
    materialize: set[int] = field(default_factory=set)  # scalar-only nodes lifted to 'o'/'t'
    full_shape: Shape = ()
    aten_ops: tuple[str, ...] = ()  # the traced ATen ops (for the kernel's docstring)
    #: whole-tensor (grid) level of each live node: how many total_* results it depends on
    level: dict[int, int] = field(default_factory=dict)
    #: extents and shape-derived constants: (expression inside the loop, host expression);
    #: ``{pN}`` stands for the DSL name of task input N
    exprs: dict[int, tuple[str | None, str | None]] = field(default_factory=dict)
    #: further plans of the same graph the search also tries (rows beside channels)
    alternatives: list[Plan] = field(default_factory=list)
    #: slices read as row windows (form ``r``): host expressions of their ``(n, p, o, m, q)``
    #: (``load_rows_bcast(x, t, d, n, p, o, m, q)``), ``{pN}`` as in ``exprs``
    windows: dict[int, tuple[str, ...]] = field(default_factory=dict)

    @property
    def reductions(self) -> list[int]:
        return [n for n in self.order if self.pg.op(n) == "reduce"]

    @property
    def loops(self) -> int:
        """Distribution loops: one per grid level (a total_* needs its own loop)."""
        lv = [self.level[n] + (0 if f == "g" else 1) for n, f, _ in self.outputs]
        return max(lv + [1])

    def is_grid(self, n: int) -> bool:
        return self.pg.op(n) == "reduce" and self.forms.get(n) == "g"


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
                             if k not in ("shape", "real", "value", "dtype", "args", "start",
                                          "end")))
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


def is_grid_reduction(pg: PrimGraph, n: int) -> bool:
    """A reduction that leaves one value: a whole-tensor ``total_*`` (a loss, a global norm)."""
    if pg.op(n) != "reduce":
        return False
    x = pg.value(pg.g.nodes[n]["args"][0])
    dims = pg.attr(n, "dims")
    kept = [s for i, s in enumerate(x.shape) if i not in dims and s != 1]
    return not kept and math.prod(x.shape) > 1


def _loop_key(pg: PrimGraph, n: int) -> tuple[str, tuple[int, ...]] | None:
    """The loop a reduction, scan or pool needs: (kind, extents), None for a grid reduction."""
    op = pg.op(n)
    x = pg.value(pg.g.nodes[n]["args"][0])
    shape = x.shape
    if op == "pool":
        d = pg.attr(n, "dims")
        return ("windows", (d, pg.attr(n, "kernel")[0], pg.attr(n, "stride")[0],
                            pg.attr(n, "padding")[0], *shape[len(shape) - d:]))
    if op == "scan":
        i = pg.attr(n, "dim")
        if all(s == 1 for s in shape[i + 1:]):
            return ("rows", (shape[i], math.prod(shape)))
        return ("slabs", (math.prod(shape[:i]), shape[i], math.prod(shape[i + 1:])))
    if is_grid_reduction(pg, n):
        return None
    dims = pg.attr(n, "dims")
    red = pg.attr(n, "red")
    big = [d for d in dims if shape[d] != 1]
    kept = [i for i, s in enumerate(shape) if i not in dims and s != 1]
    if _suffix_reduction(shape, big):
        key = ("rows", (math.prod(shape[d] for d in dims), math.prod(shape)))
    elif len(big) == 1:
        i = big[0]
        key = ("slabs", (math.prod(shape[:i]), shape[i], math.prod(shape[i + 1:])))
    elif len(kept) == 1:
        i = kept[0]
        key = ("channels", (math.prod(shape[:i]), shape[i], math.prod(shape[i + 1:])))
    else:
        raise Unsupported(f"a {red} over dims {list(dims)} of a {list(shape)} tensor is "
                          "neither a reduction over the last dims (rows), over one middle "
                          "axis (slabs), nor over every axis but one (per-channel statistics)")
    if red == "prod" and key[0] != "slabs":
        raise Unsupported(f"a product over {'the last dim' if key[0] == 'rows' else 'dims'} "
                          f"{list(dims)}: the DSL has row_sum/row_max/row_min but no row "
                          "product")
    return key


def _elementwise_domains(ref: int, shape: Shape, on_output: bool, pg: PrimGraph,
                         live: list[int], shapes: Sequence[Shape]) -> list[Domain]:
    """Loops for a graph without reductions over a tensor of ``shape``: flat tiles, rows of
    the last d dims, per-channel rows and middle-axis slabs."""
    rank = len(shape)
    out = [Domain("tiles", ref, on_output=on_output)]
    out += [Domain("rows", ref, d, on_output=on_output) for d in range(1, rank)]
    small = {math.prod(shapes[pg.attr(n, "index")]) for n in live if pg.op(n) == "input"}
    out += [Domain("channels", ref, a, on_output=on_output) for a in range(1, rank - 1)
            if shape[a] > 1 and shape[a] in small]
    # an operand broadcast along one middle axis ([A, 1, B] against [A, K, B]) is a
    # reduced-shape slab tile: steps walk the axis
    out += [Domain("slabs", ref, a, on_output=on_output) for a in range(1, rank - 1)
            if shape[a] > 1]
    return out


def domain_candidates(pg: PrimGraph, live: list[int], task: Task, shapes: Sequence[Shape]
                      ) -> list[Domain]:
    """Loops that could run this graph, best first (checked afterwards by form inference)."""
    src = gather_sources(pg, live)
    used = {pg.attr(n, "index") for n in live if pg.op(n) == "input" and n not in src}
    inputs = _tensor_inputs(task, shapes, used)
    keyed = [n for n in live if pg.op(n) in ("reduce", "scan", "pool")]
    found = [k for k in (_loop_key(pg, n) for n in keyed) if k is not None]
    if not found:
        full = max((math.prod(pg.attr(n, "real")) for n in live
                    if pg.op(n) not in ("index", "pick") and n not in src), default=1)
        refs = [i for i in inputs if math.prod(shapes[i]) == full]
        if refs:
            return _elementwise_domains(refs[0], tuple(shapes[refs[0]]), False, pg, live, shapes)
        # no input has the result's shape (an outer-product style broadcast): loop over it
        outs = [j for j, v in enumerate(pg.outputs) if math.prod(v.shape) == full]
        if not outs:
            raise Unsupported("neither an input nor an output has the shape of the broadcast "
                              "result")
        return _elementwise_domains(outs[0], tuple(pg.outputs[outs[0]].shape), True, pg, live,
                                    shapes)
    if len(set(found)) > 1:
        raise Unsupported("the graph reduces, scans or pools over different axes ("
                          + "; ".join(f"{k} {v}" for k, v in sorted(set(found))) + "), which one "
                          "distribution loop cannot do")
    kind, ext = found[0]
    if kind == "windows":
        d, tail = ext[0], tuple(ext[4:])
        pooled = [n for n in keyed if pg.op(n) == "pool"]
        numel = math.prod(pg.value(pg.g.nodes[pooled[0]]["args"][0]).shape)
        for i in inputs:
            if math.prod(shapes[i]) == numel and tuple(shapes[i][len(shapes[i]) - d:]) == tail:
                return [Domain("windows", i, d)]
        raise Unsupported("the pooled value does not have the pooled dims of any input tensor")
    for i in inputs:
        if kind == "rows":
            d = _rows_dim(shapes[i], ext[0], ext[1])
        else:
            d = _slabs_dim(shapes[i], *ext)
        if d is not None:
            return [Domain(kind, i, d)]
    if any(pg.op(n) == "slice" for n in live):  # a reduction of a window: loop over an output
        for j, v in enumerate(pg.outputs):
            d = _rows_dim(v.shape, ext[0], ext[1]) if kind == "rows" else _slabs_dim(v.shape, *ext)
            if d is not None:
                return [Domain(kind, j, d, on_output=True)]
        raise Unsupported(f"a {kind} reduction of a slice: a kernel loop runs over the shape of an "
                          "input or output tensor and reads the slice as a window of its rows, and "
                          "no input or output has the sliced shape (a reduction of a window is "
                          "served when its result keeps the window's shape, e.g. a softmax)")
    if kind == "rows":  # rows of a reshaped view: channel groups (group norm)
        for i in inputs:
            s = shapes[i]
            if math.prod(s) != ext[1]:
                continue
            for d in range(1, len(s) + 1):
                p = math.prod(s[len(s) - d:])
                if p % ext[0] == 0 and p > ext[0]:
                    return [Domain("rows", i, d, p // ext[0])]
    gathers = [n for n in live if pg.op(n) in ("gather", "gather_cols")]
    if gathers:
        shape = list(pg.attr(gathers[0], "shape"))
        raise Unsupported(f"a {kind} reduction of a gathered value (index_select / embedding / "
                          f"gather of shape {shape}): a kernel loop runs over the shape of an "
                          "input or output tensor and reads gathered rows as its tiles, and no "
                          "tensor has the gathered shape; it is served when the gather is the "
                          "result or is combined elementwise")
    what = (f"rows of {ext[0]} elements" if kind == "rows" else
            f"an axis of {ext[1]} between {ext[0]} outer and {ext[2]} inner elements")
    raise Unsupported(f"the reduction runs over {what} of a reshaped view, which does not line "
                      "up with the dims of any input tensor")


# ---------------------------------------------------------------- shape-derived constants
_FORMULAS: list[tuple[str, Callable[[float], float]]] = [
    ("{E}", lambda e: e), ("(1.0 / {E})", lambda e: 1 / e), ("({E} - 1.0)", lambda e: e - 1),
    ("(1.0 / ({E} - 1.0))", lambda e: 1 / (e - 1) if e != 1 else math.inf),
    ("sqrt({E})", math.sqrt), ("rsqrt({E})", lambda e: 1 / math.sqrt(e)),
]


def _close(a: float, b: float) -> bool:
    return a == b or (math.isfinite(a) and math.isfinite(b) and
                      abs(a - b) <= 1e-6 * max(abs(a), abs(b)))


def host_candidates(task: Task, shape_sets: Sequence[Sequence[Shape]]
                    ) -> list[tuple[str, list[int]]]:
    """Host scalars of the input shapes (``numel``, ``size`` and products of adjacent sizes)
    with their value at every shape set; ``{pN}`` is task input N."""
    out: list[tuple[str, list[int]]] = []
    specs = [(i, s) for i, s in enumerate(task.inputs) if s.kind != "scalar"]
    for i, _ in specs:
        out.append((f"numel({{p{i}}})", [math.prod(ss[i]) for ss in shape_sets]))
    for i, _ in specs:
        rank = len(shape_sets[0][i])
        for a in range(rank):
            out.append((f"size({{p{i}}}, {a})", [ss[i][a] for ss in shape_sets]))
        for a in range(rank):
            for b in range(a + 2, rank + (0 if a == 0 else 1)):
                expr = " * ".join(f"size({{p{i}}}, {d})" for d in range(a, b))
                out.append((f"({expr})", [math.prod(ss[i][a:b]) for ss in shape_sets]))
    return out


def fit_formula(vals: Sequence[float], cands: Sequence[tuple[str, Sequence[float]]]) -> str | None:
    """The first formula of a candidate extent that gives every shape set's value; failing that,
    a constant multiple of one (``label_smoothing / C``: ``0.1 * (1.0 / size(x, 1))``), the factor
    fitted on the first shape set and checked on the others (whose values differ from it)."""
    for scaled in (False, True):
        for name, f in _FORMULAS:
            for expr, es in cands:
                try:
                    c = vals[0] / f(float(es[0])) if scaled and es[0] else 1.0
                    if not math.isfinite(c) or c == 0.0:
                        continue
                    if all(e and _close(c * f(float(e)), v) for e, v in zip(es, vals, strict=True)):
                        return name.format(E=expr) if not scaled else f"({float(c)!r} * {name.format(E=expr)})"
                except (ValueError, ZeroDivisionError, OverflowError):
                    continue
    return None


def shape_exprs(pgs: Sequence[PrimGraph], live: Sequence[int], domain: Domain,
                shape_sets: Sequence[Sequence[Shape]], task: Task
                ) -> dict[int, tuple[str | None, str | None]]:
    """Expressions for extents and for constants whose value changes with the shapes:
    ``(inside the loop, on the host)``; ``width(t)`` is the loop's reduced extent."""
    pg = pgs[0]
    hosts = host_candidates(task, shape_sets)
    width = None
    if domain.loop_reductions:
        width = [domain.extents(domain.shape(ss, g))["E"] for g, ss in zip(pgs, shape_sets,
                                                                            strict=True)]
    out: dict[int, tuple[str | None, str | None]] = {}
    for n in live:
        op = pg.op(n)
        if op == "extent":
            r = pg.attr(n, "of")
            vals = []
            for g in pgs:
                x = g.value(g.g.nodes[r]["args"][0])
                vals.append(math.prod(x.shape[d] for d in g.attr(r, "dims")))
            host = fit_formula(vals, hosts)
            if is_grid_reduction(pg, r):
                if host is None:
                    raise Unsupported(f"a mean over {vals[0]} elements: that count is not a "
                                      "size or element count of any input")
                out[n] = (host, host)
            else:
                out[n] = ("width(t)", host)
            continue
        if op == "slice":  # columns of load_slice windows: after the forms (analyse)
            continue
        if op != "const":
            continue
        vals = [g.attr(n, "value") for g in pgs]
        if all(_close(v, vals[0]) for v in vals):
            continue
        inner = fit_formula(vals, [("width(t)", width)]) if width else None
        host = fit_formula(vals, hosts)
        if inner is None and host is None:
            raise Unsupported(f"a constant ({vals[0]:g} at the task's shapes, {vals[1]:g} at "
                              "smaller ones) depends on the input shape in a way the kernel "
                              "cannot express (it is not a size or element count of an input, "
                              "or a simple function of one)")
        out[n] = (inner or host, host)
    return out


def slice_column(pgs: Sequence[PrimGraph], n: int) -> str:
    """The first column of the window a slice reads (``load_slice``'s ``col``: its start times
    the elements after its dim), as a host expression valid at every traced shape set: a
    number, a size less a number (``x[..., -d:]``) or a fraction of a size (``chunk``)."""
    pg = pgs[0]
    d = pg.g.nodes[n]
    src = pg.g.nodes[d["args"][0]]
    i, dim = src["index"], d["dim"]
    starts = [g.attr(n, "start") for g in pgs]
    sizes = [g.g.nodes[g.g.nodes[n]["args"][0]]["shape"] for g in pgs]
    inner = [math.prod(s[dim + 1:]) for s in sizes]
    extent = [s[dim] for s in sizes]
    after = " * ".join(f"size({{p{i}}}, {j})" for j in range(dim + 1, len(sizes[0])))
    tail = f" * {after}" if after else ""
    if all(s == 0 for s in starts):
        return "0.0"
    if all(v == starts[0] for v in starts) and (not after or all(q == inner[0] for q in inner)):
        return f"{float(starts[0] * inner[0])}"
    if all(v == starts[0] for v in starts):
        return f"{float(starts[0])}{tail}"
    if all(e - v == extent[0] - starts[0] for e, v in zip(extent, starts, strict=True)):
        return f"(size({{p{i}}}, {dim}) - {float(extent[0] - starts[0])}){tail}"
    for den in range(2, 17):
        for num in range(1, den):
            if all(e * num % den == 0 and e * num // den == v
                   for e, v in zip(extent, starts, strict=True)):
                return f"(size({{p{i}}}, {dim}) * {float(num)} / {float(den)}){tail}"
    raise Unsupported(f"a slice along dim {dim} starts at {starts[0]} at the task's shapes and at "
                      f"{starts[1]} at smaller ones: that start is not a number, a size less a "
                      "number or a fraction of the sliced size")


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
            # one value per row, possibly broadcast over some of the row dims (a per-channel
            # [1, C, 1] against rows of [N, C, H]: a row block, load_per_row(v, t, d))
            if form == "o" and all(p[i] in (1, o[i]) for i in range(k)) and \
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
    if domain.kind == "channels" and form == "o":
        a, k_, b = ext["A"], ext["K"], ext["B"]
        for i in range(len(o)):
            if math.prod(o[:i]) == a and o[i] == k_ and math.prod(o[i + 1:]) == b and \
                    p[i] == o[i] and all(p[j] == 1 for j in range(len(o)) if j != i):
                return True
        return False
    return False


_FORM_NAMES = {"t": "a full tile", "o": "a per-row value", "c": "a per-column vector",
               "s": "a scalar", "g": "a whole-tensor result", "w": "a window tap",
               "e": "a per-channel operand inside the rows",
               "b": "a per-channel operand repeated along the row (the same for every row)",
               "k": "a per-step operand (one value per step of the reduced axis)"}
#: elementwise ops the kernel can apply to a total_* result (a scalar outside loops)
GRID_SCALAR_OPS = ("add", "sub", "mul", "div", "max", "min", "exp", "log", "sqrt", "rsqrt",
                   "abs", "reciprocal", "neg", "relu", "sigmoid", "tanh")


def _what(pg: PrimGraph, n: int) -> str:
    op = pg.op(n)
    if op == "input":
        return f"input {pg.attr(n, 'name')!r}"
    return f"a {op} of shape {list(pg.attr(n, 'shape'))}"


def _check_loop_reduce(pg: PrimGraph, n: int, domain: Domain, ext: dict[str, int],
                       ref_shape: Shape) -> None:
    d = pg.g.nodes[n]
    xs = pg.attr(d["args"][0], "shape")
    dims = d["dims"]
    big = [i for i in dims if xs[i] != 1]
    kept = [i for i in range(len(xs)) if i not in dims and xs[i] != 1]
    if domain.kind == "rows":
        ok = _suffix_reduction(xs, big) and math.prod(xs[i] for i in dims) == ext["W"]
    elif domain.kind == "slabs":
        ok = len(big) == 1 and math.prod(xs[:big[0]]) == ext["A"] and \
            xs[big[0]] == ext["K"] and math.prod(xs[big[0] + 1:]) == ext["B"]
    elif domain.kind == "channels":
        ok = len(kept) == 1 and math.prod(xs[:kept[0]]) == ext["A"] and \
            xs[kept[0]] == ext["K"] and math.prod(xs[kept[0] + 1:]) == ext["B"]
    else:
        ok = False
    if not ok:
        raise Unsupported(f"a {d['red']} over dims {list(dims)} of a {list(xs)} value "
                          f"does not match the {domain.describe(ref_shape)} loop")


def _position_form(pg: PrimGraph, n: int, domain: Domain, ext: dict[str, int],
                   ref_shape: Shape) -> str:
    """An index along one dim is the column of a rows loop whose rows are that dim, or the
    step of a slabs loop over it: a full tile either way."""
    shape, dim = pg.attr(n, "shape"), pg.attr(n, "dim")
    inner = math.prod(shape[dim + 1:])
    lead = len(ref_shape) - len(shape)  # the index's dims line up with the loop tensor's last ones
    broadcast_after = lead >= 0 and any(shape[j] != ref_shape[lead + j] for j in range(dim + 1, len(shape)))
    if domain.kind == "rows" and domain.groups == 1 and inner == 1 and shape[dim] == ext["W"] \
            and not broadcast_after:  # (not i[:, None], a row index broadcast over the columns)
        return "t"
    if domain.kind == "slabs" and math.prod(shape[:dim]) == ext["A"] and shape[dim] == ext["K"] \
            and inner == ext["B"]:
        return "t"
    if row_position_dim(pg, n, domain, ext, ref_shape) is not None:
        return "o"  # one index per row: row_position(t, d, n)
    raise Unsupported(f"an index along dim {dim} of a {list(shape)} value (argmax/argmin, triu/tril) is "
                      f"neither the row of the {domain.describe(ref_shape)} loop, one of its row dims, "
                      "nor its step axis")


def _check_index_view(pg: PrimGraph, n: int, of: int) -> None:
    """A view (or expand) of a value computed from indices keeps every index on its dim only
    when it adds or drops leading size-1 dims: the forms are read off each position's own
    shape, lined up with the loop tensor's last dims. (A view of a position itself is a new
    position, ``PrimGraph.view``.)"""
    a, b = list(pg.attr(of, "shape")), list(pg.attr(n, "shape"))
    while a and a[0] == 1:
        a.pop(0)
    while b and b[0] == 1:
        b.pop(0)
    if pg.op(n) == "view" and a != b:
        raise Unsupported(f"a view from {list(pg.attr(of, 'shape'))} to {list(pg.attr(n, 'shape'))} of a "
                          "value computed from an index (arange) moves the dim it walks: view the "
                          "arange itself (torch.arange(n)[:, None] + 1, not (torch.arange(n) + 1)[:, None])")


def row_position_dim(pg: PrimGraph, n: int, domain: Domain, ext: dict[str, int], ref_shape: Shape) -> int | None:
    """The dim of the loop tensor ``ref_shape`` that index ``n`` (a position prim) walks, when it
    is one of the row dims of a plain rows loop (row ``g``'s index is ``(g // prod(ref[D+1:-1]))
    % ref[D]``), else None. The index's own shape lines up with the loop tensor's last dims."""
    shape, dim = pg.attr(n, "shape"), pg.attr(n, "dim")
    big = len(ref_shape) - len(shape) + dim
    if domain.kind != "rows" or domain.groups != 1 or len(shape) > len(ref_shape) or \
            not 0 <= big < len(ref_shape) - 1 or shape[dim] != ref_shape[big] or shape[dim] == 1:
        return None
    if ext["W"] != ref_shape[-1] or ext["outer"] != math.prod(ref_shape[:-1]):
        return None  # rows that are not the loop tensor's last dim
    return big


def infer_forms(pg: PrimGraph, live: list[int], domain: Domain, shapes: Sequence[Shape],
                bcast_rows: bool = False, row_blocks: bool = False) -> tuple[dict[int, str], set[int]]:
    """The form of every live node in ``domain`` (raises Unsupported when one has none).
    With ``row_blocks`` a rows loop also reads operands broadcast over some of its row dims
    (per-channel ``[1, C, 1, 1]`` against rows of the ``[N*C*H, W]`` view) as per-row values
    (form ``o``, ``load_per_row(v, t, d)``; :func:`per_row_block` finds ``d``)."""
    ref_shape = domain.shape(shapes, pg)
    ext = domain.extents(ref_shape)
    full, outer, col = ext["full"], ext["outer"], ext["col"]
    kind = domain.kind
    lifted = "t" if kind in ("tiles", "windows") else "o"
    need = {"t": full, "o": outer, "c": col}
    forms: dict[int, str] = {}
    materialize: set[int] = set()
    names = {"o": {"rows": "per-row", "channels": "per-channel"}.get(kind, "reduced [A, B]")}
    pooled = False  # windows: before the pool values are taps ('w'), after it output tiles
    outs = {v.node for v in pg.outputs}
    if kind == "windows":
        pools = [n for n in live if pg.op(n) == "pool"]
        if len(pools) != 1:
            raise Unsupported("more than one pooling in a graph (pooled values pooled again) "
                              "needs more than one windows loop")
        out_numel = math.prod(pg.attr(pools[0], "shape"))
        need = {"t": out_numel, "w": full}
        before = nx.ancestors(pg.g, pools[0])

    def check_numel(n: int, f: str) -> None:
        real = pg.attr(n, "real")
        if row_blocks and f == "o" and outer % math.prod(real) == 0:
            return  # a per-row value broadcast over some row dims: each row reads its own
        if f in need and math.prod(real) != need[f]:
            raise Unsupported(f"{_what(pg, n)} has {math.prod(real)} distinct elements, which "
                              f"is not {_FORM_NAMES[f]} of the {domain.describe(ref_shape)} loop "
                              "(a partial broadcast)")

    if any(pg.op(n) == "repeat" for n in live):  # before the forms of what it repeats
        raise Unsupported("a repeat (data movement) that is not an instance norm's weight or bias "
                          "has no DSL form")
    alive = set(live)
    indexed: set[int] = set()  # values computed from positions (and scalars) alone
    src = gather_sources(pg, live)
    # rows that reduce (GroupNorm's groups) read per-channel operands inside them (load_every);
    # elementwise work keeps the channels loop / rows view of its per-channel operands
    row_reduces = any(pg.op(u) == "reduce" and not is_grid_reduction(pg, u) for u in live)
    for n in live:
        d = pg.g.nodes[n]
        op = d["op"]
        args = d["args"]
        if n in src:
            forms[n] = "x"  # read by gather_rows only, never loaded as a tile
            continue
        if op in ("gather", "gather_cols", "index_add"):
            if op == "index_add" and forms[args[0]] not in ("t", "s"):
                raise Unsupported("index_add into a value that is not a full tile of the loop")
            forms[n] = _gather_form(pg, n, domain, ext)
            continue
        if op == "input" and domain.regrouped:
            forms[n] = _regrouped_form(pg, n, ref_shape, domain, full)
            continue
        if op == "input":
            m = math.prod(d["real"])
            if kind == "windows":
                if n not in before or m != full:
                    raise Unsupported(f"input {d['name']!r} is read outside the pooled window "
                                      "(a windows loop reads the pooled tensor per tap only)")
                forms[n] = "w"
                continue
            if m == full:
                f = "t"
            elif kind == "rows" and m == outer and m == col:
                f = "c" if _fits("c", d["real"], ref_shape, domain, ext) else "o"
            elif kind == "rows" and m == col:
                f = "c"
            elif kind == "rows" and row_reduces and _inside_rows(pg, n, ref_shape, ext["W"]):
                # element f of the loop's tensor reads v[(f // d) % numel(v)] (load_every); before the
                # per-row forms: GroupNorm's [C] weight has as many values as N * G group rows when
                # C = N * G, but varies inside them
                f = "e"
            elif row_blocks and kind == "rows" and ext["W"] <= COL_BLOCK_MAX_W and \
                    col_block(pg, n, ref_shape, ext["W"]):
                # v[(c // d) % numel(v)] at column c of every row (load_bcast_every(v, t, d)); before
                # the per-row form, which a count alone would give when C happens to equal N
                f = "b"
            elif m == outer and kind != "tiles":
                f = "o"
            elif m == 1:
                f = "s"  # one element read from GM as a kernel scalar (load_scalar)
            elif kind == "slabs" and any(_per_step(p, ref_shape, domain.dim)
                                         for p in _own_shapes(pg, n, len(ref_shape))):
                f = "k"  # one value per step of the reduced axis (load_step(v, k)): a norm's weight
            elif row_blocks and kind == "rows" and per_row_block(pg, n, ref_shape, ext["W"]):
                f = "o"  # v[(g // d) % numel(v)] per row g (load_per_row(v, t, d))
            elif bcast_rows and kind == "rows" and rows_bcast_block(pg, n, ref_shape, ext["W"]):
                f = "r"  # whole rows, each loop row reading row (g // d) % R (load_rows_bcast)
            else:
                raise Unsupported(f"input {d['name']!r} of shape {list(d['shape'])} does not fit "
                                  f"the {domain.describe(ref_shape)} loop: it is neither full "
                                  "size nor " + ("a per-row/per-column operand"
                                                 if kind == "rows" else "a reduced-shape operand"
                                                 if kind == "slabs" else "a per-channel operand"
                                                 if kind == "channels" else "a scalar"))
            forms[n] = f
            continue
        if op == "index":
            forms[n] = "i"
            continue
        if op == "position":
            forms[n] = _position_form(pg, n, domain, ext, ref_shape)
            indexed.add(n)
            continue
        if op in ("const", "scalar"):
            forms[n] = "s"
            continue
        if op == "extent":
            if kind == "tiles" and not is_grid_reduction(pg, d["of"]):
                raise Unsupported("a reduced extent (width) is used outside any reduction")
            forms[n] = "s"
            continue
        if op == "slice":
            if n in src:
                forms[n] = "x"  # read by the slice of it only
            elif bcast_rows and _window_form(pg, n, domain, ext, ref_shape):
                forms[n] = "r"  # evenly spaced rows of a window of an input, broadcast or not
            else:
                forms[n] = _slice_form(pg, n, domain, ext, ref_shape)
            continue
        if op == "flip":
            raise Unsupported(f"a {op} (data movement) that is not part of a reversed or "
                              "exclusive cumsum has no DSL form")
        if op == "diag":
            raise Unsupported("a diagonal matrix (torch.diag of a vector) read other than as a "
                              "factor of a product (a row or column scaling) is data movement")
        if any(forms[a] in ("i", "x") for a in args) and op != "pick":
            raise Unsupported("an integer tensor is used in arithmetic as an integer (integer "
                              "inputs are read as class targets or gather indices, or as numbers "
                              "once cast to a float: x.float())")
        if op in TRANSPARENT:
            if args[0] in indexed:
                _check_index_view(pg, n, args[0])
                indexed.add(n)
            forms[n] = forms[args[0]]
            continue
        if op == "pick":
            x = args[0]
            if kind != "rows" or pg.op(pg.storage(x)) != "input" or forms[x] != "t" or \
                    pg.attr(x, "shape")[-1] != ext["W"]:
                raise Unsupported("a class-index gather (nll_loss) needs rows over the [N, C] "
                                  "tensor it reads")
            forms[n] = "o"
            continue
        if op == "pool":
            if kind != "windows" or forms[args[0]] != "w":
                raise Unsupported("pooling outside a windows loop")
            pad = any(d["padding"])
            if pad and pg.op(args[0]) not in ("input",) + TRANSPARENT:
                raise Unsupported("pooling a computed value with padding > 0: the windows loop "
                                  "pads the input tensor, not the computed value")
            forms[n] = "t"
            pooled = True
            continue
        if op == "pool_recip":  # one value per output element, from the loop's own numbers
            forms[n] = "t"
            continue
        if op == "scan":
            x = args[0]
            if forms[x] != "t" or kind not in ("rows", "slabs"):
                raise Unsupported(f"a cum{d['red']} over {_FORM_NAMES.get(forms[x], 'a value')} "
                                  f"in a {domain.describe(ref_shape)} loop")
            key = _loop_key(pg, n)
            want = (ext["W"], full) if kind == "rows" else (ext["A"], ext["K"], ext["B"])
            if key is None or key[0] != kind or key[1] != want:
                raise Unsupported(f"a cum{d['red']} along dim {d['dim']} does not match the "
                                  f"{domain.describe(ref_shape)} loop")
            forms[n] = "t"
            continue
        if op == "reduce":
            x = args[0]
            if is_grid_reduction(pg, n):
                fx = forms[x]
                ok = {"tiles": ("t",), "rows": ("t", "o"), "channels": ("t", "o"),
                      "slabs": ("o",)}.get(kind, ())
                if d["red"] == "prod":
                    raise Unsupported("a product over every element: the DSL has total_sum/"
                                      "total_max/total_min but no total product")
                if fx not in ok:
                    raise Unsupported(f"a whole-tensor {d['red']} of {_FORM_NAMES[fx]} in a "
                                      f"{domain.describe(ref_shape)} loop has no DSL form")
                forms[n] = "g"
                continue
            if forms[x] == "r":
                raise Unsupported(f"a {d['red']} over rows read from a window or a broadcast of an input "
                                  "(x[:, -1, :], p[:, None]): a rows loop reduces full tiles of its own tensor")
            if forms[x] != "t":
                raise Unsupported(f"a {d['red']} over {_FORM_NAMES.get(forms[x], 'a non-tile value')} (the "
                                  "graph reduces twice, over different axes)")
            _check_loop_reduce(pg, n, domain, ext, ref_shape)
            forms[n] = "o"
            continue
        fs = ["t" if forms[a] in ("r", "e") else "c" if forms[a] == "b" else forms[a] for a in args]
        nonscalar = {f for f in fs if f not in ("s", "g")}
        if "k" in nonscalar:  # a per-step value: alone (with scalars) one more, with anything else a tile
            if op in ("cmp", "where") or "g" in fs:
                raise Unsupported(f"a {op} of a per-step operand (one value per step of the reduced axis) "
                                  "with a comparison or a whole-tensor result has no DSL form")
            forms[n] = "k" if nonscalar == {"k"} else "t"
            if forms[n] == "t":
                check_numel(n, "t")
            continue
        if "g" in fs and kind == "windows":
            raise Unsupported("a whole-tensor result used in a windows loop")
        if not nonscalar:
            if "g" in fs and op in GRID_SCALAR_OPS:
                forms[n] = "g"
                continue
            if "g" in fs and kind != "tiles":
                raise Unsupported(f"a {op} of a whole-tensor result (a total_* scalar): the "
                                  "kernel computes + - * / maximum minimum exp log sqrt "
                                  "rsqrt abs reciprocal on such scalars only")
            # else (e.g. a where() on a global norm) it is computed on lifted tiles
            if op in ("add", "sub", "mul", "div") and n not in outs:
                forms[n] = "s"  # host arithmetic on sizes / Scalar parameters
                continue
            f = "w" if kind == "windows" and not pooled and n in before else lifted
            materialize.add(n)
        elif "w" in nonscalar:
            if nonscalar != {"w"}:
                raise Unsupported("a pooled value mixed with the pooled tensor's taps")
            f = "w"
        elif "t" in nonscalar or nonscalar == {"o", "c"}:
            f = "t"
        else:
            (f,) = nonscalar
        # a comparison is only ever written as a where() condition, where the emitter lifts
        # per-row / per-column operands to full tiles; the where() itself must be a tile
        # (likewise a mask read as 1.0/0.0, ``ind``, is written as where(cond, 1.0, 0.0))
        lifted_cond = op == "cmp" and all(pg.op(u) == "ind" or pg.op(u) == "where" and
                                          pg.g.nodes[u]["args"][0] == n
                                          for u in pg.g.successors(n) if u in alive)
        row_choice = kind == "rows" and f == "o" and all(forms[a] in ("o", "s", "g") for a in args)
        if op in ("cmp", "where") and kind in ("rows", "channels") and f != "t" and \
                not lifted_cond and not row_choice:
            raise Unsupported(f"a {'comparison' if op == 'cmp' else 'where()'} over "
                              f"{names.get(f, 'per-column')} values (the DSL compares and "
                              "selects full tiles only)")
        uniform = math.prod(pg.attr(n, "real")) == 1  # a lifted runtime scalar
        if f == "t" and "e" in {forms[a] for a in args} and math.prod(pg.attr(n, "real")) != full \
                and all(forms[a] in ("e", "s", "g") for a in args):
            forms[n] = "e"  # computed from per-channel operands alone (w * 2): read as they are
            continue
        if f == "t" and "r" in {forms[a] for a in args} and math.prod(pg.attr(n, "real")) != full \
                and all(forms[a] in ("r", "s", "g") for a in args):
            # computed from broadcast rows alone (~mask of a [T, T] buffer): each loop row
            # loads its own broadcast row, so the value is a full tile, read again as one
            forms[n] = "r"
            continue
        if "b" in {forms[a] for a in args} and all(forms[a] in ("b", "s", "g") for a in args):
            forms[n] = "b"  # computed from repeated per-channel operands alone: one more such row
            continue
        if any(a in indexed for a in args) and all(a in indexed or forms[a] in ("s", "g") for a in args):
            indexed.add(n)  # computed from the loop's own indices (a triangle mask): nothing is read
        elif not uniform:
            check_numel(n, f)
        if f != "s" and not uniform:
            o = pg.attr(n, "real")
            for a in args:
                fa = "t" if forms[a] in ("r", "e") else forms[a]
                if fa in ("s", "g") or fa == f or math.prod(pg.attr(a, "real")) == 1 or a in indexed \
                        or forms[a] == "b":
                    continue
                if not _fits(fa, pg.attr(a, "real"), o, domain, ext):
                    raise Unsupported(f"{_what(pg, a)} ({_FORM_NAMES[fa]}) is broadcast "
                                      f"against a {list(pg.attr(n, 'shape'))} value along "
                                      "other dims than the DSL's " + _FORM_NAMES[fa]
                                      + " broadcast")
        forms[n] = f
    return forms, materialize


def gather_sources(pg: PrimGraph, live: Sequence[int]) -> set[int]:
    """Inputs read only as the gathered tensor of gathers (``gather_rows``), not as tiles."""
    alive = set(live)
    out = set()
    for n in live:
        users = [u for u in pg.g.successors(n) if u in alive]
        if pg.op(n) == "input" and users and all(_reads_as_source(pg, u, n) for u in users):
            out.add(n)
        elif pg.op(n) == "slice" and users and all(pg.op(u) == "slice" for u in users) and \
                slice_window(pg, n) is not None:
            out.add(n)  # a slice of a slice of an input: the outer one reads the window
    return out


def slice_window(pg: PrimGraph, n: int) -> tuple[int, list[tuple[int, int]]] | None:
    """``(input, [(start, end) per dim])`` when ``n`` is a chain of step-1 slices of a task
    input, each dim sliced once (``bias[:, :, :T, :T]``); None otherwise."""
    bounds: dict[int, tuple[int, int]] = {}
    while pg.op(n) == "slice":
        d = pg.g.nodes[n]
        if d["step"] != 1 or d["dim"] in bounds:
            return None
        bounds[d["dim"]] = (d["start"], d["end"])
        n = d["args"][0]
    if pg.op(n) != "input":
        return None
    shape = pg.g.nodes[n]["shape"]
    return n, [bounds.get(k, (0, shape[k])) for k in range(len(shape))]


def window_rows(shape: Shape, bounds: Sequence[tuple[int, int]]) -> tuple[int, int, int, int, int] | None:
    """``(n, p, o, m, q)``: the rows of a window (every dim but the last) as ``n`` rows, row
    ``j`` at element ``o + (j // m) * q + (j % m) * p`` of the input: the dims with more than
    one row, each merged into the next when that one is whole, make at most two levels
    (``bias[:, :, :T, :T]`` of ``[1, H, L, L]``: H blocks of T rows). None otherwise."""
    rank = len(shape)
    if rank < 2:
        return None
    ext = [e - a for a, e in bounds]
    stride = [math.prod(shape[k + 1:]) for k in range(rank)]
    levels: list[list[int]] = []  # [count, pitch] from the outermost
    for k in range(rank - 1):
        if ext[k] == 1:
            continue
        if levels and levels[-1][1] == ext[k] * stride[k]:
            levels[-1] = [levels[-1][0] * ext[k], stride[k]]  # stepping the outer dim continues this one
        else:
            levels.append([ext[k], stride[k]])
    if len(levels) > 2:
        return None
    o = sum(a * st for (a, _), st in zip(bounds, stride, strict=True))
    n = math.prod(ext[:-1])
    if len(levels) < 2:
        p = levels[0][1] if levels else shape[-1]
        return n, p, o, n, n * p
    (_, q), (m, p) = levels
    return n, p, o, m, q


def _per_step(p: Shape, ref_shape: Shape, dim: int) -> bool:
    """Does an operand of (padded) real shape ``p`` vary along the slabs loop's reduced axis
    ``dim`` of ``ref_shape`` only (``weight[:, None, None]`` against ``[N, C, H, W]`` reduced
    over C)? Its first view that lines up with the loop says (:func:`_own_shapes`)."""
    return p[dim] == ref_shape[dim] > 1 and all(v == 1 for i, v in enumerate(p) if i != dim)


def _window_form(pg: PrimGraph, n: int, domain: Domain, ext: dict[str, int], ref_shape: Shape) -> bool:
    """Is slice ``n`` a window of an input whose rows a plain rows loop reads as broadcast rows
    (form ``r``, ``load_rows_bcast(x, t, d, n, p, o, m, q)``): the window broadcast on both
    sides of a block of the loop's dims, or of the loop's own shape?"""
    win = slice_window(pg, n)
    if win is None or domain.kind != "rows" or domain.groups != 1:
        return False
    x, bounds = win
    real = tuple(pg.attr(n, "real"))
    if real[-1] != ext["W"] or window_rows(pg.g.nodes[x]["shape"], bounds) is None:
        return False
    if broadcast_rows_block(real, ref_shape, ext["W"]) is not None:
        return True
    # the loop's own shape, as the slice is or as a view of it sees it (x[:, -2, :] of [B, S, D]:
    # a [B, 1, D] slice seen as [B, D], row g at element (g * S + S - 2) * D)
    return any(p == tuple(ref_shape) for p in _own_shapes(pg, n, len(ref_shape)))


def _count_expr(vals: Sequence[int], hosts: Sequence[tuple[str, list[int]]]) -> str | None:
    """A host expression of whole numbers that change with the shapes: a number, a size or a
    simple function of one (``fit_formula``), a difference of two (``k_len - q_len``), or a size
    plus a fixed offset (``S - 2``)."""
    if all(v == vals[0] for v in vals):
        return f"{float(vals[0])}"
    e = fit_formula([float(v) for v in vals], hosts)
    if e is not None:
        return e
    for a, av in hosts:
        for b, bv in hosts:
            if a != b and all(x - y == v for x, y, v in zip(av, bv, vals, strict=True)):
                return f"({a} - {b})"
    for a, av in hosts:  # a size and a fixed offset (x[:, -2]: the start S - 2)
        c = vals[0] - av[0]
        if all(v - x == c for x, v in zip(av, vals, strict=True)):
            return f"({a} + {float(c)})"
    return None


def window_exprs(pgs: Sequence[PrimGraph], n: int, task: Task,
                 shape_sets: Sequence[Sequence[Shape]]) -> tuple[str, ...]:
    """Host expressions of a row window's ``(n, p, o, m, q)`` valid at every traced shape set
    (:func:`_count_expr`; the first element also as a sum of each dim's start times its
    stride, ``past * L`` when ``past = k_len - q_len``)."""
    hosts = host_candidates(task, shape_sets)
    vals, wins = [], []
    for g in pgs:
        x, bounds = slice_window(g, n) or (None, None)
        got = window_rows(g.g.nodes[x]["shape"], bounds) if x is not None else None
        if got is None:
            raise Unsupported("a window's rows are not evenly spaced at every input shape")
        vals.append(got)
        wins.append((g.g.nodes[x]["shape"], bounds))
    out = []
    for what, vs in zip(("row count", "row pitch", "first element", "block rows", "block pitch"),
                        zip(*vals, strict=True), strict=True):
        e = _count_expr(vs, hosts)
        if e is None and what == "first element":
            terms = []
            for k in range(len(wins[0][0])):
                starts = [b[k][0] for _, b in wins]
                strides = [math.prod(sh[k + 1:]) for sh, _ in wins]
                if not any(starts):
                    continue
                a, b = _count_expr(starts, hosts), _count_expr(strides, hosts)
                if a is None or b is None:
                    terms = None
                    break
                terms.append(f"{a} * {b}")
            e = " + ".join(terms) if terms else None
        if e is None:
            raise Unsupported(f"a window's {what} ({vs[0]} at the task's shapes, {vs[1]} at smaller ones) "
                              "is not a number, a size of an input or a difference of two")
        out.append(e)
    return tuple(out)


COL_BLOCK_MAX_W = 4096
"""Widest row that reads repeated per-channel operands (form ``b``): each is a resident row
(16 KiB in f32 at this width), several of them beside a tile's input and output rows in UB."""


def col_block(pg: PrimGraph, n: int, o: Shape, w: int) -> tuple[int, int, int] | None:
    """``(i0, i1, k)`` when input ``n`` meets a rows loop over ``o`` (rows: the dims from ``k``
    on, ``w`` elements) as one value per column, the same for every row, broadcast over the row
    dims outside the block ``[i0, i1)`` of its own: column ``c`` reads ``n``'s element ``(c //
    prod(o[i1:])) % prod(o[i0:i1])`` (a per-channel ``[C, 1]`` against rows that are whole
    ``[C, L]`` planes of ``[N, C, L]``)."""
    for p in _own_shapes(pg, n, len(o)):
        for k in range(len(o)):
            if math.prod(o[k:]) != w or any(p[i] != 1 for i in range(k)):
                continue
            inner = [i for i in range(k, len(o)) if p[i] != 1]
            if inner and all(p[i] == o[i] for i in range(inner[0], inner[-1] + 1)):
                return inner[0], inner[-1] + 1, k
    return None


def per_row_block(pg: PrimGraph, n: int, o: Shape, w: int) -> tuple[int, int, int] | None:
    """``(i0, i1, k)`` when input ``n`` meets a rows loop over ``o`` (rows: the dims from ``k``
    on, ``w`` elements) as one value per row broadcast over every row dim outside the block
    ``[i0, i1)`` of its own: row ``g`` reads ``n``'s element ``(g // prod(o[i1:k])) %
    prod(o[i0:i1])``. The block is read off the first value computed from ``n`` alone (views
    and elementwise ops keep its element order) whose shape lines up with ``o``."""
    for p in _own_shapes(pg, n, len(o)):
        for k in range(len(o)):
            if math.prod(o[k:]) != w or any(p[i] != 1 for i in range(k, len(o))):
                continue
            lead = [i for i in range(k) if p[i] != 1]
            if lead and all(p[i] == o[i] for i in range(lead[0], lead[-1] + 1)):
                return lead[0], lead[-1] + 1, k
    return None


def _own_shapes(pg: PrimGraph, n: int, rank: int) -> Iterator[Shape]:
    """The real shapes, padded to ``rank``, of ``n`` and of the values computed from it alone
    (views and elementwise ops keep its element order), nearest first."""
    m = math.prod(pg.attr(n, "real"))
    seen, stack = set(), [n]
    while stack:
        u = stack.pop()
        if u in seen:
            continue
        seen.add(u)
        p = pg.attr(u, "real")
        if math.prod(p) == m and len(p) <= rank:
            yield _pad(p, rank)
        stack += [v for v in pg.g.successors(u)
                  if pg.op(v) in TRANSPARENT + tuple(UNARY) + tuple(BINARY)]


def _inside_rows(pg: PrimGraph, n: int, o: Shape, w: int) -> bool:
    """Does input ``n`` vary inside the loop's rows (runs of fewer elements than a row)?"""
    block = segment_block(pg, n, o)
    return block is not None and math.prod(o[block[1]:]) < w


def segment_block(pg: PrimGraph, n: int, o: Shape) -> tuple[int, int] | None:
    """``(i0, i1)`` when input ``n`` meets a loop over ``o`` as one value per run of elements: it
    varies along the block ``[i0, i1)`` of ``o``'s dims alone (as ``o`` does there) and is
    broadcast over every other dim, so the element of flat index ``f`` reads ``n``'s element
    ``(f // prod(o[i1:])) % prod(o[i0:i1])`` (``load_every``; GroupNorm's ``[C]`` weight against
    ``[N, C, H, W]``). The block is read off the first value computed from ``n`` alone (views and
    elementwise ops keep its element order) whose shape lines up with ``o``; runs shorter than
    32 elements are refused (a Duplicate per run)."""
    if math.prod(pg.attr(n, "real")) <= 1:
        return None
    for p in _own_shapes(pg, n, len(o)):
        var = [i for i in range(len(o)) if p[i] != 1]
        if var and all(p[i] == o[i] for i in range(var[0], var[-1] + 1)) and math.prod(o[var[-1] + 1:]) >= 32:
            return var[0], var[-1] + 1
    return None


def _regrouped_form(pg: PrimGraph, n: int, ref_shape: Shape, domain: Domain, full: int) -> str:
    """An input's form in a regrouped rows loop: full tiles, a one-element scalar, or a
    broadcast of the loop's whole row dims (``[1, W]`` against ``[N, W]``), whose ``groups``
    pieces are then rows of their own: loop row g reads row ``g % groups`` of it
    (load_rows_bcast with d = 1). Anything else keeps the plain rows loop."""
    real = pg.attr(n, "real")
    m = math.prod(real)
    if m == full:
        return "t"
    if m == 1:
        return "s"
    p, k = _pad(real, len(ref_shape)), len(ref_shape) - domain.dim
    if all(x == 1 for x in p[:k]) and tuple(p[k:]) == tuple(ref_shape[k:]):
        return "r"
    raise Unsupported(f"{_what(pg, n)} is neither full size nor a broadcast whole row, so the "
                      "rows cannot be split into groups")


def regroup(plan: Plan, shape_sets: Sequence[Sequence[Shape]], cores: int = REGROUP_CORES) -> Domain | None:
    """A rows domain whose rows are split into groups when an elementwise plan (no reductions,
    scans or pools; full tiles, scalars and row broadcasts only) has fewer rows than ``cores``
    and rows long enough to split: the fewest power-of-two groups that give every core a row,
    fewer when a group would drop below REGROUP_MIN_W elements at the task's shape or would
    not divide the row at every traced shape (the groups are a literal of the loop). None
    when the plan is not such a one or no split is possible."""
    dom = plan.domain
    if dom.kind != "rows" or dom.groups != 1 or dom.on_output or plan.reductions or \
            any(plan.pg.op(n) in ("scan", "pool", "reduce") for n in plan.order) or \
            set(plan.forms.values()) - {"t", "s", "c"}:
        return None
    exts = [dom.extents(dom.shape(s, plan.pg)) for s in shape_sets]
    n, w = exts[0]["N"], exts[0]["W"]
    g = 1
    while n * g < cores and w // (2 * g) >= REGROUP_MIN_W and all(e["W"] % (2 * g) == 0 for e in exts):
        g *= 2
    return Domain("rows", dom.ref, dom.dim, g, regrouped=True) if g > 1 else None


def broadcast_rows_block(p: Shape, o: Shape, w: int) -> tuple[int, int, int] | None:
    """``(i0, i1, k)`` when an operand of real shape ``p`` against a rows loop over ``o``
    (rows: the dims from ``k`` on, ``w`` elements) has the loop's row dims and, before them,
    one block ``[i0, i1)`` of the loop's dims with 1 elsewhere: loop row ``g`` reads its row
    ``(g // prod(o[i1:k])) % prod(o[i0:i1])`` ([A, 1, C] and [1, B, C] against [A, B, C])."""
    p = _pad(p, len(o))
    for k in range(len(o)):
        if math.prod(o[k:]) != w or tuple(p[k:]) != tuple(o[k:]):
            continue
        lead = [i for i in range(k) if p[i] != 1]
        if not lead:
            return None
        i0, i1 = lead[0], lead[-1] + 1
        if all(p[i] == o[i] for i in range(i0, i1)) and i1 < k:
            return i0, i1, k
        if all(p[i] == o[i] for i in range(i0, i1)) and i0 > 0:
            return i0, i1, k
    return None


def rows_bcast_block(pg: PrimGraph, n: int, o: Shape, w: int) -> tuple[int, int, int] | None:
    """:func:`broadcast_rows_block` of input ``n`` as it meets the loop: its own shape, or the
    first view computed from it alone that lines up (``a[:, None, :]``, ``a.view(I, 1, D)``,
    ``b.unsqueeze(0)``: the same element order, so the same rows)."""
    for p in _own_shapes(pg, n, len(o)):
        block = broadcast_rows_block(p, o, w)
        if block is not None:
            return block
    return None


def _reads_as_source(pg: PrimGraph, u: int, n: int) -> bool:
    """Whether ``u`` reads input ``n`` only as its gathered (or index-added) tensor, or as
    the tensor a slice is a window of."""
    args = pg.g.nodes[u]["args"]
    if pg.op(u) == "slice":
        return True
    if pg.op(u) in ("gather", "gather_cols"):
        return args[0] == n and args[1] != n
    return pg.op(u) == "index_add" and args[1] == n and n not in (args[0], args[2])


def _gather_form(pg: PrimGraph, n: int, domain: Domain, ext: dict[str, int]) -> str:
    """A gather is a tile of a plain rows loop whose row is the gathered tensor's row."""
    d = pg.g.nodes[n]
    x = pg.g.nodes[d["args"][0]]
    row = d["shape"][-1] if d["op"] == "gather_cols" else math.prod(x["shape"][d["dim"] + 1:])
    if d["op"] == "index_add":
        row = math.prod(d["shape"][d["dim"] + 1:])
    if domain.kind != "rows" or domain.groups != 1 or ext["W"] != row or \
            math.prod(d["shape"]) != ext["full"]:
        raise Unsupported(f"a gather of rows of {row} elements outside a rows loop over them")
    return "t"


def _slice_form(pg: PrimGraph, n: int, domain: Domain, ext: dict[str, int],
                ref_shape: Shape) -> str:
    """A slice of a task input is a tile of the loop when it is a window of the input the loop
    can read with one column offset (``load_slice``): in a tiles loop a slice whose leading
    dims are all 1 (one contiguous run), in a plain rows loop a slice along the row's first
    dim (the row is a column window of the input's rows, ``x[..., a:b]`` when the row is the
    last dim); the sliced value must have the loop's shape."""
    d = pg.g.nodes[n]
    x = pg.g.nodes[d["args"][0]]
    dim, shape = d["dim"], tuple(d["shape"])
    if d["step"] != 1:
        raise Unsupported(f"a slice with step {d['step']} along dim {dim} (one element in "
                          f"{d['step']}) has no DSL form: a window is a contiguous run of columns")
    win = slice_window(pg, n)
    if x["op"] == "slice" and win is not None:
        name = pg.g.nodes[win[0]]["name"]
        raise Unsupported(f"a window of input {name!r} sliced along several dims is read only as "
                          f"broadcast rows of a plain rows loop whose row is its last dim, at most two "
                          f"evenly spaced levels of rows (the {domain.describe(ref_shape)} loop cannot)")
    if x["op"] != "input":
        raise Unsupported(f"a slice of a computed value ({x['op']}) along dim {dim}: only task "
                          "inputs are read as windows (the kernel does not stage intermediates)")
    if math.prod(shape) != ext["full"] or tuple(d["real"]) != shape:
        raise Unsupported(f"a slice of shape {list(shape)} is not the shape of the "
                          f"{domain.describe(ref_shape)} loop (a slice feeding a reduction or a "
                          "broadcast of its own)")
    kind = domain.kind
    if kind == "tiles" and math.prod(shape[:dim]) == 1:
        return "t"
    if kind == "rows" and domain.groups == 1 and len(shape) == len(ref_shape) and \
            shape == tuple(ref_shape) and dim == len(shape) - domain.dim:
        return "t"
    raise Unsupported(f"a slice along dim {dim} of {x['name']!r} is not a window the "
                      f"{domain.describe(ref_shape)} loop reads with one column offset")


def grid_levels(pg: PrimGraph, live: list[int], forms: dict[int, str]) -> dict[int, int]:
    """How many nested whole-tensor reductions each value depends on (its loop - 1)."""
    level: dict[int, int] = {}
    for n in live:
        lv = max((level.get(a, 0) for a in pg.g.nodes[n]["args"]), default=0)
        if forms.get(n) == "g" and pg.op(n) == "reduce":
            lv += 1
        level[n] = lv
    return level


def make_plan(pg: PrimGraph, live: list[int], domain: Domain, shapes: Sequence[Shape],
              out_dtypes: Sequence[torch.dtype], bcast_rows: bool = False,
              row_blocks: bool = False) -> Plan:
    forms, materialize = infer_forms(pg, live, domain, shapes, bcast_rows, row_blocks)
    ref_shape = domain.shape(shapes, pg)
    ext = domain.extents(ref_shape)
    if domain.kind == "windows":
        pool = next(n for n in live if pg.op(n) == "pool")
        ext = dict(ext, full=math.prod(pg.attr(pool, "shape")))
    outputs = []
    for i, (v, dt) in enumerate(zip(pg.outputs, out_dtypes, strict=True)):
        f = forms[v.node]
        numel = math.prod(v.shape)
        if f == "t" and numel == ext["full"] and v.real == v.shape:
            pass
        elif f == "o" and numel == ext["outer"] and v.real == v.shape:
            pass
        elif f == "g" and numel == 1:
            if dt == torch.bfloat16:
                raise Unsupported(f"output {i} is a bf16 scalar; a scalar store writes f32 or "
                                  "f16")
        else:
            what = {"s": "a constant", "c": "a per-column vector"}.get(f, f"a {list(v.shape)} "
                                                                         "broadcast value")
            raise Unsupported(f"output {i} is {what}, which the {domain.describe(ref_shape)} "
                              "loop cannot store")
        if dt == torch.int64 and v.node not in pg.index_results and pg.storage(v.node) not in pg.index_results:
            raise Unsupported(f"output {i} is int64 but not an index (argmax/argmin/max(dim) "
                              "indices): integer arithmetic has no DSL form")
        if dt == torch.bool and pg.op(v.node) != "cmp":
            raise Unsupported(f"output {i} is bool but not a comparison or logical op of them")
        outputs.append((v.node, f, dt))
    plan = Plan(pg, domain, forms, outputs, live, materialize, full_shape=ref_shape)
    plan.level = grid_levels(pg, live, forms)
    return plan


def analyse(task: Task, pgs: Sequence[PrimGraph], shape_sets: Sequence[Sequence[Shape]],
            out_dtypes: Sequence[torch.dtype], kinds: Sequence[str] | None = None) -> Plan:
    """Pick the loop and the forms, consistently at every traced shape set; ``kinds`` keeps
    only loops of those kinds (the cube's vector stage takes rows: an elementwise rest of a
    product is run as rows of the product, not as flat tiles)."""
    for i, dt in enumerate(out_dtypes):
        if dt not in OUTPUT_DTYPES:
            raise Unsupported(f"output {i} is {str(dt).replace('torch.', '')}; the graph "
                              "frontend produces float32/float16/bfloat16 outputs only")
    check_same_structure(pgs, shape_sets)
    live = live_nodes(pgs[0])
    for n in live:  # a permutation that stays reorders data whatever the loop: its reason first
        if pgs[0].op(n) == "permute":
            d = pgs[0].g.nodes[n]
            raise Unsupported(d.get("why") or f"a permutation {list(d['perm'])} of a "
                              f"{list(pgs[0].attr(d['args'][0], 'shape'))} value reorders data (transposed "
                              "layouts are supported only for an input permuted back before any output)")
    candidates = domain_candidates(pgs[0], live, task, shape_sets[0])
    if kinds is not None:
        candidates = [d for d in candidates if d.kind in kinds]
        if not candidates:
            raise Unsupported(f"no {' or '.join(kinds)} loop can run this graph")
    errors: list[Unsupported] = []
    # operands read as broadcast rows (one DataCopy a row) only when no loop serves them
    # otherwise: a last resort, after every candidate has failed without them
    def attempt(dom: Domain, bcast_rows: bool, row_blocks: bool = False) -> Plan:
        exprs = shape_exprs(pgs, live, dom, shape_sets, task)
        plans = [make_plan(pg, live, dom, shapes, out_dtypes, bcast_rows, row_blocks)
                 for pg, shapes in zip(pgs, shape_sets, strict=True)]
        for p in plans[1:]:
            if p.forms != plans[0].forms:
                raise Unsupported("a value changes its broadcast form between input shapes "
                                  "(an ambiguous broadcast, e.g. a square operand)")
        for n, f in plans[0].forms.items():
            if pgs[0].op(n) == "slice" and f == "r":
                plans[0].windows[n] = window_exprs(pgs, n, task, shape_sets)
            elif pgs[0].op(n) == "slice" and f == "t":  # a column window (load_slice)
                exprs[n] = (None, slice_column(pgs, n))
        plans[0].exprs = exprs
        return plans[0]

    # and, also after them, per-row operands broadcast over some row dims in rows loops that
    # reduce (a per-channel scale before a last-dim sum)
    rows = [d for d in candidates if d.kind == "rows"]
    for dom, bcast_rows, row_blocks in [(d, False, False) for d in candidates] + \
            [(d, True, False) for d in rows] + [(d, False, True) for d in rows]:
        try:
            plan = attempt(dom, bcast_rows, row_blocks)
        except Unsupported as e:
            errors.append(e)
            continue
        grouped = regroup(plan, shape_sets)
        if grouped is not None:  # a few very wide rows: split into groups beside (the search decides)
            try:
                plan.alternatives.append(attempt(grouped, False))
            except Unsupported:
                pass
        if dom.kind == "channels" and not plan.reductions:
            # per-channel elementwise work: one row per channel leaves most cores idle when
            # there are few channels; rows over the [N*C*H, W] view reading the per-channel
            # operands per row are offered beside it, and the search decides
            for alt in (d for d in candidates if d.kind == "rows" and d.ref == dom.ref):
                try:
                    plan.alternatives.append(attempt(alt, False, row_blocks=True))
                except Unsupported:
                    continue
        return plan
    # a per-channel candidate, else the first rows one, explains broadcasts better than tiles
    errors = errors[:len(candidates)]
    chan = [e for d, e in zip(candidates, errors, strict=True) if d.kind == "channels"]
    raise chan[0] if chan else errors[min(1, len(errors) - 1)]


__all__ = ["BINARY", "UNARY", "Domain", "Plan", "analyse"]
