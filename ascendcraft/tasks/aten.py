"""The one ATen tracer: a reference program run on meta tensors, recorded as a graph.

Both consumers of a task's reference read it at the ATen level: the eager-PyTorch cost model
(:mod:`ascendcraft.model.eager`: what each op would cost as a library kernel) and the graph
frontend (``search/graph``: what kernel computes the same thing). They read the same record.

The reference runs on **meta tensors** under a ``TorchDispatchMode``, so nothing is allocated
even for multi-GB task shapes. Every dispatched ATen call becomes one node of a ``networkx``
DiGraph; an edge ``u -> v`` says that ``v`` reads an output of ``u`` (edge attribute
``slots``: the argument names it is passed as).

Node attributes (``kind`` first):

- ``input``: a tensor input (``index`` into the inputs, ``name``);
- ``scalar_input``: a Python scalar input (``value``), traced as a 0-d tensor when asked;
- ``const``: a concrete (non-meta) tensor that entered the trace (``torch.tensor(0.5)``),
  ``value``;
- ``param``: a module parameter or buffer, or any other meta tensor the trace had not seen
  (``name``, ``value`` when it is one repeated number);
- ``op``: an ATen call: ``target`` (the ``OpOverload``), ``name`` (``aten.add.Tensor``),
  ``args`` (arguments bound by schema name, defaults filled in, tensors replaced by
  :class:`Ref`), ``mutates``, ``aliased`` (an in-place update of a tensor that has views).

Every node has ``outputs`` (one ``(shape, dtype)`` per tensor it produces) and ``strides``
(one stride tuple each, so the bytes an expanded or strided operand really addresses can be
counted: :meth:`AtenGraph.extent_bytes`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

from .module_ref import ModuleReference, module_state
from .task import Shape, Task

#: Ops that only create or reinterpret tensor metadata: no data moves, no kernel runs.
METADATA_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "_unsafe_view",
    "_reshape_alias", "lift_fresh", "alias", "detach", "view", "reshape", "expand", "t",
    "permute", "transpose", "unsqueeze", "squeeze", "slice", "select", "as_strided",
    "unflatten", "flatten", "split", "chunk", "unbind", "narrow", "sym_size", "sym_stride",
    "sym_numel", "sym_storage_offset", "is_contiguous", "_to_copy_meta",
})

#: Ops that are matrix products; with the convolutions, the cube unit's work (their flops
#: come from shapes: :meth:`AtenGraph.matmul_flops`).
MATMUL_OPS = frozenset({"mm", "bmm", "addmm", "baddbmm", "addbmm", "matmul", "addmv", "mv",
                        "dot", "vdot", "linear", "_scaled_mm"})
CONV_OPS = frozenset({"convolution", "_convolution"})
CUBE_OPS = MATMUL_OPS | CONV_OPS
#: The matrix products whose first tensor operand is an addend, not a factor.
_ADD_MATMULS = frozenset({"addmm", "baddbmm", "addbmm", "addmv"})


class TraceError(Exception):
    """The reference could not be traced; the message is one readable sentence."""

    def __init__(self, message: str, notes: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.notes = tuple(notes)  # what the trace had recorded before it failed


@dataclass(frozen=True)
class Ref:
    """A tensor argument: output ``index`` of graph node ``node``."""

    node: str
    index: int = 0


def bind_args(func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Arguments of an ATen call by schema name, defaults filled in."""
    out: dict[str, Any] = {}
    pos = 0
    for a in func._schema.arguments:
        if not a.kwarg_only and pos < len(args):
            out[a.name] = args[pos]
            pos += 1
        elif a.name in kwargs:
            out[a.name] = kwargs[a.name]
        elif a.has_default_value():
            out[a.name] = a.default_value
        else:
            out[a.name] = None
    return out


def refs_in(value: Any) -> Iterator[Ref]:
    """The tensor arguments inside an argument value (lists of tensors included), in order."""
    if isinstance(value, Ref):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from refs_in(v)


def op_name(target: Any) -> str:
    """``aten.add.Tensor`` -> ``add`` (the overload packet: what a kernel implements)."""
    return target.overloadpacket.__name__


