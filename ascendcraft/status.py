"""The one vocabulary of outcomes, from the emulator runner up to the CLI.

Every layer that can fail a kernel (the DSL checker, the compiler, the emulator, the
comparison with PyTorch, the timing run, an executor, the driver) says so with one of these
values, so a failure keeps its category and its message all the way to the report. The
values are plain strings (a ``str`` enum) because they are stored in study attributes and
JSON files.
"""

from __future__ import annotations

from enum import Enum


class Status(str, Enum):
    OK = "ok"
    INFEASIBLE = "infeasible"  # refused by the static checks before any build
    DSL_ERROR = "dsl_error"  # the DSL text does not parse or check
    BUILD_ERROR = "build_error"  # the compiler failed, or no toolchain
    CHECK_ERROR = "check_error"  # the emulator's API checks (alignment, bounds, queues, capacity)
    WRONG = "wrong"  # ran, but the output differs from the reference or is not deterministic
    TIMEOUT = "timeout"  # stopped at a time limit (the message names the phase)
    CRASH = "crash"  # segfault, abort, dead worker, an unexpected exception
    TRACE_LIMIT = "trace_limit"  # the timing trace exceeded its cap
    INTERRUPTED = "interrupted"  # the run was stopped while this trial was in flight

    def __str__(self) -> str:
        return self.value

    @property
    def failed(self) -> bool:
        """A failed evaluation (as opposed to a result or a refusal before any work)."""
        return self not in (Status.OK, Status.INFEASIBLE)

    @classmethod
    def parse(cls, text: str | Status) -> Status:
        """The status named by ``text``; a ValueError naming the known ones otherwise."""
        if isinstance(text, Status):
            return text
        try:
            return cls(text)
        except ValueError:
            known = ", ".join(s.value for s in cls)
            raise ValueError(f"unknown status {text!r} (known: {known})") from None


FAILED: frozenset[Status] = frozenset(s for s in Status if s.failed)
