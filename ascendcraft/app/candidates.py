"""Candidates for a task: from the proposer chain or a user's DSL file, made searchable.

A proposer returns :class:`~ascendcraft.search.space.Candidate` objects with their DSL text;
their tunables are declared in that text, so they are read from the prepared program here
(:func:`searchable`) rather than restated by each proposer.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..dsl.kernel import prepare
from ..dsl.parser import MAX_SOURCE_BYTES, DslError
from ..search.builtin import propose as propose_builtin
from ..search.proposer import ProposerError
from ..search.space import Candidate, TunableSpec
from ..tasks.task import Task
from .errors import UserError

__all__ = ["dsl_file_candidate", "pick_candidate", "propose",
           "read_dsl", "searchable"]


def propose(task: Task) -> list[Candidate]:
    """The builtin proposer chain's candidates; :class:`UserError` (one paragraph naming
    every proposer's reason) when none serves the task."""
    try:
        return propose_builtin(task)
    except ProposerError as e:
        raise UserError(str(e)) from None


def pick_candidate(task: Task, index: int) -> Candidate:
    """The ``index``-th proposed candidate, refused when there is no such one."""
    cands = propose(task)
    if index >= len(cands):
        n = len(cands)
        raise UserError(f"task {task.name!r} has {n} candidate{'s' if n != 1 else ''}: "
                        f"--candidate takes 0 to {n - 1}, not {index}")
    return cands[index]


def searchable(candidates: Sequence[Candidate]) -> list[Candidate]:
    """The candidates whose programs parse, each with the tunables its program declares (in
    declaration order: name, every value of its domain, default). A program that does not
    parse is left out: ``check`` reports it."""
    out = []
    for c in candidates:
        try:
            tunables = prepare(c.name, c.source).tunables
        except DslError:
            continue
        out.append(c.with_tunables(
            TunableSpec(t.name, tuple(t.domain.values()), t.default) for t in tunables))
    return out


def read_dsl(path: str) -> str:
    """A user's DSL file as text: missing, unreadable, too big or not UTF-8 is a user error."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if p.is_dir():
            raise UserError(f"DSL file {path} is a directory")
        if size > MAX_SOURCE_BYTES:
            raise UserError(f"DSL file {path} is {size} bytes; a DSL program may have at most "
                            f"{MAX_SOURCE_BYTES} bytes")
        data = p.read_bytes()
    except OSError as e:
        raise UserError(f"cannot read DSL file {path}: {e.strerror or e}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise UserError(f"DSL file {path} is not UTF-8 text (byte 0x{data[e.start]:02x} on line "
                        f"{line}, offset {e.start}); save it as UTF-8") from None


def dsl_file_candidate(path: str) -> Candidate:
    """A hand-written (or LLM-written) program as the one candidate to check or lower; its
    parse or type error is the user's (``path:line:col``)."""
    source = read_dsl(path)
    try:
        prepare(Path(path).stem, source)
    except DslError as e:
        raise UserError(f"{path}: {e}") from None
    return Candidate(f"{Path(path).stem}/file", source, origin="file")
