"""The LLM session behind the Proposer seam.

:class:`LlmProposer` is a proposer like the builtin ones (``name``, ``propose(task)``): it
opens a session for the task (through the factory it is given, which knows the endpoint,
the SoC and the run directory), runs the first round with its static repairs, and keeps the
session so that its caller can go on with repair and optimisation rounds.
"""

from __future__ import annotations

from collections.abc import Callable

from ...tasks.task import Task
from ..proposer import ProposerError
from ..space import Candidate
from .session import LlmSession


class LlmProposer:
    """Candidates from an LLM; :class:`ProposerError` (one paragraph naming every round's
    problem) when no answer held a usable one."""

    name = "llm"

    def __init__(self, open_session: Callable[[Task], LlmSession]) -> None:
        self.open_session = open_session
        self.session: LlmSession | None = None

    def propose(self, task: Task) -> list[Candidate]:
        self.session = self.open_session(task)
        candidates = self.session.propose()
        if not candidates:
            raise ProposerError(f"the LLM ({self.session.answers.model}) proposed no usable "
                                f"candidate for task {task.name!r}: "
                                f"{self.session.failure_summary()}")
        return candidates
