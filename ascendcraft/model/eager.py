"""Eager-PyTorch baseline: what the reference program would cost as a chain of library ops.

The reference runs on **meta tensors** under a ``TorchDispatchMode``, so every ATen op it
dispatches is recorded with its shapes while nothing is allocated (8 GiB inputs are fine).
Each recorded op is costed as one vendor library kernel:

    op_us = host_dispatch_us + launch_us(all cores of the unit)
            + max(bytes / (HBM peak x eager_efficiency), flops / (unit peak x eager_efficiency))

``eager_efficiency`` and ``host_dispatch_us`` come from the SoC spec, are the same for
every op and are never tuned per task. Views and metadata ops cost nothing.
Host dispatch is *added*, not overlapped with device time (see README: this favours
neither side much at large sizes, and is stated in every report).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from .soc import SocSpec, load_soc

#: Ops that only create or reinterpret tensor metadata (free in the baseline).
FREE_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "_unsafe_view",
    "_reshape_alias", "lift_fresh", "alias", "detach", "view", "reshape", "expand", "t",
    "permute", "transpose", "unsqueeze", "squeeze", "slice", "select", "as_strided",
    "unflatten", "flatten", "split", "chunk", "unbind", "narrow", "sym_size", "sym_stride",
    "sym_numel", "sym_storage_offset", "is_contiguous", "_to_copy_meta",
})

#: Ops that run on the cube unit; their flops come from shapes.
CUBE_OPS = frozenset({"mm", "bmm", "addmm", "baddbmm", "addbmm", "matmul", "convolution",
                      "_convolution", "addmv", "mv", "dot", "linear"})

#: Vector element-ops per element for composite op kinds (default 1 per element).
FLOPS_PER_ELEM = {
    "_softmax": 5, "_log_softmax": 6, "softmax": 5, "log_softmax": 6,
    "native_layer_norm": 8, "native_group_norm": 8, "native_batch_norm": 8,
    "_native_batch_norm_legit": 8, "_native_batch_norm_legit_no_training": 4,
    "gelu": 8, "silu": 4, "sigmoid": 4, "tanh": 4, "softplus": 4, "elu": 3, "mish": 8,
    "erf": 6, "pow": 2, "rsqrt": 1, "sqrt": 1, "exp": 1, "log": 1,
}


@dataclass
class EagerOp:
    """One recorded ATen op with its traffic, work and modeled cost."""

    name: str
    bytes: int
    flops: float
    us: float
    unit: str = "vector"


@dataclass
class EagerResult:
    """Modeled time of the eager reference and its per-op breakdown."""

    us: float
    ops: list[EagerOp] = field(default_factory=list)
    soc: str = ""
    label: str = "modeled"

    @property
    def op_tuples(self) -> list[tuple[str, int, float, float]]:
        """``(aten op name, bytes, flops, us)`` per op."""
        return [(o.name, o.bytes, o.flops, o.us) for o in self.ops]


def _extent_bytes(t: torch.Tensor) -> int:
    """Bytes actually addressed by a (possibly expanded / strided) tensor."""
    if t.numel() == 0:
        return 0
    span = 1 + sum((s - 1) * abs(st) for s, st in zip(t.shape, t.stride(), strict=False))
    return min(span, t.numel()) * t.element_size()


def _cube_flops(name: str, args: Sequence[Any], out: torch.Tensor) -> float:
    if name in ("convolution", "_convolution"):
        w = args[1]
        return 2.0 * out.numel() * (w.shape[1] * math.prod(w.shape[2:]))
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if name in ("addmm", "baddbmm", "addbmm", "addmv"):
        tensors = tensors[1:]
    a = tensors[0]
    k = a.shape[-1] if a.dim() else 1
    return 2.0 * out.numel() * k + (out.numel() if name.startswith("add") else 0)


class _Recorder(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, int, float, str, torch.dtype]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: D105
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.overloadpacket.__name__
        if func.is_view or name in FREE_OPS:
            return out
        ins = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        outs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        nbytes = sum(_extent_bytes(t) for t in ins) + sum(_extent_bytes(t) for t in outs)
        ref = outs[0] if outs else (ins[0] if ins else None)
        dtype = ref.dtype if ref is not None else torch.float32
        if name in CUBE_OPS and outs:
            flops, unit = _cube_flops(name, args, outs[0]), "cube"
        else:
            elems = max([t.numel() for t in ins + outs] or [0])
            flops, unit = float(FLOPS_PER_ELEM.get(name, 1) * elems), "vector"
        self.calls.append((str(func), nbytes, flops, unit, dtype))
        return out


def _to_meta(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return torch.empty_strided(tuple(x.shape), tuple(x.stride()), dtype=x.dtype, device="meta")
    if isinstance(x, tuple) and len(x) == 2 and isinstance(x[1], torch.dtype):
        return torch.empty(tuple(x[0]), dtype=x[1], device="meta")
    return x


def trace_aten_ops(reference: Callable[..., Any],
                   inputs_meta: Sequence[Any]) -> list[tuple[str, int, float, str, torch.dtype]]:
    """Run ``reference`` on meta tensors and list its non-view ATen ops (name, bytes, flops,
    unit, dtype). Inputs may be tensors (any device; converted to meta) or (shape, dtype)."""
    args = [_to_meta(x) for x in inputs_meta]
    rec = _Recorder()
    if isinstance(reference, torch.nn.Module):
        params = {k: _to_meta(v) for k, v in reference.named_parameters()}
        params.update({k: _to_meta(v) for k, v in reference.named_buffers()})
        with rec:
            torch.func.functional_call(reference, params, tuple(args))
    else:
        with rec:
            reference(*args)
    return rec.calls


def op_us(nbytes: float, flops: float, unit: str, dtype: torch.dtype, soc: SocSpec) -> float:
    """Cost of one library kernel: dispatch + launch + near-roofline device time."""
    eff = soc.eager_efficiency
    dname = str(dtype).replace("torch.", "")
    if unit == "cube":
        peak, cores = soc.cube_peak_flops(dname), soc.cube_cores
    else:
        peak, cores = soc.vector_peak_flops(dname), soc.vector_cores
    device = max(nbytes / (soc.hbm_gbps * 1e9 * eff), flops / (peak * eff)) * 1e6
    return soc.host_dispatch_us + soc.launch_us(cores) + device


def eager_us(reference: Callable[..., Any], inputs_meta: Sequence[Any],
             soc: SocSpec | str | None = None) -> EagerResult:
    """Modeled time of running ``reference`` eagerly, op by op, on ``soc``."""
    soc = load_soc(soc)
    ops = [EagerOp(name, nb, fl, op_us(nb, fl, unit, dt, soc), unit)
           for name, nb, fl, unit, dt in trace_aten_ops(reference, inputs_meta)]
    return EagerResult(us=sum(o.us for o in ops), ops=ops, soc=soc.name)
