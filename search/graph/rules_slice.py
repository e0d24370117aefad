"""Decomposition rules of slicing: ``slice`` (basic indexing ``x[..., a:b]``), ``narrow``,
``split`` / ``split_with_sizes`` / ``chunk`` (SwiGLU's ``x.chunk(2, -1)``), ``select`` (an integer
index, ``x[:, -1]``: a slice of one seen without its dim).

Each result is a ``slice`` marker (dim, start, end, step) on its operand. A slice of a task
input with step 1 is read by the kernel as a window of that input (``load_slice``: a column
window of its rows, or an offset into it; :mod:`.patterns` decides which the loop allows);
anything else stays a marker that :mod:`.patterns` refuses with its reason (or an exclusive
cumsum folds away, :mod:`.rules_scan`). A slice of a slice on the same dim is one slice.
"""

from __future__ import annotations

from collections.abc import Sequence

from .formulas import Rule, registrar
from .prims import PrimGraph, Value
from .trace import Unsupported

RULES: dict[str, Rule] = {}
rule = registrar(RULES)


def slice_of(g: PrimGraph, x: Value, dim: int, start: int | None, end: int | None,
             step: int = 1) -> Value:
    """``x`` sliced along ``dim`` as Python slices it (negative and out-of-range bounds
    clamped); the whole dim is ``x`` itself."""
    rank = len(x.shape)
    if rank == 0:
        raise Unsupported("a slice of a 0-d value")
    dim %= rank
    n = x.shape[dim]
    if step < 1:
        raise Unsupported(f"a slice with step {step}")
    start = 0 if start is None else int(start)
    end = n if end is None else int(end)
    start = min(n, max(0, start + n if start < 0 else start))
    end = min(n, max(0, end + n if end < 0 else end))
    if start == 0 and end >= n and step == 1:
        return x
    if g.op(x) == "slice" and g.attr(x, "dim") == dim and g.attr(x, "step") == 1 and step == 1:
        base = g.value(g.g.nodes[x.node]["args"][0])  # x[a:b][c:d] = x[a + c: a + min(d, b - a)]
        off = g.attr(x, "start")
        return slice_of(g, base, dim, off + start, off + max(start, end))
    size = max(0, (end - start + step - 1) // step)
    if size == 0:
        raise Unsupported("an empty slice")
    shape = x.shape[:dim] + (size,) + x.shape[dim + 1:]
    return g.marker("slice", x, shape, dim=dim, start=start, end=end, step=step)


@rule("slice")
def _slice(g: PrimGraph, a: dict) -> Value:
    return slice_of(g, a["self"], int(a.get("dim", 0)), a.get("start"), a.get("end"),
                    int(a.get("step") or 1))


@rule("select")
def _select(g: PrimGraph, a: dict) -> Value:
    """``x[..., i, ...]`` with an integer index (a model's last position, ``logits[:, -1, :]``):
    the slice ``i:i+1`` of that dim, seen without the dim."""
    x = a["self"]
    rank = len(x.shape)
    if rank == 0:
        raise Unsupported("a select of a 0-d value")
    d, i = int(a["dim"]) % rank, int(a["index"])
    n = x.shape[d]
    if not -n <= i < n:
        raise Unsupported(f"index {i} is outside a dim of {n}")
    i %= n
    return g.view(slice_of(g, x, d, i, i + 1), x.shape[:d] + x.shape[d + 1:])


@rule("narrow")
def _narrow(g: PrimGraph, a: dict) -> Value:
    start, length = int(a["start"]), int(a["length"])
    x = a["self"]
    if start < 0:
        start += x.shape[int(a["dim"]) % len(x.shape)]
    return slice_of(g, x, int(a["dim"]), start, start + length)


def _pieces(g: PrimGraph, x: Value, dim: int, sizes: Sequence[int]) -> list[Value]:
    out, at = [], 0
    for s in sizes:
        out.append(slice_of(g, x, dim, at, at + int(s)))
        at += int(s)
    return out


@rule("split", "unsafe_split")
def _split(g: PrimGraph, a: dict) -> list[Value]:
    """``split(x, n, dim)`` (``chunk`` traces to it): pieces of ``n``, the last one shorter."""
    x, dim = a["self"], int(a.get("dim", 0))
    size = a.get("split_size", a.get("split_size_or_sections"))
    if isinstance(size, (list, tuple)):
        return _pieces(g, x, dim, size)
    n, size = x.shape[dim % len(x.shape)], int(size)
    return _pieces(g, x, dim, [min(size, n - i) for i in range(0, n, size)])


@rule("split_with_sizes", "unsafe_split_with_sizes")
def _split_with_sizes(g: PrimGraph, a: dict) -> list[Value]:
    return _pieces(g, a["self"], int(a.get("dim", 0)), a["split_sizes"])


@rule("chunk")
def _chunk(g: PrimGraph, a: dict) -> list[Value]:
    x, dim, k = a["self"], int(a.get("dim", 0)), int(a["chunks"])
    n = x.shape[dim % len(x.shape)]
    size = -(-n // k)
    return _pieces(g, x, dim, [min(size, n - i) for i in range(0, n, size)])


__all__ = ["RULES", "slice_of"]