@dataclass
class AtenGraph:
    """The traced graph, its inputs (one node per input) and outputs (refs, in order).

    ``notes`` are facts a dataflow reading must know about (an in-place update of a view);
    ``returned`` names what the reference returned besides tensors (``float``, ``NoneType``)."""

    graph: nx.DiGraph
    inputs: list[str]
    outputs: list[Ref]
    shapes: list[Shape]
    notes: list[str] = field(default_factory=list)
    returned: list[str] = field(default_factory=list)

    def node(self, name: str) -> dict[str, Any]:
        return self.graph.nodes[name]

    def meta(self, ref: Ref) -> tuple[Shape, torch.dtype]:
        return self.graph.nodes[ref.node]["outputs"][ref.index]

    def op_nodes(self) -> list[str]:
        """Every ATen call, in dispatch order."""
        return [n for n in self.graph.nodes if self.graph.nodes[n]["kind"] == "op"]

    def op(self, name: str) -> str:
        """The op a call node runs (``add`` for ``aten.add.Tensor``)."""
        return op_name(self.graph.nodes[name]["target"])

    def is_free(self, name: str) -> bool:
        """A view or metadata-only call: no kernel would run for it."""
        target = self.graph.nodes[name]["target"]
        return target.is_view or op_name(target) in METADATA_OPS

    def work_nodes(self) -> list[str]:
        """The calls that run a kernel (not views, not metadata), in dispatch order."""
        return [n for n in self.op_nodes() if not self.is_free(n)]

    def tensor_args(self, name: str) -> list[Ref]:
        """The tensors a call reads, once per argument slot, in schema order."""
        return [r for v in self.graph.nodes[name]["args"].values() for r in refs_in(v)]

    def result_refs(self, name: str) -> list[Ref]:
        return [Ref(name, i) for i in range(len(self.graph.nodes[name]["outputs"]))]

    def numel(self, ref: Ref) -> int:
        return math.prod(self.meta(ref)[0])

    def extent_bytes(self, ref: Ref) -> int:
        """Bytes a (possibly expanded / strided) tensor really addresses."""
        shape, dtype = self.meta(ref)
        stride = self.graph.nodes[ref.node]["strides"][ref.index]
        return extent_bytes(shape, stride, dtype)

    def call_bytes(self, name: str) -> tuple[int, int]:
        """(bytes read, bytes written) by one pass of a call over its operands."""
        read = sum(self.extent_bytes(r) for r in self.tensor_args(name))
        return read, sum(self.extent_bytes(r) for r in self.result_refs(name))

    def call_elems(self, name: str) -> int:
        """The largest operand or result of a call, in elements (its loop's length)."""
        refs = self.tensor_args(name) + self.result_refs(name)
        return max([self.numel(r) for r in refs] or [0])

    def matmul_flops(self, name: str) -> float:
        """Multiply-adds x 2 of a matrix product (plus the addend of ``addmm``-style ops)."""
        op = self.op(name)
        out = self.numel(Ref(name, 0))
        args = self.node(name)["args"]
        if op in CONV_OPS:
            w = self.meta(args["weight"])[0]
            return 2.0 * out * (w[1] * math.prod(w[2:]))
        tensors = self.tensor_args(name)
        if op in _ADD_MATMULS:
            tensors = tensors[1:]
        a = self.meta(tensors[0])[0]
        k = a[-1] if len(a) else 1
        return 2.0 * out * k + (out if op.startswith("add") else 0)

    def matmul_dims(self, name: str) -> tuple[int, int, int, int] | None:
        """``(batch, m, n, k)`` of a matrix product: ``batch`` products of an m x k by a k x n
        matrix (a vector operand is one row or column; ``linear``'s weight is n x k). None for
        a convolution."""
        op = self.op(name)
        if op in CONV_OPS:
            return None
        tensors = self.tensor_args(name)
        if op in _ADD_MATMULS:
            tensors = tensors[1:]
        if len(tensors) < 2:
            return None
        a, b = self.meta(tensors[0])[0], self.meta(tensors[1])[0]
        k = int(a[-1]) if len(a) else 1
        m = int(a[-2]) if len(a) >= 2 else 1
        if op == "linear":
            n = int(b[0]) if len(b) == 2 else 1
        else:
            n = int(b[-1]) if len(b) >= 2 else 1
        batch = max(1, math.prod(int(d) for d in a[:-2])) if len(a) > 2 else 1
        if len(b) > 2:
            batch = max(batch, math.prod(int(d) for d in b[:-2]))
        return batch, m, n, k


