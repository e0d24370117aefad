"""Permutations that cancel: an input permuted, worked on, and permuted back.

timm's ``LayerNorm2d`` normalises NCHW data over channels by ``x.permute(0, 2, 3, 1)``, a
LayerNorm over the last dim and ``.permute(0, 3, 1, 2)``. Every value between the two
permutations is an elementwise op or a reduction of the permuted input, so the same graph can
be written on the input's own layout: each value's dims relabelled by the permutation (a
reduction over the last dim becomes one over dim 1), the operands it meets seen through a view
(a ``[C]`` weight broadcast along the last dim is ``[1, C, 1, 1]``), and the two permutations
dropped. :func:`sink_permutes` does that on the primitive graph; a permutation it cannot
remove stays a ``permute`` marker with its reason, which :mod:`.patterns` gives if the marker
is read (a transposed operand of a matrix product is not: the cube path reads it).
"""

from __future__ import annotations

from .prims import BINARY, UNARY, PrimGraph
from .trace import Unsupported

#: ops a region between a permutation and its inverse may hold (dims relabelled, nothing moved)
RELABEL = ("cmp", "where", "ind", "leaky_relu", "reduce", "expand", "view") + tuple(UNARY) + tuple(BINARY)


def _relabel(shape: tuple[int, ...], perm: tuple[int, ...]) -> tuple[int, ...]:
    """``shape`` (in the permuted dims, padded to the permutation's rank) in the input's dims."""
    padded = (1,) * (len(perm) - len(shape)) + tuple(shape)
    out = [1] * len(perm)
    for i, p in enumerate(perm):
        out[p] = padded[i]
    return tuple(out)


def _in_order(shape: tuple[int, ...], perm: tuple[int, ...]) -> bool:
    """Is relabelling ``shape`` a view (its dims other than 1 keep their order)?"""
    padded = (1,) * (len(perm) - len(shape)) + tuple(shape)
    moved = [p for i, p in enumerate(perm) if padded[i] != 1]
    return moved == sorted(moved)


def _view_exit(pg: PrimGraph, u: int, perm: tuple[int, ...]) -> bool:
    """Is view ``u`` of a permuted value (``x.permute(0, 2, 1).sum(-1)``'s dropped dim) the same
    elements in the same order once its operand is relabelled onto the input's dims?"""
    a = pg.attr(pg.g.nodes[u]["args"][0], "shape")
    if len(a) != len(perm):
        return False
    kept = [s for s in _relabel(a, perm) if s != 1]
    return kept == [s for s in pg.attr(u, "shape") if s != 1]


def _region(pg: PrimGraph, start: int, perm: tuple[int, ...]) -> tuple[set[int], set[int]]:
    """The nodes computed from permute ``start`` up to the permutations that undo it (its
    exits); raises Unsupported naming the first node that keeps the permuted layout."""
    inverse = tuple(sorted(range(len(perm)), key=perm.__getitem__))
    region: set[int] = set()
    exits: set[int] = set()
    outs = {v.node for v in pg.outputs}
    stack = list(pg.g.successors(start))
    while stack:
        u = stack.pop()
        if u in region or u in exits:
            continue
        op = pg.op(u)
        if op == "permute" and tuple(pg.attr(u, "perm")) == inverse:
            exits.add(u)
            continue
        if op == "view" and len(pg.attr(u, "shape")) != len(perm) and _view_exit(pg, u, perm):
            exits.add(u)  # the permuted dims reduced away: the rest is already in the input's order
            continue
        if op not in RELABEL:
            raise Unsupported(f"a {op} between a permutation {list(perm)} and its inverse: only "
                              "elementwise ops and reductions are computed on the unpermuted layout")
        if len(pg.attr(u, "shape")) != len(perm):
            raise Unsupported(f"a value of rank {len(pg.attr(u, 'shape'))} between a permutation of rank "
                              f"{len(perm)} and its inverse (a reshape or a dropped dim in between)")
        if op == "view" and pg.attr(u, "shape") != pg.attr(pg.g.nodes[u]["args"][0], "shape"):
            raise Unsupported(f"a reshape between a permutation {list(perm)} and its inverse")
        if u in outs:
            raise Unsupported(f"an output in a permuted layout ({list(perm)}): the kernel writes outputs "
                              "in their own layout, and a transposed store has no DSL form")
        region.add(u)
        stack.extend(pg.g.successors(u))
    return region, exits


