"""Which DSL text may reach generated code, and in what form.

DSL text is untrusted (an LLM writes it). Only two kinds of it ever reach generated C++ or
Python: validated identifiers and numbers. The rules (REFERENCE.md, *Names, strings and limits*):

- every DSL identifier (kernel name, parameters, tunables, workspaces, values, loop
  variables) is ASCII ``[A-Za-z][A-Za-z0-9_]*``, at most ``MAX_NAME`` characters, without
  ``__``;
- generated C++ never uses a DSL name bare: an identifier derived from one is
  ``<role>_<name>`` (:func:`mangle`; ``gm_x``, ``tun_TILE``, ``s_total``). The role is the
  text before the first ``_``, so two derived names never collide, and no identifier of
  the lowering's own has the form ``<role>_...``, so a DSL name can be ``int``, ``new``,
  ``workspace``, ``pipe`` or ``xGm`` and still compile;
- parameter names are public as well — the CANN op's input/attribute names (aclnn turns
  them into C++ parameters), the torch wrapper's keyword arguments — so they must not be a
  C++ or Python keyword, a macro-like ALL_CAPS name with '_', or a name those interfaces use;
- strings (the category, docstrings, source lines) never reach generated code raw: the
  category is an identifier-like word, docstrings are not copied, and the ``DSL line N``
  comments carry the statement as re-printed from the syntax tree, passed through
  :func:`comment_text`.
"""

from __future__ import annotations

import keyword
import re

from .errors import DslError
from .ir import Loc

MAX_NAME = 64
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_CATEGORY = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,31}\Z")

ROLES = ("arg", "gm", "inq", "outq", "ld", "out", "tun", "sc", "s", "p", "h", "ti", "nel", "numel", "width",
         "attr", "shape", "t", "ct", "oshape", "res", "bindq", "held", "rstep", "gn", "gk", "gb", "slp")
"""Role prefixes of derived C++ identifiers (those of COUNTED_ROLES are followed by a counter)."""

COUNTED_ROLES = ("ld", "out", "hold", "rst", "bcr", "gat", "rev", "revs", "sca", "sl", "slc", "slq",
                 "rwn", "rwp", "rwo", "rwm", "rwq")
"""Role prefixes followed by a counter (``ld3_x``: the third value lowered, a load of x; ``rwp0_m``:
row window 0's pitch field of m)."""

CPP_KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
char32_t class compl concept const consteval constexpr constinit const_cast continue co_await
co_return co_yield decltype default delete do double dynamic_cast else enum explicit export
extern false float for friend goto if inline int long mutable namespace new noexcept not not_eq
nullptr operator or or_eq private protected public register reinterpret_cast requires return
short signed sizeof static static_assert static_cast struct switch template this thread_local
throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t while
xor xor_eq final override import module
""".split())

PUBLIC_RESERVED = frozenset("""
torch torch_npu float tuple
workspace workspaceSize executor stream
assert errno stdin stdout stderr offsetof major minor makedev unix linux setjmp alloca
""".split())
"""Names a parameter may not have because a public interface uses them: the torch wrapper
(``torch``, ``float``, ``tuple``), the aclnn API CANN generates from the op's input names
(``workspace``, ``workspaceSize``, ``executor``, ``stream``), and lower-case C macros."""


MACRO_LIKE = frozenset("NULL EOF BUFSIZ CHAR_BIT INFINITY NAN".split())


def _raise(message: str, loc: Loc | None):
    raise DslError(message, loc)


def check_name(name: str, what: str, loc: Loc | None) -> None:
    """Any DSL identifier: ASCII, bounded, no ``__``. Raises DslError naming the line."""
    shown = name if len(name) <= MAX_NAME else name[:20] + "..."
    if not name.isascii() or not _NAME.match(name):
        _raise(f"{what} name {shown!r}: names are ASCII letters, digits and '_', starting with a letter",
               loc)
    if len(name) > MAX_NAME:
        _raise(f"{what} name {shown!r} has {len(name)} characters; the limit is {MAX_NAME}", loc)
    if "__" in name:
        _raise(f"{what} name {shown!r}: '__' is reserved (C++ implementation names)", loc)


def check_public_name(name: str, what: str, loc: Loc | None) -> None:
    """A parameter name, which is also a name of the CANN op and of the torch wrapper."""
    check_name(name, what, loc)
    if name in CPP_KEYWORDS or keyword.iskeyword(name):
        _raise(f"{what} name {name!r} is a C++ or Python keyword; the CANN op and the torch wrapper "
               "use parameter names as they are: rename it", loc)
    if name in PUBLIC_RESERVED:
        _raise(f"{what} name {name!r} is used by the generated torch wrapper / aclnn API: rename it", loc)
    if name in MACRO_LIKE or ("_" in name and name.upper() == name and any(ch.isalpha() for ch in name)):
        _raise(f"{what} name {name!r} looks like a C macro (ALL_CAPS with '_'); parameter names are also "
               "names in CANN's and torch's headers: rename it", loc)


def check_category(category: str, loc: Loc | None) -> None:
    """The category is an identifier-like word (it appears in comments and the README)."""
    if not category.isascii() or not _CATEGORY.match(category):
        shown = category[:40].encode("unicode_escape").decode()
        _raise(f"category {shown!r}: a category is one word of ASCII letters, digits and '_' "
               "(at most 32), e.g. \"activation\"", loc)


def mangle(role: str, name: str) -> str:
    """The C++ identifier of DSL name ``name`` in ``role`` (see the module docstring)."""
    return f"{role}_{name}"


def tunable(name: str) -> str:
    """A tunable in generated C++ and in the Python mirror of the tiling formulas."""
    return mangle("tun", name)


def size_expr(size: str | int | None) -> str:
    """A loop size (tunable name or literal) in the tiling formula language."""
    return tunable(size) if isinstance(size, str) else str(size)


def size_value(expr: str, values: dict[str, int]) -> int:
    """Inverse of :func:`size_expr`: the value of a formula size given DSL tunable values."""
    return int(values[expr[4:]]) if expr.startswith("tun_") else int(expr)


_COMMENT_SAFE = re.compile(r"[^A-Za-z0-9_ .,:;()\[\]=+\-*/<>!%]")


def comment_text(text: str, limit: int = 160) -> str:
    """Text for a ``//`` comment: only characters that cannot end, continue or reopen it
    (no newline, backslash, ``?`` for trigraphs, quotes, ``*/``), at most ``limit`` long."""
    out = _COMMENT_SAFE.sub(" ", text)
    out = out.replace("*/", "* /").replace("/*", "/ *")
    out = " ".join(out.split())
    return out if len(out) <= limit else out[: limit - 3] + "..."


def op_name(kernel: str) -> str:
    """The operator name of a kernel, vector or cube alike: the DSL name with CANN's
    conventional ``_custom`` suffix, which also keeps entries clear of C library names (div,
    exp, abs, ...). Launch entries, tiling struct and tiling function derive from it."""
    return kernel if kernel.endswith("_custom") else f"{kernel}_custom"