def extent_bytes(shape: Sequence[int], stride: Sequence[int], dtype: torch.dtype) -> int:
    """Bytes addressed by a tensor of ``shape`` / ``stride``: an expanded dim (stride 0) is
    read once, never more than ``numel`` elements."""
    numel = math.prod(shape)
    if numel == 0:
        return 0
    span = 1 + sum((s - 1) * abs(st) for s, st in zip(shape, stride, strict=False))
    return min(span, numel) * _itemsize(dtype)


def _itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype, device="meta").element_size()


# ---------------------------------------------------------------- recording
class _Recorder(TorchDispatchMode):
    def __init__(self, tracer: Tracer) -> None:
        super().__init__()
        self.t = tracer
        self.count = 0
        self.aliased: set[int] = set()  # ids of tensors that are views or have views
        #: storages updated in place through an alias, not read since -> the note for a later read
        #: (an update nothing reads again, e.g. an instance norm's running statistics, is harmless)
        self.unread: dict[int, str] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: D105
        kwargs = kwargs or {}
        bound = bind_args(func, args, kwargs)
        if self.unread:
            self.read(tree_flatten((args, kwargs))[0])
        out = func(*args, **kwargs)
        g = self.t.graph
        node = f"n{self.count}"
        self.count += 1

        slots: dict[str, list[str]] = {}

        def to_ref(x: Any, name: str = "") -> Any:
            if isinstance(x, torch.Tensor):
                ref = self.t.ref_of(x)
                slots.setdefault(ref.node, []).append(name)
                return ref
            return x

        ref_args = {k: tree_map(lambda x, k=k: to_ref(x, k), v) for k, v in bound.items()}
        flat_out = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        mutates = func._schema.is_mutable
        selfs = [v for v in bound.values() if isinstance(v, torch.Tensor)]
        aliased = mutates and any(id(t) in self.aliased for t in selfs[:1])
        g.add_node(node, kind="op", target=func, name=str(func), args=ref_args, mutates=mutates,
                   aliased=aliased, **_tensor_meta(flat_out))
        for src, names in slots.items():
            g.add_edge(src, node, slots=tuple(names))
        if aliased:  # a problem only if something reads the storage afterwards (see read)
            self.unread[_storage(selfs[0])] = (f"{func}: an in-place update of a tensor that has views "
                                               "(aliasing) cannot be traced into a dataflow graph")
        if func.is_view and flat_out and selfs:
            self.aliased.update({id(selfs[0]), id(flat_out[0])})
        for i, t in enumerate(flat_out):
            self.t.register(t, Ref(node, i))
        return out

    def read(self, xs: Sequence[Any]) -> None:
        """Tensors about to be read (by an op, or returned): an aliased update of their storage
        before this becomes a note."""
        for x in xs:
            if isinstance(x, torch.Tensor):
                note = self.unread.pop(_storage(x), None)
                if note is not None:
                    self.t.notes.append(note)


def _storage(t: torch.Tensor) -> int:
    """Identity of ``t``'s storage (views share it; the trace keeps every tensor alive, so it is
    never reused)."""
    return t.untyped_storage()._cdata


def _tensor_meta(tensors: Sequence[torch.Tensor]) -> dict[str, list]:
    return {"outputs": [(tuple(t.shape), t.dtype) for t in tensors],
            "strides": [tuple(t.stride()) for t in tensors]}


