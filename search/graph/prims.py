"""The primitive graph: what the DSL can compute, one node per operation.

ATen ops are decomposed (:mod:`.decompose`) into a handful of primitives held in a
``networkx`` DiGraph (edges: operand -> user, attribute ``pos``):

- leaves: ``input`` (a task tensor), ``index`` (an integer index tensor, read by ``pick``
  only), ``scalar`` (a runtime ``Scalar`` parameter), ``const`` (a number), ``extent``
  (the number of elements a reduction ``of`` folds: ``width(t)`` for a loop reduction, a
  host ``numel``/``size`` expression for a whole-tensor one);
- elementwise: the unary ops of the DSL (``exp log abs sqrt rsqrt reciprocal relu neg
  sigmoid tanh erf``), ``leaky_relu`` (attribute ``slope``), binary ``add sub mul div max
  min``, ``cmp`` (attribute ``cmp``: ``lt gt le ge eq ne``; a bool mask), ``where``
  (mask, a, b) and ``ind`` (a mask as 1.0/0.0);
- ``reduce`` (attribute ``red``: ``sum max min prod``, ``dims`` of the operand; the
  result keeps the reduced dims as 1, a ``view`` drops them);
- ``scan`` (attribute ``red``: ``sum prod max``, ``dim``): an inclusive running op;
- ``pick`` (x, index): per row, ``x[row, index[row]]`` of a task input ``x``;
- ``position`` (attribute ``dim``, a leaf): each element's index along ``dim`` as f32 (the
  argmax/argmin decompositions: the first position where a slice reaches its extreme; triu /
  tril: the column index against the row index, ``row_position`` in a rows loop);
- ``pool`` (attributes ``red`` ``sum``/``max``, ``dims``, ``kernel``, ``stride``, ``padding``):
  a window reduction over the last ``dims`` dims (padding reads as the op's identity;
  ``ceil``: PyTorch's ceil_mode output size; ``dilation``: taps that far apart);
- ``pool_recip`` (the pool, attribute ``padded``): 1 / each output's in-bounds taps;
- ``flip`` / ``slice``: data movement, only valid where a rule folds it away (a reversed
  or exclusive scan);
- ``view``/``expand``: the same data seen with another shape (no code).

Every node keeps the torch ``shape`` of its value, the ``real`` shape of the data that
actually varies (an expanded dim is 1 there) and the torch ``dtype``. Constants are folded
as the graph is built; identical nodes are shared (constants are not, so that a constant
that came from a shape can be told apart from a literal, see :mod:`.patterns`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
import torch

from ...tasks.task import Shape
from .trace import Unsupported

UNARY = ("exp", "log", "abs", "sqrt", "rsqrt", "reciprocal", "relu", "neg", "sigmoid", "tanh",
         "erf", "round")  # round: the value itself, rounded by the emitter (an f32 input cast to 16 bits)
BINARY = ("add", "sub", "mul", "div", "max", "min")
CMPS = ("lt", "gt", "le", "ge", "eq", "ne")
CMP_SWAP = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le", "eq": "eq", "ne": "ne"}
CMP_INVERSE = {"lt": "ge", "ge": "lt", "gt": "le", "le": "gt", "eq": "ne", "ne": "eq"}
LEAVES = ("input", "index", "scalar", "const", "extent")
TRANSPARENT = ("view", "expand")


@dataclass(frozen=True)
class Value:
    """A prim-graph value: node id plus the facts every decomposition needs."""

    node: int
    shape: Shape
    real: Shape
    dtype: torch.dtype

    @property
    def is_mask(self) -> bool:
        return self.dtype == torch.bool


def _numel(shape: Sequence[int]) -> int:
    return math.prod(shape)


def _py_unary(op: str, x: float) -> float:
    try:
        if op == "exp":
            return math.exp(x)
        if op == "log":
            return math.log(x) if x > 0 else (-math.inf if x == 0 else math.nan)
        if op == "abs":
            return abs(x)
        if op == "sqrt":
            return math.sqrt(x) if x >= 0 else math.nan
        if op == "rsqrt":
            return 1 / math.sqrt(x) if x > 0 else (math.inf if x == 0 else math.nan)
        if op == "reciprocal":
            return 1 / x if x != 0 else math.copysign(math.inf, x)
        if op == "relu":
            return max(x, 0.0)
        if op == "neg":
            return -x
        if op == "sigmoid":
            return 1 / (1 + math.exp(-x)) if x > -700 else 0.0
        if op == "tanh":
            return math.tanh(x)
        if op == "erf":
            return math.erf(x)
        if op == "round":
            return x
    except OverflowError:
        return math.inf
    raise AssertionError(op)


def _py_binary(op: str, a: float, b: float) -> float:
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "div":
        if b == 0:
            return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a) * math.copysign(1, b)
        return a / b
    if op == "max":
        return max(a, b)
    if op == "min":
        return min(a, b)
    raise AssertionError(op)


def _py_cmp(op: str, a: float, b: float) -> bool:
    return {"lt": a < b, "gt": a > b, "le": a <= b, "ge": a >= b, "eq": a == b, "ne": a != b}[op]


class PrimGraph:
    """Builder and container of the primitive graph (constant folding + sharing)."""

    def __init__(self) -> None:
        self.g = nx.DiGraph()
        self._cse: dict[tuple, int] = {}
        self.outputs: list[Value] = []
        #: nodes holding an index as f32 (argmax and friends): the values an int64 output takes
        self.index_results: set[int] = set()
        #: nodes that are an ATen op's fp16/bf16 result: eager rounds them, so a kernel that
        #: computes in f32 rounds them too (an fp16 chain then matches eager op by op)
        self.rounded: set[int] = set()
        #: index inputs read as class targets (``pick``) -> the class count C: their values are
        #: taken to lie in [0, C) (a target outside stops the kernel), so a comparison with a
        #: constant outside (``target == ignore_index``, -100) is decided here
        self.class_range: dict[int, int] = {}
        #: index inputs -> a value the task file writes over part of them (padding: -100)
        self.index_special: dict[int, float] = {}

    # ------------------------------------------------------------ raw nodes
    def _add(self, op: str, args: Sequence[Value], shape: Shape, real: Shape,
             dtype: torch.dtype, share: bool = True, **attrs: Any) -> Value:
        key = (op, tuple(a.node for a in args), tuple(sorted(attrs.items())), shape, real, dtype)
        if share and key in self._cse:
            return Value(self._cse[key], shape, real, dtype)
        n = len(self.g)
        self.g.add_node(n, op=op, args=tuple(a.node for a in args), shape=tuple(shape),
                        real=tuple(real), dtype=dtype, **attrs)
        for i, a in enumerate(args):
            if self.g.has_edge(a.node, n):
                self.g.edges[a.node, n]["pos"] += (i,)
            else:
                self.g.add_edge(a.node, n, pos=(i,))
        if share:
            self._cse[key] = n
        return Value(n, tuple(shape), tuple(real), dtype)

    def attr(self, v: Value | int, name: str, default: Any = None) -> Any:
        n = v.node if isinstance(v, Value) else v
        return self.g.nodes[n].get(name, default)

    def op(self, v: Value | int) -> str:
        n = v.node if isinstance(v, Value) else v
        return self.g.nodes[n]["op"]

    def storage(self, v: Value | int) -> int:
        """The node whose data ``v`` shows (through views and expands)."""
        n = v.node if isinstance(v, Value) else v
        while self.op(n) in TRANSPARENT:
            n = self.g.nodes[n]["args"][0]
        return n

    def const_value(self, v: Value) -> float | None:
        """The number a value folds to (constants; runtime scalars are folded by value)."""
        op = self.op(v)
        if op in ("const", "scalar"):
            return float(self.attr(v, "value"))
        return None

    # ------------------------------------------------------------ leaves
    def input(self, index: int, name: str, shape: Shape, dtype: torch.dtype) -> Value:
        return self._add("input", (), shape, shape, dtype, index=index, name=name)

    def scalar(self, index: int, name: str, value: float) -> Value:
        return self._add("scalar", (), (), (), torch.float32, index=index, name=name,
                         value=float(value))

    def const(self, value: float, shape: Shape = (), dtype: torch.dtype = torch.float32) -> Value:
        value = float(value)
        if dtype == torch.bool:
            value = float(bool(value))
        return self._add("const", (), tuple(shape), (), dtype, share=False, value=value)

    def round_const(self, v: Value) -> None:
        """A constant node of an fp16 / bf16 dtype holds a number of that dtype: a folded op of a
        one-element 16-bit tensor (``exp(log_tau)`` of a bf16 parameter) is rounded as eager rounds
        its result, or a division by it differs from eager's in the last place."""
        dt = self.attr(v, "dtype")
        if self.op(v) == "const" and dt in (torch.float16, torch.bfloat16):
            x = float(self.attr(v, "value"))
            self.g.nodes[v.node]["value"] = float(torch.tensor(x, dtype=torch.float32).to(dt).float())

    def index(self, index: int, name: str, shape: Shape, dtype: torch.dtype) -> Value:
        return self._add("index", (), shape, shape, dtype, index=index, name=name)

    def flat_index(self, v: Value) -> Value | None:
        """``labels.view(-1)`` of an index input: the same input read as one vector (its bytes in
        order), keeping what is known of its values; None unless ``v`` is views of an index."""
        base = self.storage(v)
        if self.op(base) != "index" or len(v.shape) != 1 or any(self.op(n) != "view" for n in self._chain(v)):
            return None
        flat = self.index(self.attr(base, "index"), self.attr(base, "name"), tuple(v.shape), v.dtype)
        if base in self.index_special:
            self.index_special[flat.node] = self.index_special[base]
        return flat

    def extent(self, of: Value) -> Value:
        """The number of elements the reduction ``of`` folds (per output element)."""
        n = of.node
        while self.op(n) == "view":
            n = self.g.nodes[n]["args"][0]
        if self.op(n) != "reduce":
            raise Unsupported("the element count of a reduction folded to a constant (a mean of a constant)")
        return self._add("extent", (), (), (), torch.float32, of=n)

    def position(self, like: Value, dim: int) -> Value:
        """Each element's index along ``dim`` of ``like``, as f32 (exact below 2**24): what
        an argmax compares (``position(at)`` in the DSL: a slabs step, a rows column)."""
        d = dim % len(like.shape)
        return self._add("position", (), like.shape, like.shape, torch.float32, dim=d)

    # ------------------------------------------------------------ elementwise
    def as_float(self, v: Value, dtype: torch.dtype = torch.float32) -> Value:
        """A mask used as a number: 1.0 where true, 0.0 elsewhere."""
        if not v.is_mask:
            return v
        c = self.const_value(v)
        if c is not None:
            return self.const(c, v.shape, dtype)
        return self._add("ind", (v,), v.shape, v.real, dtype)

    def unary(self, op: str, a: Value) -> Value:
        assert op in UNARY, op
        a = self.as_float(a)
        c = self.const_value(a)
        if c is not None:
            return self.const(_py_unary(op, c), a.shape, a.dtype)
        if op == "neg" and self.op(a) == "neg":
            return self._arg(a, 0)
        return self._add(op, (a,), a.shape, a.real, a.dtype)

    def round_to(self, a: Value, dtype: torch.dtype) -> Value:
        """``a`` narrowed to a 16-bit ``dtype`` by a cast of its own: the emitter rounds it there
        (an input has no op to carry the rounding, see ``rules_layout.to_dtype``)."""
        return self._add("round", (a,), a.shape, a.real, dtype)

    def leaky_relu(self, a: Value, slope: float) -> Value:
        a = self.as_float(a)
        c = self.const_value(a)
        if c is not None:
            return self.const(c if c >= 0 else c * slope, a.shape, a.dtype)
        return self._add("leaky_relu", (a,), a.shape, a.real, a.dtype, slope=float(slope))

    def binary(self, op: str, a: Value | float, b: Value | float,
               dtype: torch.dtype | None = None) -> Value:
        assert op in BINARY, op
        a, b = self._operands(a, b)
        a, b = self.as_float(a), self.as_float(b)
        if op in ("max", "min"):  # a clamp of integers makes no new value: exact on their f32 reads
            a, b = self.numbers(a), self.numbers(b)
        dtype = dtype or _promote(a, b)
        shape = _bcast(a.shape, b.shape)
        ca, cb = self.const_value(a), self.const_value(b)
        if ca is not None and cb is not None:
            return self.const(_py_binary(op, ca, cb), shape, dtype)
        # identities that are exact for every float (literal constants only)
        ka = ca if self.op(a) == "const" else None
        kb = cb if self.op(b) == "const" else None
        if (op == "add" and ka == 0.0 and _covers(b, shape)) or \
                (op == "mul" and ka == 1.0 and _covers(b, shape)):
            return self._retype(b, dtype)
        if (op in ("add", "sub") and kb == 0.0 and _covers(a, shape)) or \
                (op in ("mul", "div") and kb == 1.0 and _covers(a, shape)):
            return self._retype(a, dtype)
        if op == "sub" and ka == 0.0 and _covers(b, shape):
            return self.unary("neg", b)
        return self._add(op, (a, b), shape, _bcast(a.real, b.real), dtype)

    def numbers(self, v: Value, dtype: torch.dtype = torch.float32) -> Value:
        """An integer input read as numbers (``counts.float()``, ``mask == 0``): the input in
        its own dtype, cast to ``dtype`` on load (exact below 2^24 in magnitude, rounded to
        nearest beyond, as torch's cast rounds)."""
        if self.op(v) == "view" and self.op(self.storage(v)) == "index" and \
                all(self.op(n) != "expand" for n in self._chain(v)):  # lengths[:, None]
            base = self.numbers(self.value(self.storage(v)), dtype)
            return self.view(base, v.shape)
        if self.op(v) != "index":
            return v
        read = self.input(self.attr(v, "index"), self.attr(v, "name"), v.shape, v.dtype)
        return Value(read.node, read.shape, read.real, dtype)

    def _chain(self, v: Value) -> list[int]:
        """The view / expand nodes between ``v`` and the data it shows."""
        out, n = [], v.node
        while self.op(n) in TRANSPARENT:
            out.append(n)
            n = self.g.nodes[n]["args"][0]
        return out

    def cmp(self, op: str, a: Value | float, b: Value | float) -> Value:
        assert op in CMPS, op
        a, b = self._operands(a, b)
        known = self._class_cmp(op, a, b)
        if known is not None:
            return self.const(float(known), _bcast(a.shape, b.shape), torch.bool)
        a, b = self.numbers(self.as_float(a)), self.numbers(self.as_float(b))
        shape = _bcast(a.shape, b.shape)
        ca, cb = self.const_value(a), self.const_value(b)
        if ca is not None and cb is not None:
            return self.const(float(_py_cmp(op, ca, cb)), shape, torch.bool)
        return self._add("cmp", (a, b), shape, _bcast(a.real, b.real), torch.bool, cmp=op)

    def _class_cmp(self, op: str, a: Value, b: Value) -> bool | None:
        """``target <op> c`` for a class-target input (values in [0, C)) and a constant ``c``
        when every value gives the same answer (``target == -100`` is False), else None."""
        for t, c, o in ((a, b, op), (b, a, CMP_SWAP[op])):
            n = self.class_range.get(t.node) if self.op(t) == "index" else None
            k = self.const_value(c)
            if n is None or k is None:
                continue
            lo, hi = _py_cmp(o, 0.0, k), _py_cmp(o, float(n - 1), k)
            # an ordered comparison is monotone over the classes; == / != only decide outside them
            if (not 0 <= k <= n - 1) if o in ("eq", "ne") else lo == hi:
                return bool(lo)
        return None

    def logical_not(self, m: Value) -> Value:
        if not m.is_mask:
            m = self.cmp("ne", m, 0.0)
        c = self.const_value(m)
        if c is not None:
            return self.const(float(not c), m.shape, torch.bool)
        if self.op(m) == "cmp":
            a, b = self._arg(m, 0), self._arg(m, 1)
            return self.cmp(CMP_INVERSE[self.attr(m, "cmp")], a, b)
        return self.cmp("lt", self.as_float(m), 0.5)

    def where(self, cond: Value, a: Value | float, b: Value | float,
              dtype: torch.dtype | None = None) -> Value:
        if not isinstance(cond, Value):
            raise Unsupported("where() with a Python condition")
        if not cond.is_mask:
            cond = self.cmp("ne", cond, 0.0)
        a, b = self._operands(a, b)
        c = self.const_value(cond)
        dtype = dtype or _promote(a, b)
        shape = _bcast(cond.shape, _bcast(a.shape, b.shape))
        if c is not None:
            pick = a if c else b
            return self._reshape_const(pick, shape, dtype)
        if a.is_mask or b.is_mask:
            if dtype == torch.bool:
                raise Unsupported("where() choosing between masks (a bool result)")
            a, b = self.as_float(a), self.as_float(b)
        real = _bcast(cond.real, _bcast(a.real, b.real))
        return self._add("where", (cond, a, b), shape, real, dtype)

    def _reshape_const(self, v: Value, shape: Shape, dtype: torch.dtype) -> Value:
        c = self.const_value(v)
        if c is not None:
            return self.const(c, shape, dtype)
        if v.shape == shape:
            return self._retype(v, dtype)
        return self.expand(v, shape)

    def _retype(self, v: Value, dtype: torch.dtype) -> Value:
        return Value(v.node, v.shape, v.real, dtype) if v.dtype != dtype and \
            v.dtype.is_floating_point and dtype.is_floating_point else v

    # ------------------------------------------------------------ shapes
    def view(self, a: Value, shape: Sequence[int]) -> Value:
        shape = tuple(int(s) for s in shape)
        if shape == a.shape:
            return a
        if _numel(shape) != _numel(a.shape):
            raise Unsupported(f"a view from {list(a.shape)} to {list(shape)} changes the number "
                              "of elements")
        c = self.const_value(a)
        if c is not None:
            return self.const(c, shape, a.dtype)
        if self.op(a) == "position":  # an index keeps its own shape: the dim it walks, moved
            return self._position_view(a, shape)
        if a.real != a.shape:
            real = _view_real(a.shape, a.real, shape)
            if real is None:
                raise Unsupported(f"a view of a broadcast value (from {list(a.shape)} to "
                                  f"{list(shape)}) that moves its broadcast dims")
        else:
            real = shape
        base = self._arg(a, 0) if self.op(a) == "view" else a
        return self._add("view", (base,), shape, real, a.dtype)

    def _position_view(self, a: Value, shape: Shape) -> Value:
        """A view of an index that only adds or drops size-1 dims (``i[:, None]``): the index
        along the same dim, renumbered; any other reshape is refused (the form analysis reads
        a position's dim off its own shape)."""
        dim = self.attr(a, "dim")
        if a.shape[dim] == 1:
            return self.const(0.0, shape)
        old = [d for d in a.shape if d != 1]
        if old != [d for d in shape if d != 1]:
            raise Unsupported(f"a reshape of an index (arange) from {list(a.shape)} to {list(shape)}")
        k = sum(1 for d in a.shape[:dim] if d != 1)
        new = [i for i, d in enumerate(shape) if d != 1][k]
        return self._add("position", (), shape, shape, torch.float32, dim=new)

    def expand(self, a: Value, shape: Sequence[int]) -> Value:
        shape = tuple(int(s) for s in shape)
        shape = tuple(a.shape[i - (len(shape) - len(a.shape))] if s == -1 else s
                      for i, s in enumerate(shape))
        if shape == a.shape:
            return a
        c = self.const_value(a)
        if c is not None:
            return self.const(c, shape, a.dtype)
        real = (1,) * (len(shape) - len(a.real)) + tuple(a.real)
        return self._add("expand", (a,), shape, real, a.dtype)

    def reduce(self, red: str, a: Value, dims: Sequence[int] | None, keepdim: bool) -> Value:
        a = self.as_float(a)
        rank = len(a.shape)
        if dims is None or len(dims) == 0:
            dims = tuple(range(rank))
        norm = tuple(sorted({d % rank if rank else 0 for d in dims})) if rank else ()
        shape = tuple(1 if i in norm else s for i, s in enumerate(a.shape))
        c = self.const_value(a)
        if c is not None:  # a count of a mask that is decided (label smoothing's valid targets)
            n = math.prod(a.shape[d] for d in norm) if rank else 1
            v = {"sum": c * n, "max": c, "min": c}.get(red)
            if v is None or not math.isfinite(v):
                raise Unsupported(f"a {red} of a constant")
            out = shape if keepdim else tuple(s for i, s in enumerate(a.shape) if i not in norm)
            return self.const(v, out, a.dtype)
        if a.real != a.shape:
            raise Unsupported(f"a reduction over dims {list(norm)} of a broadcast value "
                              f"(shape {list(a.shape)})")
        # one node per reduction (keepdim=True), a view drops the dims: shared by mean/var
        r = self._add("reduce", (a,), shape, shape, a.dtype, red=red, dims=norm)
        if keepdim:
            return r
        return self.view(r, [s for i, s in enumerate(a.shape) if i not in norm])

    def scan(self, red: str, a: Value, dim: int, reverse: bool = False) -> Value:
        a = self.as_float(a)
        rank = len(a.shape)
        if rank == 0:
            return a
        dim %= rank
        if a.shape[dim] == 1:
            return a
        if a.real != a.shape:
            raise Unsupported(f"a scan along dim {dim} of a broadcast value (shape "
                              f"{list(a.shape)})")
        if self.const_value(a) is not None:
            raise Unsupported("a scan of a constant")
        if reverse:  # from the end of the dim: flip(cumsum(flip(x))) without a subtraction
            return self._add("scan", (a,), a.shape, a.shape, a.dtype, red=red, dim=dim, reverse=True)
        return self._add("scan", (a,), a.shape, a.shape, a.dtype, red=red, dim=dim)

    def pick(self, x: Value, idx: Value, ignore: int | None = None) -> Value:
        """Per row of the 2-D input ``x``, the element at column ``idx[row]``; with ``ignore``, 0
        where the index is that value (the caller masks those rows)."""
        shape = x.shape[:1]
        n = int(x.shape[-1])
        special = self.index_special.get(idx.node)
        padded = special is not None and not 0 <= special < n
        if padded and special != ignore:
            raise Unsupported(f"class targets that hold {special:g}, which is not the loss's ignore_index "
                              f"({ignore}), so no row may skip it")
        if self.op(idx) == "index" and not padded:
            self.class_range[idx.node] = n  # (not when rows are padded: their comparison is data)
        return self._add("pick", (x, idx), shape, shape, x.dtype, ignore=ignore)

    def gather(self, x: Value, idx: Value, dim: int, shape: Shape) -> Value:
        """Rows of the task input ``x`` along ``dim`` at the elements of ``idx`` (see
        :mod:`.rules_gather`)."""
        return self._add("gather", (x, idx), tuple(shape), tuple(shape), x.dtype, dim=dim)

    def gather_cols(self, x: Value, idx: Value, wrap: bool = False, shared: bool = False) -> Value:
        """``x[..., idx[..., j]]`` along the last dim (``wrap``: indices modulo the row;
        ``shared``: one 1-D index list for every row, ``x[..., idx[j]]``; see
        :mod:`.rules_gather`)."""
        shape = tuple(x.shape[:-1]) + (math.prod(idx.shape),) if shared else tuple(idx.shape)
        return self._add("gather_cols", (x, idx), shape, shape, x.dtype, wrap=bool(wrap),
                         shared=bool(shared))

    def index_add(self, base: Value, src: Value, idx: Value, dim: int) -> Value:
        """``base`` with the rows of the task input ``src`` added at the rows ``idx`` names
        along ``dim`` (see :mod:`.rules_gather`)."""
        shape = tuple(base.shape)
        return self._add("index_add", (base, src, idx), shape, shape, torch.float32, dim=dim)

    def index_mod(self, idx: Value, mod: int) -> Value:
        """An index input modulo ``mod`` (read only by a gather that wraps)."""
        # the modulus is a size: kept as the (signature-free) value, so reduced shapes match
        return self._add("index_mod", (idx,), idx.shape, idx.shape, idx.dtype, value=int(mod))

    def pool(self, red: str, a: Value, kernel: Sequence[int], stride: Sequence[int],
             padding: Sequence[int], out_shape: Shape, ceil: bool = False,
             dilation: Sequence[int] = ()) -> Value:
        a = self.as_float(a)
        if a.real != a.shape:
            raise Unsupported("pooling of a broadcast value")
        return self._add("pool", (a,), tuple(out_shape), tuple(out_shape), a.dtype, red=red,
                         dims=len(kernel), kernel=tuple(kernel), stride=tuple(stride),
                         padding=tuple(padding), ceil=bool(ceil),
                         dilation=tuple(dilation) or (1,) * len(kernel))

    def pool_recip(self, pooled: Value, padded: bool) -> Value:
        """For each element of a ``pool`` value, 1 / the taps of its window inside the input
        (``padded``: inside the input and its padding, clipped at ``I + P``) -- an average
        pool's divisor where it changes at the borders (``window_recip(t)`` in the DSL)."""
        if self.op(pooled) != "pool":
            raise Unsupported("a border divisor of a value that is not a pooling")
        return self._add("pool_recip", (pooled,), pooled.shape, pooled.shape, torch.float32,
                         padded=bool(padded))

    def marker(self, op: str, a: Value, shape: Shape, **attrs: Any) -> Value:
        """A data-movement node (``flip``, ``slice``) that a later rule must fold away."""
        if a.real != a.shape:
            raise Unsupported(f"a {op} of a broadcast value (shape {list(a.shape)})")
        return self._add(op, (a,), tuple(shape), tuple(shape), a.dtype, **attrs)

    # ------------------------------------------------------------ helpers
    def _arg(self, v: Value, i: int) -> Value:
        n = self.g.nodes[v.node]["args"][i]
        d = self.g.nodes[n]
        return Value(n, d["shape"], d["real"], d["dtype"])

    def value(self, n: int) -> Value:
        d = self.g.nodes[n]
        return Value(n, d["shape"], d["real"], d["dtype"])

    def _operands(self, a: Value | float, b: Value | float) -> tuple[Value, Value]:
        if not isinstance(a, Value) and not isinstance(b, Value):
            return self.const(float(a)), self.const(float(b))
        if not isinstance(a, Value):
            a = self.const(float(a), (), torch.bool if isinstance(a, bool) else torch.float32)
        if not isinstance(b, Value):
            b = self.const(float(b), (), torch.bool if isinstance(b, bool) else torch.float32)
        return a, b


