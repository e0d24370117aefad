"""DSL names for what a task file names: its inputs, the task itself, its docstring.

A task file is written by anyone: its ``forward`` parameters may be ``température``, an
80-character name, ``_Model__x`` (Python mangles ``__x``), ``float``, ``new`` or ``FOO_BAR``,
and its file name ``19_ReLU``. The DSL accepts only some names (``dsl/names.py``: ASCII,
bounded, no ``__``, no keywords, no macro-like ALL_CAPS, a few reserved words); the proposers
turn any name into one it accepts - asking the DSL's own check, not a copy of its rules - and
keep it recognisable (``temperature``, ``foo_bar``, ``float_1``). Kernels bind their inputs by
position, so a renamed parameter changes nothing but the text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from ...dsl import names as dsl_names
from ...dsl.parser import DslError

#: room left for a ``_<n>`` suffix that makes a name unique
STEM_CHARS = dsl_names.MAX_NAME - 8
_NOT_WORD = re.compile(r"[^A-Za-z0-9]+")
_DOC_UNSAFE = re.compile(r'[^\x20-\x7e]|["\\]')  # quotes and backslashes end a docstring
_FIELD = re.compile(r"\{[^{}]*\}")


def _ascii(name: str) -> str:
    """``name`` in ASCII: accents dropped (``é`` -> ``e``), other letters spelled by their
    Unicode name's last word (``α`` -> ``alpha``), anything else a separator."""
    out = []
    for ch in unicodedata.normalize("NFKD", name):
        if ch.isascii():
            out.append(ch)
        elif unicodedata.combining(ch):
            continue
        elif ch.isalnum():
            words = unicodedata.name(ch, "").split()
            out.append(f"_{words[-1].lower() if words else 'u'}_")
        else:
            out.append("_")
    return "".join(out)


def _macro_like(name: str) -> bool:
    return name.upper() == name and any(ch.isalpha() for ch in name)


def stem(name: str, prefix: str = "v") -> str:
    """A recognisable identifier stem for ``name``: ASCII words joined by single ``_``,
    starting with a letter (else ``prefix_``), lower-cased if it reads like a macro, short
    enough for a suffix."""
    s = _NOT_WORD.sub("_", _ascii(name).replace("_", " ")).strip("_")
    if not s:
        return prefix
    if not s[0].isalpha():
        s = f"{prefix}_{s}"
    if "_" in s and _macro_like(s):
        s = s.lower()
    return s[:STEM_CHARS].rstrip("_")


def accepted(name: str, public: bool = True) -> bool:
    """Does the DSL accept ``name`` (as a parameter when ``public``, else as any name)?"""
    check = dsl_names.check_public_name if public else dsl_names.check_name
    try:
        check(name, "parameter", None)
    except DslError:
        return False
    return True


def dsl_name(name: str, taken: set[str], reserved: Iterable[str] = (), public: bool = True,
             prefix: str = "v") -> str:
    """A name the DSL accepts for ``name``, not in ``taken`` or ``reserved``; added to
    ``taken``. ``public``: a parameter name (also a name of the CANN op and torch wrapper)."""
    reserved = set(reserved)
    base = stem(name, prefix)
    sep = "" if _macro_like(base) else "_"  # FOO_1 would read as a macro: FOO1
    out, i = base, 1
    while out in taken or out in reserved or not accepted(out, public):
        out = f"{base}{sep}{i}"
        i += 1
    taken.add(out)
    return out


def doc_text(text: str, limit: int = 300) -> str:
    """Text safe inside a DSL docstring: printable ASCII without quotes or backslashes."""
    out = " ".join(_DOC_UNSAFE.sub(" ", text).split())
    return out if len(out) <= limit else out[: limit - 3] + "..."


def words_of(template: str) -> set[str]:
    """Every identifier-like word of a DSL template, its ``{fields}`` left out: the names a
    name put into it must avoid."""
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", _FIELD.sub(" ", template)))


__all__ = ["accepted", "doc_text", "dsl_name", "stem", "words_of"]
