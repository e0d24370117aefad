"""What lowering produces: a ``Kernel`` of one or more ``Launch``es sharing GM, its tiling header
and the named GM ``Workspace``s between launches — the types the machines (backends,
evaluator, export) read. No behaviour beyond describing the lowered kernel lives here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from . import ir
from .parse_expr import DslError

CORE_TYPES = ("aiv", "aic", "mix")  # mix: one launch of AI Cores (1 AIC + 2 AIV each, cross-core flags)


class SocCaps(Protocol):
    """What lowering and feasibility read from a SoC (the typed SoC object satisfies it)."""

    name: str
    cube_cores: int
    vector_cores: int
    ub_kib: int
    ub_budget_kib: int
    l1_kib: int
    l0a_kib: int
    l0b_kib: int
    l0c_kib: int


@dataclass(frozen=True)
class Workspace:
    """A named GM buffer one launch writes and a later one reads (not a task tensor)."""

    name: str
    dtype: str
    nbytes: Callable[[list[list[int]], dict[str, int], SocCaps], int]


@dataclass(frozen=True)
class Launch:
    """One kernel launch: its C entry, core type, sources, and GM arguments in order."""

    name: str
    core: str  # "aiv" | "aic" | "mix"
    source: str  # direct-launch .cpp (tiling read from the GM pointer)
    cann_source: str  # op_kernel .cpp of a CANN custom-op project (GET_TILING_DATA)
    emulator_source: str  # source + the acx_tiling / acx_run entry points
    gm_args: tuple[str, ...]  # task inputs, workspaces, task outputs (by DSL name)

    def core_num(self, soc: SocCaps) -> int:
        return soc.cube_cores if self.core in ("aic", "mix") else soc.vector_cores


@dataclass(frozen=True)
class Kernel:
    """One lowering of one program for one assignment of its compile-time tunables."""

    op: str
    program: ir.Program  # the one IR (vector and cube stages)
    launches: tuple[Launch, ...]
    tiling_header: str  # <op>_tiling.h
    tiling_header_name: str
    workspaces: tuple[Workspace, ...] = ()
    params: Mapping[str, int] = field(default_factory=dict)
    _render: Callable[[str], dict[str, str]] | None = field(default=None, repr=False, compare=False)
    _tiling: Callable[[list[list[int]], dict[str, int], SocCaps], dict[str, int]] | None = field(
        default=None, repr=False, compare=False)

    def emulator_sources(self, launch: Launch) -> tuple[dict[str, str], str]:
        """(sources, main file) for building ``launch`` in the emulator."""
        main = f"{launch.name}.cpp"
        return {main: launch.emulator_source, self.tiling_header_name: self.tiling_header}, main

    def render(self, soc: str) -> dict[str, str]:
        """Relative path -> text of every output form (CANN project, direct launch, torch
        binding, emulator build)."""
        if self._render is None:
            raise DslError(f"kernel {self.op!r} has no output forms")
        return self._render(soc)

    def tiling(self, dims: list[list[int]], soc: SocCaps) -> dict[str, int]:
        """The Python mirror of ``tiling_header`` at these shapes with this kernel's tunables:
        every field of the tiling struct by name (the same formulas as the C++)."""
        if self._tiling is None:
            raise DslError(f"kernel {self.op!r} has no tiling mirror")
        return self._tiling(dims, dict(self.params), soc)


