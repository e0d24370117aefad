"""The one lowering entry: a checked program → its plan (feasibility before any build) → ``Kernel``.

A program's stages decide its launches: the vector stages of a ``@kernel`` are one AIV
launch (passes in ``kernel.py``: compute, buffers, tiling); a ``@cube_kernel`` is an AIC
launch for its cube stage and an AIV launch for its rows stage (``cube.py``), sharing GM
through the program's workspaces. Either way the result is the same ``Kernel`` with one
tiling header for all its launches.
"""

from __future__ import annotations

from ..checker import TypedProgram
from ..lowered import Kernel, Launch, SocCaps, Workspace
from . import cube as cube_lowering
from .kernel import budget_spec, check_budget, lower
from .outputs import render_outputs
from .outputs_cann_cube import render_cube_forms


class VectorPlan:
    """A ``@kernel``: its UB plan and tiling, evaluated for feasibility without building."""

    def __init__(self, tp: TypedProgram):
        self.tp = tp
        self.spec = budget_spec(tp)

    def check(self, dims: list[list[int]], params: dict[str, int], soc: SocCaps) -> None:
        check_budget(self.tp, dims, params, soc.vector_cores, soc.ub_budget_kib * 1024, self.spec)

    def tiling(self, dims: list[list[int]], params: dict[str, int], soc: SocCaps) -> dict[str, int]:
        return self.spec.evaluate(dims, {**self.tp.program.defaults(), **params}, soc.vector_cores)

    def kernel(self, params: dict[str, int]) -> Kernel:
        p = self.tp.program
        lk = lower(p, params, self.tp)
        launch = Launch(lk.entry, "aiv", lk.kernel_source(), lk.cann_kernel_source(), lk.emulator_source(),
                        tuple(t.name for t in p.tensors))
        return Kernel(lk.op, p, (launch,), lk.tiling_header, f"{lk.op}_tiling.h", (), dict(params),
                      lambda soc: render_outputs(lk, soc=soc, params=params), self.tiling)


class CubePlan:
    """A ``@cube_kernel``: its L1/L0/UB plan and tiling (one header for both launches)."""

    def __init__(self, tp: TypedProgram):
        self.tp = tp
        self.plan = cube_lowering.plan_cube(tp)

    def check(self, dims: list[list[int]], params: dict[str, int], soc: SocCaps) -> None:
        cube_lowering.check_cube_budget(self.plan, dims, params, soc)

    def tiling(self, dims: list[list[int]], params: dict[str, int], soc: SocCaps) -> dict[str, int]:
        values = {**self.tp.program.defaults(), **params}
        return self.plan.tiling.evaluate(dims, values, soc.cube_cores, soc.vector_cores)

    def _workspace_bytes(self, dims: list[list[int]], values: dict[str, int], soc: SocCaps) -> int:
        t = self.tiling(dims, values, soc)
        ring = cube_lowering.compile_time(self.tp.program, values)["ring"]  # a mixed kernel's ring of blocks
        return max(32, t["splits"] * t["Bt"] * t["M"] * t["N"] * 4, t["cubeDim"] * ring * t["bm"] * t["bn"] * 4)

    def kernel(self, params: dict[str, int]) -> Kernel:
        p = self.tp.program
        lk = cube_lowering.lower_cube(p, params, self.plan)
        args = tuple(lk.gm_args())
        launches = tuple(
            Launch(f"{lk.op}_{which}", {"cube": "aic", "mix": "mix"}.get(which, "aiv"), lk.kernel_source(which),
                   lk.cann_kernel_source(which), lk.emulator_source(which), args)
            for which in lk.stages())
        workspaces = tuple(Workspace(w.name, w.dtype, self._workspace_bytes) for w in p.workspaces)
        return Kernel(lk.op, p, launches, lk.header, f"{lk.op}_tiling.h", workspaces, dict(params),
                      lambda soc: render_cube_forms(lk, soc=soc, params=params), self.tiling)


def plan_program(tp: TypedProgram) -> VectorPlan | CubePlan:
    """The plan of a checked program: its stages (and decorator) choose the launches."""
    return CubePlan(tp) if tp.program.decorator == "cube_kernel" else VectorPlan(tp)
