"""The Proposer seam: what a proposer is, how it says "not mine", and the chain that asks
several in turn.

A proposer turns a :class:`~ascendcraft.tasks.task.Task` into DSL candidates (the one
:class:`~.space.Candidate` type the search also tunes; a proposer leaves its tunables to be
read from the program). It either
returns candidates or raises :class:`Declined` with one sentence saying why the task is not
its to serve; a :class:`ProposerChain` then asks the next one, and when nobody serves the
task its error is one paragraph that names every proposer's reason. A new proposer (an LLM,
a library of tuned kernels) is one class with a ``name`` and ``propose(task)``, added to the
chain in :mod:`.builtin`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ..tasks.task import Task
from .space import Candidate


class ProposerError(Exception):
    """No candidates for this task; the message is one readable paragraph."""


class Declined(ProposerError):
    """A proposer does not serve this task; ``reason`` is one sentence saying why."""

    def __init__(self, reason: str) -> None:
        self.reason = one_line(reason).rstrip(".")
        super().__init__(self.reason)


@runtime_checkable
class Proposer(Protocol):
    """Anything with a ``name`` that proposes candidates or raises :class:`Declined`."""

    name: str

    def propose(self, task: Task) -> list[Candidate]:
        """Candidates for ``task``, best guess first; :class:`Declined` if not this one's."""
        ...


def one_line(text: str) -> str:
    """Whitespace (newlines included) collapsed: messages stay one paragraph."""
    return " ".join(str(text).split())


class ProposerChain:
    """Asks its proposers in order; the first that returns candidates wins.

    A proposer that declines, raises any other error or returns nothing is skipped and its
    reason kept; a bug in one proposer never stops the chain. Candidates are stamped with
    the proposer's name when they carry no ``origin`` of their own.
    """

    name = "chain"

    def __init__(self, proposers: Sequence[Proposer]) -> None:
        if not proposers:
            raise ValueError("a proposer chain needs at least one proposer")
        self.proposers = tuple(proposers)

    def propose(self, task: Task) -> list[Candidate]:
        reasons: list[tuple[str, str]] = []
        for p in self.proposers:
            try:
                cands = list(p.propose(task))
            except Declined as e:
                reasons.append((p.name, e.reason))
                continue
            except ProposerError as e:
                reasons.append((p.name, one_line(e).rstrip(".")))
                continue
            except Exception as e:  # noqa: BLE001 - one proposer's bug must not end `check`
                text = one_line(f"{type(e).__name__}: {e}")[:300]
                reasons.append((p.name, f"failed internally ({text}); please report it with "
                                        "the task file"))
                continue
            if not cands:
                reasons.append((p.name, "proposed no candidates"))
                continue
            return [c if c.origin else dataclasses.replace(c, origin=p.name) for c in cands]
        detail = "; ".join(f"{name}: {why}" for name, why in reasons)
        raise ProposerError(f"No proposer could build a kernel for task {task.name!r} — {detail}.")


__all__ = ["Candidate", "Declined", "Proposer", "ProposerChain", "ProposerError", "one_line"]
