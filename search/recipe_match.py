"""Is a task's reference the computation of a registry op? Decided from ATen graphs and
values, never from names.

A recipe (an expert DSL kernel for a registry op) may serve a task only when the task
computes exactly what the op's reference computes. For a task and an op this module:

1. traces the task's reference and the op's reference on the task's inputs (meta tensors,
   :func:`~ascendcraft.tasks.aten.trace_task`) and compares their *canonical graphs*: the ATen ops as
   a DAG read from the outputs (so the order the Python code ran them in does not matter),
   input positions and dtypes, every non-numeric argument (``keepdim``, dtypes, ``None``),
   with numeric arguments abstracted to slots;
2. finds which slot holds each of the op's parameters (eps, lr, a dim, a kernel size...) by
   tracing the op's reference at a second value of that parameter and seeing which slots
   take it verbatim; reads the parameter from the task's graph at those slots;
3. traces the op's reference with those parameters and requires every slot (within 1e-6
   relative), every shape and dtype to agree with the task's graph;
4. requires the task's inputs to be laid out as the op's registry layout lays them out
   (the recipe's loads assume it: a ``[1, W]`` target broadcast is not a same-shape
   operand);
5. runs both references on small random inputs (signed and the task's own distribution)
   and requires the same results.

Anything that fails says why (:class:`NoMatch`, with how far the match got), so a proposer
can name the nearest recipe when it declines.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
import torch

from ..tasks.aten import refs_in
from ..tasks.registry import get_task
from ..tasks.shapes import reduced_shapes
from ..tasks.task import InputSpec, Task, first_line
from .graph.trace import AtenGraph, Ref, Unsupported, trace_task
from .proposer import Declined

#: how far a match got, in the order the checks run (a later stage is a nearer miss)
STAGES = ("graph", "parameters", "constants", "layout", "values", "limits")
REL_TOL = 1e-6  # numeric slots that agree this closely are the same constant
SPOT_BUDGET = 1 << 12  # elements per input in the numeric spot check
SPOT_TOL = 4.0  # the spot check allows this multiple of the task's tolerance
CACHE_ENTRIES = 4096  # traces of registry references kept per process


class NoMatch(Exception):
    """The op's computation is not the task's; ``stage`` says how far the match got."""

    def __init__(self, op: str, stage: str, reason: str) -> None:
        self.op, self.stage, self.reason = op, stage, " ".join(reason.split()).rstrip(".")
        super().__init__(f"{op}: {self.reason}")


@dataclass(frozen=True)
class Match:
    """The task computes registry op ``op``; ``twin`` is that op with the registry's input
    names, the task's inputs and the parameters read from the task (``params``)."""

    op: str
    twin: Task
    params: dict[str, Any]


# ---------------------------------------------------------------- canonical graphs
@dataclass(frozen=True)
class Canon:
    """A traced graph in a form two traces can be compared in.

    ``structure`` holds one record per node (inputs, constants, ATen calls with their
    arguments) in DAG order from the outputs, numbers replaced by ``#``; ``numbers`` the
    abstracted numbers in slot order and ``owners`` the op each belongs to (for messages);
    ``shapes`` the shapes of every node's outputs.
    """

    structure: tuple
    numbers: tuple
    owners: tuple[str, ...]
    shapes: tuple
    ops: tuple[str, ...]


#: ATen ops whose two tensor operands may be swapped without changing a bit of the result
#: (``add`` only with ``alpha=1``)
COMMUTATIVE = frozenset({"aten.add.Tensor", "aten.mul.Tensor", "aten.maximum.default",
                         "aten.minimum.default", "aten.eq.Tensor", "aten.ne.Tensor",
                         "aten.logical_and.default", "aten.logical_or.default"})


def _pattern(v: Any, ref: Callable[[Ref], Any], num: Callable[[int | float], Any]) -> Any:
    """An argument with tensors and numbers rendered by ``ref`` / ``num``, the rest kept."""
    if isinstance(v, Ref):
        return ref(v)
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float)):
        return num(v)
    if isinstance(v, (list, tuple)):
        return tuple(_pattern(x, ref, num) for x in v)
    return ("lit", str(v))


