"""The seam between the DSL and the machines: a program prepared once, lowered to a ``Kernel``.

Everything below this module (parser, checker, lowering passes) is the DSL's own business;
everything above it (backends, the evaluator, export) sees only :class:`Prepared` and
:class:`Kernel`, whatever stages the program has. ``prepare`` parses and checks the text
into the one IR and plans it (``lowering.program``); ``Prepared.lower`` produces the
``Kernel``: an ordered list of launches that share GM — one vector (AIV) launch for a
``@kernel``; a cube (AIC) launch and/or a vector launch for a ``@cube_kernel`` on the split
910B — plus the tiling header (the tiling function, written once in C++, with its Python
mirror) and the named GM workspaces the launches hand to each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from . import ir
from .checker import TypedProgram, check_program
from .lowered import CORE_TYPES, Kernel, Launch, SocCaps, Workspace  # noqa: F401 - the public types
from .lowering.program import CubePlan, VectorPlan, plan_program
from .parser import DslError, parse


@dataclass
class Prepared:
    """A candidate parsed, checked and planned once, reused for every trial of it."""

    name: str
    source: str
    program: ir.Program
    typed: TypedProgram = field(repr=False)
    plan: VectorPlan | CubePlan = field(repr=False)

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
        for t in self.program.tunables:  # hand-given params (a user's, a library entry's) too
            if t.name in params and not t.domain.contains(params[t.name]):
                raise DslError(f"tunable {t.name}={params[t.name]} is not in its domain {t.domain}")
        self.plan.check(dims, dict(params), soc)

    def feasible(self, dims: list[list[int]], params: dict[str, int], soc: SocCaps) -> str | None:
        try:
            self.check(dims, params, soc)
        except DslError as e:
            return str(e)
        return None

    def tiling(self, dims: list[list[int]], params: dict[str, int], soc: SocCaps) -> dict[str, int]:
        """The Python mirror of the tiling header for these shapes (every field by name)."""
        return self.plan.tiling(dims, dict(params), soc)

    def lower(self, params: dict[str, int] | None = None) -> Kernel:
        return self.plan.kernel(dict(params or {}))


def prepare(name: str, source: str | ir.Program) -> Prepared:
    """Parse, check and plan DSL text (or an already parsed program) once; raises DslError
    naming the line and column."""
    program = source if isinstance(source, ir.Program) else parse(source)
    typed = check_program(program)
    return Prepared(name, program.source, program, typed, plan_program(typed))


def lower(source: str | ir.Program, params: dict[str, int] | None = None, name: str = "kernel") -> Kernel:
    """Prepare and lower in one step (``ascendcraft lower``, tests)."""
    return prepare(name, source).lower(params)
