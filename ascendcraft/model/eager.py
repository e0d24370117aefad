"""Eager-PyTorch baseline: what the reference program would cost as a chain of library ops.

The reference is traced by the shared ATen tracer (:mod:`ascendcraft.tasks.aten`, the one the
graph frontend reads too) on **meta tensors**, so every ATen op it dispatches is recorded with
its shapes while nothing is allocated (8 GiB inputs are fine); views and metadata-only ops are
free, and a task file's module is built before the trace (its initialisation is not eager work).

Each recorded op is costed as one vendor library kernel on the **same cost basis** as
ascendcraft's own kernels (the SoC spec's tables, nothing eager-only):

* vector ops: ``launch_us(vector cores) + max(HBM bytes / (HBM x hbm_sustained_frac),
  instruction cycles / vector cores)``. HBM bytes are one pass over the operands, or two
  reads of the input when a row (the set one output depends on) does not fit in UB;
  instruction cycles come from the op's recipe of instruction classes and the per-repeat
  cycle table the timeline uses.
* cube ops: the torch_npu matmul curve measured on hardware, ``launch_us(cube cores) +
  eager_matmul_fill_us + flops / (cube peak of the *input* dtype x
  eager_matmul_efficiency)``, never below its memory time: one pass over the operands at
  the HBM rate plus the operand re-reads its L0C blocking forces at the L2 rate
  (:func:`matmul_rereads`), as the timeline charges a kernel's.

A vector op that reads a non-contiguous view (a permute, a transpose, a slice: not an expanded
dim) first runs a copy kernel of that operand: an aclnn API passes each input through
``l0op::Contiguous`` because "an L0 operator supports only a contiguous tensor as the input"
(CANN documentation of ``Contiguous``: https://www.hiascend.com/document/detail/en/canncommercial/
800/apiref/ascendcopapi/atlasascendc_api_07_1195.html). The copy is
costed as a plain streaming ``clone`` (one read, one write), which a transposing copy cannot
beat. Cube ops are left alone: matmul takes a transposed operand as a flag, not a copy.

Host dispatch is an asynchronous queue (torch_npu's task queue): the host enqueues op i at
``i x host_dispatch_us`` and the device starts it when both it and the previous op are
done, so the modeled time is the end of the device chain - the later of the two chains.
The first op's dispatch is not counted: a custom kernel is dispatched once too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from ascendcraft.soc import Soc as SocSpec
from ascendcraft.soc import load_soc

from ..tasks.aten import CUBE_OPS, AtenGraph, trace
from .capacity import l0c_block_rereads

#: Vector element-ops per element for composite op kinds (default 1 per element). Used for
#: the roofline's flop count and as the recipe length of ops without a recipe.
FLOPS_PER_ELEM = {
    "_softmax": 5, "_log_softmax": 6, "softmax": 5, "log_softmax": 6,
    "native_layer_norm": 8, "native_group_norm": 8, "native_batch_norm": 8,
    "_native_batch_norm_legit": 8, "_native_batch_norm_legit_no_training": 4,
    "gelu": 8, "silu": 4, "sigmoid": 4, "tanh": 4, "softplus": 4, "elu": 3, "mish": 8,
    "erf": 6, "pow": 2, "rsqrt": 1, "sqrt": 1, "exp": 1, "log": 1,
}

_U, _B, _T, _D, _F = "one_input", "two_input", "transcendental", "div", "fma"
_RS, _RM = "whole_reduce_sum", "whole_reduce_maxmin"
_NORM = (_RS, _B, _B, _RS, _U, _B, _F)  # mean, centre, square, variance, rsqrt, scale, affine

#: Instruction classes (keys of the spec's ``vector_cycles_per_repeat``) a library kernel
#: issues per repeat of its input, by ATen op. Ops not listed issue FLOPS_PER_ELEM[op]
#: two-input instructions. Reductions accumulate with elementwise Add/Max (2 cycles) and
#: fold once at the end; composite activations follow their usual exp/reciprocal forms.
RECIPES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("relu", "abs", "neg", "reciprocal", "rsqrt", "clamp_min", "clamp_max",
                     "leaky_relu", "fill", "clone", "copy", "_to_copy", "cat", "flip",
                     "constant_pad_nd", "zeros_like", "ones_like", "full_like", "index_select",
                     "gather", "masked_fill", "scalar_tensor", "zero", "logical_not",
                     "bitwise_not"), (_U,)),
    **dict.fromkeys(("clamp", "hardtanh", "sign"), (_U, _U)),
    **dict.fromkeys(("add", "sub", "rsub", "mul", "maximum", "minimum", "where", "eq", "ne",
                     "gt", "lt", "ge", "le", "logical_and", "logical_or", "bitwise_and",
                     "bitwise_or", "sum", "mean", "amax", "amin", "max", "min", "prod",
                     "nll_loss_forward", "lerp", "addcmul", "addcdiv"), (_B,)),
    "div": (_D,), "exp": (_T,), "log": (_T,), "sqrt": (_T,), "log1p": (_U, _T),
    "expm1": (_T, _U), "pow": (_T, _B, _T),
    "sigmoid": (_U, _T, _U, _U),                 # Muls(-1), Exp, Adds(1), Reciprocal
    "silu": (_U, _T, _U, _U, _B),
    "tanh": (_U, _T, _U, _U, _D),
    "softplus": (_T, _U, _T),
    "elu": (_T, _U, _U, _B, _B),
    "hardsigmoid": (_U, _U, _U), "hardswish": (_U, _U, _U, _B), "softsign": (_U, _U, _D),
    "gelu": (_B, _U, _U, _T, _U, _U, _B, _B), "erf": (_B,) * 6,
    "mish": (_T, _U, _T, _U, _T, _U, _U, _D, _B),
    "var_mean": (_B, _B, _B), "var": (_B, _B, _B), "std": (_B, _B, _B, _T),
    "linalg_vector_norm": (_B, _B), "norm": (_B, _B), "logsumexp": (_B, _B, _T, _B, _T),
    "_softmax": (_RM, _B, _T, _RS, _D), "_log_softmax": (_RM, _B, _T, _RS, _T, _B),
    "native_layer_norm": _NORM, "native_group_norm": _NORM, "native_batch_norm": _NORM,
    "_native_batch_norm_legit": _NORM,
    "_native_batch_norm_legit_no_training": (_B, _F),
}

#: Ops whose output element depends on a whole row (set) of the input: the row must fit in
#: UB for one pass; otherwise a statistics pass reads the input once more.
ROW_OPS = frozenset({"_softmax", "_log_softmax", "native_layer_norm", "native_group_norm",
                     "native_batch_norm", "_native_batch_norm_legit"})
#: Inclusive scans: log2(chunk) Hillis-Steele steps of one two-input op, plus the carry.
SCAN_OPS = frozenset({"cumsum", "cumprod", "logcumsumexp", "cummax", "cummin"})
#: fp32 working copies of a row a one-pass row kernel keeps in UB (input, result, temporary).
ROW_BUFFERS = 3
#: Input bytes per tile of a streaming library kernel (at least one row for row ops). Its
#: first load and compute are not overlapped (pipeline fill) [assumption: typical UB tile].
LIBRARY_TILE_BYTES = 32 * 1024


@dataclass
class AtenCall:
    """One dispatched ATen op with what its library kernel needs: traffic, work, row size."""

    name: str
    op: str
    bytes: int
    in_bytes: int
    flops: float
    unit: str
    dtype: torch.dtype
    elems: int
    row: int = 0  # elements one output depends on (row ops and scans), 0 = elementwise
    dims: tuple[int, int, int, int] | None = None  # a matrix product's (batch, m, n, k)


@dataclass
class EagerOp:
    """One recorded ATen op with its traffic, work and modeled device cost."""

    name: str
    bytes: int
    flops: float
    us: float
    unit: str = "vector"
    passes: int = 1
    start_us: float = 0.0


@dataclass
class EagerResult:
    """Modeled time of the eager reference and its per-op breakdown. ``us`` is the end of the
    device chain; ``host_us`` the host enqueue chain; ``device_busy_us`` the sum of kernels."""

    us: float
    ops: list[EagerOp] = field(default_factory=list)
    soc: str = ""
    label: str = "modeled"
    host_us: float = 0.0
    device_busy_us: float = 0.0

    @property
    def op_tuples(self) -> list[tuple[str, int, float, float]]:
        """``(aten op name, bytes, flops, us)`` per op."""
        return [(o.name, o.bytes, o.flops, o.us) for o in self.ops]


def _row(ag: AtenGraph, node: str) -> int:
    """Elements one output value depends on, for row ops and scans (0 otherwise)."""
    name, args = ag.op(node), ag.node(node)["args"]
    x = ag.meta(ag.tensor_args(node)[0])[0]
    if name in ("_softmax", "_log_softmax") or name in SCAN_OPS:
        dim = args.get("dim")
        dim = dim if isinstance(dim, int) else -1
        return int(x[dim]) if len(x) else 1
    if name == "native_layer_norm":
        return math.prod(int(d) for d in args["normalized_shape"])
    if name == "native_group_norm":
        c, hw, groups = int(args["C"]), int(args["HxW"]), int(args["group"])
        return c // max(1, groups) * hw
    if name in ("native_batch_norm", "_native_batch_norm_legit"):
        training = args.get("training")
        training = training if isinstance(training, bool) else True
        return math.prod(x) // max(1, int(x[1])) if training and len(x) > 1 else 0
    return 0


def _call(ag: AtenGraph, node: str) -> AtenCall:
    """What the library kernel of one traced call needs (see :class:`AtenCall`)."""
    name = ag.op(node)
    ins = ag.tensor_args(node)
    outs = ag.result_refs(node)
    in_bytes, out_bytes = ag.call_bytes(node)
    ref = ins[0] if ins else (outs[0] if outs else None)
    dtype = ag.meta(ref)[1] if ref is not None else torch.float32  # the dtype the kernel computes in
    elems = ag.call_elems(node)
    row, dims = 0, None
    if name in CUBE_OPS and outs:
        flops, unit, dims = ag.matmul_flops(node), "cube", ag.matmul_dims(node)
    else:
        flops, unit = float(FLOPS_PER_ELEM.get(name, 1) * elems), "vector"
        if ins:
            row = _row(ag, node)
    return AtenCall(ag.node(node)["name"], name, in_bytes + out_bytes, in_bytes, flops, unit,
                    dtype, elems, row, dims)


#: Ops that are the copy themselves, or read only their input's shape (``zeros_like``): no
#: contiguous copy before them.
COPY_OPS = frozenset({"clone", "copy", "copy_", "_to_copy", "contiguous", "_copy_from", "zeros_like",
                      "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "new_zeros",
                      "new_ones", "new_full", "new_empty"})


def is_relayout(shape: Sequence[int], stride: Sequence[int]) -> bool:
    """Whether ``l0op::Contiguous`` copies a tensor of this layout: its elements are not in
    row-major order (size-1 dims ignored), and no dim is expanded (stride 0, which the
    library broadcasts; the eager model charges its extent as it always did)."""
    want, dims = 1, [(n, st) for n, st in zip(shape, stride, strict=False) if n != 1]
    if any(st == 0 for _, st in dims):
        return False
    for n, st in reversed(dims):
        if st != want:
            return True
        want *= n
    return False


def _contiguous_copies(ag: AtenGraph, node: str) -> list[AtenCall]:
    """The copy kernel ``l0op::Contiguous`` runs before a vector op for each distinct input
    that is a non-contiguous view (see the module docstring)."""
    name = ag.op(node)
    if name in CUBE_OPS or name in COPY_OPS:
        return []
    out, seen = [], set()
    for r in ag.tensor_args(node):
        if r in seen:
            continue
        seen.add(r)
        shape, dtype = ag.meta(r)
        if not is_relayout(shape, ag.node(r.node)["strides"][r.index]):
            continue
        n = math.prod(shape)
        nbytes = n * torch.empty((), dtype=dtype, device="meta").element_size()
        out.append(AtenCall(f"contiguous copy of an input of {ag.node(node)['name']}", "clone",
                            2 * nbytes, nbytes, float(n), "vector", dtype, n))
    return out


def record_aten_ops(reference: Callable[..., Any], inputs_meta: Sequence[Any]) -> list[AtenCall]:
    """Trace ``reference`` on meta tensors (:func:`ascendcraft.tasks.aten.trace`) and list its
    ATen ops that run a kernel, with their shapes' costs; a vector op reading a non-contiguous
    view is preceded by the library's copy of it. Inputs may be tensors (any device; converted
    to meta), (shape, dtype) pairs or Python values."""
    ag = trace(reference, inputs_meta)
    return [c for n in ag.work_nodes() for c in (*_contiguous_copies(ag, n), _call(ag, n))]


def trace_aten_ops(reference: Callable[..., Any],
                   inputs_meta: Sequence[Any]) -> list[tuple[str, int, float, str, torch.dtype]]:
    """``(name, bytes, flops, unit, dtype)`` per non-view ATen op of ``reference``; dtype is
    the kernel's input dtype (what sets the cube rate)."""
    return [(c.name, c.bytes, c.flops, c.unit, c.dtype) for c in record_aten_ops(reference, inputs_meta)]


