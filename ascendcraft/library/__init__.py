"""Versioned kernel libraries (the export layer): tuning runs -> a folder of tuned kernels
people ship and call.

``export(run_dirs, library, version)`` writes a new version atomically (:mod:`.exporting`);
``verify`` re-hashes, re-lowers, rebuilds and re-checks it (:mod:`.verifying`); ``diff``
compares two versions (:mod:`.diffing`); ``load(DIR)`` gives its kernels as functions on torch
tensors (:mod:`.loader`). The format is documented in this folder's README. Names load from
their module on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOME = {
    "export": "exporting", "Exported": "exporting",
    "verify": "verifying", "VerifyReport": "verifying",
    "diff": "diffing", "LibraryDiff": "diffing",
    "load": "loader", "KernelLibrary": "loader", "Dispatch": "loader",
    "open_library": "store", "resolve_ref": "store", "Library": "store", "LibraryError": "store",
}

__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
