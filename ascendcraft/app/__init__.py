"""The application layer: ascendcraft's verbs as functions, without a command line.

``check(task, CheckConfig) -> Report``, ``tune(TaskRef, TuneConfig) -> Summary`` and
``lower(name, source, LowerConfig) -> Lowered`` take typed configuration and return typed
results (``to_dict()`` for JSON); they print nothing and know no argparse. User errors are
:class:`UserError` (one paragraph). The CLI (:mod:`ascendcraft.cli`) is a thin shell over
these; a notebook, a service or a campaign runner can call them the same way.

One module per verb (:mod:`.checking`, :mod:`.tuning`, :mod:`.lowering`) plus what they share
(:mod:`.task`, :mod:`.candidates`, :mod:`.objective`, :mod:`.timing`, :mod:`.errors`). The
names below are loaded from their module on first use, so ``import ascendcraft.app.errors``
(as the CLI's error report does) does not pull in the evaluator and the search engine.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOME = {
    "check": "checking", "CheckConfig": "checking", "Report": "checking",
    "CandidateCheck": "checking", "first_feasible": "checking",
    "tune": "tuning", "TuneConfig": "tuning", "Summary": "tuning", "BestKernel": "tuning",
    "DefaultResult": "tuning", "TuneInterrupted": "tuning", "run_dir_for": "tuning",
    "lower": "lowering", "LowerConfig": "lowering", "Lowered": "lowering",
    "TaskRef": "task", "load_task": "task", "known_socs": "task",
    "propose": "candidates", "searchable": "candidates", "pick_candidate": "candidates",
    "dsl_file_candidate": "candidates",
    "KernelObjective": "objective",
    "UserError": "errors",
    "check_folder": "folder", "FolderReport": "folder", "FileCheck": "folder",
}

__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