class Tracer:
    """Builds one :class:`AtenGraph`: declare the inputs, then :meth:`run` the reference."""

    def __init__(self) -> None:
        self.graph = nx.DiGraph()
        self.tensors: dict[int, Ref] = {}
        self.keep: list[Any] = []  # keeps traced tensors alive so their ids stay unique
        self.inputs: list[str] = []
        self.notes: list[str] = []

    def register(self, t: torch.Tensor, ref: Ref) -> None:
        self.tensors[id(t)] = ref
        self.keep.append(t)

    def add_input(self, arg: Any, kind: str, **attrs: Any) -> None:
        """Input node ``in<i>`` for the next argument ``arg`` (a tensor, or a Python value)."""
        node = f"in{len(self.inputs)}"
        self.inputs.append(node)
        tensors = [arg] if isinstance(arg, torch.Tensor) else []
        self.graph.add_node(node, kind=kind, index=len(self.inputs) - 1, **attrs,
                            **_tensor_meta(tensors))
        if tensors:
            self.register(arg, Ref(node))

    def ref_of(self, t: torch.Tensor) -> Ref:
        """The node that produced ``t``; a tensor the trace has not seen becomes a leaf: a
        concrete constant, or a meta tensor from outside (a module parameter)."""
        ref = self.tensors.get(id(t))
        if ref is not None:
            return ref
        node = f"c{len(self.graph)}"
        if t.device.type != "meta":
            self.graph.add_node(node, kind="const", value=t.detach().clone(), **_tensor_meta([t]))
        else:
            self.graph.add_node(node, kind="param", name="", value=None, **_tensor_meta([t]))
        ref = Ref(node)
        self.register(t, ref)
        return ref

    def run(self, fn: Callable[..., Any], args: Sequence[Any],
            shapes: Sequence[Shape] = ()) -> AtenGraph:
        """Call ``fn(*args)`` under the recorder, without autograd (an inference trace: a
        module's parameters may even be updated in place)."""
        rec = _Recorder(self)
        try:
            with torch.no_grad(), torch.device("meta"), rec:  # a tensor made without device= is meta too
                out = fn(*args)
        except TraceError:
            raise
        except Exception as e:  # noqa: BLE001 - one sentence for the caller
            text = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise TraceError(f"the reference does not run on meta tensors ({type(e).__name__}: "
                             f"{text}), so its ATen graph cannot be traced", self.notes) from e
        flat = tree_flatten(out)[0]
        rec.read(flat)  # an output sharing an in-place-updated storage is a read of it
        outputs = [self.ref_of(t) for t in flat if isinstance(t, torch.Tensor)]
        returned = [type(t).__name__ for t in flat if not isinstance(t, torch.Tensor)]
        return AtenGraph(self.graph, list(self.inputs), outputs, [tuple(s) for s in shapes],
                         list(self.notes), returned)

    def name_params(self, names: dict[int, str], values: dict[str, float | None]) -> None:
        """Name the ``param`` leaves by the id of the module tensor they came from."""
        for pid, pname in names.items():
            ref = self.tensors.get(pid)
            if ref is not None and self.graph.nodes[ref.node]["kind"] == "param":
                self.graph.nodes[ref.node]["name"] = pname
                self.graph.nodes[ref.node]["value"] = values.get(pname)


# ---------------------------------------------------------------- entry points
def to_meta(x: Any) -> Any:
    """A tensor (any device) as a meta tensor of the same shape, strides and dtype;
    ``(shape, dtype)`` as a contiguous meta tensor; anything else unchanged."""
    if isinstance(x, torch.Tensor):
        return torch.empty_strided(tuple(x.shape), tuple(x.stride()), dtype=x.dtype, device="meta")
    if isinstance(x, tuple) and len(x) == 2 and isinstance(x[1], torch.dtype):
        return torch.empty(tuple(x[0]), dtype=x[1], device="meta")
    return x


def trace(reference: Callable[..., Any], inputs: Sequence[Any]) -> AtenGraph:
    """Trace ``reference`` (a function, an ``nn.Module`` or a task file's module reference) on
    ``inputs``: tensors (any device; converted to meta), ``(shape, dtype)`` pairs, or Python
    values passed as they are. A module runs with its parameters and buffers on meta (named in
    the graph); a task file's module is built before the trace, so its constructor's
    initialisation ops are not part of the reference."""
    tr = Tracer()
    args = [to_meta(x) for x in inputs]
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            tr.add_input(a, "input", name=f"arg{i}")
        else:
            tr.add_input(a, "scalar_input", name=f"arg{i}", value=a)
    shapes = [tuple(a.shape) if isinstance(a, torch.Tensor) else () for a in args]
    # as the module reference builds itself when called: in the first floating input's dtype
    dtype = next((a.dtype for a in args if isinstance(a, torch.Tensor)
                  and a.dtype.is_floating_point), None)
    module = _built(reference, dtype)
    if module is None:
        return tr.run(reference, args, shapes=shapes)
    if isinstance(reference, ModuleReference):  # built on meta; its read state is inputs
        names = {id(v): k for k, v in module_state(module).items()}
        ag = tr.run(lambda *a: reference.call(module, a), args, shapes=shapes)
        tr.name_params(names, {})
        return ag
    state = {k: to_meta(v) for k, v in module_state(module).items()}
    ag = tr.run(lambda *a: torch.func.functional_call(module, state, a), args, shapes=shapes)
    tr.name_params({id(v): k for k, v in state.items()}, {})
    return ag


