"""The two ways a search ends early, both meant for the person running it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .result import SearchResult


class SearchSetupError(ValueError):
    """The run cannot start as asked (run directory, storage, resume); the message is one
    paragraph for the user."""


class SearchInterrupted(KeyboardInterrupt):
    """SIGINT/SIGTERM stopped the run after its bookkeeping: in-flight trials were recorded
    as interrupted (a resume re-runs them) and the partial summary was written."""

    def __init__(self, signal_name: str, result: SearchResult) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name
        self.result = result
