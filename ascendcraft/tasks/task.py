"""Task model: what operator to write a kernel for, and how to check it.

A :class:`Task` bundles a PyTorch reference with the *description* of its inputs
(:class:`InputSpec`).  Full task shapes can be many gigabytes, so a task never
allocates them: full shapes are only used as metadata (``output_meta`` runs the
reference on the ``meta`` device), while correctness runs use
:meth:`Task.make_inputs` at reduced shapes (see :mod:`ascendcraft.tasks.shapes`).
"""

from __future__ import annotations

import dataclasses
import math
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

#: Held while a seeded draw uses torch's process-wide generator (inputs, a module's parameters):
#: fork_rng + manual_seed are not thread-safe, and a thread drawing between another's seed and
#: its draws would get (and leave) other numbers (the corpus checks run tasks on threads)
SEEDED_RNG = threading.RLock()

CATEGORIES: tuple[str, ...] = (
    "activation",
    "loss",
    "math",
    "normalization",
    "optimizer",
    "pooling",
    "reduce",
    "elementwise",
    "matmul",
)

INPUT_KINDS: tuple[str, ...] = ("tensor", "scalar", "index", "mask", "state")

Shape = tuple[int, ...]

INT64_MAX = (1 << 63) - 1


class TaskError(Exception):
    """A task cannot be built or used; the message is one readable paragraph."""


# ---------------------------------------------------------------------------
# dtypes, shapes, tolerances
# ---------------------------------------------------------------------------

_DTYPE_NAMES: dict[str, torch.dtype] = {
    "fp32": torch.float32, "float32": torch.float32, "float": torch.float32, "f32": torch.float32,
    "fp16": torch.float16, "float16": torch.float16, "half": torch.float16, "f16": torch.float16,
    "bf16": torch.bfloat16, "bfloat16": torch.bfloat16,
    "fp64": torch.float64, "float64": torch.float64, "double": torch.float64,
    "int64": torch.int64, "long": torch.int64, "int32": torch.int32, "int": torch.int32,
    "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool,
}


def parse_dtype(dtype: str | torch.dtype) -> torch.dtype:
    """Accept CLI spellings (``fp16``, ``bf16``, ``float32``...) as well as torch dtypes."""
    if isinstance(dtype, torch.dtype):
        return dtype
    key = str(dtype).strip().lower().removeprefix("torch.")
    if key not in _DTYPE_NAMES:
        raise TaskError(
            f"Unknown dtype {dtype!r}; use one of {', '.join(sorted(set(_DTYPE_NAMES)))}."
        )
    return _DTYPE_NAMES[key]


def dtype_name(dtype: torch.dtype) -> str:
    """Short name used in messages and CLI output (fp32, fp16, bf16, int64...)."""
    short = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16",
             torch.float64: "fp64"}
    return short.get(dtype, str(dtype).removeprefix("torch."))


def parse_shape(shape: str | Sequence[int]) -> Shape:
    """Parse ``"1x500000"`` / ``"1,500000"`` / ``"(1, 500000)"`` or a sequence of ints."""
    if isinstance(shape, str):
        text = shape.strip().strip("()[]").strip().rstrip(",").strip()
        if not text:
            return ()
        parts = re.split(r"\s*[x×*,]\s*|\s+", text)
        try:
            dims = tuple(int(p) for p in parts)
        except ValueError:
            raise TaskError(
                f"Cannot parse shape {shape!r}; write it like 1x500000 or 32,1024."
            ) from None
    else:
        dims = tuple(int(d) for d in shape)
    if any(d < 0 for d in dims):
        raise TaskError(f"Shape {dims} has a negative dimension.")
    n = math.prod(dims)
    if n > INT64_MAX:
        raise TaskError(
            f"Shape {'x'.join(map(str, dims))} has {n} elements, more than an int64 index can "
            f"address (2^63 - 1); give a smaller shape."
        )
    return dims


def is_exact_dtype(dtype: torch.dtype) -> bool:
    """Integer and bool results are compared exactly."""
    return not (dtype.is_floating_point or dtype.is_complex)