def _digest(t: torch.Tensor) -> str:
    """A constant tensor's contents in a few bytes (it may be large)."""
    raw = t.detach().contiguous().reshape(-1).view(torch.uint8).numpy()
    return hashlib.blake2b(raw.tobytes(), digest_size=16).hexdigest()


def _record(a: dict[str, Any], args: dict[str, Any] | None, ref: Callable[[Ref], Any],
            num: Callable[[int | float], Any]) -> tuple:
    """One node as a comparable tuple (ops: with ``args``)."""
    kind = a["kind"]
    dtypes = tuple(str(dt) for _, dt in a["outputs"])
    if kind == "input":
        return ("input", a["index"], dtypes)
    if kind == "scalar_input":
        return ("scalar", a["index"], dtypes)
    if kind == "const":
        t = a["value"]
        if t.numel() == 1 and t.dtype != torch.bool and not t.dtype.is_complex:
            return ("const", dtypes, num(t.item()))
        return ("const", dtypes, _digest(t))
    if kind == "param":
        return ("param", dtypes)
    assert args is not None
    return ("op", a["name"], tuple((k, _pattern(v, ref, num)) for k, v in args.items()), dtypes)


def _ordered_args(ag: AtenGraph) -> dict[str, dict[str, Any]]:
    """Each op's arguments, the two operands of a commutative op put in an order read from
    the structure below them (a digest without numbers or shapes), so ``a * b`` and
    ``b * a`` agree."""
    digest: dict[str, str] = {}
    out: dict[str, dict[str, Any]] = {}

    def ref(r: Ref) -> tuple[str, int]:
        return (digest[r.node], r.index)

    for node in nx.topological_sort(ag.graph):
        a = ag.node(node)
        args = dict(a["args"]) if a["kind"] == "op" else None
        if args is not None:
            x, y = args.get("self"), args.get("other")
            if (a["name"] in COMMUTATIVE and isinstance(x, Ref) and isinstance(y, Ref)
                    and args.get("alpha", 1) == 1 and ref(y) < ref(x)):
                args["self"], args["other"] = y, x
            out[node] = args
        text = repr(_record(a, args, ref, lambda v: "#"))
        digest[node] = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
    return out


def _dag_order(ag: AtenGraph, args: dict[str, dict[str, Any]]) -> list[str]:
    """Post-order from the outputs, arguments in schema order: the same for equal DAGs
    whatever order the reference dispatched them in."""
    index: dict[str, int] = {}
    order: list[str] = []
    stack = [(r.node, False) for r in reversed(ag.outputs)]
    while stack:
        node, expanded = stack.pop()
        if node in index:
            continue
        if expanded:
            index[node] = len(order)
            order.append(node)
            continue
        stack.append((node, True))
        if node in args:
            kids = [r.node for v in args[node].values() for r in refs_in(v)]
            stack.extend((k, False) for k in reversed(kids) if k not in index)
    return order


def canonical(ag: AtenGraph) -> Canon:
    """The canonical form of a traced graph (see :class:`Canon`)."""
    args = _ordered_args(ag)
    order = _dag_order(ag, args)
    index = {n: i for i, n in enumerate(order)}
    numbers: list[int | float] = []
    owners: list[str] = []
    records = []
    for node in order:
        a = ag.node(node)
        owner = a["name"] if a["kind"] == "op" else "a constant tensor"

        def slot(v: int | float, owner: str = owner) -> str:
            numbers.append(v)
            owners.append(owner)
            return "#"

        records.append(_record(a, args.get(node), lambda r: ("ref", index[r.node], r.index), slot))
    shapes = tuple(tuple(tuple(s) for s, _ in ag.node(n)["outputs"]) for n in order)
    outputs = tuple((index[r.node], r.index) for r in ag.outputs)
    ops = tuple(dict.fromkeys(ag.node(n)["name"] for n in order if ag.node(n)["kind"] == "op"))
    return Canon((tuple(records), outputs), tuple(numbers), tuple(owners), shapes, ops)


