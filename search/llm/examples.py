"""Few-shot examples for a prompt: the builtin proposer's real kernels for registry ops of
the task's category.

The examples are what the builtin chain proposes for registry ops like the task — the same
category, the names most alike first — chosen so that each shows a different structure
(``tiles``, ``rows``, ``chunked``, ``slabs``, ``windows``, ``cube``...), within a character
budget. The task's own registry op is left out: the example would be the answer.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from ...tasks.registry import list_tasks
from ...tasks.task import Task
from ..builtin import default_chain
from ..proposer import ProposerError


@dataclass(frozen=True)
class Example:
    """One registry op's kernel: what the op computes (its PyTorch source) and the DSL."""

    op: str
    description: str
    reference: str
    candidate: str
    dsl: str

    def text(self) -> str:
        return (f"## {self.op}: {self.description}\nPyTorch:\n```python\n{self.reference.strip()}\n```\n"
                f"DSL ({self.candidate}):\n```python\n{self.dsl.strip()}\n```\n")


def category_examples(task: Task, limit: int = 3, max_chars: int = 9000) -> list[Example]:
    """Up to ``limit`` examples of different structures, at most ``max_chars`` in all."""
    ops = [t for t in list_tasks(task.category) if t.name != task.name]
    ops.sort(key=lambda t: (-difflib.SequenceMatcher(None, task.name, t.name).ratio(), t.name))
    chosen: list[Example] = []
    structures: set[str] = set()
    used = 0
    chain = default_chain()
    for op in ops:
        if len(chosen) >= limit:
            break
        try:
            cands = chain.propose(op)
        except ProposerError:
            continue
        for c in cands:
            structure = c.name.rsplit("/", 1)[-1]
            if structure in structures:
                continue
            ex = Example(op.name, op.description or op.name, op.source, c.name, c.source)
            size = len(ex.text())
            if used + size > max_chars and chosen:
                continue
            chosen.append(ex)
            structures.add(structure)
            used += size
            break
    return chosen
