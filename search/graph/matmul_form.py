"""The matrix-product form of a traced reference: which inputs are A and B, how they are
stored, and the elementwise epilogue applied to the product.

Read from the ATen graph, never from names: ``mm``, ``bmm``, ``matmul``, ``addmm``,
``baddbmm``, ``mv``, ``addmv`` and ``nn.Linear`` (``t`` + ``addmm``) all reach one product
node. Each operand is followed back through views to the input it reads; its *strides* as the
product sees it say whether the stored tensor is the matrix (row-major, leading dims merged:
a batch against a shared matrix) or its transpose (``A.T``, ``B.t()``, ``k.transpose(1, 2)``,
``nn.Linear``'s ``[out, in]`` weight). Copies right at the product that only re-lay or widen
the values (``w.t().contiguous()``, ``a.float()`` of a 16-bit input) are looked through, the
strides read below them; an epilogue operand must be in the output's layout. A vector operand is refused: a matrix-vector product
is memory-bound, the graph frontend's row reduction. The epilogue is the chain of elementwise calls from the product to the output:
activations, a Python number, a per-column row (bias) or a same-shape tensor (residual).

Rounding is read from the traced dtypes too: every ATen call whose result is fp16 / bf16
rounds there in eager (``mm`` rounds the bare product; ``addmm`` adds its bias in the
accumulator and rounds once, after it; each epilogue call rounds its own result), so a
candidate can round exactly where the reference does (:attr:`Step.rounded`,
:attr:`MatmulForm.product_rounded`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch

from ...tasks.aten import MATMUL_OPS, AtenGraph, Ref

#: calls that only reinterpret a tensor (followed through to the stored input)
_VIEWS = frozenset({"view", "_unsafe_view", "reshape", "t", "permute", "transpose", "unsqueeze",
                    "squeeze", "alias", "detach", "lift_fresh", "expand"})
#: calls that copy their operand: followed through only when the copy keeps its layout
_COPIES = frozenset({"clone", "contiguous"})
#: product calls: (A slot, B slot, addend slot or "")
_PRODUCTS = {"mm": ("self", "mat2", ""), "bmm": ("self", "mat2", ""), "matmul": ("self", "other", ""),
             "mv": ("self", "vec", ""), "addmm": ("mat1", "mat2", "self"),
             "baddbmm": ("batch1", "batch2", "self"), "addmv": ("mat", "vec", "self")}
UNARY = ("relu", "gelu", "gelu_tanh", "sigmoid", "tanh", "silu")
_BINARY = {"add": "+", "sub": "-", "mul": "*", "div": "/"}


@dataclass(frozen=True)
class Operand:
    """A product operand: task input ``index``, stored ``transpose``d or as a ``vector``."""

    index: int
    transpose: bool = False
    vector: bool = False


@dataclass(frozen=True)
class Step:
    """One epilogue call: ``op`` (an activation, or ``+ - * /``) with a number ``value`` or a
    task input ``index`` read as a per-column ``row``, a ``full`` tile or a Python ``scalar``; ``swap``: the
    product is the right operand (``1 - mm``); ``rounded``: eager rounds the value after
    this step to the output's 16-bit dtype (the call that performs it returns fp16 / bf16);
    ``host``: the number as a host expression of the input sizes when it changes with them
    (``x.shape[0]`` in the reference), filled in by the cube proposer."""

    op: str
    value: float | None = None
    index: int | None = None
    kind: str = ""
    host: str = ""  # ``value`` as a host expression (``size(x, 0)``) when it changes with the shapes
    swap: bool = False
    rounded: bool = False


@dataclass(frozen=True)
class MatmulForm:
    """One product of two task inputs and its epilogue; ``product_rounded``: eager rounds the
    bare product to 16 bits before the first step (``mm``, not ``addmm``, whose addend is a
    step inside the product call)."""

    a: Operand
    b: Operand
    batched: bool
    steps: tuple[Step, ...]
    ops: tuple[str, ...]
    product_rounded: bool = False


def _rounds(ag: AtenGraph, node: str) -> bool:
    """Does the call ``node`` return a 16-bit float (eager rounds its result there)?"""
    return ag.meta(Ref(node))[1] in (torch.float16, torch.bfloat16)


def _same_layout(ag: AtenGraph, node: str) -> bool:
    """Does the one-operand call ``node`` return its operand's shape with its strides (a copy
    that keeps the layout, so reading its strides still describes the stored input)?"""
    args = ag.tensor_args(node)
    if len(args) != 1:
        return False
    shape, strides = ag.meta(args[0])[0], ag.node(args[0].node)["strides"][args[0].index]
    return tuple(shape) == tuple(ag.meta(Ref(node))[0]) and strides == ag.node(node)["strides"][0]


def _widens(ag: AtenGraph, node: str) -> bool:
    """A one-operand ``_to_copy`` from a 16-bit float to fp32 (``a.float()``): exact, so a product
    of widened 16-bit operands is the cube's 16-bit product with fp32 sums (each fp16 / bf16
    product is exact in fp32), and a widened epilogue operand is a cast load."""
    if ag.node(node)["kind"] != "op" or ag.op(node) != "_to_copy" or len(args := ag.tensor_args(node)) != 1:
        return False
    return ag.meta(args[0])[1] in (torch.float16, torch.bfloat16) and ag.meta(Ref(node))[1] == torch.float32


def _is_view(ag: AtenGraph, node: str) -> bool:
    """Reinterprets its one operand: a view, a copy that keeps the layout (``clone``,
    ``contiguous`` of a contiguous tensor) or an exact widening. A copy that changes the layout
    (``a.t().contiguous()``) is not one: the strides the product sees would no longer describe
    the stored input."""
    if ag.node(node)["kind"] != "op":
        return False
    op = ag.op(node)
    if op in _COPIES:
        return _same_layout(ag, node)
    return op in _VIEWS or _widens(ag, node) and _same_layout(ag, node)


def _view_chain(ag: AtenGraph, node: str) -> list[str]:
    """``node`` and the nodes it reads through one-operand views, up to the first that is not one."""
    chain = [node]
    while _is_view(ag, node):
        args = ag.tensor_args(node)
        if len(args) != 1:
            break
        node = args[0].node
        chain.append(node)
    return chain


def _source(ag: AtenGraph, ref: Ref) -> str | None:
    """The input node ``ref`` reads through views only, or None (a computed operand)."""
    last = _view_chain(ag, ref.node)[-1]
    return last if ag.node(last)["kind"] == "input" else None


def _operand_copies(ag: AtenGraph, ref: Ref) -> tuple[Ref, list[str]]:
    """``ref`` below the copies that only change its layout or width (``a.t().contiguous()``,
    ``a.float()``), and those copies' nodes: the product reads the same values, and the strides
    below them describe how the stored input holds them."""
    copies = []
    while ag.node(ref.node)["kind"] == "op" and (ag.op(ref.node) in _COPIES or _widens(ag, ref.node)) and \
            len(args := ag.tensor_args(ref.node)) == 1 and tuple(ag.meta(args[0])[0]) == tuple(ag.meta(ref)[0]):
        copies.append(ref.node)
        ref = args[0]
    return ref, copies


def _stored(ag: AtenGraph, ref: Ref, batched: bool) -> tuple[int, bool, bool] | None:
    """(input index, transposed, vector) of a product operand, from its strides."""
    ref, _ = _operand_copies(ag, ref)
    src = _source(ag, ref)
    if src is None:
        return None
    shape, _ = ag.meta(ref)
    stride = ag.node(ref.node)["strides"][ref.index]
    in_shape, _ = ag.node(src)["outputs"][0]
    index = ag.node(src)["index"]
    if math.prod(shape) != math.prod(in_shape) or 0 in stride:
        return None  # a slice or a broadcast of the input: not the stored matrix
    if len(shape) == 1:
        return (index, True, True) if stride == (1,) else None
    rows, cols = shape[-2], shape[-1]
    lead = tuple(stride[:-2])
    if batched and lead != (rows * cols,):
        return None
    if tuple(stride[-2:]) == (cols, 1) or cols == 1 and stride[-2] == 1:
        return index, False, False
    if tuple(stride[-2:]) == (1, rows):
        return index, True, False
    return None


def _operand_kind(ag: AtenGraph, ref: Ref, out_shape: tuple[int, ...]) -> tuple[int, str] | None:
    """A further epilogue operand: (input index, ``row`` | ``full`` | ``scalar``), or None."""
    src = _view_chain(ag, ref.node)[-1]
    kind = ag.node(src)["kind"]
    if kind == "scalar_input":  # a Python number of forward's, traced 0-d
        return ag.node(src)["index"], "scalar"
    if kind != "input":
        return None
    in_shape, _ = ag.node(src)["outputs"][0]
    index = ag.node(src)["index"]
    shape, stride = ag.meta(ref)[0], ag.node(ref.node)["strides"][ref.index]
    # read in the stored order only: r.t() of a square r has the output's shape, not its layout
    dense = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    if tuple(in_shape) == tuple(out_shape):
        same = all(st == d or n == 1 for st, d, n in zip(stride, dense, shape, strict=True))
        return (index, "full") if same else None
    n = out_shape[-1]
    if math.prod(in_shape) == n and (not in_shape or in_shape[-1] == n):
        return (index, "row") if n == 1 or not stride or stride[-1] == 1 else None
    return None


@dataclass(frozen=True)
class ProductCall:
    """The one product call of a traced reference: its node, its operands as stored inputs and
    whether it batches (its alpha / addend, if any, are still the call's own arguments)."""

    node: str
    a: Operand
    b: Operand
    batched: bool


def product_call(ag: AtenGraph) -> ProductCall | str:
    """The reference's one matrix product of two stored inputs, or a sentence saying why there
    is none (what comes after the product is not read here)."""
    work = [n for n in ag.op_nodes() if not _is_view(ag, n)]
    products = [n for n in work if ag.op(n) in MATMUL_OPS]
    if len(products) != 1:
        return f"{len(products)} matrix products (one is served)"
    prod = products[0]
    op = ag.op(prod)
    if op not in _PRODUCTS:
        return f"aten.{op} is not one of {', '.join(sorted(_PRODUCTS))}"
    d = ag.node(prod)
    sa, sb, sc = _PRODUCTS[op]
    # a bmm of one batch is a plain product (einsum('bijl,lk->bijk') folds A's leading dims
    # into the rows of a [1, b*i*j, l] view): the kernel reads A's dims but the last as rows
    batched = op in ("bmm", "baddbmm") and ag.meta(Ref(prod))[0][0] != 1
    a = _stored(ag, d["args"][sa], batched)
    b = _stored(ag, d["args"][sb], batched)
    if a is None or b is None:
        return "an operand of the product is computed or strided, not a stored input"
    if a[2] or b[2]:  # the cube has no 1-row operand load; a row reduction serves it
        return "a matrix-vector product is a row reduction, the vector cores' work"
    # einsum('ij,ij->i') is a bmm of 2-D inputs viewed as [B, 1, K] and [B, K, 1]: the batched
    # kernel batches an input's last two dims over its others (the graph frontend serves such
    # products as reductions); q @ k on [B, H, T, D] is a bmm of [B*H, T, D] views
    if batched:
        ins = [tuple(ag.node(_source(ag, d["args"][s]))["outputs"][0][0]) for s in (sa, sb)]
        if any(len(s) < 3 for s in ins):
            return "a batched product of inputs that are not 3-D or more (2-D inputs viewed as batches)"
        if ins[0][:-2] != ins[1][:-2]:
            return f"a batched product whose inputs' batch dims differ ({list(ins[0])} and {list(ins[1])})"
    return ProductCall(prod, Operand(a[0], a[1]), Operand(b[0], b[1], b[2]), batched)


def matmul_form(ag: AtenGraph) -> MatmulForm | str:
    """The form of a traced reference that is one matrix product plus an elementwise epilogue,
    or a sentence saying why it is not."""
    pc = product_call(ag)
    if isinstance(pc, str):
        return pc
    # the copies an operand is read through (a.t().contiguous(), a.float()) are the product's own
    slots = _PRODUCTS[ag.op(pc.node)][:2]
    copies = {n for s in slots for n in _operand_copies(ag, ag.node(pc.node)["args"][s])[1]}
    work = [n for n in ag.op_nodes() if not _is_view(ag, n) and n not in copies]
    if len(ag.outputs) != 1:
        return "more than one output"
    prod, batched = pc.node, pc.batched
    if work[0] != prod:
        return f"aten.{ag.op(work[0])} computes an operand before the product"
    d = ag.node(prod)
    sc = _PRODUCTS[ag.op(prod)][2]
    steps: list[Step] = []
    out_shape = tuple(ag.meta(Ref(prod))[0])
    alpha, beta = d["args"].get("alpha", 1), d["args"].get("beta", 1)
    if sc and beta != 0:
        addend = _operand_kind(ag, d["args"][sc], out_shape)
        if addend is None:
            return "the addend of the product is neither a per-column row nor a same-shape tensor"
        # alpha P + beta C as beta ((alpha / beta) P + C): a chain of steps on the product
        if alpha != beta:
            steps.append(Step("*", value=float(alpha) / float(beta)))
        steps.append(Step("+", index=addend[0], kind=addend[1]))
        if beta != 1:
            steps.append(Step("*", value=float(beta)))
    elif alpha != 1:  # no addend, or beta = 0 (torch then ignores it, NaN and all)
        steps.append(Step("*", value=float(alpha)))
    if steps:  # alpha and the addend are inside the product call: one rounding, after them
        steps[-1] = replace(steps[-1], rounded=_rounds(ag, prod))
    product_rounded = not steps and _rounds(ag, prod)
    chain = prod
    for n in work[1:]:
        args = ag.tensor_args(n)
        mine = [r for r in args if r.node == chain or _through_views(ag, r, chain)]
        if len(mine) != 1:
            return f"aten.{ag.op(n)} does not continue the product's epilogue"
        name = ag.op(n)
        if ag.node(n).get("mutates") and name.endswith("_") and name[:-1] in (*UNARY, *_BINARY):
            # nn.ReLU(inplace=True), y.mul_(s): an in-place update of the epilogue's own
            # intermediate is the functional op; an update of anything else is not served
            if list(ag.node(n)["args"].values())[0] != mine[0]:
                return f"aten.{name} updates a tensor other than the product's epilogue value"
            name = name[:-1]
        rounded = _rounds(ag, n)
        if name == "gelu":  # its tanh approximation is another function (|diff| up to ~5e-4)
            approximate = ag.node(n)["args"].get("approximate", "none")
            if approximate not in ("none", "tanh"):
                return f"aten.gelu with approximate={approximate!r}"
            name = "gelu_tanh" if approximate == "tanh" else name
        if name in UNARY and len(args) == 1:
            steps.append(Step(name, rounded=rounded))
        elif name in _BINARY:
            other = [r for r in args if r is not mine[0]]
            swap = list(ag.node(n)["args"].values())[0] != mine[0]
            if not other:
                value = next((v for k, v in ag.node(n)["args"].items()
                              if k in ("other", "self") and isinstance(v, (int, float))), None)
                if value is None or ag.node(n)["args"].get("alpha", 1) != 1:
                    return f"aten.{name} with an argument the epilogue has no form for"
                steps.append(Step(_BINARY[name], value=float(value), swap=swap, rounded=rounded))
            else:
                kind = _operand_kind(ag, other[0], out_shape)
                if kind is None or ag.node(n)["args"].get("alpha", 1) != 1:
                    return f"aten.{name} reads a tensor that is neither a per-column row nor a " \
                           "same-shape input in its stored layout"
                steps.append(Step(_BINARY[name], index=kind[0], kind=kind[1], swap=swap, rounded=rounded))
        else:
            return f"aten.{name} has no form in the product's epilogue"
        chain = n
    last = ag.outputs[0].node
    if last != chain and not _through_views(ag, ag.outputs[0], chain):
        return "the output is not the end of the product's epilogue"
    return MatmulForm(pc.a, pc.b, batched, tuple(steps), tuple(ag.op(n) for n in work), product_rounded)


def _through_views(ag: AtenGraph, ref: Ref, target: str) -> bool:
    """Does ``ref`` read ``target`` through views only (the batch reshape after ``mm``)?"""
    return target in _view_chain(ag, ref.node)


def row_bias(form: MatmulForm) -> int | None:
    """Input index of the bias when the epilogue starts with ``+ row`` (a per-column bias) added
    to the unrounded product: the cube can start the accumulator from it (bias table) and the
    rest of the epilogue follows; else None. Not when eager rounds the product first
    (``x @ w.T + b`` in fp16): a bias in the accumulator would skip that rounding."""
    st = form.steps
    if form.product_rounded or not st or st[0].op != "+" or st[0].kind != "row" or st[0].index is None:
        return None
    return st[0].index
