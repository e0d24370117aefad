"""The error a user's input causes, as the application layer reports it."""

from __future__ import annotations


class UserError(Exception):
    """A problem with the user's input (a task, a DSL file, a flag's value, a run directory);
    the message is one readable paragraph, and nothing was lost by stopping."""
