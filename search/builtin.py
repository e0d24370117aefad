"""The builtin proposer: a chain of offline proposers, no LLM needed.

In order: the vector recipes (:mod:`.recipes`, expert kernels for the registry's ops,
chosen when the task's reference *is* an op's computation), the cube proposer
(:mod:`.cube_builtin`: matrix products and the mHC kernels), the graph frontend
(:mod:`.graph`: a kernel composed from the traced ATen graph of anything else), and the cube +
vector proposer (:mod:`.cube_suffix`: one matrix product followed by what the graph frontend
composes, on the vector cores). The first that serves a task wins; if none does, the error
names each one's reason.

To add a proposer (an LLM, a library of tuned kernels): write one module with a class that
has a ``name`` and ``propose(task) -> list[Candidate]`` raising
:class:`~.proposer.Declined` when the task is not its own, and put an instance in
:func:`default_proposers` where it should be asked.
"""

from __future__ import annotations

from ..tasks.task import Task
from .cube_builtin import CubeProposer
from .cube_suffix import CubeVectorProposer
from .graph import GraphProposer
from .proposer import Candidate, Declined, Proposer, ProposerChain, ProposerError
from .recipes import RecipeProposer


def default_proposers() -> list[Proposer]:
    """The builtin chain's proposers, in the order they are asked."""
    return [RecipeProposer(), CubeProposer(), GraphProposer(), CubeVectorProposer()]


def default_chain() -> ProposerChain:
    """The chain ``ascendcraft check`` and ``tune`` use."""
    return ProposerChain(default_proposers())


def propose(task: Task) -> list[Candidate]:
    """Candidates for a task, best-guess structure first, from the first proposer of the
    default chain that serves it; :class:`ProposerError` (one paragraph) if none does."""
    return default_chain().propose(task)


__all__ = ["Candidate", "Declined", "ProposerError", "default_chain", "default_proposers", "propose"]
