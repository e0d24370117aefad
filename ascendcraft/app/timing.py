"""Reading a time out of the evaluator's timing fields without assuming its kind.

Only the backend that timed a kernel says what kind of time it is (``modeled`` by the
emulator and its performance model, ``measured`` on an NPU): the fields carry the kind
(``kind``, or ``timing`` as the performance model writes it) and the time under
``<kind>_us``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def timing_kind(fields: Mapping[str, Any]) -> str:
    """The kind of time in ``fields``; empty when nothing was timed."""
    return str(fields.get("kind") or fields.get("timing") or "")


def time_key(kind: str) -> str:
    """The field holding a time of this kind (``time_us`` when the kind is unknown)."""
    return f"{kind}_us" if kind else "time_us"


def timed_us(fields: Mapping[str, Any]) -> float | None:
    """The kernel time in ``fields`` (microseconds), None when it was not timed."""
    kind = timing_kind(fields)
    value = fields.get(time_key(kind)) if kind else None
    if value is None:
        value = fields.get("us")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
