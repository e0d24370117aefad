"""The evaluator: one candidate kernel x one assignment of its tunables -> correct or not,
and how fast, on one backend.

Correctness runs on reduced shapes (the task's own sets, the generic reducer's, or the shape
the user gave), several seeds, inputs from the task's generator and from a signed
distribution, fresh poisoned outputs, each run twice to catch non-determinism; the runs go
to the backend together (one fork-server request on the emulator) and the inputs, reference
outputs and comparisons are made once per evaluator, shared by its trials. Timing asks
the backend for the kernel's time at the full task shape and sets it against the task's
eager-PyTorch baseline and roofline, computed once per task. Every failure ends as an
:class:`Outcome` with a :class:`~ascendcraft.status.Status` and a readable message, never
an exception. Vector and cube kernels take the same path: a ``Kernel`` is a list of launches.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from .backends import (
    TORCH_OF_DSL,
    Artifact,
    Backend,
    BackendError,
    RunOutcome,
    TilingArgs,
    Timing,
    get_backend,
)
from .dsl.kernel import Prepared, prepare
from .dsl.parser import DslError
from .model.eager import eager_us
from .model.roofline import min_bytes, roofline_us
from .soc import Soc, load_soc
from .status import Status
from .tasks.compare import compare, compare_either
from .tasks.shapes import reduced_shapes
from .tasks.task import Task

__all__ = ["DSL_OF_TORCH", "Evaluator", "Outcome", "Prepared", "prepare"]

DSL_OF_TORCH = {dtype: name for name, dtype in TORCH_OF_DSL.items()}

CASE_CACHE_BYTES = 256 << 20
"""Bytes of check-run inputs and reference outputs an evaluator keeps for its next trials."""
CHECK_GROUP_BYTES = 64 << 20
"""Check runs are sent together until their inputs and references reach this size (at the
reduced shapes: all of them in one request; at full shapes: one input at a time)."""
COMPARE_CACHE_SIZE = 4096
WIDE_CACHE_SIZE = 8  # cases whose correctly rounded outputs are kept (made only after a failed comparison)
"""Comparison results an evaluator remembers (by the output's digest)."""


@dataclass
class _Case:
    """One check run's inputs (tensors, scalars) and the reference's outputs."""

    key: tuple
    where: str
    signed: bool
    tensors: list[torch.Tensor]
    scalars: tuple[float, ...]
    specs: list
    expected: list
    nbytes: int  # of its tensors and reference outputs (a run's outputs are about as many)


@dataclass
class Outcome:
    """What one evaluation found. ``timing``: the report fields of the kernel's time (with
    ``timing`` = its kind and ``<kind>_us``), or ``{"error": ...}`` when a correct kernel
    could not be timed (``timing_status`` says why); ``time_us`` / ``timing_kind``: the
    time and its kind as the backend gave them."""

    status: Status
    message: str = ""
    correct: bool = False
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    shapes: list = field(default_factory=list)
    params: dict = field(default_factory=dict)
    timing: dict = field(default_factory=dict)
    wall_s: float = 0.0
    time_us: float | None = None
    timing_kind: str | None = None
    timing_status: Status | None = None


class Evaluator:
    """Evaluates candidates of one task on one backend (by default the emulator of ``soc``)."""

    def __init__(self, task: Task, soc: str | Soc | None = None, *, backend: Backend | None = None,
                 seeds: tuple[int, ...] = (0, 1), shape_sets: list[list[tuple[int, ...]]] | None = None,
                 timeout_s: float = 60.0, full: bool = False):
        if backend is None:
            backend = get_backend("emulator", soc)
        elif soc is not None and load_soc(soc).name != backend.soc.name:
            raise ValueError(f"SoC {load_soc(soc).name} differs from the backend's {backend.soc.name}")
        self.task = task
        self.backend = backend
        self.soc = backend.soc
        self.seeds = seeds
        self.timeout_s = timeout_s
        if shape_sets is None:
            shape_sets = [list(task.shapes)] if full else (task.check_shapes or reduced_shapes(task))
        self.shape_sets = [[tuple(s) for s in ss] for ss in shape_sets]
        self._eager: dict[str, Any] | None = None
        self._outputs: dict[tuple, list] = {}  # input shapes -> reference output (shape, dtype)
        self._cases: dict[tuple, _Case] = {}  # (shapes, seed, signed) -> inputs and reference
        self._case_bytes = 0
        self._compared: dict[tuple, Any] = {}  # (case, output, its bytes' digest) -> CompareResult
        self._wide: dict[tuple, list | None] = {}  # case -> its correctly rounded outputs (fp16 / bf16)
        self.phase = ""  # what evaluate() is doing now: build, check run, timing run

    # ------------------------------------------------------------ static
    def _io(self, prep: Prepared) -> None:
        """The DSL signature must match the task: tensors, scalars and outputs in order."""
        t_in = self.task.tensor_inputs
        if len(prep.inputs) != len(t_in):
            raise DslError(f"kernel takes {len(prep.inputs)} input tensors, the task has {len(t_in)} "
                           f"({', '.join(s.name for s in t_in)})")
        for param, spec in zip(prep.inputs, t_in, strict=True):
            want = DSL_OF_TORCH.get(spec.dtype)
            if want != param.dtype:
                raise DslError(f"input '{param.name}' is {param.dtype} but the task's '{spec.name}' is "
                               f"{spec.dtype} (no DSL type)" if want is None else
                               f"input '{param.name}' is {param.dtype} but the task's '{spec.name}' is {want}")
        n_scalars = sum(1 for s in self.task.inputs if s.kind == "scalar")
        if len(prep.scalars) != n_scalars:
            raise DslError(f"kernel takes {len(prep.scalars)} scalars, the task has {n_scalars}")

    def _output_meta(self, shapes) -> list:
        """Reference output (shape, dtype) per input shapes: a meta-device run, cached because
        every trial of every candidate asks for the same shapes."""
        key = tuple(tuple(s) for s in shapes)
        if key not in self._outputs:
            self._outputs[key] = self.task.output_meta(list(key))
        return self._outputs[key]

    def _dims(self, prep: Prepared, shapes: list[tuple[int, ...]]) -> list[list[int]]:
        """The kernel's tensor shapes at these task shapes: inputs, then outputs."""
        tensor_shapes = [list(s) for s, spec in zip(shapes, self.task.inputs, strict=True) if spec.is_tensor]
        outs = self._output_meta(shapes)
        if len(outs) != len(prep.outputs):
            raise DslError(f"kernel has {len(prep.outputs)} outputs, the reference {len(outs)}")
        for param, (_, dt) in zip(prep.outputs, outs, strict=True):
            if DSL_OF_TORCH.get(dt) != param.dtype:
                raise DslError(f"output '{param.name}' is {param.dtype}, the reference gives {dt}")
        return tensor_shapes + [list(s) for s, _ in outs]

    def feasible(self, prep: Prepared, params: dict[str, int]) -> str | None:
        """The reason this assignment cannot work on every checked and timed shape (signature,
        capacities, alignment, shape rules), or None. Runs before any build."""
        try:
            self._io(prep)
            for shapes in [*self.shape_sets, list(self.task.shapes)]:
                prep.check(self._dims(prep, shapes), params, self.soc)
        except DslError as e:
            return str(e)
        return None

    # ------------------------------------------------------------ build + run
    def build(self, prep: Prepared, params: dict[str, int]) -> Artifact:
        """Lower and build (raises DslError or BackendError)."""
        return self.backend.build(prep.lower(params))

    def evaluate(self, prep: Prepared, params: dict[str, int], *, timing: bool = True,
                 seeds: tuple[int, ...] | None = None) -> Outcome:
        """Check correctness on every shape set and seed, then (if asked) time the kernel."""
        t0 = time.perf_counter()
        try:
            out = self._evaluate(prep, params, timing, seeds or self.seeds)
        finally:
            self.phase = ""
        out.params = dict(params)
        out.wall_s = time.perf_counter() - t0
        return out

    def _evaluate(self, prep: Prepared, params: dict[str, int], timing: bool, seeds) -> Outcome:
        reason = self.feasible(prep, params)
        if reason is not None:
            return Outcome(Status.INFEASIBLE, reason)
        self.phase = "build"
        try:
            art = self.build(prep, params)
        except BackendError as e:
            return Outcome(e.status, _in_phase(e.status, "build", str(e)))
        except DslError as e:
            return Outcome(Status.DSL_ERROR, str(e))
        except Exception as e:  # noqa: BLE001 - one failed trial, never a dead run
            return Outcome(Status.CRASH, f"build: {type(e).__name__}: {e}")
        out = self._check(art, prep.values(params), seeds)
        if out.status is Status.OK and timing:
            self.phase = "timing run"
            try:
                t, out.timing = self._time(art)
                out.time_us, out.timing_kind = t.us, t.kind
            except BackendError as e:
                out.timing = {"error": _in_phase(e.status, self.phase, str(e))}
                out.timing_status = e.status
            except Exception as e:  # noqa: BLE001 - a timing failure is reported, not raised
                out.timing, out.timing_status = {"error": f"{type(e).__name__}: {e}"}, Status.CRASH
        return out

    def _check(self, art: Artifact, values: dict[str, int], seeds) -> Outcome:
        """Run on every shape set, seed and input distribution, twice each; compare. The runs
        go to the backend in groups of up to ``CHECK_GROUP_BYTES`` of tensors (one request
        where it can batch them); their outcomes are judged in order, so the first failure
        is the one reported, and memory stays bounded at any shape."""
        worst = [0.0, 0.0]
        notes: list[str] = []  # passes judged against the correctly rounded result
        group: list[_Case] = []
        size = 0
        keys = [(shapes, seed, signed) for shapes in self.shape_sets for seed in seeds for signed in (False, True)]
        for n, key in enumerate(keys):
            case = self._case(*key)
            group.append(case)
            size += case.nbytes
            if size >= CHECK_GROUP_BYTES or n + 1 == len(keys):
                failed = self._check_group(art, values, group, worst, notes)
                if failed is not None:
                    return failed
                group, size = [], 0
        note = "" if not notes else (f"{notes[0]}" + (f" (and {len(notes) - 1} more)" if len(notes) > 1 else ""))
        return Outcome(Status.OK, note, True, worst[0], worst[1], shapes=self.shape_sets)

    def _check_group(self, art: Artifact, values: dict[str, int], cases: list[_Case],
                     worst: list[float], notes: list[str]) -> Outcome | None:
        """Run and judge a group of check runs; the first failure's outcome, or None."""
        self.phase = f"check run ({len(cases)} inputs x 2: {cases[0].where} ...)"
        runs = [(c.tensors, c.specs, TilingArgs(values, c.scalars)) for c in cases for _ in range(2)]
        results = self._run_all(art, runs)
        for ci, case in enumerate(cases):
            where = case.where
            self.phase = f"check run ({where})"
            pair = results[2 * ci : 2 * ci + 2]
            for res in pair:  # twice: the result must be deterministic
                if not res.ok:
                    msg = _in_phase(res.status, "check run", f"{res.message} ({where})")
                    return Outcome(res.status, msg, shapes=self.shape_sets)
            got, again = pair[0].outputs, pair[1].outputs
            if not all(_same(a, b) for a, b in zip(got, again, strict=True)):
                return Outcome(Status.WRONG, f"non-deterministic output ({where})", shapes=self.shape_sets)
            for i, (o, e) in enumerate(zip(got, case.expected, strict=True)):
                c = self._compare(case.key, i, o, e)
                if not c.ok:
                    c = self._compare_rounded(case, i, o, c)
                    if c.ok:
                        notes.append(f"output {i} ({where}, {'signed' if case.signed else 'task'} inputs): "
                                     f"{c.message}")
                worst[0] = max(worst[0], c.max_abs_err)
                worst[1] = max(worst[1], c.max_rel_err)
                if not c.ok:
                    return Outcome(Status.WRONG, f"output {i}: {c.message} ({where}, "
                                   f"{'signed' if case.signed else 'task'} inputs)", max_abs_err=c.max_abs_err,
                                   max_rel_err=c.max_rel_err, shapes=self.shape_sets)
        return None

    def _case(self, shapes: list[tuple[int, ...]], seed: int, signed: bool) -> _Case:
        """The inputs and reference outputs of one check run: made once per evaluator (every
        trial of every candidate of the task checks on the same ones), while they fit in
        ``CASE_CACHE_BYTES``."""
        key = (tuple(shapes), seed, signed)
        case = self._cases.get(key)
        if case is None:
            inputs = self.task.make_inputs(shapes, seed=seed, signed=signed)
            versions = [i._version for i in inputs if isinstance(i, torch.Tensor)]
            expected = self.task.run_reference(inputs)
            if versions != [i._version for i in inputs if isinstance(i, torch.Tensor)]:
                # the forward wrote into its inputs (x.mul_(2)): the kernel reads them as drawn
                inputs = self.task.make_inputs(shapes, seed=seed, signed=signed)
            tensors = [i for i in inputs if isinstance(i, torch.Tensor)]
            case = _Case(key, f"shapes {shapes}, seed {seed}", signed, tensors,
                         tuple(float(i) for i in inputs if not isinstance(i, torch.Tensor)),
                         [(tuple(e.shape), e.dtype) for e in expected], list(expected),
                         sum(_nbytes(t) for t in (*tensors, *expected)))
            if self._case_bytes + case.nbytes <= CASE_CACHE_BYTES:
                self._cases[key] = case
                self._case_bytes += case.nbytes
        return case

    def _compare(self, case: tuple, index: int, got: torch.Tensor, expected: torch.Tensor):
        """``compare`` of one output, remembered by the output's exact bytes: candidates that
        compute the same bits on the same inputs (most tilings of a correct kernel) are
        compared once."""
        if not isinstance(got, torch.Tensor) or not isinstance(expected, torch.Tensor):
            return compare(got, expected, self.task.tolerance)
        key = (case, index, str(got.dtype), tuple(got.shape), _digest(got))
        c = self._compared.get(key)
        if c is None:
            c = compare(got, expected, self.task.tolerance)
            self._compared[key] = c
            while len(self._compared) > COMPARE_CACHE_SIZE:
                self._compared.pop(next(iter(self._compared)))
        return c

    def _compare_rounded(self, case: _Case, index: int, got: torch.Tensor, failed: Any) -> Any:
        """A failed fp16 / bf16 comparison, judged again against the correctly rounded result
        (the reference in float64 on the same inputs, rounded to the output's dtype;
        :meth:`Task.run_reference_wide`): every element within tolerance of one of the two
        references passes, with both references' errors in its message; otherwise the first
        failure stands."""
        e = case.expected[index]
        if not isinstance(got, torch.Tensor) or e.dtype not in (torch.float16, torch.bfloat16):
            return failed
        if case.key not in self._wide:
            inputs = self.task.make_inputs(list(case.key[0]), seed=case.key[1], signed=case.key[2])
            wide = self.task.run_reference_wide(inputs)
            ok = wide is not None and len(wide) == len(case.expected) and all(
                tuple(w.shape) == tuple(x.shape) for w, x in zip(wide, case.expected, strict=True))
            self._wide[case.key] = [w.to(x.dtype) for w, x in zip(wide, case.expected, strict=True)] if ok else None
            while len(self._wide) > WIDE_CACHE_SIZE:
                self._wide.pop(next(iter(self._wide)))
        rounded = self._wide[case.key]
        if rounded is None:
            return failed
        c = compare_either(got, e, rounded[index], self.task.tolerance)
        if not c.ok:
            return failed
        dt = str(e.dtype).replace("torch.", "")
        return replace(c, message=f"each element within tolerance of the {dt} CPU reference or of the correctly "
                                  f"rounded result (the reference in float64, rounded to {dt}; {c.message}); "
                                  f"against the {dt} CPU reference alone, which rounds its intermediates: "
                                  f"{failed.message}")

    def _run_all(self, art: Artifact, runs: list) -> list[RunOutcome]:
        """Every run, in order, stopping at the first that fails: batched when the backend
        can (``run_many``), one by one otherwise."""
        many = getattr(self.backend, "run_many", None)
        if many is not None:
            try:
                return many(art, runs, timeout_s=self.timeout_s)
            except BackendError as e:
                return [RunOutcome(e.status, str(e))]
            except Exception as e:  # noqa: BLE001 - one failed trial, never a dead run
                return [RunOutcome(Status.CRASH, f"{type(e).__name__}: {e}")]
        out: list[RunOutcome] = []
        for tensors, specs, tiling in runs:
            out.append(self._run(art, tensors, specs, tiling))
            if not out[-1].ok:
                break
        return out

    def _run(self, art: Artifact, tensors: list[torch.Tensor], specs: list, tiling: TilingArgs) -> RunOutcome:
        """One run; whatever goes wrong comes back as a RunOutcome with its status."""
        try:
            return self.backend.run(art, tensors, specs, tiling=tiling, timeout_s=self.timeout_s)
        except BackendError as e:
            return RunOutcome(e.status, str(e))
        except Exception as e:  # noqa: BLE001 - one failed trial, never a dead run
            return RunOutcome(Status.CRASH, f"{type(e).__name__}: {e}")

    # ------------------------------------------------------------ timing
    def eager(self) -> dict[str, Any]:
        """Eager-PyTorch model and roofline of the task at its full shapes (computed once).
        The roofline sets the task's cube work against the cube peak and its vector work
        against the vector peak of the task's dtype."""
        if self._eager is None:
            er = eager_us(self.task.reference, self.task.meta_inputs(), self.soc)
            outs = self._output_meta(self.task.shapes)
            tensors = [(s.shape, s.dtype) for s in self.task.inputs if s.is_tensor] + list(outs)
            nbytes = min_bytes(tensors)
            cube_flops = sum(op.flops for op in er.ops if op.unit == "cube")
            vector_flops = sum(op.flops for op in er.ops if op.unit != "cube")
            dt = _dtype_name(self.task.dtype)
            roof = max(roofline_us(nbytes, vector_flops, self.soc, "vector", dt),
                       roofline_us(nbytes, cube_flops, self.soc, "cube", dt))
            self._eager = {"eager_us": er.us, "roofline_us": roof, "cube_flops": cube_flops}
        return self._eager

    def time(self, artifact: Artifact) -> dict[str, Any]:
        """The kernel's time at the full task shapes (backend ``time``) as report fields:
        ``<kind>_us``, ``timing`` (the kind), eager baseline, speedup, roofline, cube share,
        and the backend's own fields (pipes, bound, stages, model version or device)."""
        return self._time(artifact)[1]

    def _time(self, artifact: Artifact) -> tuple[Timing, dict[str, Any]]:
        shapes = list(self.task.shapes)
        inputs = [(tuple(s.shape), s.dtype) for s in self.task.inputs if s.is_tensor]
        outputs = [(tuple(sh), dt) for sh, dt in self._output_meta(shapes)]
        scalars = tuple(float(s.value) for s in self.task.inputs if s.kind == "scalar")
        values = {**artifact.kernel.program.defaults(), **dict(artifact.kernel.params)}
        t = self.backend.time(artifact, inputs, outputs, tiling=TilingArgs(values, scalars),
                              timeout_s=self.timeout_s)
        e = self.eager()
        frac = e["roofline_us"] / t.us if t.us > 0 else 1.0
        fields: dict[str, Any] = {
            "soc": self.soc.name,
            f"{t.kind}_us": t.us,
            "eager_us": e["eager_us"],
            "speedup": e["eager_us"] / t.us if e["eager_us"] and t.us > 0 else None,
            "roofline_us": e["roofline_us"],
            "roofline_frac": min(1.0, max(frac, 1e-12)),
            "timing": t.kind,
            **t.fields,
        }
        if frac > 1.0 + 1e-9:
            fields["roofline_violation"] = frac
        if e["cube_flops"] and t.us > 0 and any(launch.core in ("aic", "mix") for launch in artifact.kernel.launches):
            rate = e["cube_flops"] / (t.us * 1e-6)
            fields["cube_peak_frac"] = rate / self.soc.cube_peak_flops(_dtype_name(self.task.dtype))
            fields["tflops"] = rate / 1e12
        return t, fields


def _in_phase(status: Status, phase: str, message: str) -> str:
    """A timeout's message names the phase it stopped (other failures say what they are)."""
    return f"{phase}: {message}" if status is Status.TIMEOUT else message


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _nbytes(t: Any) -> int:
    return t.numel() * t.element_size() if isinstance(t, torch.Tensor) else 0


def _digest(t: torch.Tensor) -> bytes:
    """A digest of a tensor's bytes (its dtype and shape are part of the key beside it)."""
    raw = t.detach().contiguous().reshape(-1).view(torch.uint8).numpy()
    return hashlib.blake2b(raw, digest_size=16).digest()


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit-for-bit equal (NaN included): a deterministic kernel repeats itself exactly."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return torch.equal(a.contiguous().reshape(-1).view(torch.uint8), b.contiguous().reshape(-1).view(torch.uint8))
