"""Decomposition rules of gathers: rows of a task input at indices read from an index input.

``index_select(x, d, idx)``, ``embedding(weight, idx)`` and ``x[idx]`` (``aten.index`` with
one index tensor on dim 0) are one primitive, ``gather`` (x, index; attribute ``dim``): the
result's row ``g`` (rows of the product of ``x``'s dims after ``dim``) is row
``(g // K) * B + idx[g % K]`` of ``x`` (``K = numel(idx)``, ``B = x.shape[dim]``), which the
DSL writes ``gather_rows(x, t, idx, dim)``. The gathered tensor must be a task input and the
indices an integer task input (any view of it: the order of its elements is what counts).
``gather(x, -1, idx)`` (and ``take_along_dim`` on the last dim, which is one) is the primitive
``gather_cols`` (x, index): element ``(g, j)`` is ``x[g, idx[g, j]]``, written
``gather_cols(x, t, idx)`` in a rows loop over the result. ``index_select`` on the last dim
(one index list for every row) is ``gather_cols`` with a shared index (``select_cols``).
"""

from __future__ import annotations

import math

import torch

from .formulas import Rule, registrar
from .prims import PrimGraph, Value
from .trace import Unsupported

RULES: dict[str, Rule] = {}
rule = registrar(RULES)

#: K and B reach the kernel as float tiling fields: exact below 2**24
MAX_EXTENT = 2 ** 24


def _index_leaf(g: PrimGraph, idx: Value, what: str) -> Value:
    v = idx
    while g.op(v) == "view":
        v = g.value(g.g.nodes[v.node]["args"][0])
    if g.op(v) != "index":
        raise Unsupported(f"{what} with indices that are computed, not an integer task input "
                          "(the kernel reads the indices from GM as given)")
    return idx


def gather_rows(g: PrimGraph, x: Value, dim: int, idx: Value, what: str) -> Value:
    """``x`` gathered along ``dim`` at the elements of ``idx`` (in order): shape
    ``x.shape[:dim] + idx.shape + x.shape[dim + 1:]``."""
    if not isinstance(x, Value) or g.op(x) != "input":
        raise Unsupported(f"{what} of a computed value (the kernel gathers rows of a task "
                          "input; compute after the gather)")
    if not isinstance(idx, Value):
        raise Unsupported(f"{what} with a Python index")
    _index_leaf(g, idx, what)
    rank = len(x.shape)
    if rank == 0:
        raise Unsupported(f"{what} of a 0-dim tensor")
    dim %= rank
    if dim == rank - 1:
        if what != "index_select" or math.prod(x.shape) >= MAX_EXTENT:
            raise Unsupported(f"{what} along the last dim gathers single elements, which has no "
                              "DSL form (gather_rows moves whole rows of the dims after dim)")
        return g.gather_cols(x, idx, shared=True)  # one index list for every row
    k, b = math.prod(idx.shape), x.shape[dim]
    if max(k, b, math.prod(x.shape)) >= MAX_EXTENT:
        raise Unsupported(f"{what} with {max(k, b, math.prod(x.shape))} elements in a gather "
                          f"extent (the kernel's gather extents are exact below {MAX_EXTENT})")
    shape = tuple(x.shape[:dim]) + tuple(idx.shape) + tuple(x.shape[dim + 1:])
    return g.gather(x, idx, dim, shape)


@rule("index_select")
def _index_select(g: PrimGraph, a: dict) -> Value:
    return gather_rows(g, a["self"], int(a["dim"]), a["index"], "index_select")


@rule("gather")
def _gather(g: PrimGraph, a: dict) -> Value:
    x, idx = a["self"], a["index"]
    if not isinstance(x, Value) or g.op(x) != "input":
        raise Unsupported("gather of a computed value (the kernel gathers from a task input; "
                          "compute after the gather)")
    wrap = isinstance(idx, Value) and g.op(idx) == "index_mod"
    if wrap:
        mod = g.attr(idx, "value")
        idx = g.value(g.g.nodes[idx.node]["args"][0])
        if mod != x.shape[-1]:
            raise Unsupported(f"gather with indices taken modulo {mod}, not the row's {x.shape[-1]}")
    if not isinstance(idx, Value) or g.op(idx) != "index":
        raise Unsupported("gather with indices that are computed or broadcast, not an integer "
                          "task input of the result's shape")
    rank = len(x.shape)
    if rank == 0 or int(a["dim"]) % rank != rank - 1:
        raise Unsupported("gather along a dim other than the last has no DSL form (gather_cols "
                          "reads along each row)")
    if len(idx.shape) != rank or tuple(idx.shape[:-1]) != tuple(x.shape[:-1]):
        raise Unsupported(f"gather with an index of shape {list(idx.shape)} against "
                          f"{list(x.shape)}: only indices with the tensor's leading dims")
    if math.prod(x.shape) >= MAX_EXTENT:
        raise Unsupported(f"gather from {math.prod(x.shape)} elements (the kernel's gather "
                          f"extents are exact below {MAX_EXTENT})")
    return g.gather_cols(x, idx, wrap)


