"""The DSL's one error type: a program the DSL does not accept, with the line it is about.

It lives apart from the parser so that every part of the DSL (names, ops table, parser,
checker, lowering) can raise it without importing the parser."""

from __future__ import annotations

from .ir import Loc


class DslError(ValueError):
    """A program the DSL does not accept; the message names the line and column."""

    def __init__(self, message: str, loc: Loc | None = None):
        self.loc = loc
        self.raw = message
        super().__init__(f"{loc}: {message}" if loc else message)
