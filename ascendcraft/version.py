"""Versions every result carries: the package's and the performance model's.

A modeled time is only comparable with another of the same model version, so each one
carries :data:`MODEL_VERSION` (and a resumed run refuses a different one).
"""

from __future__ import annotations

import subprocess
from importlib import metadata
from pathlib import Path

#: Version of the performance model (timeline, SoC numbers, eager baseline). Every modeled
#: figure carries it (``report_fields``); bump it whenever a modeled number can change.
MODEL_VERSION = "2.4"


def package_version() -> str:
    """The installed ascendcraft's version ("unknown" when run from a bare source tree)."""
    try:
        return metadata.version("ascendcraft")
    except metadata.PackageNotFoundError:
        return "unknown"


def source_revision() -> str | None:
    """The git commit of the source tree ascendcraft runs from, with ``-dirty`` when it has
    uncommitted changes; None outside a git checkout (an installed wheel) or without git.

    A bench report names it so a figure can be traced to the code that produced it."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel",
                               "--short=12", "HEAD"], capture_output=True, text=True, timeout=10)
        lines = head.stdout.split("\n")
        # an installed package inside someone else's repository is not that repository's code
        if head.returncode != 0 or len(lines) < 2 or Path(lines[0]).resolve() != root:
            return None
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                                "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    rev = lines[1].strip()
    return f"{rev}-dirty" if dirty.returncode == 0 and dirty.stdout.strip() else rev or None
