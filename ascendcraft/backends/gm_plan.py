"""The GM buffers of one kernel at one set of shapes, as every backend lays them out: the
workspace sizes, which arguments of a launch are read-only inputs, and each launch's tiling
request (the shapes, tunables, scalars and core count the tiling function is called with)."""

from __future__ import annotations

from collections.abc import Sequence

from ascendcraft.dsl.kernel import Kernel, Launch
from ascendcraft.emulator.runner import TilingRequest
from ascendcraft.soc import Soc

from .base import TORCH_OF_DSL, TensorSpec, TilingArgs


class GmPlan:
    """The GM buffers of one kernel at one set of shapes: workspace sizes, which arguments
    of a launch are read-only inputs, and each launch's tiling request."""

    def __init__(self, k: Kernel, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec],
                 tiling: TilingArgs, soc: Soc) -> None:
        self.k, self.soc, self.tiling = k, soc, tiling
        self.dims = [list(map(int, s)) for s, _ in (*inputs, *outputs)]
        values = {**k.program.defaults(), **dict(tiling.values)}
        missing = [t.name for t in k.program.tunables if t.name not in values]
        if missing:
            raise ValueError(f"no value for tunable(s) {', '.join(missing)} of {k.op}")
        self.tunables = [int(values[t.name]) for t in k.program.tunables]
        self.workspaces = [(w, int(w.nbytes(self.dims, values, soc)), TORCH_OF_DSL[w.dtype])
                           for w in k.workspaces]
        self.inputs = {p.name for p in k.program.inputs}
        self.many = len(k.launches) > 1

    def split(self, launch: Launch) -> tuple[list[str], list[str]]:
        """(read-only inputs, buffers read back) of a launch: its GM arguments are the task's
        inputs first, then workspaces and outputs (the ``Launch.gm_args`` order)."""
        args = list(launch.gm_args)
        n = 0
        while n < len(args) and args[n] in self.inputs:
            n += 1
        if any(a in self.inputs for a in args[n:]):
            raise ValueError(f"{launch.name}: GM arguments {args} do not list the inputs first")
        return args[:n], args[n:]

    def request(self, launch: Launch) -> TilingRequest:
        return TilingRequest(shapes=self.dims, tunables=self.tunables, scalars=list(self.tiling.scalars),
                             core_num=launch.core_num(self.soc))

    def where(self, launch: Launch) -> str:
        """Prefix naming the launch in messages when the kernel has several."""
        return f"{launch.name}: " if self.many else ""
