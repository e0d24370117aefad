"""Versions every result carries: the package's and the performance model's.

A modeled time is only comparable with another of the same model version, so each one
carries :data:`MODEL_VERSION` (and a resumed run refuses a different one).
"""

from __future__ import annotations

from importlib import metadata

#: Version of the performance model (timeline, SoC numbers, eager baseline). Every modeled
#: figure carries it (``report_fields``); bump it whenever a modeled number can change.
MODEL_VERSION = "2.0"


def package_version() -> str:
    """The installed ascendcraft's version ("unknown" when run from a bare source tree)."""
    try:
        return metadata.version("ascendcraft")
    except metadata.PackageNotFoundError:
        return "unknown"