@dataclass(frozen=True)
class Tolerance:
    """Element-wise tolerance ``|a - e| <= atol + rtol * |e|`` (as torch.allclose)."""

    atol: float = 1e-4
    rtol: float = 1e-4

    @staticmethod
    def for_dtype(dtype: torch.dtype) -> Tolerance:
        """Defaults per dtype: fp32 1e-4/1e-4, fp16 1e-3, bf16 1e-2, exact for int/bool."""
        if is_exact_dtype(dtype):
            return Tolerance(0.0, 0.0)
        if dtype == torch.float16:
            return Tolerance(1e-3, 1e-3)
        if dtype == torch.bfloat16:
            return Tolerance(1e-2, 1e-2)
        if dtype == torch.float64:
            return Tolerance(1e-7, 1e-7)
        return Tolerance(1e-4, 1e-4)


# ---------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------

#: distributions understood by :func:`generate_input` (``low``/``high`` meaning in brackets)
DISTRIBUTIONS: tuple[str, ...] = (
    "randn",        # normal(mean=low or 0, std=high or 1)
    "rand",         # uniform [low or 0, high or 1)
    "randint",      # integers [low or 0, high) ; high may come from another input's dim
    "bernoulli",    # bool, P(True) = high or 0.5
    "sign",         # +-1 in the tensor's dtype
    "softmax",      # probabilities along the last dim
    "log_softmax",  # log-probabilities along the last dim
    "const",        # filled with ``low`` (or the recorded ``data`` if present)
    "arange",       # 0, 1, 2, ... reshaped
)


@dataclass(frozen=True)
class InputSpec:
    """One forward input of a task.

    ``kind`` is ``tensor`` (floating data), ``scalar`` (a Python float/int passed as
    is; ``value`` holds it), ``index`` (integer tensor, e.g. int64 class targets),
    ``mask`` (bool tensor) or ``state`` (a parameter or buffer of a task file's module that
    its forward reads, ``name`` = its state-dict key: the reference supplies its value).  ``dist``/``low``/``high`` describe the task's own
    distribution; ``signed_ok`` says whether the evaluator may replace it by a signed
    distribution (False for probabilities, variances, +-1 targets...).
    ``high_from=(i, d)`` makes an index range follow ``inputs[i].shape[d]`` so class
    targets stay valid at reduced shapes.  ``chain`` holds shape-preserving ops that a
    task file applied after the factory call (replayed by the generator); ``data`` a
    small constant tensor recorded from a task file (its dims are then never reduced);
    ``special = (v, p)`` an index value the task file wrote over about a share ``p`` of its
    draw (``t[::7] = -100``: padding targets), written over the same share of every draw.
    """

    name: str
    shape: Shape = ()
    dtype: torch.dtype = torch.float32
    kind: str = "tensor"
    dist: str = "randn"
    low: float | None = None
    high: float | None = None
    value: Any = None
    signed_ok: bool = True
    high_from: tuple[int, int] | None = None
    chain: tuple = field(default=(), compare=False, repr=False)
    data: torch.Tensor | None = field(default=None, compare=False, repr=False)
    special: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if self.kind not in INPUT_KINDS:
            raise TaskError(f"Input {self.name!r}: kind must be one of {INPUT_KINDS}.")
        if self.dist not in DISTRIBUTIONS:
            raise TaskError(f"Input {self.name!r}: unknown distribution {self.dist!r}.")

    @property
    def is_tensor(self) -> bool:
        """True for tensor, index and mask inputs (everything but Python scalars)."""
        return self.kind != "scalar"

    @property
    def nbytes(self) -> int:
        """Bytes of the full-shape tensor (0 for scalars); metadata only."""
        if not self.is_tensor:
            return 0
        return math.prod(self.shape) * torch.empty((), dtype=self.dtype).element_size()

    def describe(self) -> str:
        """One line for listings and LLM prompts."""
        if not self.is_tensor:
            return f"{self.name}: {type(self.value).__name__} = {self.value!r}"
        dims = "x".join(str(d) for d in self.shape) or "scalar"
        if self.kind == "state":
            return f"{self.name}: module tensor {dims} {dtype_name(self.dtype)} (the module's values)"
        rng = ""
        if self.low is not None or self.high is not None:
            rng = f" [{self.low}, {self.high})"
        return f"{self.name}: {self.kind} {dims} {dtype_name(self.dtype)} ~ {self.dist}{rng}"


def _resolve_high(spec: InputSpec, shapes: Sequence[Shape]) -> float:
    if spec.high_from is not None:
        i, d = spec.high_from
        return float(shapes[i][d])
    return float(spec.high if spec.high is not None else 2)


