"""How the DSL's composite elementwise ops are spelled in AscendC vector calls (the vector
compute pass, ``compute_ops.py``, for ``@kernel`` programs and ``@cube_kernel`` rows stages
alike). Each function returns the call lines for given destination/source operands, element
count and constant formatting; choosing the buffers stays with the pass.
"""

from __future__ import annotations

from collections.abc import Callable

from ..ops import ERF_A, ERF_P

Const = Callable[[float], str]  # C++ spelling of a constant operand (e.g. "static_cast<half>(1.0f)")


def scalar_op(op: str, dst: str, src: str, s: str, scalar_first: bool, n: str, cast: Callable[[str], str]) -> list[str]:
    """``dst = src (op) s``, or ``s (op) src`` when ``scalar_first``; ``s`` is a C++ float
    expression, ``cast`` spells it as the operand type."""
    if op == "add":
        return [f"Adds({dst}, {src}, {cast(s)}, {n});"]
    if op == "mul":
        return [f"Muls({dst}, {src}, {cast(s)}, {n});"]
    if op in ("max", "min"):
        return [f"{'Maxs' if op == 'max' else 'Mins'}({dst}, {src}, {cast(s)}, {n});"]
    if op == "sub" and not scalar_first:
        return [f"Adds({dst}, {src}, {cast('-(' + s + ')')}, {n});"]
    if op == "sub":  # s - src
        return [f"Muls({dst}, {src}, {cast('-1.0f')}, {n});", f"Adds({dst}, {dst}, {cast(s)}, {n});"]
    if op == "div" and not scalar_first:
        return [f"Muls({dst}, {src}, {cast('1.0f / (' + s + ')')}, {n});"]
    return [f"Reciprocal({dst}, {src}, {n});", f"Muls({dst}, {dst}, {cast(s)}, {n});"]  # s / src


def logistic(op: str, dst: str, src: str, n: str, c: Const, comment: str = "") -> list[str]:
    """sigmoid(x) = 1 / (1 + exp(-x)); tanh(x) = 2 sigmoid(2x) - 1; silu(x) = x sigmoid(x).
    ``src`` is read again at the end for silu: ``dst`` must not be ``src`` there."""
    lines = [
        f"Muls({dst}, {src}, {c(-2.0 if op == 'tanh' else -1.0)}, {n});{comment}",
        f"Exp({dst}, {dst}, {n});",
        f"Adds({dst}, {dst}, {c(1.0)}, {n});",
        f"Reciprocal({dst}, {dst}, {n});",
    ]
    if op == "silu":
        lines.append(f"Mul({dst}, {dst}, {src}, {n});")
    if op == "tanh":
        lines += [f"Muls({dst}, {dst}, {c(2.0)}, {n});", f"Adds({dst}, {dst}, {c(-1.0)}, {n});"]
    return lines


def erf_poly(q: str, t: str, u: str, n: str, c: Const) -> list[str]:
    """The A&S 7.1.26 core on ``u`` = |x| >= 0: ``t = 1 / (1 + p u)`` and ``q = (a1 t + ... +
    a5 t^5)``, so that erf(u) = 1 - q exp(-u^2) (|error| <= 1.5e-7)."""
    lines = [f"Muls({t}, {u}, {c(ERF_P)}, {n});", f"Adds({t}, {t}, {c(1.0)}, {n});", f"Reciprocal({t}, {t}, {n});",
             f"Muls({q}, {t}, {c(ERF_A[4])}, {n});"]
    for coef in reversed(ERF_A[:4]):
        lines += [f"Adds({q}, {q}, {c(coef)}, {n});", f"Mul({q}, {q}, {t}, {n});"]
    return lines