def _dname(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _passes(call: AtenCall, soc: SocSpec) -> int:
    """1 when a row fits in UB (in fp32 working copies), else 2 (statistics pass first)."""
    if call.op not in ROW_OPS or call.row <= 0:
        return 1
    return 1 if call.row * 4 * ROW_BUFFERS <= soc.ub_budget_kib * 1024 else 2


def _reread_us(call: AtenCall, soc: SocSpec, hbm_us: float) -> float:
    """us per byte of a second read of the input: a row read again right after its statistics
    pass is still in L2 when the rows the vector cores hold at once fit there, and is then
    charged at the L2 bandwidth - as the timeline charges ascendcraft's own second reads (its
    L2 model finds them resident); otherwise at the HBM rate."""
    row_bytes = call.row * call.dtype.itemsize
    if soc.l2_gbps and soc.vector_cores * row_bytes < soc.l2_mib * 2**20:
        return 1 / (soc.l2_gbps * 1e3)
    return hbm_us


def _recipe(call: AtenCall, soc: SocSpec) -> tuple[str, ...]:
    if call.op in SCAN_OPS:
        chunk = min(max(1, call.row), soc.ub_budget_kib * 1024 // (4 * ROW_BUFFERS))
        steps = max(1, math.ceil(math.log2(max(2, chunk))))
        extra = (_T, _T) if call.op == "logcumsumexp" else ()
        return (_B,) * (steps + 1) + extra
    return RECIPES.get(call.op, (_B,) * int(FLOPS_PER_ELEM.get(call.op, 1)))


def vector_kernel_us(call: AtenCall, soc: SocSpec) -> tuple[float, int]:
    """Device time of a vector library kernel and its passes over the input."""
    passes = _passes(call, soc)
    hbm_us = 1 / (soc.hbm_gbps * 1e3 * soc.hbm_sustained_frac)  # us per byte
    mem_us = call.bytes * hbm_us + (passes - 1) * call.in_bytes * _reread_us(call, soc, hbm_us)
    recipe = _recipe(call, soc)
    dt = call.dtype
    work = "float32" if dt in (torch.float32, torch.bfloat16, torch.int32, torch.int64, torch.float64) else "float16"
    if dt == torch.bfloat16:  # bf16 math runs in fp32: a Cast in and a Cast out
        recipe = (_U, *recipe, _U)
    esize = 4 if work == "float32" else 2
    repeats = math.ceil(call.elems * esize / 256)
    cycles = sum(soc.class_cycles(c, work) + soc.vector_call_overhead_cycles / 255 for c in recipe)
    vec_us = repeats * cycles / soc.vector_cores * soc.vector_cycle_ns / 1e3
    # pipeline fill: the first tile is loaded (at one core's HBM share) and computed before
    # the streams overlap - what the timeline shows for a double-buffered kernel
    tile = min(call.in_bytes, max(LIBRARY_TILE_BYTES, call.row * esize if passes == 1 else 0))
    share = soc.hbm_gbps * 1e3 * soc.hbm_sustained_frac / soc.vector_cores
    fill_us = tile / share + math.ceil(tile / 256) * cycles * soc.vector_cycle_ns / 1e3
    return soc.launch_us(soc.vector_cores) + max(mem_us, vec_us) + fill_us, passes


def cube_kernel_us(call: AtenCall, soc: SocSpec) -> float:
    """Device time of a library matmul: the measured torch_npu curve on the input dtype's peak,
    or its memory time when that is longer: one pass over the operands from HBM plus the
    operand re-reads its L0C blocking forces (:func:`matmul_rereads`), charged as the timeline
    charges a kernel's re-reads - at the L2 rate (every one a hit), on the same channel."""
    peak = soc.cube_peak_flops(_dname(call.dtype))
    compute_us = call.flops / (peak * soc.eager_matmul_efficiency) * 1e6
    hbm_us = 1 / (soc.hbm_gbps * 1e3 * soc.hbm_sustained_frac)  # us per byte
    reread_us = 1 / (soc.l2_gbps * 1e3) if soc.l2_gbps else hbm_us
    mem_us = call.bytes * hbm_us + matmul_rereads(call, soc) * reread_us
    return soc.launch_us(soc.cube_cores) + soc.eager_matmul_fill_us + max(compute_us, mem_us)


def matmul_rereads(call: AtenCall, soc: SocSpec) -> int:
    """Operand bytes a library matmul reads beyond one pass: each output block's fp32 sums stay
    in L0C over its whole K range (the Matmul API's ``Iterate``), so A's rows are read once per
    block column and B's columns once per block row (:func:`~.capacity.l0c_block_rereads`, the
    least over block grids). 0 for a convolution or a product without dims."""
    if call.dims is None:
        return 0
    batch, m, n, k = call.dims
    return l0c_block_rereads(batch, m, n, k, call.dtype.itemsize, soc)


def library_kernel_us(call: AtenCall, soc: SocSpec | str | None = None) -> tuple[float, int]:
    """Modeled device time (us) of the library kernel for one ATen op, and its passes."""
    soc = load_soc(soc)
    if call.unit == "cube":
        return cube_kernel_us(call, soc), 1
    return vector_kernel_us(call, soc)


def queue_us(device_us: Sequence[float], host_us: float) -> tuple[float, list[float]]:
    """End of the device chain and each op's start when the host enqueues op i at
    ``i x host_us`` and the device runs ops in order as soon as each is enqueued."""
    t, starts = 0.0, []
    for i, d in enumerate(device_us):
        start = max(t, i * host_us)
        starts.append(start)
        t = start + d
    return t, starts


def eager_us(reference: Callable[..., Any], inputs_meta: Sequence[Any],
             soc: SocSpec | str | None = None) -> EagerResult:
    """Modeled time of running ``reference`` eagerly, op by op, on ``soc``."""
    soc = load_soc(soc)
    ops = []
    for c in record_aten_ops(reference, inputs_meta):
        us, passes = library_kernel_us(c, soc)
        ops.append(EagerOp(c.name, c.bytes, c.flops, us, c.unit, passes))
    end, starts = queue_us([o.us for o in ops], soc.host_dispatch_us)
    for o, s in zip(ops, starts, strict=True):
        o.start_us = s
    return EagerResult(us=end, ops=ops, soc=soc.name, host_us=len(ops) * soc.host_dispatch_us,
                       device_busy_us=sum(o.us for o in ops))
