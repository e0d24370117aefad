"""KernelBench / MultiKernelBench task files.

A task file is a Python module with ``class Model(nn.Module)``, ``get_inputs()`` and
optionally ``get_init_inputs()``.  Task files are the user's own trusted code, so they
are imported.  Their inputs can be many GB, so ``get_inputs()`` runs under a
:class:`~torch.overrides.TorchFunctionMode` that forces every tensor factory onto the
``meta`` device (also for ``device="cuda"``/``.cuda()``/``.npu()``/``.to(device)``), and
records which factory made each input (randn / rand range / randint range / constant)
plus the shape-preserving ops applied afterwards (``*2-1``, ``.softmax(-1)``, ``> 0.5``),
which the task's generator replays at reduced shapes.  Anything not traceable falls
back to the root factory's distribution (randn if unknown).

Problems are reported as :class:`TaskError` with one paragraph naming the file, the
line and what to fix - never a raw traceback.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import re
import sys
import traceback
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import networkx as nx
import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from .aten import TraceError, trace_task
from .category import category_of_graph
from .module_ref import ModuleReference
from .task import InputSpec, Task, TaskError, as_tensor_list, first_line

# ---------------------------------------------------------------------------
# capturing get_inputs() on the meta device
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Hint:
    dist: str
    low: float | None = None
    high: float | None = None
    chain: tuple | None = ()  # None: derived by ops we cannot replay
    data: torch.Tensor | None = None
    special: tuple[float, float] | None = None  # (value, fraction) written over the draw: t[::7] = -100


_RANDOM: dict[Callable[..., Any], str] = {
    torch.randn: "randn", torch.randn_like: "randn",
    torch.rand: "rand", torch.rand_like: "rand",
    torch.randint: "randint", torch.randint_like: "randint",
    torch.normal: "randn", torch.randperm: "randint",
}
_FILL: dict[Callable[..., Any], float | None] = {
    torch.zeros: 0.0, torch.zeros_like: 0.0, torch.ones: 1.0, torch.ones_like: 1.0,
    torch.full: None, torch.full_like: None, torch.empty: None, torch.empty_like: None,
    torch.arange: None, torch.linspace: None, torch.eye: 0.0,
}
_DATA = {torch.tensor, torch.as_tensor}
_DEVICE_MOVES = {torch.Tensor.cuda, torch.Tensor.cpu}
if hasattr(torch.Tensor, "npu"):  # torch_npu installed
    _DEVICE_MOVES.add(torch.Tensor.npu)
_INPLACE_FILL = {
    torch.Tensor.uniform_: "rand", torch.Tensor.normal_: "randn", torch.Tensor.random_: "randint",
    torch.Tensor.fill_: "const", torch.Tensor.zero_: "const", torch.Tensor.bernoulli_: "bernoulli",
}
_SKIP_CHAIN = {torch.Tensor.requires_grad_, torch.Tensor.contiguous, torch.Tensor.detach,
               torch.Tensor.clone}
_MAX_DATA = 1 << 16


def _set_fraction(shape: tuple[int, ...], index: Any) -> float:
    """The share of a tensor of ``shape`` that ``t[index] = v`` writes (1/8 when the index cannot
    be replayed on a CPU mask: a tensor index on meta, or a shape too large to count)."""
    parts = index if isinstance(index, tuple) else (index,)
    try:
        if math.prod(shape) > 1 << 22 or any(isinstance(p, torch.Tensor) for p in parts):
            raise ValueError  # (a mask or index tensor drawn on meta has no values to replay)
        m = torch.zeros(shape, dtype=torch.bool, device="cpu")
        m[index] = True
        return max(float(m.float().mean()), 1e-6)
    except Exception:  # noqa: BLE001 - any index we cannot replay
        return 0.125


def _numbers(args: Sequence[Any]) -> list[float]:
    return [a for a in args if isinstance(a, (int, float)) and not isinstance(a, bool)]


class _MetaCapture(TorchFunctionMode):
    """Forces tensor factories onto ``meta`` and records where each tensor came from."""

    def __init__(self) -> None:
        super().__init__()
        self.hints: dict[int, _Hint] = {}
        self.keep: list[Any] = []  # keep tensors alive so ids stay unique

    def _record(self, out: Any, hint: _Hint) -> None:
        if isinstance(out, torch.Tensor):
            self.hints[id(out)] = hint
            self.keep.append(out)

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        kwargs = dict(kwargs or {})
        if func in _DEVICE_MOVES:
            return args[0]
        if func is torch.Tensor.to:
            return self._to(args, kwargs)
        if func in _DATA:
            kwargs.pop("device", None)
            real = func(*args, **kwargs)
            out = real.to("meta")
            self._record(out, _Hint("const", data=real.clone() if real.numel() <= _MAX_DATA else None))
            return out
        if func in _RANDOM or func in _FILL:
            kwargs["device"] = "meta"
            kwargs.pop("pin_memory", None)
            kwargs.pop("generator", None)  # a CPU/CUDA generator cannot drive meta tensors
            out = func(*args, **kwargs)
            self._record(out, self._factory_hint(func, args, kwargs))
            return out
        if func in _INPLACE_FILL:
            out = func(*args, **kwargs)
            nums = _numbers(args[1:]) + _numbers(list(kwargs.values()))
            dist = _INPLACE_FILL[func]
            if dist == "const":
                self._record(out, _Hint("const", low=nums[0] if nums else 0.0))
            elif dist == "randint":
                lo, hi = (0, nums[0]) if len(nums) == 1 else (nums[0], nums[1]) if nums else (0, 2)
                self._record(out, _Hint("randint", lo, hi))
            else:
                lo = nums[0] if nums else None
                hi = nums[1] if len(nums) > 1 else None
                self._record(out, _Hint(dist, lo, hi))
            return out
        if func is torch.Tensor.__setitem__ and len(args) == 3 and id(args[0]) in self.hints \
                and isinstance(args[2], (int, float)) and not isinstance(args[2], bool):
            func(*args, **kwargs)  # a number written over part of a drawn tensor (padding targets)
            h = self.hints[id(args[0])]
            self.hints[id(args[0])] = replace(h, special=(float(args[2]), _set_fraction(args[0].shape, args[1])))
            return None
        out = func(*args, **kwargs)
        self._propagate(func, args, kwargs, out)
        return out

    def _to(self, args: tuple, kwargs: dict) -> Any:
        src = args[0]
        dtype = kwargs.get("dtype")
        for a in args[1:]:
            if isinstance(a, torch.dtype):
                dtype = a
            elif isinstance(a, torch.Tensor):
                dtype = a.dtype
        if dtype is None or dtype == src.dtype:
            return src
        out = src.to(dtype)
        self._propagate(torch.Tensor.to, (src, dtype), {}, out)
        return out

    @staticmethod
    def _factory_hint(func: Callable[..., Any], args: tuple, kwargs: dict) -> _Hint:
        if func in _RANDOM:
            dist = _RANDOM[func]
            if func is torch.randperm:
                return _Hint("randint", 0, args[0] if args else kwargs.get("n"))
            if dist == "randint":
                nums = _numbers(args[1:] if func is torch.randint_like else args)
                lo = kwargs.get("low", 0)
                hi = kwargs.get("high")
                if len(nums) >= 2:
                    lo, hi = nums[0], nums[1]
                elif len(nums) == 1:
                    hi = nums[0]
                return _Hint("randint", lo, hi)
            if func is torch.normal:
                nums = _numbers(args[:2]) + _numbers([kwargs.get("mean"), kwargs.get("std")])
                return _Hint("randn", nums[0] if nums else None, nums[1] if len(nums) > 1 else None)
            return _Hint(dist)
        if func in (torch.full, torch.full_like):
            nums = _numbers(args[1:2]) or _numbers([kwargs.get("fill_value")])
            return _Hint("const", low=nums[0] if nums else 0.0)
        if func is torch.arange:
            return _Hint("arange")
        if func is torch.linspace:
            nums = _numbers(args[:2])
            return _Hint("rand", *(nums[:2] or [0.0, 1.0]))
        fill = _FILL.get(func)
        if fill is None:  # empty / empty_like: unspecified contents
            return _Hint("randn")
        return _Hint("const", low=fill)

    def _propagate(self, func: Callable[..., Any], args: tuple, kwargs: dict, out: Any) -> None:
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        tensors += [v for v in kwargs.values() if isinstance(v, torch.Tensor)]
        for a in args:
            if isinstance(a, (list, tuple)):
                tensors += [t for t in a if isinstance(t, torch.Tensor)]
        hinted = [t for t in tensors if id(t) in self.hints]
        if not hinted:
            return
        h = self.hints[id(hinted[0])]
        outs = out if isinstance(out, (tuple, list)) else [out]
        for o in outs:
            if not isinstance(o, torch.Tensor):
                continue
            replayable = (
                h.chain is not None and h.data is None and len(tensors) == 1 and args
                and args[0] is tensors[0] and o is out and o.shape == args[0].shape
            )
            if replayable and func in _SKIP_CHAIN:
                new = h
            elif replayable:
                new = replace(h, chain=h.chain + ((func, tuple(args[1:]), tuple(kwargs.items())),))
            else:
                new = replace(h, chain=None, data=None)
            self._record(o, new)


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------


def _one_paragraph(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _located_error(path: Path, stage: str, exc: BaseException, fix: str) -> TaskError:
    """TaskError naming the deepest line of the task file in ``exc``'s traceback."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == path]
    where = f"{path}"
    code = ""
    if frames:
        f = frames[-1]
        where = f"{path}:{f.lineno}"
        if f.line:
            code = f" (at `{f.line.strip()}`)"
    msg = f"{where}: {stage} raised {type(exc).__name__}: {first_line(exc)}{code}. {fix}"
    return TaskError(_one_paragraph(msg))


