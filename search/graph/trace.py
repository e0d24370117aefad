"""Trace a task's reference at the ATen level into a ``networkx`` op graph.

The reference runs on **meta tensors** under a ``TorchDispatchMode`` (the idea of
:mod:`ascendcraft.model.eager`), so nothing is allocated even for multi-GB task shapes.
Every dispatched ATen call becomes one node; an edge ``u -> v`` says that ``v`` reads an
output of ``u`` (edge attribute ``slots``: the argument names it is passed as).

Node attributes (``kind`` first):

- ``input``: a tensor input of the task (``index`` into ``task.inputs``, ``name``);
- ``scalar_input``: a Python scalar input (``value``), traced as a 0-d tensor when possible;
- ``const``: a concrete CPU tensor that entered the trace (``torch.tensor(0.5)``), ``value``;
- ``param``: a module parameter or buffer (``name``, ``value`` when it is one repeated number);
- ``op``: an ATen call: ``target`` (the ``OpOverload``), ``name`` (``aten.add.Tensor``),
  ``args`` (arguments bound by the schema, tensors replaced by :class:`Ref`), ``mutates``.

Every node has ``outputs``: one ``(shape, dtype)`` per tensor it produces.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

from ...tasks.task import Shape, Task


class Unsupported(Exception):
    """The graph frontend cannot handle the task; the message is one readable paragraph."""


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


class _Recorder(TorchDispatchMode):
    def __init__(self, graph: nx.DiGraph, tensors: dict[int, Ref], keep: list[Any]) -> None:
        super().__init__()
        self.g = graph
        self.tensors = tensors
        self.keep = keep  # keeps traced tensors alive so their ids stay unique
        self.count = 0
        self.aliased: set[int] = set()  # ids of tensors that are views or have views

    def _leaf(self, t: torch.Tensor) -> Ref:
        """A tensor the trace has not seen: a concrete constant or a foreign meta tensor."""
        node = f"c{len(self.g)}"
        outputs = [(tuple(t.shape), t.dtype)]
        if t.device.type != "meta":
            value = t.detach().clone()
            self.g.add_node(node, kind="const", value=value, outputs=outputs)
        else:
            self.g.add_node(node, kind="param", name="", value=None, outputs=outputs)
        ref = Ref(node)
        self.tensors[id(t)] = ref
        self.keep.append(t)
        return ref

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: D105
        kwargs = kwargs or {}
        bound = bind_args(func, args, kwargs)
        out = func(*args, **kwargs)
        node = f"n{self.count}"
        self.count += 1

        slots: dict[str, list[str]] = {}

        def to_ref(x: Any, name: str = "") -> Any:
            if isinstance(x, torch.Tensor):
                ref = self.tensors.get(id(x)) or self._leaf(x)
                slots.setdefault(ref.node, []).append(name)
                return ref
            return x

        ref_args = {k: tree_map(lambda x, k=k: to_ref(x, k), v) for k, v in bound.items()}
        flat_out = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        mutates = func._schema.is_mutable
        self.g.add_node(node, kind="op", target=func, name=str(func), args=ref_args,
                        mutates=mutates, outputs=[(tuple(t.shape), t.dtype) for t in flat_out])
        for src, names in slots.items():
            self.g.add_edge(src, node, slots=tuple(names))
        if mutates:
            selfs = [v for v in bound.values() if isinstance(v, torch.Tensor)]
            if any(id(t) in self.aliased for t in selfs[:1]):
                raise Unsupported(f"{func}: an in-place update of a tensor that has views "
                                  "(aliasing) cannot be traced into a dataflow graph")
        if func.is_view and flat_out:
            base = next((v for v in bound.values() if isinstance(v, torch.Tensor)), None)
            if base is not None:
                self.aliased.update({id(base), id(flat_out[0])})
        for i, t in enumerate(flat_out):
            self.tensors[id(t)] = Ref(node, i)
            self.keep.append(t)
        return out


@dataclass
class AtenGraph:
    """The traced graph, its inputs (node per task input) and outputs (refs, in order)."""

    graph: nx.DiGraph
    inputs: list[str]
    outputs: list[Ref]
    shapes: list[Shape]

    def node(self, name: str) -> dict[str, Any]:
        return self.graph.nodes[name]

    def meta(self, ref: Ref) -> tuple[Shape, torch.dtype]:
        return self.graph.nodes[ref.node]["outputs"][ref.index]

    def op_nodes(self) -> list[str]:
        return [n for n in self.graph.nodes if self.graph.nodes[n]["kind"] == "op"]


def _module_of(task: Task) -> torch.nn.Module | None:
    from ...tasks.taskfile import ModuleReference

    ref = task.reference
    if isinstance(ref, ModuleReference):
        return ref.build("meta", task.dtype)
    return None


def _uniform_value(t: torch.Tensor) -> float | None:
    if t.numel() == 0:
        return None
    flat = t.detach().reshape(-1)
    first = flat[0]
    if bool(torch.all(flat == first)):
        return float(first)
    return None


def _param_values(task: Task, names: set[str]) -> dict[str, float | None]:
    """Values of module parameters, when each is one repeated number (LayerNorm's 1s/0s)."""
    from ...tasks.taskfile import ModuleReference

    ref = task.reference
    if not isinstance(ref, ModuleReference) or not names:
        return {}
    meta = ref.build("meta")
    total = sum(v.numel() for k, v in meta.state_dict().items() if k in names)
    if total > (1 << 24):
        return {n: None for n in names}
    cpu = ref.build("cpu")
    state = cpu.state_dict()
    return {n: _uniform_value(state[n]) if n in state else None for n in names}


def trace_task(task: Task, shapes: Sequence[Shape] | None = None,
               scalars_as_tensors: bool = True) -> AtenGraph:
    """Run ``task.reference`` on meta inputs at ``shapes`` (default: full) and record its ops.

    Scalar inputs are traced as 0-d tensors (so the graph shows where they are used) unless
    ``scalars_as_tensors`` is False or the reference rejects that; then they are constants.
    """
    shapes = [tuple(s) for s in (shapes if shapes is not None else task.shapes)]
    if scalars_as_tensors and any(s.kind == "scalar" for s in task.inputs):
        try:
            return _trace(task, shapes, True)
        except _TraceError:  # e.g. `if s > 0:` on a 0-d tensor: retry with plain Python scalars
            pass
    return _trace(task, shapes, False)


def _trace(task: Task, shapes: list[Shape], scalars_as_tensors: bool) -> AtenGraph:
    g = nx.DiGraph()
    tensors: dict[int, Ref] = {}
    keep: list[Any] = []
    args: list[Any] = []
    inputs: list[str] = []
    for i, (spec, shape) in enumerate(zip(task.inputs, shapes, strict=True)):
        node = f"in{i}"
        inputs.append(node)
        if spec.kind == "scalar":
            value = spec.value
            if scalars_as_tensors and isinstance(value, (int, float)) and not isinstance(value, bool):
                dt = torch.float32 if isinstance(value, float) else torch.int64
                t = torch.empty((), dtype=dt, device="meta")
                g.add_node(node, kind="scalar_input", index=i, name=spec.name, value=value,
                           outputs=[((), dt)])
                tensors[id(t)] = Ref(node)
                keep.append(t)
                args.append(t)
            else:
                g.add_node(node, kind="scalar_input", index=i, name=spec.name, value=value,
                           outputs=[])
                args.append(value)
            continue
        t = torch.empty(shape, dtype=spec.dtype, device="meta")
        g.add_node(node, kind="input", index=i, name=spec.name, outputs=[(tuple(shape), spec.dtype)])
        tensors[id(t)] = Ref(node)
        keep.append(t)
        args.append(t)

    module = _module_of(task)
    fn = module if module is not None else task.reference
    param_names: dict[int, str] = {}
    if module is not None:
        for k, v in list(module.named_parameters()) + list(module.named_buffers()):
            param_names[id(v)] = k
    rec = _Recorder(g, tensors, keep)
    try:
        with torch.no_grad(), rec:
            out = fn(*args)
    except Unsupported:
        raise
    except Exception as e:  # noqa: BLE001 - reported as one paragraph by the caller
        raise _TraceError(e) from None
    flat = [t for t in tree_flatten(out)[0]]
    outputs: list[Ref] = []
    for t in flat:
        if not isinstance(t, torch.Tensor):
            raise Unsupported(f"the reference returns a {type(t).__name__}, not a tensor")
        ref = tensors.get(id(t))
        if ref is None:
            ref = rec._leaf(t)
        outputs.append(ref)
    # name the module parameters the trace met as foreign meta tensors
    params = [n for n in g.nodes if g.nodes[n]["kind"] == "param"]
    if params:
        by_id = {id(t): r.node for t in keep if isinstance(t, torch.Tensor)
                 for r in [tensors.get(id(t))] if r is not None}
        names = {}
        for pid, pname in param_names.items():
            if pid in by_id:
                names[by_id[pid]] = pname
        values = _param_values(task, set(names.values()))
        for n in params:
            g.nodes[n]["name"] = names.get(n, "")
            g.nodes[n]["value"] = values.get(names.get(n, ""))
    return AtenGraph(g, inputs, outputs, shapes)


class _TraceError(Unsupported):
    def __init__(self, e: BaseException) -> None:
        text = (str(e).strip().splitlines() or [type(e).__name__])[0]
        super().__init__(f"the reference does not run on meta tensors ({type(e).__name__}: "
                         f"{text}), so its ATen graph cannot be traced")
