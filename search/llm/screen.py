"""What of an answer may go further: programs that do not try to escape the DSL, and names
and text made safe for files and terminals.

An answer is untrusted. Its programs go only to the DSL parser, which refuses anything
outside the language; this screen comes first and sorts the refusals into two kinds. A
program that *reaches outside* the DSL — imports, attribute access, dunder names, calls to
Python's execution or reflection built-ins, a category or identifier that is not a plain
word (text that would be C++ if it were copied into generated code) — is **rejected as
unsafe** and counted; it is not sent back for repair. Anything else the parser refuses is an
ordinary mistake that a repair round may fix.

The names and one-line texts of an answer (candidate names, structures, reasons) end up in
file names, reports and terminals: :func:`safe_name` and :func:`printable` keep only what
cannot form a path or a control sequence.
"""

from __future__ import annotations

import ast
import re

from ...dsl.errors import DslError
from ...dsl.names import check_category, check_name, check_public_name
from ...dsl.parser import MAX_SOURCE_BYTES, parse_python, parse_tree

#: Names that would execute, import or reflect if the text were Python (or a shell).
ESCAPES = frozenset({
    "eval", "exec", "compile", "open", "getattr", "setattr", "delattr", "globals", "locals",
    "vars", "breakpoint", "builtins", "os", "sys", "subprocess", "system", "popen",
})


def unsafe_reason(dsl: str) -> str | None:
    """Why this program tries to reach outside the DSL, or None (a syntax error is not
    unsafe: it goes to repair like any other mistake)."""
    tree = _syntax_tree(dsl)
    if tree is None:
        return None
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        where = f" (line {line})" if line else ""
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return f"imports a module{where}"
        if isinstance(node, ast.Attribute):
            return f"uses attribute access '.{printable(node.attr, 40)}'{where}"
        name = getattr(node, "id", None) or getattr(node, "arg", None) or getattr(node, "name", None)
        if isinstance(name, str) and not name.isascii():
            return f"uses the non-ASCII name {ascii(name)[:60]}{where}"
        if isinstance(name, str) and "__" in name:
            return f"uses the dunder name {printable(name, 40)!r}{where}"
        if isinstance(node, ast.Name) and node.id in ESCAPES:
            return f"names the Python built-in {node.id!r}{where}"
        if isinstance(node, ast.keyword) and node.arg == "category":
            value = node.value.value if isinstance(node.value, ast.Constant) else None
            if not isinstance(value, str):
                return f"gives a category that is not a string{where}"
            try:
                check_category(value, None)
            except DslError:
                return f"gives a category that is not one word: {printable(value, 60)!r}{where}"
        if isinstance(node, ast.FunctionDef):
            bad = _bad_names(node)
            if bad:
                return f"{bad}{where}"
    return None


def _syntax_tree(dsl: str) -> ast.Module | None:
    """The program's syntax tree: the DSL parser's, or Python's own when the DSL parser
    refused an identifier (so that a hostile name is judged here, not merely repaired);
    None when the text is not Python at all."""
    try:
        return parse_tree(dsl)
    except DslError:
        pass
    if len(dsl.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
        return None
    try:
        return parse_python(dsl)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _bad_names(fn: ast.FunctionDef) -> str | None:
    """A kernel or parameter name that could not be an identifier of generated C++."""
    try:
        check_name(fn.name, "kernel", None)
        for a in fn.args.args:
            check_public_name(a.arg, "parameter", None)
    except DslError as e:
        return f"has a name generated code could not use: {printable(e.raw, 160)}"
    return None


_UNSAFE_NAME_CHARS = re.compile(r"[^a-z0-9_-]+")


def safe_name(raw: str, limit: int = 40) -> str:
    """A candidate name made of ``[a-z0-9_-]`` only (for study names and file names)."""
    name = _UNSAFE_NAME_CHARS.sub("_", str(raw).lower()).strip("_-")[:limit].strip("_-")
    return name or "candidate"


def printable(text: str, limit: int = 200) -> str:
    """One line of printable ASCII (no control or escape sequences), at most ``limit``."""
    out = "".join(ch if 32 <= ord(ch) < 127 else " " for ch in str(text))
    out = " ".join(out.split())
    return out if len(out) <= limit else out[: limit - 3] + "..."