def generate_input(spec: InputSpec, shape: Shape, shapes: Sequence[Shape], signed: bool) -> Any:
    """Draw one input from the global RNG (callers seed it); see :meth:`Task.make_inputs`."""
    if spec.kind == "scalar":
        return spec.value
    shape = tuple(shape)
    if spec.data is not None:
        return spec.data.clone().to(spec.dtype)
    if spec.kind == "index" or (spec.dist == "randint" and not spec.dtype.is_floating_point):
        low = int(spec.low or 0)
        high = int(_resolve_high(spec, shapes))
        t = torch.randint(low, max(high, low + 1), shape, dtype=torch.int64)
        if spec.special is not None and t.numel():
            t[torch.rand(shape) < spec.special[1]] = int(spec.special[0])
        return _apply_chain(t, spec).to(spec.dtype) if spec.chain else t.to(spec.dtype)
    if spec.kind == "mask" and not spec.chain and spec.dist not in ("rand", "randn"):
        p = spec.high if spec.high is not None else 0.5
        t = torch.rand(shape) < p
        return _apply_chain(t, spec) if spec.chain else t
    if signed and spec.signed_ok and spec.kind == "tensor" and spec.dtype.is_floating_point:
        if spec.dist == "rand":
            m = max(abs(spec.low or 0.0), abs(spec.high if spec.high is not None else 1.0), 1e-3)
            t = (torch.rand(shape) * 2 - 1) * m
        else:
            t = torch.randn(shape) * 2.0
        if t.numel() > 1:
            t[torch.rand(shape) < 1 / 32] = 0.0  # exact branch points (relu at 0, ...)
        return t.to(spec.dtype)
    t = _draw(spec, shape, shapes)
    if spec.chain:
        t = _apply_chain(t, spec)
        return t if spec.kind == "mask" else t.to(spec.dtype)
    return t.to(spec.dtype)


def _draw(spec: InputSpec, shape: Shape, shapes: Sequence[Shape]) -> torch.Tensor:
    dist = spec.dist
    if dist == "randn":
        mean = spec.low or 0.0
        std = spec.high if spec.high is not None else 1.0
        return torch.randn(shape) * std + mean
    if dist == "rand":
        lo = spec.low or 0.0
        hi = spec.high if spec.high is not None else 1.0
        return torch.rand(shape) * (hi - lo) + lo
    if dist == "randint":
        lo = int(spec.low or 0)
        hi = int(_resolve_high(spec, shapes))
        return torch.randint(lo, max(hi, lo + 1), shape).to(torch.float32)
    if dist == "bernoulli":
        return (torch.rand(shape) < (spec.high if spec.high is not None else 0.5)).float()
    if dist == "sign":
        return torch.randint(0, 2, shape).float() * 2 - 1
    if dist == "softmax":
        return torch.softmax(torch.randn(shape), dim=-1) if shape else torch.ones(())
    if dist == "log_softmax":
        return torch.log_softmax(torch.randn(shape), dim=-1) if shape else torch.zeros(())
    if dist == "const":
        return torch.full(shape, float(spec.low or 0.0))
    if dist == "arange":
        return torch.arange(math.prod(shape), dtype=torch.float32).reshape(shape)
    raise TaskError(f"Input {spec.name!r}: unknown distribution {dist!r}.")


def _apply_chain(t: torch.Tensor, spec: InputSpec) -> torch.Tensor:
    """Replay the shape-preserving ops a task file applied after the factory call."""
    for func, args, kwargs in spec.chain:
        t = func(t, *args, **dict(kwargs))
    return t


# ---------------------------------------------------------------------------
# the task
# ---------------------------------------------------------------------------

_INDEX_ARG = re.compile(r"(^|_)(dim|dims|axis|axes)($|_)")


def is_index_like_arg(name: str, value: Any) -> bool:
    """``dim=1``-style constructor args name a dimension, not an extent."""
    return bool(_INDEX_ARG.search(name.lower())) and isinstance(value, int) and abs(value) <= 8


