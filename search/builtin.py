"""The offline proposer: expert DSL templates per operator, no LLM needed.

Each template is DSL text with ``{T}`` (the task's dtype) and op parameters (``{eps}``...)
filled in by plain string formatting; the result is parsed like any other candidate. Where
two structures are sensible (whole rows per tile vs column-chunked rows) both are
proposed, as separate candidates.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

import torch

from ..tasks.task import Task

DTYPE_DSL = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.int32: "i32"}

# name -> (template file, format values) per candidate structure
ACTIVATIONS = {
    "relu": "relu(a)",
    "sigmoid": "sigmoid(a)",
    "swish": "a * sigmoid(a)",
    "silu": "a * sigmoid(a)",
    "gelu": "0.5 * a * (1.0 + erf(a * 0.7071067811865476))",
    "gelu_tanh": "0.5 * a * (1.0 + tanh(0.7978845608028654 * (a + 0.044715 * a * a * a)))",
    "tanh": "tanh(a)",
}
ROWWISE = ("softmax", "log_softmax", "layer_norm", "rms_norm", "sum_lastdim")
MIDDIM = {"max_middim": ("max", "-inf", "maximum(acc, load(x, k))", 1)}


@dataclass(frozen=True)
class Candidate:
    """One proposed kernel: a name unique within the task, and its DSL text."""

    name: str
    source: str
    origin: str = "builtin"


class ProposerError(Exception):
    """The proposer has nothing for this task; the message says what is missing."""


def _template(name: str) -> str:
    return resources.files("ascendcraft.search").joinpath("templates", f"{name}.dsl").read_text()


def dsl_dtype(task: Task) -> str:
    try:
        return DTYPE_DSL[task.dtype]
    except KeyError:
        raise ProposerError(f"task {task.name!r}: dtype {task.dtype} has no DSL type") from None


def propose(task: Task) -> list[Candidate]:
    """Candidates for a task, best-guess structure first."""
    T = dsl_dtype(task)
    params = task.params()
    name = task.name
    if name == "add":
        return [Candidate("add/tiles", _template("elementwise_add").format(T=T))]
    if name == "mul_scalar":
        return [Candidate("mul_scalar/tiles", _template("elementwise_mul_scalar").format(T=T))]
    if name in ACTIVATIONS:
        src = _template("activation_unary").format(T=T, name=name, expr=ACTIVATIONS[name])
        return [Candidate(f"{name}/tiles", src)]
    if name in ROWWISE:
        eps = repr(float(params.get("eps", 1e-5)))
        return [Candidate(f"{name}/{kind}", _template(f"{name}_{kind}").format(T=T, eps=eps))
                for kind in ("rows", "chunked")]
    if name in MIDDIM:
        op, init, combine, dim = MIDDIM[name]
        src = _template("reduce_middim").format(T=T, name=name, op=op, init=init, combine=combine, dim=dim)
        return [Candidate(f"{name}/slabs", src)]
    raise ProposerError(
        f"the builtin proposer has no template for task {task.name!r} (category {task.category}); "
        "supported: " + ", ".join(sorted(["add", "mul_scalar", *ACTIVATIONS, *ROWWISE, *MIDDIM])))
