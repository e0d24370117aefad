"""The evaluator's cube path: ``@cube_kernel`` candidates (dispatched from evaluate.py).

A cube program lowers to up to two kernels that share GM — the cube (AIC) kernel and the
vector (AIV) kernel of its rows stage — so building gives up to two libraries, a run is up
to two launches (the AIC run writes the workspaces and outputs, the AIV run reads them),
and the modeled time is the sum of both launches (each with its own launch overhead).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from .dsl import cube as C
from .dsl.lowering.cube import CubeLowered, CubePlan, check_cube_budget, lower_cube, plan_cube
from .dsl.parser import DslError
from .emulator.build import build_kernel
from .emulator.runner import RunResult, TilingRequest, run_kernel
from .model.eager import trace_aten_ops
from .model.report import report_fields
from .model.roofline import min_bytes
from .model.timeline import simulate

if TYPE_CHECKING:
    from .evaluate import Evaluator


@dataclass
class CubePrepared:
    """A cube candidate parsed, checked and planned once, reused for every trial."""

    name: str
    source: str
    program: C.CubeProgram
    checked: C.CheckedCube
    plan: CubePlan

    kind = "cube"


@dataclass
class CubeBuild:
    """The built libraries of one lowering: ``stages`` maps "cube" / "vec" to a .so path."""

    lowered: CubeLowered
    stages: dict[str, Path]


def prepare_cube(name: str, source: str) -> CubePrepared:
    """Parse, check and plan a cube program (raises DslError with the line)."""
    program = C.parse_cube(source)
    checked = C.check_cube(program)
    return CubePrepared(name, source, program, checked, plan_cube(checked))


def feasible(ev: Evaluator, prep: CubePrepared, params: dict[str, int]) -> str | None:
    """Why this assignment cannot run on every checked and timed shape (capacities of L1,
    L0A, L0B, L0C and UB, fractal alignment, shape rules), or None — before any build."""
    try:
        ev._io(prep)
        for shapes in [*ev.shape_sets, list(ev.task.shapes)]:
            dims, _ = ev._dims(prep, shapes)
            check_cube_budget(prep.plan, dims, params, ev.soc)
    except DslError as e:
        return str(e)
    return None


def build(prep: CubePrepared, params: dict[str, int]) -> tuple[CubeLowered, CubeBuild]:
    lk = lower_cube(prep.program, params, prep.plan)
    stages = {}
    for which in lk.stages():
        fname = f"{lk.op}_{which}.cpp"
        stages[which] = build_kernel({fname: lk.emulator_source(which), f"{lk.op}_tiling.h": lk.header}, fname)
    return lk, CubeBuild(lk, stages)


def _named(cb: CubeBuild, tun: list[int]) -> dict[str, int]:
    """Tunable values by name from the positional list the runner takes."""
    return {t.name: v for t, v in zip(cb.lowered.program.tunables, tun, strict=True)}


def run(ev: Evaluator, cb: CubeBuild, inputs: list, expected: list[torch.Tensor], tun: list[int]) -> RunResult:
    """Run the stages in order on one set of inputs; the result carries the final outputs."""
    from .evaluate import _np
    from .tasks.compare import nan_filled_like

    p = cb.lowered.program
    tensors = [i for i in inputs if isinstance(i, torch.Tensor)]
    scalars = [float(i) for i in inputs if not isinstance(i, torch.Tensor)]
    gm = [_np(t) for t in tensors]
    outs = [_np(nan_filled_like((tuple(e.shape), e.dtype))) for e in expected]
    shapes = [list(t.shape) for t in tensors] + [list(e.shape) for e in expected]
    t = cb.lowered.tiling.evaluate(shapes, {**p.defaults(), **_named(cb, tun)}, ev.soc.cube_cores,
                                   ev.soc.vector_cores)
    ws = [np.full(max(1, t["splits"] * t["Bt"] * t["M"] * t["N"]), np.nan, np.float32) for _ in p.workspaces]
    res: RunResult | None = None
    if "cube" in cb.stages:
        req = TilingRequest(shapes=shapes, tunables=tun, scalars=scalars, core_num=ev.soc.cube_cores)
        res = run_kernel(cb.stages["cube"], gm, outputs=ws + outs, tiling=req, timeout_s=ev.timeout_s,
                         trace=False, soc_buffers=ev.soc.name, core_type="aic")
        if not res.ok:
            res.message = f"cube kernel: {res.message}"
            return res
        ws, outs = res.outputs[:len(ws)], res.outputs[len(ws):]
    if "vec" in cb.stages:
        req = TilingRequest(shapes=shapes, tunables=tun, scalars=scalars, core_num=ev.soc.vector_cores)
        res = run_kernel(cb.stages["vec"], gm + ws, outputs=outs, tiling=req, timeout_s=ev.timeout_s,
                         trace=False, soc_buffers=ev.soc.name, core_type="aiv")
        if not res.ok:
            res.message = f"vector kernel: {res.message}"
    assert res is not None
    return res


def _roofline(ev: Evaluator) -> tuple[float, float]:
    """(roofline us, cube flops) of the task at full shapes: max(bytes / HBM, cube flops / cube
    peak, vector flops / vector peak) — cube work is measured against the cube unit."""
    task = ev.task
    key = "_cube_roofline"
    if key not in ev.__dict__:
        outs = ev._output_meta(task.shapes)
        tensors = [(s.shape, s.dtype) for s in task.inputs if s.is_tensor] + list(outs)
        nbytes = min_bytes(tensors)
        cube_fl = vec_fl = 0.0
        dt = str(task.dtype).replace("torch.", "")
        for _, _, fl, unit, _ in trace_aten_ops(task.reference, task.meta_inputs()):
            if unit == "cube":
                cube_fl += fl
            else:
                vec_fl += fl
        soc = ev.soc
        t = max(nbytes / (soc.hbm_gbps * 1e9), cube_fl / soc.cube_peak_flops(dt),
                vec_fl / soc.vector_peak_flops(dt)) * 1e6
        ev.__dict__[key] = (t, cube_fl)
    return ev.__dict__[key]


def time_cube(ev: Evaluator, cb: CubeBuild, tun: list[int]) -> dict:
    """Trace-only runs of every stage at the full shapes, each through the timeline model;
    the modeled time is the sum of the launches."""
    task = ev.task
    shapes = list(task.shapes)
    outs = ev._output_meta(shapes)
    specs = [(tuple(s.shape), s.dtype) for s in task.inputs if s.is_tensor]
    scalars = [float(s.value) for s in task.inputs if s.kind == "scalar"]
    nbytes = [int(np.prod(sh, dtype=np.int64)) * torch.empty((), dtype=dt).element_size() for sh, dt in specs]
    onbytes = [int(np.prod(sh, dtype=np.int64)) * torch.empty((), dtype=dt).element_size() for sh, dt in outs]
    dims = [list(sh) for sh, _ in specs] + [list(sh) for sh, _ in outs]
    p = cb.lowered.program
    t = cb.lowered.tiling.evaluate(dims, {**p.defaults(), **_named(cb, tun)}, ev.soc.cube_cores,
                                   ev.soc.vector_cores)
    ws = [max(32, t["splits"] * t["Bt"] * t["M"] * t["N"] * 4) for _ in p.workspaces]
    t0 = time.perf_counter()
    stage_us: dict[str, float] = {}
    results = {}
    records = 0
    for which, so in cb.stages.items():
        core = ev.soc.cube_cores if which == "cube" else ev.soc.vector_cores
        req = TilingRequest(shapes=dims, tunables=tun, scalars=scalars, core_num=core)
        gm = nbytes if which == "cube" else nbytes + ws
        out = ws + onbytes if which == "cube" else onbytes
        res = run_kernel(so, gm, outputs=out, tiling=req, trace_only=True, trace=True,
                         timeout_s=max(ev.timeout_s, 120), soc_buffers=ev.soc.name,
                         core_type="aic" if which == "cube" else "aiv")
        if not res.ok:
            raise RuntimeError(f"trace-only run of the {which} kernel failed: {res.message}")
        mr = simulate(res.trace, ev.soc, res.block_dim)
        results[which] = mr
        stage_us[which] = mr.time_us
        records += len(res.trace)
    total = sum(stage_us.values())
    e = ev.eager()
    roof, cube_fl = _roofline(ev)
    main = max(results.values(), key=lambda r: r.time_us)
    fields = report_fields(main, roof, e["eager_us"])
    fields["modeled_us"] = total
    fields["speedup"] = e["eager_us"] / total if e["eager_us"] else None
    frac = roof / total if total > 0 else 1.0
    fields["roofline_frac"] = min(1.0, max(frac, 1e-12))
    fields["roofline_us"] = roof
    fields["pipes"] = {f"{w}.{k}": v for w, r in results.items() for k, v in r.pipe_util.items() if v > 0}
    fields["stages_us"] = stage_us
    if cube_fl and "cube" in cb.stages:
        dt = str(task.dtype).replace("torch.", "")
        fields["cube_peak_frac"] = cube_fl / (total * 1e-6) / ev.soc.cube_peak_flops(dt)
        fields["tflops"] = cube_fl / (total * 1e-6) / 1e12
    fields["model_wall_s"] = time.perf_counter() - t0
    fields["trace_records"] = records
    fields["block_dim"] = {w: r.block_dim for w, r in results.items()}
    return fields