@dataclass
class Task:
    """An operator to write a kernel for.

    ``reference(*inputs)`` computes the expected output(s) from the inputs (tensors and
    Python scalars, in ``inputs`` order); hyper-parameters live in ``init_args`` and are
    already bound into ``reference`` (for task files ``reference`` builds the module
    with these constructor args).  ``tolerance=None`` means the dtype default
    (:meth:`Tolerance.for_dtype` of the task's floating dtype).  ``check_shapes``: the
    correctness shape sets the task brings itself (one shape per input, per set) when the
    generic reducer (:func:`ascendcraft.tasks.shapes.reduced_shapes`) would miss what matters
    for it, e.g. several output blocks and fractal tails of a matmul; None = reduce.
    """

    name: str
    category: str
    reference: Callable[..., Any]
    inputs: list[InputSpec]
    init_args: dict[str, Any] = field(default_factory=dict)
    tolerance: Tolerance | None = None
    source: str = ""
    description: str = ""
    origin: str = "registry"
    shape_rule: str = ""
    _builder: Callable[[Shape, torch.dtype], Task] | None = field(
        default=None, repr=False, compare=False
    )
    meta_ok: bool = True
    check_shapes: list[list[Shape]] | None = None

    def __post_init__(self) -> None:
        if self.category not in CATEGORIES:
            raise TaskError(
                f"Task {self.name!r}: category {self.category!r} is not one of "
                f"{', '.join(CATEGORIES)}."
            )
        if self.tolerance is None:
            self.tolerance = Tolerance.for_dtype(self.dtype)

    # -- basic facts ------------------------------------------------------
    @property
    def tensor_inputs(self) -> list[InputSpec]:
        """Inputs a kernel receives as tensors (tensor, index and mask kinds)."""
        return [s for s in self.inputs if s.is_tensor]

    @property
    def dtype(self) -> torch.dtype:
        """The task's data dtype: the first floating tensor input's dtype (fp32 if none)."""
        for s in self.inputs:
            if s.is_tensor and s.dtype.is_floating_point:
                return s.dtype
        return torch.float32

    @property
    def shapes(self) -> list[Shape]:
        """Full (timing) shapes, one per input; scalars get ``()``."""
        return [tuple(s.shape) if s.is_tensor else () for s in self.inputs]

    @property
    def total_bytes(self) -> int:
        """Bytes of all full-shape tensor inputs (metadata only)."""
        return sum(s.nbytes for s in self.inputs)

    def params(self) -> dict[str, Any]:
        """Non-tensor parameters a kernel must honour: constructor args and scalar inputs.

        Constructor args (eps, dim, kernel_size, lr...) are baked into the reference;
        scalar inputs (e.g. ``s`` of ``mul_scalar``) are passed at call time but are
        fixed values for a given task.
        """
        out: dict[str, Any] = {
            k: v for k, v in self.init_args.items() if not isinstance(v, torch.Tensor)
        }
        for s in self.inputs:
            if s.kind == "scalar":
                out[s.name] = s.value
        return out

    # -- inputs and outputs -----------------------------------------------
    def _check_shapes(self, shapes: Sequence[Shape] | None) -> list[Shape]:
        if shapes is None:
            return self.shapes
        shapes = [tuple(s) for s in shapes]
        if len(shapes) != len(self.inputs):
            raise TaskError(
                f"Task {self.name!r} has {len(self.inputs)} inputs "
                f"({', '.join(s.name for s in self.inputs)}) but {len(shapes)} shapes were given."
            )
        return shapes

    def make_inputs(
        self, shapes: Sequence[Shape] | None = None, seed: int = 0, signed: bool = False
    ) -> list[Any]:
        """Draw inputs at ``shapes`` (one per input; default: full shapes - careful, GBs).

        ``signed=False`` uses the task's own generator; ``signed=True`` replaces every
        floating input with ``signed_ok`` by a signed distribution (2*randn or a symmetric
        uniform, ~3% exact zeros) so negative branches and branch points are exercised.
        Deterministic in ``seed`` and isolated from the caller's RNG state.
        """
        shapes = self._check_shapes(shapes)
        with SEEDED_RNG, torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return [
                self._state_value(spec, shape) if spec.kind == "state"
                else generate_input(spec, shape, shapes, signed)
                for spec, shape in zip(self.inputs, shapes, strict=True)
            ]

    def _state_value(self, spec: InputSpec, shape: Shape) -> torch.Tensor:
        """A module tensor's value, as the reference's module holds it in the task's dtype."""
        value = self.reference.state_value(spec.name, self.dtype)  # type: ignore[attr-defined]
        if tuple(value.shape) != tuple(shape):
            raise TaskError(f"Task {self.name!r}: module tensor {spec.name!r} is "
                            f"{list(value.shape)}, not {list(shape)}; its dims follow the "
                            f"constructor args and cannot be reduced.")
        return value.to(spec.dtype)

    def meta_inputs(self, shapes: Sequence[Shape] | None = None) -> list[Any]:
        """Inputs on the ``meta`` device (no allocation) at ``shapes`` (default: full)."""
        shapes = self._check_shapes(shapes)
        out: list[Any] = []
        for spec, shape in zip(self.inputs, shapes, strict=True):
            if spec.kind == "scalar":
                out.append(spec.value)
            else:
                out.append(torch.empty(shape, dtype=spec.dtype, device="meta"))
        return out

    def run_reference(self, inputs: Sequence[Any]) -> list[torch.Tensor]:
        """Run the reference without autograd; always returns a list of tensors. A reference
        that raises on these (real) inputs is the task's error, said as such: its forward
        itself raises (e.g. an index input drawn outside the dim it indexes)."""
        try:
            with torch.no_grad():
                out = self.reference(*inputs)
        except Exception as e:  # noqa: BLE001 - one sentence naming the task's own failure
            dims = ", ".join("x".join(map(str, i.shape)) or "()" for i in inputs
                             if isinstance(i, torch.Tensor))
            raise TaskError(f"Task {self.name!r}: the forward itself raises on real inputs "
                            f"(shapes {dims}): {type(e).__name__}: {first_line(e)}. Fix the "
                            "forward or the inputs get_inputs() draws (indices must lie inside "
                            "the dims they index).") from None
        return as_tensor_list(out)

    def run_reference_wide(self, inputs: Sequence[Any]) -> list[torch.Tensor] | None:
        """The reference run in float64 on these fp16 / bf16 inputs (floating tensors upcast, the
        task at float64: module parameters and state follow). Rounded to the outputs' dtype it
        is the correctly rounded result, which a CPU reference in fp16 is not: it rounds every
        intermediate (an fp16 sum of squares overflows, a long product drifts by ulps), so a
        kernel accumulating in fp32 can miss it by more than the tolerance while being as close
        as rounding allows (the evaluator accepts either). None when the task is not fp16 / bf16
        or cannot run at float64."""
        if self.dtype not in (torch.float16, torch.bfloat16):
            return None
        try:
            wide = self.with_shape(self.shapes[0], torch.float64)
            ins = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]
            with torch.no_grad():
                return as_tensor_list(wide.reference(*ins))
        except Exception:  # noqa: BLE001 - no wide reference: the task's own verdict stands
            return None

    def output_meta(self, shapes: Sequence[Shape] | None = None) -> list[tuple[Shape, torch.dtype]]:
        """Output (shape, dtype) list computed on the meta device - never allocates."""
        if not self.meta_ok:
            raise TaskError(
                f"Task {self.name!r}: the reference uses operations the meta device does not "
                f"support (e.g. .item() or data-dependent shapes), so output shapes at full size "
                f"cannot be inferred without allocating; rewrite the reference without them."
            )
        inputs = self.meta_inputs(shapes)
        try:
            outs = self.run_reference(inputs)
        except TaskError:
            raise
        except Exception as e:  # noqa: BLE001 - reported as one paragraph
            dims = ", ".join("x".join(map(str, s)) or "()" for s in self._check_shapes(shapes))
            raise TaskError(
                f"Task {self.name!r}: the reference does not run on the meta device for input "
                f"shapes {dims}: {type(e).__name__}: {first_line(e)}."
            ) from None
        return [(tuple(o.shape), o.dtype) for o in outs]

    # -- overrides --------------------------------------------------------
    def with_shape(self, shape: str | Sequence[int], dtype: str | torch.dtype | None = None) -> Task:
        """A copy of the task at another full shape and/or dtype (CLI ``--shape/--dtype``).

        ``shape`` is the shape of the *first tensor input*.  Other tensor inputs follow:

        * registry tasks use their own layout rule (``shape_rule``): inputs that must
          share the shape (add, losses, optimizer states, masks) get it, dependent
          inputs are derived (layer_norm weight = last dim, cross_entropy targets =
          first dim, ...), constructor args that are extents follow too;
        * task files: every tensor input whose shape equals the old first shape gets the
          new shape; for the others each dim equal to a dim of the old first shape is
          mapped to the new size (by value when unambiguous, else by right-aligned
          position), 1s stay 1; constructor args equal to a changed dim follow as well.

        ``dtype`` changes every floating tensor input; a default tolerance follows the
        new dtype, an explicit one is kept.
        """
        new_shape = parse_shape(shape)
        new_dtype = parse_dtype(dtype) if dtype is not None else self.dtype
        tol_default = self.tolerance == Tolerance.for_dtype(self.dtype)
        if self._builder is not None:
            task = self._builder(new_shape, new_dtype)
        else:
            task = self._generic_with_shape(new_shape, new_dtype)
        if not tol_default:
            task.tolerance = self.tolerance
        else:
            task.tolerance = Tolerance.for_dtype(task.dtype)
        return task

    def _generic_with_shape(self, new: Shape, dtype: torch.dtype) -> Task:
        tensors = [i for i, s in enumerate(self.inputs) if s.is_tensor]
        if not tensors:
            raise TaskError(f"Task {self.name!r} has no tensor input to reshape.")
        old = tuple(self.inputs[tensors[0]].shape)
        shared = all(tuple(self.inputs[i].shape) == old for i in tensors)
        if len(new) != len(old) and not shared:
            raise TaskError(
                f"Task {self.name!r}: --shape must keep the rank of the first input "
                f"{self.inputs[tensors[0]].name!r} ({len(old)}-D, e.g. "
                f"{'x'.join(map(str, old))}) because other inputs depend on its dims."
            )
        vmap: dict[int, set[int]] = {}
        if len(new) == len(old):
            for o, n in zip(old, new, strict=True):
                vmap.setdefault(o, set()).add(n)
        unambiguous = {o: next(iter(ns)) for o, ns in vmap.items() if len(ns) == 1 and o > 1}

        def remap(shape: Shape) -> Shape:
            out = []
            for k, d in enumerate(shape):
                pos = len(old) - len(shape) + k
                if d == 1:
                    out.append(1)
                elif d in unambiguous:
                    out.append(unambiguous[d])
                elif 0 <= pos < len(old) and old[pos] == d:
                    out.append(new[pos])
                else:
                    out.append(d)
            return tuple(out)

        specs = []
        for s in self.inputs:
            if not s.is_tensor or s.kind == "state":
                specs.append(s)  # module tensors follow the new constructor args below
                continue
            shp = new if tuple(s.shape) == old else remap(tuple(s.shape))
            dt = dtype if s.dtype.is_floating_point else s.dtype
            specs.append(dataclasses.replace(s, shape=shp, dtype=dt, data=s.data))
        changed = {o: n for o, n in unambiguous.items() if o != n}

        def remap_arg(name: str, v: Any) -> Any:
            if isinstance(v, bool) or is_index_like_arg(name, v):
                return v
            if isinstance(v, int):
                return changed.get(v, v)
            if isinstance(v, (tuple, list)) and all(isinstance(x, int) for x in v):
                return type(v)(changed.get(x, x) for x in v)
            return v

        init_args = {k: remap_arg(k, v) for k, v in self.init_args.items()}
        reference = self.reference
        if init_args != self.init_args and hasattr(reference, "with_init_args"):
            reference = reference.with_init_args(init_args)
        if any(s.kind == "state" for s in specs):
            held = reference.module_tensors(dtype)  # type: ignore[attr-defined]
            specs = [dataclasses.replace(s, shape=held[s.name][0], dtype=held[s.name][1])
                     if s.kind == "state" else s for s in specs]
        task = dataclasses.replace(
            self, inputs=specs, init_args=init_args, reference=reference, tolerance=None
        )
        task.output_meta()  # fail early, with a readable message, on inconsistent shapes
        return task

    # -- display ----------------------------------------------------------
    def summary(self) -> str:
        """Multi-line description for CLI listings and LLM prompts."""
        lines = [f"{self.name} [{self.category}] {self.description}".rstrip()]
        lines += ["  " + s.describe() for s in self.inputs]
        if self.init_args:
            lines.append("  params: " + ", ".join(f"{k}={v!r}" for k, v in self.params().items()))
        assert self.tolerance is not None
        lines.append(f"  tolerance: atol={self.tolerance.atol:g} rtol={self.tolerance.rtol:g}")
        return "\n".join(lines)


def as_tensor_list(out: Any) -> list[torch.Tensor]:
    """Normalise a reference result (tensor, tuple, namedtuple, Python number) to a list."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        res: list[torch.Tensor] = []
        for o in out:
            res.extend(as_tensor_list(o))
        return res
    if isinstance(out, (int, float, bool)):
        return [torch.tensor(out)]
    raise TaskError(f"Reference returned {type(out).__name__}; expected tensor(s).")


def first_line(e: BaseException) -> str:
    """First line of an exception message, trimmed (for one-paragraph errors)."""
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__).rstrip(".")
