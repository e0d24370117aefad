"""The seam between the DSL and the machines: a program prepared once, lowered to a ``Kernel``.

Everything below this module (parser, checker, lowering passes) is the DSL's own business;
everything above it (backends, the evaluator, export) sees only :class:`Prepared` and
:class:`Kernel`, whatever stages the program has. A kernel is an ordered list of launches
that share GM — one vector (AIV) launch for a vector program; a cube (AIC) launch and/or a
vector launch for a cube program on the split 910B — plus the tiling header (the tiling
function, written once in C++) and the named GM workspaces the launches hand to each other.

This first version adapts the two lowerings that exist today (``lowering.kernel`` and
``lowering.cube``); the one-IR work replaces the adapters by one lowering with the same API.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from . import ir
from .parser import DslError

CORE_TYPES = ("aiv", "aic")


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
    core: str  # "aiv" | "aic"
    source: str  # direct-launch .cpp (tiling read from the GM pointer)
    cann_source: str  # op_kernel .cpp of a CANN custom-op project (GET_TILING_DATA)
    emulator_source: str  # source + the acx_tiling / acx_run entry points
    gm_args: tuple[str, ...]  # task inputs, workspaces, task outputs (by DSL name)

    def core_num(self, soc: SocCaps) -> int:
        return soc.cube_cores if self.core == "aic" else soc.vector_cores


@dataclass(frozen=True)
class Kernel:
    """One lowering of one program for one assignment of its compile-time tunables."""

    op: str
    program: Any  # the program IR
    launches: tuple[Launch, ...]
    tiling_header: str  # <op>_tiling.h
    tiling_header_name: str
    workspaces: tuple[Workspace, ...] = ()
    params: Mapping[str, int] = field(default_factory=dict)
    _render: Callable[[str], dict[str, str]] | None = field(default=None, repr=False, compare=False)

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


@dataclass
class Prepared:
    """A candidate parsed and checked once, reused for every trial of it."""

    name: str
    source: str
    program: Any
    _feasible: Callable[[list[list[int]], dict[str, int], SocCaps], None] = field(repr=False)
    _lower: Callable[[dict[str, int]], Kernel] = field(repr=False)

    @property
    def tunables(self) -> tuple[ir.Tunable, ...]:
        return tuple(self.program.tunables)

    @property
    def inputs(self) -> list[ir.Param]:
        return list(self.program.inputs)

    @property
    def outputs(self) -> list[ir.Param]:
        return list(self.program.outputs)

    @property
    def scalars(self) -> list[ir.Param]:
        return list(self.program.scalars)

    def defaults(self) -> dict[str, int]:
        return dict(self.program.defaults())

    def values(self, params: Mapping[str, int] | None) -> dict[str, int]:
        """Every tunable's value: the defaults overridden by ``params``."""
        return {**self.defaults(), **dict(params or {})}

    def check(self, dims: list[list[int]], params: dict[str, int], soc: SocCaps) -> None:
        """Raise DslError (with the numbers) if this assignment cannot run at these shapes on
        this SoC — capacities, alignment, shape rules — before any build. ``dims``: the task's
        tensor inputs then outputs, in the kernel's parameter order."""
        self._feasible(dims, params, soc)

    def feasible(self, dims: list[list[int]], params: dict[str, int], soc: SocCaps) -> str | None:
        try:
            self.check(dims, params, soc)
        except DslError as e:
            return str(e)
        return None

    def lower(self, params: dict[str, int] | None = None) -> Kernel:
        return self._lower(dict(params or {}))


# ---------------------------------------------------------------------------- adapters


def _vector(name: str, source: str) -> Prepared:
    from .checker import check_program
    from .lowering.kernel import budget_spec, check_budget, lower
    from .lowering.outputs import render_outputs
    from .parser import parse

    program = parse(source)
    typed = check_program(program)
    spec = budget_spec(typed)

    def feasible(dims: list[list[int]], params: dict[str, int], soc: SocCaps) -> None:
        check_budget(typed, dims, params, soc.vector_cores, soc.ub_budget_kib * 1024, spec)

    def lower_one(params: dict[str, int]) -> Kernel:
        lk = lower(program, params, typed)
        launch = Launch(lk.entry, "aiv", lk.kernel_source(), lk.cann_kernel_source(), lk.emulator_source(),
                        tuple(t.name for t in program.tensors))
        return Kernel(lk.op, program, (launch,), lk.tiling_header, f"{lk.op}_tiling.h", (), dict(params),
                      lambda soc: render_outputs(lk, soc=soc, params=params))

    return Prepared(name, source, program, feasible, lower_one)


def _cube(name: str, source: str) -> Prepared:
    from . import cube as C
    from .lowering.cube import check_cube_budget, lower_cube, plan_cube, render_cube_outputs

    program = C.parse_cube(source)
    plan = plan_cube(C.check_cube(program))

    def feasible(dims: list[list[int]], params: dict[str, int], soc: SocCaps) -> None:
        check_cube_budget(plan, dims, params, soc)

    def ws_bytes(dims: list[list[int]], values: dict[str, int], soc: SocCaps) -> int:
        t = plan.tiling.evaluate(dims, {**program.defaults(), **values}, soc.cube_cores, soc.vector_cores)
        return max(32, t["splits"] * t["Bt"] * t["M"] * t["N"] * 4)

    def lower_one(params: dict[str, int]) -> Kernel:
        lk = lower_cube(program, params, plan)
        args = tuple(lk._gm_args())
        launches = tuple(
            Launch(f"{lk.op}_{which}", "aic" if which == "cube" else "aiv", lk.kernel_source(which),
                   lk.cann_kernel_source(which), lk.emulator_source(which), args)
            for which in lk.stages())
        workspaces = tuple(Workspace(w.name, w.dtype, ws_bytes) for w in program.workspaces)
        return Kernel(lk.op, program, launches, lk.header, f"{lk.op}_tiling.h", workspaces, dict(params),
                      lambda soc: render_cube_outputs(lk, soc=soc, params=params))

    return Prepared(name, source, program, feasible, lower_one)


def prepare(name: str, source: str) -> Prepared:
    """Parse and check DSL text once (raises DslError naming the line and column)."""
    from .cube import is_cube_source

    return _cube(name, source) if is_cube_source(source) else _vector(name, source)


def lower(source: str, params: dict[str, int] | None = None, name: str = "kernel") -> Kernel:
    """Prepare and lower in one step (``ascendcraft lower``, tests)."""
    return prepare(name, source).lower(params)