def _promote(a: Value, b: Value) -> torch.dtype:
    """torch's rule for our purposes: a dimensioned float operand's dtype wins over a 0-d one."""
    for v in (a, b):
        if v.dtype.is_floating_point and v.shape != ():
            return v.dtype
    for v in (a, b):
        if v.dtype.is_floating_point:
            return v.dtype
    return torch.float32


def _covers(v: Value, shape: Shape) -> bool:
    """The value already has the result's shape (dropping the other operand is exact)."""
    return tuple(v.shape) == tuple(shape)


def _bcast(a: Sequence[int], b: Sequence[int]) -> Shape:
    try:
        return tuple(torch.broadcast_shapes(tuple(a), tuple(b)))
    except RuntimeError:
        raise Unsupported(f"shapes {list(a)} and {list(b)} do not broadcast") from None


def _view_real(shape: Shape, real: Shape, new: Shape) -> Shape | None:
    """The real shape after a view that only adds or removes size-1 dims, else None."""
    def strip(s: Shape, r: Shape) -> list[tuple[int, int]]:
        return [(x, y) for x, y in zip(s, r, strict=True) if x != 1]
    kept = strip(shape, real)
    if [x for x, _ in kept] != [x for x in new if x != 1]:
        return None
    it = iter(kept)
    return tuple(1 if x == 1 else next(it)[1] for x in new)