@rule("index_add")
def _index_add(g: PrimGraph, a: dict) -> Value:
    """``self.index_add(dim, index, source)``: rows of ``source`` added into the rows of
    ``self`` that ``index`` names, summed in index order by the core owning each row."""
    base, src, idx = a["self"], a["source"], a["index"]
    alpha = a.get("alpha", 1)
    if alpha not in (None, 1, 1.0):
        raise Unsupported("index_add with alpha other than 1")
    if not isinstance(src, Value) or g.op(src) != "input":
        raise Unsupported("index_add of a computed source (the kernel adds rows of a task input)")
    if not isinstance(idx, Value):
        raise Unsupported("index_add with a Python index")
    _index_leaf(g, idx, "index_add")
    if not isinstance(base, Value) or base.dtype != torch.float32 or src.dtype != torch.float32:
        raise Unsupported("index_add on fp16/bf16 values (the kernel accumulates f32 tensors "
                          "only; eager rounds each addition to the narrow type)")
    rank = len(base.shape)
    dim = int(a["dim"]) % max(rank, 1)
    if rank == 0 or dim == rank - 1:
        raise Unsupported("index_add along the last dim adds single elements, which has no DSL "
                          "form yet (index_add_rows adds whole rows of the dims after dim)")
    if len(idx.shape) > 1 or tuple(src.shape) != tuple(base.shape[:dim]) + (math.prod(idx.shape),) \
            + tuple(base.shape[dim + 1:]):
        raise Unsupported("index_add whose source is not the indexed rows of the result's shape")
    if g.op(base) == "input" and base.node == src.node:
        raise Unsupported("index_add of a tensor into itself")
    if max(math.prod(src.shape), math.prod(base.shape)) >= MAX_EXTENT:
        raise Unsupported(f"index_add over {MAX_EXTENT} elements or more (the kernel's index "
                          "extents are exact below that)")
    return g.index_add(base, src, idx, dim)


@rule("scatter_add")
def _scatter_add(g: PrimGraph, a: dict) -> Value:
    """``self.scatter_add(dim, index, src)`` with an index that varies along ``dim`` only (a
    1-D index expanded over the other dims, the segment-sum idiom) is ``index_add``; other
    index layouts add single elements, which has no DSL form yet."""
    base, idx, src = a["self"], a["index"], a["src"]
    rank = len(base.shape) if isinstance(base, Value) else 0
    dim = int(a["dim"]) % max(rank, 1)
    if not isinstance(idx, Value) or not isinstance(src, Value) or rank == 0:
        raise Unsupported("scatter_add of 0-dim or Python values")
    if tuple(idx.shape) != tuple(src.shape) or any(
            r != 1 for d, r in enumerate(idx.real) if d != dim):
        raise Unsupported("scatter_add with an index that varies along other dims than dim "
                          "(element scatter) has no DSL form; an index that varies along dim "
                          "only (idx.unsqueeze(...).expand_as(src)) is served as index_add")
    leaf = idx
    while g.op(leaf) in ("expand", "view"):
        leaf = g.value(g.g.nodes[leaf.node]["args"][0])
    if g.op(leaf) != "index" or math.prod(leaf.shape) != idx.shape[dim]:
        raise Unsupported("scatter_add with indices that are computed, not an integer task input")
    if any(src.shape[d] != base.shape[d] for d in range(rank) if d != dim):
        raise Unsupported("scatter_add whose source is smaller than the result on other dims")
    return _index_add(g, {"self": base, "source": src, "index": leaf, "dim": dim})


@rule("remainder")
def _remainder(g: PrimGraph, a: dict) -> Value:
    """``idx % n`` of an integer task input: what take_along_dim does to its indices (a gather
    then takes them modulo its row); any other remainder has no rule."""
    idx, n = a["self"], a["other"]
    if not (isinstance(idx, Value) and g.op(idx) == "index" and isinstance(n, int) and n > 0):
        raise Unsupported("remainder other than an index input modulo a positive size (the "
                          "indices of take_along_dim)")
    return g.index_mod(idx, n)


@rule("embedding")
def _embedding(g: PrimGraph, a: dict) -> Value:
    # padding_idx only stops the gradient of its row: the forward reads the row as it is
    return gather_rows(g, a["weight"], 0, a["indices"], "embedding")


@rule("index")
def _index(g: PrimGraph, a: dict) -> Value:
    idx = [i for i in a["indices"]]
    if len(idx) != 1 or idx[0] is None:
        raise Unsupported("advanced indexing with more than one index tensor (or one not on "
                          "dim 0) has no DSL form")
    if isinstance(idx[0], Value) and idx[0].is_mask:
        raise Unsupported("boolean-mask indexing has a data-dependent shape")
    return gather_rows(g, a["self"], 0, idx[0], "indexing by a tensor")


__all__ = ["RULES", "gather_rows"]