def _rewire(pg: PrimGraph, old: int, new: int, u: int) -> None:
    """User ``u`` reads node ``new`` where it read ``old`` (its arguments and the edge)."""
    d = pg.g.nodes[u]
    d["args"] = tuple(new if a == old else a for a in d["args"])
    pos = pg.g.edges[old, u]["pos"]
    pg.g.remove_edge(old, u)
    if pg.g.has_edge(new, u):
        pg.g.edges[new, u]["pos"] += pos
    else:
        pg.g.add_edge(new, u, pos=pos)


def _replace_uses(pg: PrimGraph, old: int, new: int) -> None:
    """Every use of node ``old`` reads ``new`` instead (arguments, edges, outputs)."""
    for u in list(pg.g.successors(old)):
        _rewire(pg, old, new, u)
    pg.outputs = [pg.value(new) if v.node == old else v for v in pg.outputs]


def _met(pg: PrimGraph, region: set[int], start: int, perm: tuple[int, ...]) -> list[tuple[int, int]]:
    """``(user, operand)`` for every value the region meets from outside but runtime scalars;
    raises Unsupported unless each can be seen on the input's layout (a constant: any shape of
    its one value; anything else through a view)."""
    out = []
    for u in sorted(region):
        for a in set(pg.g.nodes[u]["args"]):
            ad = pg.g.nodes[a]
            if a in region or a == start or ad["op"] in ("scalar", "extent"):
                continue
            if ad["op"] != "const" and not _in_order(ad["real"], perm):
                raise Unsupported(f"{ad.get('name', 'a value')!r} of shape {list(ad['shape'])} meets a permuted "
                                  f"value ({list(perm)}) along dims it would have to be transposed for")
            out.append((u, a))
    return out


def _sink(pg: PrimGraph, start: int) -> None:
    perm = tuple(pg.attr(start, "perm"))
    region, exits = _region(pg, start, perm)
    met = _met(pg, region, start, perm)  # checked before anything changes
    for u, a in met:  # each user its own relabelled operand (a shared constant keeps its shape)
        v = pg.value(a)
        if pg.op(a) == "const":
            new = pg.const(pg.attr(a, "value"), _relabel(v.shape, perm) if v.shape else v.shape, v.dtype)
        else:
            new = pg._add("view", (v,), _relabel(v.shape, perm), _relabel(v.real, perm), v.dtype, share=False)
        _rewire(pg, a, new.node, u)
    for u in sorted(region):  # node ids are topological
        d = pg.g.nodes[u]
        if d["op"] == "reduce":
            d["dims"] = tuple(sorted(perm[x] for x in d["dims"]))
        d["shape"] = _relabel(d["shape"], perm)
        d["real"] = _relabel(d["real"], perm)
    for e in exits:
        if pg.op(e) == "permute":  # a view exit stays: it drops 1s of the relabelled value
            _replace_uses(pg, e, pg.g.nodes[e]["args"][0])
    _replace_uses(pg, start, pg.g.nodes[start]["args"][0])
    pg.outputs = [pg.value(v.node) for v in pg.outputs]


def sink_permutes(pg: PrimGraph) -> None:
    """Drop every permutation of a task input that is undone before any output (the values in
    between relabelled onto the input's layout, in place); leave the others as markers, each
    with the reason it stays (``why``: what :mod:`.patterns` reports if the marker is read)."""
    for n in sorted(pg.g.nodes):
        if pg.op(n) == "permute" and pg.op(pg.g.nodes[n]["args"][0]) == "input":
            try:
                _sink(pg, n)
            except Unsupported as e:
                pg.g.nodes[n]["why"] = str(e)
