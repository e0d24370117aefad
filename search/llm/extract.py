"""The answer format, and reading candidates out of an answer's text.

The model is asked for one JSON object (:data:`SCHEMA`, sent as structured output where the
server supports it and described in the prompt either way)::

    {"candidates": [{"name": "rows_two_pass", "structure": "one line",
                     "dsl": "@kernel(...)\\ndef ...",
                     "tiling": [{"tunable": "ROWS", "value": 8, "reason": "one line"}]}]}

:func:`extract` accepts that object bare, inside a fenced ```json block or surrounded by
prose, and otherwise falls back on fenced code blocks that hold a DSL program (no tiling
proposal then). It only reads JSON and slices text: nothing is evaluated. Every field is
type-checked and bounded; what does not fit is a *problem* (reported), not an exception.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

#: Most characters of an answer looked at, candidates per answer, tiling entries per
#: candidate: a runaway answer is cut, not parsed at any length.
MAX_ANSWER_CHARS = 512 * 1024
MAX_DRAFTS = 8
MAX_TILING = 16

def _object(**properties: dict[str, Any]) -> dict[str, Any]:
    """A JSON-schema object whose every property is required."""
    return {"type": "object", "properties": properties, "required": list(properties)}


_TEXT = {"type": "string"}
SCHEMA: dict[str, Any] = _object(candidates={"type": "array", "items": _object(
    name=_TEXT, structure=_TEXT, dsl=_TEXT,
    tiling={"type": "array", "items": _object(tunable=_TEXT, value={"type": "integer"},
                                              reason=_TEXT)},
)})

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)```", re.DOTALL)
_PROGRAM = re.compile(r"^\s*@(?:cube_)?kernel\b", re.MULTILINE)


@dataclass(frozen=True)
class TilingHint:
    """A proposed starting value of one tunable (names not checked yet)."""

    tunable: str
    value: int
    reason: str


@dataclass(frozen=True)
class Draft:
    """One candidate as the answer gave it: untrusted text, not parsed yet."""

    name: str
    structure: str
    dsl: str
    tiling: tuple[TilingHint, ...] = ()


@dataclass
class Extraction:
    """What an answer held: its drafts, how they were found (``json``, ``fenced`` or
    ``none``) and the problems met on the way."""

    drafts: list[Draft] = field(default_factory=list)
    form: str = "none"
    problems: list[str] = field(default_factory=list)


def extract(text: str | None) -> Extraction:
    """The drafts in an answer (see the module docstring)."""
    out = Extraction()
    if not text or not text.strip():
        out.problems.append("the answer is empty")
        return out
    if len(text) > MAX_ANSWER_CHARS:
        out.problems.append(f"the answer has {len(text)} characters; only the first "
                            f"{MAX_ANSWER_CHARS} were read")
        text = text[:MAX_ANSWER_CHARS]
    obj = _json_object(text)
    if obj is not None:
        out.form = "json"
        _read_object(obj, out)
        if out.drafts:
            return out
    blocks = [body for _lang, body in _FENCE.findall(text) if _PROGRAM.search(body)]
    if not blocks and _PROGRAM.search(text) and "```" not in text:
        blocks = [text]  # a bare program
    for i, body in enumerate(blocks[:MAX_DRAFTS], start=1):
        out.drafts.append(Draft(f"c{i}", "", body.strip("\n") + "\n"))
    if out.drafts:
        out.form = "fenced"
    elif obj is None:
        out.problems.append("no JSON object with candidates and no fenced DSL program in the "
                            "answer")
    return out


def _json_object(text: str) -> dict[str, Any] | None:
    """The answer's JSON object: all of it, a ```json block, or the outermost braces."""
    tries = [text.strip()]
    tries += [body for lang, body in _FENCE.findall(text) if lang.lower() in ("json", "")]
    first, last = text.find("{"), text.rfind("}")
    if 0 <= first < last:
        tries.append(text[first:last + 1])
    for candidate in tries:
        if not candidate.startswith("{"):
            continue
        try:
            obj = json.loads(candidate)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict):
            return obj
    return None


def _read_object(obj: dict[str, Any], out: Extraction) -> None:
    items = obj.get("candidates")
    if isinstance(items, dict):
        items = [items]
    if not isinstance(items, list):
        out.problems.append("the JSON object has no list 'candidates'")
        return
    if len(items) > MAX_DRAFTS:
        out.problems.append(f"{len(items)} candidates given; the first {MAX_DRAFTS} were read")
    for i, item in enumerate(items[:MAX_DRAFTS], start=1):
        if not isinstance(item, dict):
            out.problems.append(f"candidate {i} is not an object")
            continue
        dsl = item.get("dsl")
        if not isinstance(dsl, str) or not dsl.strip():
            out.problems.append(f"candidate {i} has no 'dsl' program text")
            continue
        name = item.get("name")
        structure = item.get("structure")
        out.drafts.append(Draft(
            name if isinstance(name, str) and name.strip() else f"c{i}",
            structure if isinstance(structure, str) else "",
            _unfence(dsl), _tiling(item.get("tiling"), i, out)))


def _unfence(dsl: str) -> str:
    """A program some models wrap in a fence even inside JSON."""
    m = _FENCE.search(dsl)
    body = m.group(2) if m and _PROGRAM.search(m.group(2)) else dsl
    return body.strip("\n") + "\n"


def _tiling(raw: Any, i: int, out: Extraction) -> tuple[TilingHint, ...]:
    if raw is None:
        return ()
    if isinstance(raw, dict):  # {"TILE": 4096, ...}: accepted, without reasons
        raw = [{"tunable": k, "value": v, "reason": ""} for k, v in raw.items()]
    if not isinstance(raw, list):
        out.problems.append(f"candidate {i}: 'tiling' is not a list")
        return ()
    hints = []
    for entry in raw[:MAX_TILING]:
        if not isinstance(entry, dict):
            out.problems.append(f"candidate {i}: a tiling entry is not an object")
            continue
        name, value, reason = entry.get("tunable"), entry.get("value"), entry.get("reason", "")
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(name, str) or isinstance(value, bool) or not isinstance(value, int):
            out.problems.append(f"candidate {i}: a tiling entry is not {{tunable: name, value: "
                                f"integer}}")
            continue
        hints.append(TilingHint(name, value, reason if isinstance(reason, str) else ""))
    return tuple(hints)
