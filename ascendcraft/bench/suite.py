"""What a bench runs: the built-in registry, or a folder of benchmark-format task files
(``class Model``, ``get_inputs``, ``get_init_inputs``), optionally cut to some categories.

A task file the frontend refuses stays in the suite: the bench counts it as not compiled
and reports the frontend's reason (its category is then guessed from the source's names).
The suite is written to ``suite.json`` in the bench directory, so the report can be
regenerated later without loading any task again.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from ..app.errors import UserError
from ..campaign.run import unit_key
from ..tasks.task import CATEGORIES

FILE = "suite.json"


@dataclass(frozen=True)
class Entry:
    """One task of the suite: a registry ``op`` or a ``task_file`` (absolute, for the run;
    ``name`` is what reports show), its category, and the frontend's reason when it refused
    the file (then ``category`` is a guess)."""

    name: str
    category: str
    op: str | None = None
    task_file: str | None = None
    refused: str = ""

    def key(self, soc: str) -> str:
        return unit_key(self.name, soc)


def categories_arg(text: str | None) -> tuple[str, ...]:
    """``--categories a,b``: known category names, in the order given."""
    if not text:
        return ()
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in CATEGORIES]
    if unknown or not names:
        raise UserError(f"unknown categor{'ies' if len(unknown) > 1 else 'y'} "
                        f"{', '.join(unknown) or repr(text)}; known: {', '.join(CATEGORIES)}")
    return names


def builtin_suite(categories: tuple[str, ...] = ()) -> list[Entry]:
    """Every registry op (of ``categories``, if given), by category then name."""
    from ..tasks.registry import list_tasks

    return [Entry(t.name, t.category, op=t.name) for t in list_tasks()
            if not categories or t.category in categories]


def _refused_category(path: Path) -> str:
    from ..tasks.taskfile import guess_category

    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "unknown"
    return guess_category(text, (), ())


def folder_suite(folder: Path, categories: tuple[str, ...] = ()) -> list[Entry]:
    """Every ``*.py`` file directly in ``folder``, loaded once to learn its category; a file
    the frontend refuses is an entry with its reason."""
    from ..tasks.taskfile import load_task_file

    if not folder.is_dir():
        raise UserError(f"--suite {folder}: not a directory (give builtin or a folder of "
                        f"task files)")
    files = sorted(p for p in folder.glob("*.py") if p.is_file())
    if not files:
        raise UserError(f"--suite {folder}: no task files (*.py) there")
    out = []
    for f in files:
        try:
            task = load_task_file(f)
            entry = Entry(f.stem, task.category, task_file=str(f.resolve()))
        except Exception as e:  # noqa: BLE001 - a broken task file is a refused entry
            reason = public(" ".join(str(e).split())[:1000] or type(e).__name__, folder)
            entry = Entry(f.stem, _refused_category(f), task_file=str(f.resolve()),
                          refused=reason)
        if not categories or entry.category in categories:
            out.append(entry)
    return out


def names_arg(text: str | None) -> tuple[str, ...]:
    """``--only a,b``: task names, in the order given."""
    return tuple(dict.fromkeys(n.strip() for n in (text or "").split(",") if n.strip()))


def resolve(suite: str, categories: tuple[str, ...] = (), only: tuple[str, ...] = ()
            ) -> list[Entry]:
    """``--suite builtin|DIR`` as entries (of ``categories`` and named in ``only``, when
    given); a name ``only`` gives that the suite lacks, or an empty selection, is refused."""
    entries = builtin_suite(categories) if suite == "builtin" else folder_suite(Path(suite), categories)
    if only:
        missing = [n for n in only if n not in {e.name for e in entries}]
        if missing:
            raise UserError(f"--only: {', '.join(missing)} not in suite {suite}"
                            + (f" (categories {', '.join(categories)})" if categories else ""))
        entries = [e for e in entries if e.name in only]
    if not entries:
        raise UserError(f"--suite {suite}: no task in categories {', '.join(categories)}")
    return entries


def public(text: str, *roots: Path) -> str:
    """``text`` without this machine's absolute paths: each of ``roots`` (resolved) becomes
    its last part, the home directory ``~``."""
    for root in roots:
        text = text.replace(str(root.resolve()), root.resolve().name)
    return text.replace(str(Path.home()), "~")


def save(out: Path, meta: dict, entries: list[Entry]) -> None:
    """Write ``suite.json`` (the bench's description and its entries) atomically."""
    path = out / FILE
    tmp = path.with_name(f".{FILE}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({**meta, "entries": [asdict(e) for e in entries]}, indent=1))
    os.replace(tmp, path)


def load(out: Path) -> tuple[dict, list[Entry]]:
    """``suite.json`` of a bench directory: (description, entries)."""
    path = out / FILE
    try:
        d = json.loads(path.read_text())
        entries = [Entry(**e) for e in d.pop("entries")]
    except FileNotFoundError:
        raise UserError(f"{out} holds no bench ({FILE} is missing)") from None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise UserError(f"{path} cannot be read as a bench suite ({e})") from None
    return d, entries
