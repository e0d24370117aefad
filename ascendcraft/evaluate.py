"""The evaluator: one candidate kernel × one assignment of its tunables → correct or not,
and how fast (modeled in the emulator).

Correctness runs on reduced shapes (or the shape the user gave), several seeds, inputs
from the task's generator and from a signed distribution, fresh NaN-filled outputs, each
run twice to catch non-determinism. Timing runs the emulator in trace-only mode at the
full task shape and feeds the trace to the SoC performance model. Every failure ends as a
result with a category and a readable message, never an exception.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from .dsl import ir
from .dsl.checker import TypedProgram, check_program
from .dsl.lowering.kernel import LoweredKernel, budget_spec, check_budget, lower
from .dsl.lowering.tiling import TilingSpec
from .dsl.parser import DslError, parse
from .emulator.build import BuildError, ToolchainError, build_kernel
from .emulator.runner import TilingRequest, run_kernel
from .model.eager import eager_us
from .model.report import report_fields
from .model.roofline import min_bytes, roofline_us
from .model.soc import SocSpec, load_soc
from .model.timeline import simulate
from .tasks.compare import compare, nan_filled_like
from .tasks.shapes import reduced_shapes
from .tasks.task import Task

DSL_OF_TORCH = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16",
                torch.int32: "i32", torch.int64: "i64", torch.int8: "i8", torch.uint8: "u8",
                torch.bool: "bool"}


@dataclass
class Outcome:
    """What one evaluation found. ``status``: ok | infeasible | dsl_error | build_error |
    check_error | wrong | timeout | crash."""

    status: str
    message: str = ""
    correct: bool = False
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    shapes: list = field(default_factory=list)
    params: dict = field(default_factory=dict)
    timing: dict = field(default_factory=dict)
    wall_s: float = 0.0


@dataclass
class Prepared:
    """A candidate parsed and checked once, reused for every trial."""

    name: str
    source: str
    program: ir.Program
    typed: TypedProgram
    spec: TilingSpec  # tiling + UB plan, evaluated by every feasibility check


def prepare(name: str, source: str) -> Prepared:
    """Parse and type-check DSL text (raises DslError with the line)."""
    # --- cube path (issue 6): @cube_kernel programs go to evaluate_cube
    from .dsl.cube import is_cube_source

    if is_cube_source(source):
        from .evaluate_cube import prepare_cube

        return prepare_cube(name, source)  # type: ignore[return-value]
    # --- end cube path
    program = parse(source)
    typed = check_program(program)
    return Prepared(name, source, program, typed, budget_spec(typed))


class Evaluator:
    """Evaluates candidates of one task on the emulator backend for one SoC."""

    def __init__(self, task: Task, soc: str | SocSpec | None = None, *, seeds: tuple[int, ...] = (0, 1),
                 shape_sets: list[list[tuple[int, ...]]] | None = None, timeout_s: float = 60.0,
                 full: bool = False):
        self.task = task
        self.soc = load_soc(soc)
        self.seeds = seeds
        self.timeout_s = timeout_s
        if shape_sets is None:
            # --- cube path (issue 6): matmul / mHC registry tasks bring their own reduced sets
            from .tasks.registry_cube import cube_shape_sets

            cube_sets = None if full else cube_shape_sets(task)
            # --- end cube path
            shape_sets = [list(task.shapes)] if full else (cube_sets or reduced_shapes(task))
        self.shape_sets = [[tuple(s) for s in ss] for ss in shape_sets]
        self._eager: dict | None = None
        self._outputs: dict[tuple, list] = {}  # input shapes -> reference output (shape, dtype)

    # ------------------------------------------------------------ static
    @property
    def ub_bytes(self) -> int:
        return self.soc.ub_budget_kib * 1024

    @property
    def core_num(self) -> int:
        return self.soc.vector_cores

    def _io(self, prep: Prepared) -> None:
        """The DSL signature must match the task: tensors, scalars and outputs in order."""
        p = prep.program
        t_in = self.task.tensor_inputs
        if len(p.inputs) != len(t_in):
            raise DslError(f"kernel takes {len(p.inputs)} input tensors, the task has {len(t_in)} "
                           f"({', '.join(s.name for s in t_in)})")
        for param, spec in zip(p.inputs, t_in, strict=True):
            want = DSL_OF_TORCH.get(spec.dtype)
            if want != param.dtype:
                raise DslError(f"input '{param.name}' is {param.dtype} but the task's '{spec.name}' is "
                               f"{spec.dtype} (no DSL type)" if want is None else
                               f"input '{param.name}' is {param.dtype} but the task's '{spec.name}' is {want}")
        n_scalars = sum(1 for s in self.task.inputs if s.kind == "scalar")
        if len(p.scalars) != n_scalars:
            raise DslError(f"kernel takes {len(p.scalars)} scalars, the task has {n_scalars}")

    def _output_meta(self, shapes) -> list:
        """Reference output (shape, dtype) per input shapes: a meta-device run, cached because
        every trial of every candidate asks for the same shapes."""
        key = tuple(tuple(s) for s in shapes)
        if key not in self._outputs:
            self._outputs[key] = self.task.output_meta(list(key))
        return self._outputs[key]

    def _dims(self, prep: Prepared, shapes: list[tuple[int, ...]]) -> tuple[list[list[int]], list]:
        tensor_shapes = [list(s) for s, spec in zip(shapes, self.task.inputs, strict=True) if spec.is_tensor]
        outs = self._output_meta(shapes)
        if len(outs) != len(prep.program.outputs):
            raise DslError(f"kernel has {len(prep.program.outputs)} outputs, the reference {len(outs)}")
        for param, (_, dt) in zip(prep.program.outputs, outs, strict=True):
            if DSL_OF_TORCH.get(dt) != param.dtype:
                raise DslError(f"output '{param.name}' is {param.dtype}, the reference gives {dt}")
        return tensor_shapes + [list(s) for s, _ in outs], outs

    def feasible(self, prep: Prepared, params: dict[str, int]) -> str | None:
        """The reason this assignment cannot work on every checked and timed shape, or None.
        Runs before any build."""
        if getattr(prep, "kind", "") == "cube":  # --- cube path (issue 6)
            from .evaluate_cube import feasible

            return feasible(self, prep, params)  # type: ignore[arg-type]
        try:
            self._io(prep)
            for shapes in [*self.shape_sets, list(self.task.shapes)]:
                dims, _ = self._dims(prep, shapes)
                check_budget(prep.typed, dims, params, self.core_num, self.ub_bytes, prep.spec)
        except DslError as e:
            return str(e)
        return None

    # ------------------------------------------------------------ build + run
    def build(self, prep: Prepared, params: dict[str, int]) -> tuple[LoweredKernel, Path]:
        if getattr(prep, "kind", "") == "cube":  # --- cube path (issue 6)
            from .evaluate_cube import build as build_cube

            return build_cube(prep, params)  # type: ignore[arg-type,return-value]
        lk = lower(prep.program, params, prep.typed)
        so = build_kernel({f"{lk.op}.cpp": lk.emulator_source(), f"{lk.op}_tiling.h": lk.tiling_header},
                          f"{lk.op}.cpp")
        return lk, so

    def _tunables(self, prep: Prepared, params: dict[str, int]) -> list[int]:
        values = prep.program.defaults()
        values.update(params)
        return [int(values[t.name]) for t in prep.program.tunables]

    def evaluate(self, prep: Prepared, params: dict[str, int], *, timing: bool = True,
                 seeds: tuple[int, ...] | None = None) -> Outcome:
        """Check correctness on every shape set and seed, then (if asked) model the time."""
        t0 = time.perf_counter()
        out = self._evaluate(prep, params, timing, seeds or self.seeds)
        out.params = dict(params)
        out.wall_s = time.perf_counter() - t0
        return out

    def _evaluate(self, prep: Prepared, params: dict[str, int], timing: bool, seeds) -> Outcome:
        reason = self.feasible(prep, params)
        if reason is not None:
            return Outcome("infeasible", reason)
        try:
            lk, so = self.build(prep, params)
        except (BuildError, ToolchainError) as e:
            return Outcome("build_error", str(e))
        except DslError as e:
            return Outcome("dsl_error", str(e))
        tun = self._tunables(prep, params)
        worst_abs, worst_rel = 0.0, 0.0
        for shapes in self.shape_sets:
            for seed in seeds:
                for signed in (False, True):
                    inputs = self.task.make_inputs(shapes, seed=seed, signed=signed)
                    expected = self.task.run_reference(inputs)
                    got = None
                    for attempt in range(2):  # twice: the result must be deterministic
                        res = self._run(so, inputs, expected, tun)
                        if not res.ok:
                            status = res.status if res.status in ("timeout", "crash") else "check_error"
                            return Outcome(status, f"{res.message} (shapes {shapes}, seed {seed})",
                                           shapes=self.shape_sets)
                        if attempt == 0:
                            got = [o.copy() for o in res.outputs]
                        elif any(not np.array_equal(a, b, equal_nan=True) for a, b in zip(got, res.outputs, strict=True)):
                            return Outcome("wrong", f"non-deterministic output (shapes {shapes}, seed {seed})",
                                           shapes=self.shape_sets)
                    for i, (o, e) in enumerate(zip(got, expected, strict=True)):
                        actual = torch.from_numpy(o).view(e.dtype) if e.dtype == torch.bfloat16 else torch.from_numpy(o)
                        c = compare(actual.reshape(e.shape) if actual.numel() == e.numel() else actual, e,
                                    self.task.tolerance)
                        worst_abs = max(worst_abs, c.max_abs_err)
                        worst_rel = max(worst_rel, c.max_rel_err)
                        if not c.ok:
                            return Outcome("wrong", f"output {i}: {c.message} (shapes {shapes}, seed {seed}, "
                                           f"{'signed' if signed else 'task'} inputs)", max_abs_err=c.max_abs_err,
                                           max_rel_err=c.max_rel_err, shapes=self.shape_sets)
        out = Outcome("ok", "", True, worst_abs, worst_rel, shapes=self.shape_sets)
        if timing:
            try:
                out.timing = self.time(prep, so, tun)
            except Exception as e:  # noqa: BLE001 - a timing failure is reported, not raised
                out.timing = {"error": f"{type(e).__name__}: {e}"}
        return out

    def _run(self, so: Path, inputs: list, expected: list[torch.Tensor], tun: list[int]):
        if not isinstance(so, Path):  # --- cube path (issue 6): a CubeBuild (two launches)
            from .evaluate_cube import run as run_cube

            return run_cube(self, so, inputs, expected, tun)
        tensors = [i for i in inputs if isinstance(i, torch.Tensor)]
        scalars = [float(i) for i in inputs if not isinstance(i, torch.Tensor)]
        gm = [_np(t) for t in tensors]
        outs = [_np(nan_filled_like((tuple(e.shape), e.dtype))) for e in expected]
        req = TilingRequest(shapes=[list(t.shape) for t in tensors] + [list(e.shape) for e in expected],
                            tunables=tun, scalars=scalars, core_num=self.core_num)
        return run_kernel(so, gm, outputs=outs, tiling=req, timeout_s=self.timeout_s, trace=False,
                          soc_buffers=self._buffers())

    def _buffers(self) -> dict[str, int]:
        s = self.soc
        return {"ub_bytes": s.ub_kib * 1024, "l1_bytes": s.l1_kib * 1024, "l0a_bytes": s.l0a_kib * 1024,
                "l0b_bytes": s.l0b_kib * 1024, "l0c_bytes": s.l0c_kib * 1024}

    # ------------------------------------------------------------ timing
    def eager(self) -> dict:
        """Eager-PyTorch model and roofline of the task at its full shapes (computed once)."""
        if self._eager is None:
            meta = self.task.meta_inputs()
            er = eager_us(self.task.reference, meta, self.soc)
            outs = self._output_meta(self.task.shapes)
            tensors = [(s.shape, s.dtype) for s in self.task.inputs if s.is_tensor] + list(outs)
            flops = sum(op.flops for op in er.ops)
            self._eager = {"eager_us": er.us, "roofline_us": roofline_us(min_bytes(tensors), flops, self.soc)}
        return self._eager

    def time(self, prep: Prepared, so: Path, tun: list[int]) -> dict:
        """Trace-only run at the full shapes, then the timeline model."""
        if not isinstance(so, Path):  # --- cube path (issue 6)
            from .evaluate_cube import time_cube

            return time_cube(self, so, tun)
        shapes = list(self.task.shapes)
        outs = self._output_meta(shapes)
        tensor_specs = [(tuple(s.shape), s.dtype) for s in self.task.inputs if s.is_tensor]
        scalars = [float(s.value) for s in self.task.inputs if s.kind == "scalar"]
        nbytes = [int(np.prod(sh, dtype=np.int64)) * _itemsize(dt) for sh, dt in tensor_specs]
        onbytes = [int(np.prod(sh, dtype=np.int64)) * _itemsize(dt) for sh, dt in outs]
        req = TilingRequest(shapes=[list(sh) for sh, _ in tensor_specs] + [list(sh) for sh, _ in outs],
                            tunables=tun, scalars=scalars, core_num=self.core_num)
        t0 = time.perf_counter()
        res = run_kernel(so, nbytes, outputs=onbytes, tiling=req, trace_only=True, trace=True,
                         timeout_s=max(self.timeout_s, 120), soc_buffers=self._buffers())
        if not res.ok:
            raise RuntimeError(f"trace-only run failed: {res.message}")
        mr = simulate(res.trace, self.soc, res.block_dim)
        e = self.eager()
        fields = report_fields(mr, e["roofline_us"], e["eager_us"])
        fields["model_wall_s"] = time.perf_counter() - t0
        fields["trace_records"] = int(len(res.trace))
        fields["block_dim"] = res.block_dim
        return fields


def _itemsize(dt: torch.dtype) -> int:
    return torch.empty((), dtype=dt).element_size()


def _np(t: torch.Tensor) -> np.ndarray:
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16)
    if t.dtype == torch.bool:
        return t.to(torch.uint8).numpy()
    return t.numpy()