# ---------------------------------------------------------------------------
# category guess
# ---------------------------------------------------------------------------

_CATEGORY_RULES: list[tuple[str, str]] = [
    ("optimizer", r"\b(adam|adamw|sgd|momentum|rmsprop|adagrad|lamb|optimizer)\b"),
    ("loss", r"loss|cross_entropy|kl_div|hinge|triplet|nll"),
    ("pooling", r"pool"),
    ("normalization", r"norm(?!al)"),
    ("matmul", r"matmul|\bbmm\b|\bmm\(|nn\.linear|einsum|\s@\s|conv\dd|nn\.conv"),
    ("math", r"cum(sum|prod|max|min)|logcumsumexp|\bscan\b"),
    ("activation", r"relu|gelu|sigmoid|tanh|softmax|\belu\b|selu|celu|silu|swish|mish|hardtanh"
                   r"|softplus|softsign|hardswish|hardsigmoid|leaky|logsigmoid|threshold|activation"),
]


def _category(task: Task, text: str, in_shapes: Sequence[tuple[int, ...]],
              out_shapes: Sequence[tuple[int, ...]]) -> str:
    """From the traced reference (:func:`.category.category_of_graph`); the source text's
    keywords only when the reference does not trace on meta tensors."""
    if task.meta_ok:
        try:
            return category_of_graph(trace_task(task), in_shapes, out_shapes)
        except (TraceError, TaskError):
            pass
    return guess_category(text, in_shapes, out_shapes)


