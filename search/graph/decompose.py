"""ATen graph -> primitive graph: one decomposition rule per ATen op.

Each rule receives the call's arguments bound by schema name (tensors already turned into
:class:`~.prims.Value`) and builds primitives. The rules live by idea, most of them as
formula tables (:mod:`.formulas`):

- :mod:`.rules_math`: arithmetic, activations, comparisons and masks;
- :mod:`.rules_layout`: casts, views, constants;
- :mod:`.rules_reduce`: reductions and normalisations;
- :mod:`.rules_scan`: scans (and the flips / concatenations they fold away);
- :mod:`.rules_slice`: slicing (slice, narrow, split, chunk) as windows of an input;
- :mod:`.rules_nn`: pooling and losses.

An op without a rule raises :class:`~.trace.Unsupported` naming it and why (:data:`REASONS`
for the ops the frontend knowingly does not handle). To add an op, add a row (a formula) or a
rule to the module of its idea.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from . import (
    rules_gather,
    rules_layout,
    rules_math,
    rules_nn,
    rules_reduce,
    rules_scan,
    rules_slice,
)
from .formulas import Rule
from .permutes import sink_permutes
from .prims import PrimGraph, Value
from .trace import AtenGraph, Ref, Unsupported

#: every decomposition rule, by ATen op (overload packet name)
RULES: dict[str, Rule] = {}
for _module in (rules_math, rules_layout, rules_reduce, rules_scan, rules_slice, rules_nn, rules_gather):
    _clash = RULES.keys() & _module.RULES.keys()
    assert not _clash, f"{_module.__name__} redefines {sorted(_clash)}"
    RULES.update(_module.RULES)

#: ops the frontend knowingly does not handle, with the reason given to the user
REASONS: dict[str, str] = {}
for _n in ("sort", "topk", "kthvalue", "median", "mode", "nonzero",
           "unique", "_unique2"):
    REASONS[_n] = "index/sorting results have no DSL form"
for _n in ("mm", "bmm", "addmm", "matmul", "linear", "addbmm", "baddbmm",
           "convolution", "_convolution", "conv2d", "einsum", "_scaled_dot_product_flash_attention"):
    REASONS[_n] = "matrix products run on the cube unit; the graph frontend writes vector kernels only"
for _n in ("fractional_max_pool2d", "fractional_max_pool3d"):
    REASONS[_n] = "fractional pooling windows are drawn at random (no fixed kernel and stride)"
for _n in ("max_unpool2d", "max_unpool3d"):
    REASONS[_n] = "unpooling scatters by the indices of a max pooling, which has no DSL form"
for _n in ("cat", "stack", "index", "index_select", "gather",
           "scatter", "scatter_add", "flip", "roll", "constant_pad_nd", "pad",
           "unbind", "diagonal",
           "index_put", "masked_scatter", "take", "unfold", "as_strided", "embedding"):
    REASONS[_n] = "data movement (slicing, concatenation, indexing) has no DSL form"
for _n in ("nll_loss2d_forward", "multi_margin_loss", "multilabel_margin_loss_forward",
           "ctc_loss", "_ctc_loss"):
    REASONS[_n] = "this loss gathers by class index over spatial dims, which has no DSL form"
for _n in ("rand", "rand_like", "randn", "randn_like", "bernoulli", "dropout", "native_dropout",
           "randint", "normal", "uniform", "rrelu_with_noise", "exponential"):
    REASONS[_n] = "random numbers cannot be reproduced by a kernel"
for _n in ("_local_scalar_dense", "item"):
    REASONS[_n] = "reading a tensor value on the host (.item()) makes the graph data-dependent"


for _n in ("slice_scatter", "select_scatter", "diagonal_scatter", "as_strided_scatter"):
    REASONS.setdefault(_n, "writing into a slice or view of a tensor (an overlapping view written) "
                           "has no DSL form: kernels write whole outputs")

# ---------------------------------------------------------------- driver
def decompose(ag: AtenGraph, task_inputs: list[Any]) -> PrimGraph:
    """Build the primitive graph of a traced reference (outputs in ``PrimGraph.outputs``)."""
    g = PrimGraph()
    values: dict[str, list[Any]] = {}
    origin: dict[str, str] = {}
    failed: dict[str, Unsupported] = {}

    def resolve(x: Any, consumer: str) -> Any:
        if isinstance(x, Ref):
            if x.node in failed:  # an op that could not be decomposed is read after all
                raise failed[x.node]
            vals = values.get(x.node)
            v = vals[x.index] if vals is not None and x.index < len(vals) else None
            if isinstance(v, str):  # a rule's reason for not computing this output
                raise Unsupported(f"{consumer} reads output {x.index} of "
                                  f"{origin.get(x.node, x.node)}: {v}")
            if v is None:
                what = origin.get(x.node, x.node)
                raise Unsupported(f"{consumer} reads output {x.index} of {what}, which the "
                                  "graph frontend does not compute (an index, an uninitialised "
                                  "buffer or a statistic it has no form for)")
            return v
        if isinstance(x, (list, tuple)):
            return type(x)(resolve(y, consumer) for y in x)
        return x

    graph = ag.graph
    for n in graph.nodes:
        d = graph.nodes[n]
        kind = d["kind"]
        if kind == "input":
            spec = task_inputs[d["index"]]
            shape, dtype = d["outputs"][0]
            if dtype in (torch.int64, torch.int32):
                values[n] = [g.index(d["index"], spec.name, shape, dtype)]
                if getattr(spec, "special", None) is not None:  # e.g. ignore_index padding written in
                    g.index_special[values[n][0].node] = float(spec.special[0])
                continue
            if dtype != torch.bool and not dtype.is_floating_point:
                values[n] = [None]
                kind = "complex" if dtype.is_complex else "integer"
                origin[n] = f"the {str(dtype).replace('torch.', '')} input {spec.name!r} " \
                            f"({kind} tensors are not supported)"
                continue
            if dtype == torch.float64:
                values[n] = [None]
                origin[n] = f"the float64 input {spec.name!r} (float64 has no DSL type)"
                continue
            values[n] = [g.input(d["index"], spec.name, shape, dtype)]
        elif kind == "scalar_input":
            values[n] = [g.scalar(d["index"], d["name"], d["value"])] if d["outputs"] else []
        elif kind == "const":
            t = d["value"]
            flat = t.reshape(-1)
            if t.numel() >= 1 and bool(torch.all(flat == flat[0])):
                values[n] = [g.const(float(flat[0]), tuple(t.shape), t.dtype)]
            else:
                values[n] = [None]
                origin[n] = f"a constant tensor of shape {list(t.shape)} with varying values"
        elif kind == "param":
            shape, dtype = d["outputs"][0]
            if d.get("value") is not None:
                values[n] = [g.const(float(d["value"]), shape, dtype)]
            else:
                values[n] = [None]
                label = f"module parameter {d['name']!r}" if d.get("name") else "a module tensor"
                origin[n] = (f"{label} of shape {list(shape)} (a kernel can only read the task's "
                             "inputs; a parameter with varying values would be an extra input)")
        else:
            origin[n] = d["name"]
            try:
                values[n] = _apply(g, d, resolve, n, lambda r: ag.op(r.node) if
                                   graph.nodes[r.node]["kind"] == "op" else graph.nodes[r.node]["kind"])
                g.rounded.update(g.storage(v) for v in values[n] if isinstance(v, Value)
                                 and v.dtype in (torch.float16, torch.bfloat16))
                for v in values[n]:  # a 16-bit result folded to a number: the number eager rounds to
                    if isinstance(v, Value):
                        g.round_const(v)
            except Unsupported as e:  # only an error if a live value reads it (e.g. not
                failed[n] = e        # BatchNorm's running-statistics updates)
                values[n] = [None] * max(1, len(d["outputs"]))
    outs = []
    for i, ref in enumerate(ag.outputs):
        v = resolve(ref, f"output {i}")
        outs.append(v)
    g.outputs = outs
    sink_permutes(g)  # an input permuted and permuted back: computed on its own layout
    return g


def _apply(g: PrimGraph, d: dict, resolve: Callable[[Any, str], Any], n: str,
           producer: Callable[[Ref], str]) -> list[Any]:
    func = d["target"]
    name = d["name"]
    packet = func.overloadpacket.__name__
    base = packet[:-1] if d.get("mutates") and packet.endswith("_") and packet != "_" else packet
    if packet in ("copy_",):
        base = "copy"
    fn = RULES.get(base)
    if fn is None:
        base2 = base.lstrip("_")
        fn = RULES.get(base2)
    if fn is None:
        reason = REASONS.get(base) or REASONS.get(base.lstrip("_"))
        if reason is None:
            reason = "the graph frontend has no rule for this op"
        raise Unsupported(f"{name}: {reason}")
    # a rule's refusal from the call's metadata and its operands' producers alone, before the
    # operands' own failures are met
    why = getattr(fn, "refuses", lambda d, producer: None)(d, producer)
    if why:
        raise Unsupported(f"{name}: {why}")
    args = {k: resolve(v, name) for k, v in d["args"].items()}
    args["__op__"] = name
    try:
        out = fn(g, args)
    except Unsupported as e:
        msg = str(e)
        raise Unsupported(msg if msg.startswith("aten.") else f"{name}: {msg}") from None
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as e:
        raise Unsupported(f"{name}: its arguments are outside what the graph frontend "
                          f"handles ({type(e).__name__}: {e})") from None
    outs = out if isinstance(out, list) else [out]
    if len(outs) < len(d["outputs"]):
        outs = outs + [None] * (len(d["outputs"]) - len(outs))
    for v, (shape, _) in zip(outs, d["outputs"], strict=False):
        if isinstance(v, Value) and tuple(v.shape) != tuple(shape):
            raise Unsupported(f"{name}: internal shape mismatch ({list(v.shape)} vs "
                              f"{list(shape)}) in its decomposition")
    return outs