def _built(reference: Any, dtype: torch.dtype | None) -> torch.nn.Module | None:
    """The module behind ``reference``: itself, or a task file's module built on meta in
    ``dtype`` (outside any trace: its constructor is not the reference); else None."""
    if isinstance(reference, torch.nn.Module):
        return reference
    if isinstance(reference, ModuleReference):
        return reference.build("meta", dtype)
    return None


def _uniform_value(t: torch.Tensor) -> float | None:
    if t.numel() == 0:
        return None
    flat = t.detach().reshape(-1)
    first = flat[0]
    if bool(torch.all(flat == first)):
        return float(first)
    return None


#: module tensors larger than this (elements in all) are not read for uniform values
MAX_VALUE_ELEMS = 1 << 24


def _param_values(task: Task, names: set[str]) -> dict[str, float | None]:
    """Values of module parameters, when each is one repeated number (LayerNorm's 1s/0s)."""
    ref = task.reference
    if not isinstance(ref, ModuleReference) or not names:
        return {}
    meta = ref.build("meta")
    total = sum(v.numel() for k, v in module_state(meta).items() if k in names)
    if total > MAX_VALUE_ELEMS:
        return {n: None for n in names}
    state = module_state(ref.build("cpu"))
    return {n: _uniform_value(state[n]) if n in state else None for n in names}


def trace_task(task: Task, shapes: Sequence[Shape] | None = None,
               scalars_as_tensors: bool = True) -> AtenGraph:
    """Trace ``task.reference`` on meta inputs at ``shapes`` (default: full), without autograd.

    Scalar inputs are traced as 0-d tensors (so the graph shows where they are used) unless
    ``scalars_as_tensors`` is False or the reference rejects that; then they are constants.
    Module parameters are ``param`` nodes named after the module's state, with their value
    when it is one repeated number. Raises :class:`TraceError`.
    """
    shapes = [tuple(s) for s in (shapes if shapes is not None else task.shapes)]
    if scalars_as_tensors and any(s.kind == "scalar" for s in task.inputs):
        try:
            return _trace_task(task, shapes, True)
        except TraceError:  # e.g. `if s > 0:` on a 0-d tensor: retry with plain Python scalars
            pass
    return _trace_task(task, shapes, False)


def _trace_task(task: Task, shapes: list[Shape], scalars_as_tensors: bool) -> AtenGraph:
    tr = Tracer()
    args: list[Any] = []
    for spec, shape in zip(task.inputs, shapes, strict=True):
        if spec.kind == "scalar":
            value = spec.value
            if scalars_as_tensors and isinstance(value, (int, float)) and not isinstance(value, bool):
                dt = torch.float32 if isinstance(value, float) else torch.int64
                arg = torch.empty((), dtype=dt, device="meta")
            else:
                arg = value
            tr.add_input(arg, "scalar_input", name=spec.name, value=value)
            args.append(arg)
            continue
        t = torch.empty(shape, dtype=spec.dtype, device="meta")
        tr.add_input(t, "input", name=spec.name)
        args.append(t)
    module = _built(task.reference, task.dtype)
    if isinstance(task.reference, ModuleReference):
        ref = task.reference
        ag = tr.run(lambda *a: ref.call(module, a), args, shapes=shapes)
    else:
        ag = tr.run(module if module is not None else task.reference, args, shapes=shapes)
    if module is not None:
        names = {id(v): k for k, v in module_state(module).items()}
        met = {k for pid, k in names.items() if pid in tr.tensors
               and ag.node(tr.tensors[pid].node)["kind"] == "param"}
        tr.name_params(names, _param_values(task, met))
    return ag


__all__ = ["CONV_OPS", "CUBE_OPS", "MATMUL_OPS", "METADATA_OPS", "AtenGraph", "Ref", "TraceError", "Tracer",
           "bind_args", "extent_bytes", "op_name", "refs_in", "to_meta", "trace", "trace_task"]