def guess_category(
    text: str, input_shapes: Sequence[tuple[int, ...]], output_shapes: Sequence[tuple[int, ...]]
) -> str:
    """Category from keywords in the model source, then from shapes: the fallback for a
    reference that does not trace on meta tensors (names are not evidence otherwise).

    Keyword rules first (Loss, Norm, Pool, softmax...), in an order that resolves
    overlaps (an optimizer computing norms is an optimizer); otherwise an output
    smaller than the first input is a reduction, several same-shape inputs an
    elementwise op, and one input mapped to its own shape an activation-like op.
    """
    low = text.lower()
    for cat, pat in _CATEGORY_RULES:
        if re.search(pat, low):
            return cat
    n_in = math.prod(input_shapes[0]) if input_shapes else 0
    if output_shapes and n_in and math.prod(output_shapes[0]) < n_in:
        return "reduce"
    if len(input_shapes) >= 2:
        return "elementwise"
    if len(input_shapes) == 1 and output_shapes and tuple(output_shapes[0]) == tuple(input_shapes[0]):
        return "activation"
    return "math"


# ---------------------------------------------------------------------------
# loading
# ---------------------------------------------------------------------------

_FIX_INIT = "Fix Model.__init__ so it accepts the values returned by get_init_inputs()."
_FIX_FWD = ("Fix Model.forward so it runs on the inputs returned by get_inputs() "
            "(in that order).")