def same_number(a: int | float, b: int | float) -> bool:
    """Equal ints, or floats within :data:`REL_TOL` (NaN equals NaN)."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)


def task_canon(task: Task) -> Canon:
    """The task's canonical graph at its full shapes (raises :class:`Unsupported`)."""
    if not task.meta_ok:
        raise Unsupported("the reference does not run on meta tensors, so its ATen graph "
                          "cannot be traced")
    return canonical(trace_task(task))


# ---------------------------------------------------------------- the registry side
@functools.cache
def _registry_fn(op: str) -> Callable[..., Any]:
    ref = get_task(op).reference
    return getattr(ref, "func", ref)


def reference_fn(task: Task) -> Callable[..., Any]:
    """The function behind a task's reference (a registry op's, with its args unbound)."""
    return getattr(task.reference, "func", task.reference)


def preferred(task: Task, ops: Sequence[str]) -> list[str]:
    """``ops`` with the one whose reference function *is* the task's first. This only
    orders the tries (any op that matches computes the task); it keeps a registry task on
    its own recipe where two recipes compute the same (``mul_scalar`` and
    ``matrix_scalar_multiplication``)."""
    fn = reference_fn(task)
    return sorted(ops, key=lambda op: _registry_fn(op) is not fn)


@functools.lru_cache(maxsize=CACHE_ENTRIES)
def _registry_at(op: str, shape: tuple[int, ...], dtype: torch.dtype) -> Task | str:
    """The registry task ``op`` at primary ``shape`` / ``dtype``, or why it cannot be."""
    try:
        return get_task(op).with_shape(shape, dtype)
    except Exception as e:  # noqa: BLE001 - a layout that cannot take this shape
        return first_line(e)


def _twin(op: str, task: Task) -> tuple[Task, Task]:
    """(the registry task at the task's primary shape, its twin on the task's inputs)."""
    tensors = task.tensor_inputs
    if not tensors:
        raise NoMatch(op, "graph", "the task has no tensor input")
    reg = _registry_at(op, tuple(tensors[0].shape), task.dtype)
    if isinstance(reg, str):
        raise NoMatch(op, "graph", f"its registry definition does not take this input ({reg})")
    if len(reg.inputs) != len(task.inputs):
        raise NoMatch(op, "graph", f"it takes {len(reg.inputs)} inputs, the task {len(task.inputs)}")
    specs = []
    for i, (mine, theirs) in enumerate(zip(task.inputs, reg.inputs, strict=True)):
        if (mine.kind == "scalar") != (theirs.kind == "scalar"):
            raise NoMatch(op, "graph", f"input {i} is a {mine.kind} where it takes a {theirs.kind}")
        specs.append(dataclasses.replace(mine, name=theirs.name))
    twin = dataclasses.replace(reg, inputs=specs, reference=_bound(op, reg.init_args),
                               name=op, tolerance=task.tolerance)
    return reg, twin


def _bound(op: str, params: dict[str, Any]) -> Callable[..., Any]:
    fn = _registry_fn(op)
    return functools.partial(fn, **params) if params else fn


def _with_params(twin: Task, params: dict[str, Any]) -> Task:
    return dataclasses.replace(twin, reference=_bound(twin.name, params), init_args=dict(params))


def _key(task: Task) -> tuple:
    ins = tuple((s.kind, tuple(s.shape), s.dtype, repr(s.value) if s.kind == "scalar" else None)
                for s in task.inputs)
    return (task.name, ins, tuple(sorted((k, repr(v)) for k, v in task.init_args.items())))


_CANONS: dict[tuple, Canon | str] = {}


def _canon_of(twin: Task) -> Canon | str:
    """Canonical graph of a registry twin (cached: the registry does not change), or why
    its reference does not trace on these inputs."""
    key = _key(twin)
    found = _CANONS.get(key)
    if found is None:
        try:
            found = canonical(trace_task(twin))
        except Unsupported as e:
            found = " ".join(str(e).split())
        except Exception as e:  # noqa: BLE001 - a reference that rejects the inputs
            found = f"{type(e).__name__}: {first_line(e)[:160]}"
        _remember(_CANONS, key, found)
    return found


