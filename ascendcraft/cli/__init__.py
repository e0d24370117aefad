"""The ``ascendcraft`` command: ops, check, lower, tune, campaign, bench, prompt, export, library,
doctor.

A thin shell over the application layer (:mod:`ascendcraft.app`): it parses the command
line into typed configuration, calls a verb, and prints its typed result — the only module
that prints for the user. Errors a user can cause (a bad flag value, unknown op or SoC,
broken task file, malformed DSL, unusable run directory or storage, a resume that does not
match its run) end as one readable paragraph on stderr and exit code 2.  Anything else is a
bug: one paragraph naming the file that holds the traceback, exit code 3
(``ASCENDCRAFT_DEBUG=1`` re-raises instead). A signal stopping ``tune`` writes the partial
summary and exits 128 + the signal number.
"""

from .main import main
from .parser import build_parser

__all__ = ["build_parser", "main"]