_FIX_FWD_VALUES = ("Fix Model.forward, or make get_inputs() draw index tensors inside the dims "
                   "they index (e.g. torch.randint(0, x.shape[d], ...)).")


def _param_names(fn: Callable[..., Any], n: int, prefix: str) -> tuple[list[str], bool]:
    """Names for ``n`` positional values of ``fn``; (names, exact) - exact False for *args."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    params = [p for p in params if p.name != "self"]
    names: list[str] = []
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        else:
            break
    if len(names) >= n:
        return names[:n], True
    return names + [f"{prefix}{i}" for i in range(len(names), n)], False


def _pick_high_from(k: int, high: float | None, shapes: list[tuple[int, ...] | None]) -> tuple[int, int] | None:
    """An index input's range that equals another input's dim follows it (class counts)."""
    if high is None:
        return None
    best = None
    for j, shp in enumerate(shapes):
        if j == k or not shp:
            continue
        if len(shp) > 1 and shp[1] == high:
            return (j, 1)
        for d, v in enumerate(shp):
            if v == high:
                best = best or (j, d)
    return best


def _spec_from(name: str, value: Any, hint: _Hint | None, idx: int,
               shapes: list[tuple[int, ...] | None], path: Path) -> InputSpec:
    if not isinstance(value, torch.Tensor):
        if isinstance(value, (bool, int, float)):
            return InputSpec(name, (), torch.float32, kind="scalar", value=value, signed_ok=False)
        raise TaskError(_one_paragraph(
            f"{path}: get_inputs() returned a {type(value).__name__} at position {idx}; "
            f"only tensors and Python numbers are supported as forward inputs."
        ))
    shape, dtype = tuple(value.shape), value.dtype
    hint = hint or _Hint("randn", chain=None)
    chain = hint.chain or ()
    data = hint.data
    if data is None and value.device.type != "meta" and value.numel() <= _MAX_DATA:
        data = value.detach().clone()  # e.g. torch.from_numpy(...) constants
    kw: dict[str, Any] = {"chain": chain, "data": data, "signed_ok": not chain and data is None}
    if dtype == torch.bool:
        if chain:
            return InputSpec(name, shape, dtype, kind="mask", dist=hint.dist if hint.dist in
                             ("rand", "randn", "randint") else "rand", low=hint.low,
                             high=hint.high, **{**kw, "signed_ok": False})
        return InputSpec(name, shape, dtype, kind="mask", dist="bernoulli", high=0.5,
                         **{**kw, "signed_ok": False})
    if not (dtype.is_floating_point or dtype.is_complex):
        lo = hint.low if hint.dist == "randint" else 0
        hi = hint.high if hint.dist == "randint" else None
        high_from = _pick_high_from(idx, hi, shapes)
        return InputSpec(name, shape, dtype, kind="index", dist="randint", low=lo,
                         high=hi if hi is not None else 2, high_from=high_from, special=hint.special,
                         **{**kw, "signed_ok": False})
    if hint.dist == "randint":
        return InputSpec(name, shape, dtype, dist="randint", low=hint.low, high=hint.high,
                         high_from=None, **{**kw, "signed_ok": False})
    if hint.dist == "const" and data is None:
        return InputSpec(name, shape, dtype, dist="const", low=hint.low, **kw)
    return InputSpec(name, shape, dtype, dist=hint.dist if hint.dist != "bernoulli" else "rand",
                     low=hint.low, high=hint.high, **kw)


def _exec_module(path: Path, text: str) -> types.ModuleType:
    try:
        code = compile(text, str(path), "exec")
    except SyntaxError as e:
        line = f" (`{e.text.strip()}`)" if e.text else ""
        raise TaskError(_one_paragraph(
            f"{path}:{e.lineno}: syntax error: {e.msg}{line}. Fix the Python syntax; a task "
            f"file must be an importable module defining Model, get_inputs and get_init_inputs."
        )) from None
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:12]
    mod = types.ModuleType(f"ascendcraft_taskfile_{path.stem}_{digest}")
    mod.__file__ = str(path)
    sys.modules[mod.__name__] = mod
    try:
        exec(code, mod.__dict__)
    except (Exception, SystemExit) as e:  # noqa: BLE001 - reported as one paragraph
        sys.modules.pop(mod.__name__, None)
        raise _located_error(
            path, "importing the file", e,
            "Fix the module-level code (imports, constants) so the file imports cleanly.",
        ) from None
    return mod


def load_task_file(path: str | Path, name: str | None = None) -> Task:
    """Load a KernelBench/MultiKernelBench task file as a :class:`Task`, allocating nothing big.

    Shapes and dtypes come from running ``get_inputs()`` on the meta device, the output
    shapes from running the model on the meta device; constructor args come from
    ``get_init_inputs()`` (named after ``Model.__init__``'s parameters).  The category is
    taken from its traced ATen ops (:mod:`.category`; the source's keywords only when it does not trace).
    """
    path = Path(path).expanduser().resolve()
    try:
        text = path.read_text()
    except OSError as e:
        raise TaskError(f"Cannot read task file {path}: {e.strerror or e}.") from None
    mod = _exec_module(path, text)

    model_cls = getattr(mod, "Model", None)
    if model_cls is None:
        raise TaskError(_one_paragraph(
            f"{path}: no class Model found. A task file must define `class Model(nn.Module)` "
            f"whose forward() takes the tensors returned by get_inputs()."
        ))
    if not (inspect.isclass(model_cls) and issubclass(model_cls, nn.Module)):
        raise TaskError(f"{path}: Model is a {type(model_cls).__name__}, not a torch.nn.Module "
                        f"subclass; define `class Model(nn.Module)`.")
    get_inputs = getattr(mod, "get_inputs", None)
    if not callable(get_inputs):
        raise TaskError(_one_paragraph(
            f"{path}: no function get_inputs() found. A task file must define get_inputs() "
            f"returning the list of forward inputs (tensors and numbers)."
        ))
    get_init = getattr(mod, "get_init_inputs", None)
    init_values: list[Any] = []
    init_kwargs: dict[str, Any] | None = None  # get_init_inputs() returned keyword arguments
    if get_init is not None:
        try:
            got = get_init()
            if isinstance(got, Mapping):
                init_kwargs = dict(got)
            else:
                init_values = list(got)
        except Exception as e:  # noqa: BLE001
            raise _located_error(path, "get_init_inputs()", e,
                                 "Make get_init_inputs() return a list of constructor args "
                                 "(or a dict of keyword args).") from None
        bad = [k for k in (init_kwargs or {}) if not (isinstance(k, str) and k.isidentifier())]
        if bad:
            raise TaskError(f"{path}: get_init_inputs() returned a dict with key {bad[0]!r}; a dict "
                            f"is passed as Model(**kwargs), so its keys must be parameter names.")

    capture = _MetaCapture()
    try:
        with capture:
            values = get_inputs()
    except Exception as e:  # noqa: BLE001
        raise _located_error(path, "get_inputs()", e,
                             "Make get_inputs() return a list of input tensors/numbers.") from None
    if isinstance(values, torch.Tensor) or not isinstance(values, (list, tuple)):
        raise TaskError(f"{path}: get_inputs() returned a {type(values).__name__}; it must "
                        f"return a list of forward inputs (e.g. `return [x]`).")
    values = list(values)

    in_names, _ = _param_names(model_cls.forward, len(values), "x")
    exact = True
    if init_kwargs is not None:
        init_args = init_kwargs
    else:
        init_names, exact = _param_names(model_cls.__init__, len(init_values), "arg")
        init_args = dict(zip(init_names, init_values, strict=True))
    shapes = [tuple(v.shape) if isinstance(v, torch.Tensor) else None for v in values]
    specs = [
        _spec_from(n, v, capture.hints.get(id(v)), i, shapes, path)
        for i, (n, v) in enumerate(zip(in_names, values, strict=True))
    ]
    _refuse_unusable(specs, path)
    reference = ModuleReference(model_cls, init_args, positional=init_kwargs is None)

    # build and run once on the meta device: catches broken __init__/forward early. The module
    # in the inputs' floating dtype, as the reference runs it (ModuleReference casts its
    # parameters): PReLU's fp32 weight against fp16 inputs does not promote
    float_in = next((s.dtype for s in specs if s.is_tensor and s.dtype.is_floating_point), None)
    try:
        model = reference.build("meta", float_in)
    except Exception as e:  # noqa: BLE001
        raise _located_error(path, "Model.__init__", e, _FIX_INIT) from None
    task = Task(
        name=name or path.stem,
        category="math",
        reference=reference,
        inputs=specs,
        init_args=init_args,
        source=text,
        description=_one_paragraph((model_cls.__doc__ or "").strip().split("\n\n")[0]),
        origin=str(path),
        shape_rule="task file: see Task.with_shape (shared shape for equal inputs, dims mapped)",
    )
    meta_inputs = task.meta_inputs()
    try:
        with torch.no_grad(), torch.device("meta"):  # factory calls without device= make meta tensors
            out = model(*meta_inputs)
    except Exception as meta_err:  # noqa: BLE001
        out_shapes = _check_on_cpu(task, path, meta_err)
    else:
        out_shapes = _output_shapes(out, path)
    try:
        model_src = inspect.getsource(model_cls)
    except (OSError, TypeError):
        model_src = text
    in_shapes = [tuple(s.shape) for s in specs if s.is_tensor]
    task.category = _category(task, f"{path.stem}\n{model_src}", in_shapes, out_shapes)
    if task.meta_ok and any(s.kind == "index" for s in specs):
        _probe_on_cpu(task, path)
    if task.meta_ok:
        task = with_module_state(task)
    if not exact and init_values:
        task.description = (task.description + " (constructor args named by position)").strip()
    return task


def _refuse_unusable(specs: Sequence[InputSpec], path: Path) -> None:
    """Inputs no kernel can serve, named before anything is traced: empty and complex tensors."""
    for s in specs:
        if not s.is_tensor:
            continue
        dims = "x".join(map(str, s.shape))
        if math.prod(s.shape) == 0:
            raise TaskError(_one_paragraph(
                f"{path}: get_inputs() returns the empty tensor {s.name!r} (shape {dims}): with no "
                f"elements there is nothing for a kernel to compute; give every input at least one "
                f"element."))
        if s.dtype.is_complex:
            raise TaskError(_one_paragraph(
                f"{path}: input {s.name!r} is {str(s.dtype).removeprefix('torch.')}: the Ascend vector "
                f"and cube units have no complex arithmetic and the DSL no complex type; pass the real "
                f"and imaginary parts as two floating inputs."))


def _check_on_cpu(task: Task, path: Path, meta_err: Exception) -> list[tuple[int, ...]]:
    """Meta failed: is the model broken, or just not meta-friendly (``.item()``...)?

    The model is run on CPU at a reduced shape set; if that fails too, the CPU error
    (with its line) is reported, otherwise the task is kept with ``meta_ok=False``.
    """
    from .shapes import _assign, _groups

    shapes = _assign(task, _groups(task, "positional"), "regular", 1 << 14)
    try:
        inputs = task.make_inputs(shapes, seed=0)
        with torch.no_grad():
            out = task.reference(*inputs)
    except Exception as e:  # noqa: BLE001
        raise _located_error(path, "Model.forward", e, _FIX_FWD) from None
    _output_shapes(out, path)
    task.meta_ok = False
    return []


def _probe_on_cpu(task: Task, path: Path) -> None:
    """Meta tensors carry no values, so a forward that indexes with its inputs' values (an
    index out of range) runs there and raises only on real tensors: run it once on CPU at a
    reduced shape set, and say that the forward itself raises."""
    from .shapes import _assign, _groups

    try:
        shapes = _assign(task, _groups(task, "positional"), "regular", 1 << 14)
        inputs = task.make_inputs(shapes, seed=0)
    except Exception:  # noqa: BLE001 - no reduced set: the checker's own runs will tell
        return
    try:
        with torch.no_grad():
            task.reference(*inputs)
    except Exception as e:  # noqa: BLE001
        if task.total_bytes <= _PROBE_FULL_BYTES and _runs_at_task_shapes(task):
            return  # only the reduced shapes break it (e.g. a clamp to a fixed size)
        raise _located_error(path, "Model.forward itself (on real tensors; it runs on meta "
                             "tensors, which carry no values)", e, _FIX_FWD_VALUES) from None


_PROBE_FULL_BYTES = 64 << 20
"""Inputs small enough to run a task's forward at its own shapes while loading it."""


def _runs_at_task_shapes(task: Task) -> bool:
    try:
        inputs = task.make_inputs(list(task.shapes), seed=0)
        with torch.no_grad():
            task.reference(*inputs)
    except Exception:  # noqa: BLE001
        return False
    return True


def _output_shapes(out: Any, path: Path) -> list[tuple[int, ...]]:
    """Shapes of what forward returned; anything but tensors (and numbers) is refused here,
    where the message can name the file, instead of failing every later shape check."""
    try:
        outs = as_tensor_list(out)
    except TaskError:
        outs = None
    if not outs:
        what = "None" if out is None else f"a {type(out).__name__}"
        if isinstance(out, (tuple, list)):
            odd = [type(o).__name__ for o in out if not isinstance(o, (torch.Tensor, int, float, bool))]
            what += f" of {len(out)} items" + (f" containing {', '.join(sorted(set(odd)))}" if odd else "")
        raise TaskError(_one_paragraph(
            f"{path}: Model.forward returned {what}; it must return a tensor or a tuple of "
            f"tensors (the kernel's outputs)."
        ))
    for i, o in enumerate(outs):
        if o.numel() == 0 or o.dtype.is_complex:
            what = "is empty" if o.numel() == 0 else f"is {str(o.dtype).removeprefix('torch.')}"
            raise TaskError(_one_paragraph(
                f"{path}: output {i} of Model.forward {what} (shape {'x'.join(map(str, o.shape))}); a "
                f"kernel writes non-empty real-valued outputs only."))
    return [tuple(o.shape) for o in outs]


#: ATen ops whose result does not depend on these arguments in training mode
_UPDATE_ONLY: dict[str, set[str]] = {
    op: {"running_mean", "running_var"}
    for op in ("native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_functional",
               "batch_norm", "cudnn_batch_norm", "instance_norm")
}


def read_state(task: Task) -> list[str]:
    """The module's floating (and boolean: masks) parameters and buffers its forward reads for its outputs,
    in the order the trace meets them (what the ATen graph's outputs depend on)."""
    try:
        ag = trace_task(task)
    except TraceError:
        return []
    graph = ag.graph.copy()
    for u, v, e in ag.graph.edges(data=True):
        d = ag.graph.nodes[v]
        parts = str(d.get("name", "")).split(".") if d["kind"] == "op" else []
        stats = _UPDATE_ONLY.get(parts[1] if len(parts) > 1 else "", set())
        if stats and d["args"].get("training") and set(e.get("slots", ())) <= stats:
            graph.remove_edge(u, v)  # training-mode running statistics: updated, not read
    live: set[str] = set()
    for ref in ag.outputs:
        live |= nx.ancestors(graph, ref.node) | {ref.node}
    names: list[str] = []
    for node in ag.graph.nodes:
        d = ag.graph.nodes[node]
        if d["kind"] != "param" or node not in live or not d.get("name"):
            continue
        if any(dt.is_floating_point or dt == torch.bool for _, dt in d["outputs"]) and d["name"] not in names:
            names.append(d["name"])
    return names


def with_module_state(task: Task) -> Task:
    """``task`` with the module tensors its forward reads appended as ``state`` inputs."""
    ref = task.reference
    if not isinstance(ref, ModuleReference):
        return task
    names = read_state(task)
    if not names:
        return task
    held = ref.module_tensors(task.dtype)
    specs = []
    for n in names:
        shape, dtype = held[n]
        if math.prod(shape) == 1:  # one number: a kernel Scalar (the DSL has no scalar load)
            value = float(ref.state_value(n, task.dtype).reshape(()))
            specs.append(InputSpec(n, (), torch.float32, kind="scalar", value=value, signed_ok=False))
        else:
            specs.append(InputSpec(n, shape, dtype, kind="state", signed_ok=False))
    return replace(task, inputs=[*task.inputs, *specs], reference=ref.with_state(names))