def _remember(cache: dict, key: tuple, value: Any) -> None:
    """Bounded caches: emptied when full (entries are cheap to recompute)."""
    if len(cache) > CACHE_ENTRIES:
        cache.clear()
    cache[key] = value


def _alternatives(v: int | float) -> list[int | float]:
    """Second values to trace a parameter at (ints: nearby, for dims, sizes, groups)."""
    if isinstance(v, int):
        alts = [v + 1, v - 1, v + 2, v - 2, 2 * v, v // 2, v + 3]
        return [a for a in dict.fromkeys(alts) if a != v]
    return [v * 1.37 + 0.0113 if v else 0.37, v * 0.61 - 0.0137]


_SLOTS: dict[tuple, dict[str, list[int]]] = {}


def parameter_slots(twin: Task, base: Canon) -> dict[str, list[int]]:
    """For each numeric parameter of the twin, the slots that hold it verbatim (empty when
    the parameter never appears as such, or changes the graph's structure)."""
    key = _key(twin)
    known = _SLOTS.get(key)
    if known is not None:
        return known
    slots: dict[str, list[int]] = {}
    for name, v0 in twin.init_args.items():
        if isinstance(v0, bool) or not isinstance(v0, (int, float)):
            continue
        slots[name] = []
        for v1 in _alternatives(v0):
            other = _canon_of(_with_params(twin, {**twin.init_args, name: v1}))
            if isinstance(other, str) or other.structure != base.structure:
                continue
            slots[name] = [i for i, (a, b) in enumerate(zip(base.numbers, other.numbers, strict=True))
                           if a == v0 and b == v1]
            break
    _remember(_SLOTS, key, slots)
    return slots


# ---------------------------------------------------------------- matching
def _extract(op: str, twin: Task, base: Canon, mine: Canon) -> dict[str, Any]:
    params = dict(twin.init_args)
    for name, where in parameter_slots(twin, base).items():
        if not where:
            continue  # not read verbatim: the default stays and step 3 checks it
        values = [mine.numbers[i] for i in where]
        if not all(same_number(values[0], v) for v in values[1:]):
            shown = ", ".join(repr(v) for v in dict.fromkeys(values))
            raise NoMatch(op, "parameters", f"its parameter {name} would take several values "
                                            f"({shown})")
        params[name] = values[0]
    return params


def _compare(op: str, mine: Canon, theirs: Canon) -> None:
    if mine.structure != theirs.structure:
        raise NoMatch(op, "parameters", "with the parameters read from the task its ATen graph "
                                        "changes")
    for a, b, owner in zip(mine.numbers, theirs.numbers, theirs.owners, strict=True):
        if not same_number(a, b):
            raise NoMatch(op, "constants", f"the task passes {a!r} to {owner} where {op} "
                                           f"passes {b!r}")
    if mine.shapes != theirs.shapes:
        raise NoMatch(op, "constants", "its intermediate shapes differ from the task's")


def _show(spec: InputSpec) -> str:
    if not spec.is_tensor:
        return f"a scalar {spec.value!r}"
    return f"a {spec.kind} {list(spec.shape)} {str(spec.dtype).removeprefix('torch.')}"


def _layout(op: str, task: Task, reg: Task) -> None:
    """The recipe's loads assume the registry's layout: the task's inputs must be it."""
    for i, (mine, theirs) in enumerate(zip(task.inputs, reg.inputs, strict=True)):
        if mine.kind != theirs.kind or (mine.is_tensor and (
                tuple(mine.shape) != tuple(theirs.shape) or mine.dtype != theirs.dtype)):
            raise NoMatch(op, "layout", f"its kernel needs input {i} as {_show(theirs)}, the "
                                        f"task's is {_show(mine)}")


def _close(got: list[torch.Tensor], want: list[torch.Tensor], task: Task) -> str | None:
    if len(got) != len(want):
        return f"it returns {len(got)} outputs, the task {len(want)}"
    tol = task.tolerance
    assert tol is not None
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"output {k} is {list(g.shape)} {g.dtype}, the task's {list(w.shape)} {w.dtype}"
        if w.dtype.is_floating_point:
            ok = torch.allclose(g.double(), w.double(), atol=SPOT_TOL * tol.atol,
                                rtol=SPOT_TOL * tol.rtol, equal_nan=True)
        else:
            ok = torch.equal(g, w)
        if not ok:
            return f"output {k} differs from the task's on random inputs"
    return None


def _spot_check(op: str, task: Task, twin: Task) -> None:
    try:
        shapes = reduced_shapes(task, SPOT_BUDGET)[0]
        for seed, signed in ((0, True), (1, False)):
            want = task.run_reference(task.make_inputs(shapes, seed=seed, signed=signed))
            got = twin.run_reference(task.make_inputs(shapes, seed=seed, signed=signed))
            why = _close(got, want, task)
            if why:
                raise NoMatch(op, "values", why)
    except NoMatch:
        raise
    except Exception as e:  # noqa: BLE001 - either reference failing on small inputs
        raise NoMatch(op, "values", f"the numeric check failed ({type(e).__name__}: "
                                    f"{first_line(e)[:160]})") from None


def match(task: Task, op: str, mine: Canon) -> Match:
    """Does ``task`` (whose canonical graph is ``mine``) compute registry op ``op``?
    Returns the match with the parameters read from the task, or raises :class:`NoMatch`."""
    reg, twin = _twin(op, task)
    base = _canon_of(twin)
    if isinstance(base, str):
        raise NoMatch(op, "graph", f"its reference does not run on the task's inputs ({base})")
    if base.structure != mine.structure:
        raise NoMatch(op, "graph", "its ATen graph is a different one")
    params = _extract(op, twin, base, mine)
    twin = _with_params(twin, params)
    theirs = _canon_of(twin)
    if isinstance(theirs, str):
        raise NoMatch(op, "parameters", f"its reference rejects the parameters read from the "
                                        f"task ({theirs})")
    _compare(op, mine, theirs)
    _layout(op, task, reg)
    _spot_check(op, task, twin)
    return Match(op, twin, dict(twin.params()))


def first_match(task: Task, ops: Sequence[str], what: str,
                limits: Callable[[Match], str | None] = lambda m: None) -> Match:
    """The first of ``ops`` (see :func:`preferred`) whose computation is the task's and
    whose recipe's ``limits`` accept it; else :class:`Declined` naming the nearest miss.
    ``what`` names the recipes in the message (``"vector recipe"``)."""
    padded = [s for s in task.inputs if s.kind == "index" and s.special is not None]
    if padded:  # the recipes read every index (a class target, a gathered row): none skips padding
        s = padded[0]
        raise Declined(f"no {what} reads index input {s.name!r} padded with {s.special[0]:g} "
                       "(an ignore_index) without reading past it")
    try:
        mine = task_canon(task)
    except Unsupported as e:
        raise Declined(f"no {what} can be matched: {' '.join(str(e).split())}") from None
    misses: list[NoMatch] = []
    for op in preferred(task, ops):
        try:
            m = match(task, op, mine)
        except NoMatch as e:
            misses.append(e)
            continue
        why = limits(m)
        if why is None:
            return m
        misses.append(NoMatch(op, "limits", why))
    near = max(misses, key=lambda e: STAGES.index(e.stage), default=None)
    ops_seen = ", ".join(o.removeprefix("aten.") for o in mine.ops[:6]) or "no ATen op"
    if near is None or near.stage == "graph":
        raise Declined(f"no {what} computes this reference (its ATen graph: {ops_seen})")
    raise Declined(f"no {what} computes this reference; the nearest, {near.op}, has the same "
                   f"ATen graph but {near.reason}")


__all__ = ["Canon", "Match", "NoMatch", "canonical", "first_match", "match", "parameter_slots",
           "preferred", "same_number", "task_canon"]
