"""Former entry points of the cube front end, kept for the evaluator's cube path until it
programs against ``dsl.kernel`` only: ``@cube_kernel`` programs parse with
:func:`parser.parse` into the one ``ir.Program`` and are checked by
:func:`checker.check_program`, like every other program."""

from __future__ import annotations

import ast

from .checker import TypedProgram as CheckedCube  # noqa: F401 - former name
from .checker import check_program as check_cube  # noqa: F401 - former name
from .ir import Program as CubeProgram  # noqa: F401 - former name
from .parser import DslError, parse


def parse_cube(source: str) -> CubeProgram:
    """Parse a ``@cube_kernel`` program (DslError for any other)."""
    program = parse(source)
    if program.decorator != "cube_kernel":
        raise DslError("expected a @cube_kernel program", program.loc)
    return program


def is_cube_source(source: str) -> bool:
    """Does this DSL text define a ``@cube_kernel`` (rather than a vector ``@kernel``)?"""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False  # not a valid program of either kind: the parser reports why
    for n in tree.body:
        if isinstance(n, ast.FunctionDef):
            for d in n.decorator_list:
                f = d.func if isinstance(d, ast.Call) else d
                if isinstance(f, ast.Name) and f.id == "cube_kernel":
                    return True
    return False
