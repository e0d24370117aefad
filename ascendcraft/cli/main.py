"""The entry point: parse, validate, run a verb; every error ends as one paragraph."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

from .parser import build_parser, validate
from .shell import EXIT_INTERNAL, EXIT_USAGE, one_paragraph


def _user_error_types() -> tuple[type[BaseException], ...]:
    """The user-facing errors of the layers below (imported only if they can be: the error
    report itself must not fail)."""
    import importlib

    found: list[type[BaseException]] = []
    for module, name in (("app.errors", "UserError"), ("tasks.task", "TaskError"),
                         ("search.errors", "SearchSetupError"), ("library.store", "LibraryError"),
                         ("backends.base", "BackendUnavailable")):
        try:
            found.append(getattr(importlib.import_module(f"ascendcraft.{module}"), name))
        except Exception:  # noqa: BLE001, S112 - then it is reported as an internal error
            continue
    return tuple(found)


def _internal_error(args: argparse.Namespace, exc: BaseException) -> str:
    """Write the traceback to the run directory (tune) or a temp log dir; the message."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    stamp = time.strftime("%Y%m%d-%H%M%S")
    places = []
    run_dir = getattr(args, "run_dir", None)
    if run_dir is not None and Path(run_dir).is_dir():
        places.append(Path(run_dir) / f"internal-error-{stamp}.txt")
    places.append(Path(tempfile.gettempdir()) / "ascendcraft" / f"internal-error-{stamp}-{os.getpid()}.txt")
    where = "could not be written anywhere"
    for path in places:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"ascendcraft {' '.join(getattr(args, 'argv', []))}\n\n{text}")
        except OSError:
            continue
        where = f"written to {path}"
        break
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    return (f"internal error: {type(exc).__name__}: {first}; full traceback {where}. This is a bug "
            f"in ascendcraft, not in your input; set ASCENDCRAFT_DEBUG=1 to see it here")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    try:
        validate(args)
        return int(args.fn(args) or 0)
    except KeyboardInterrupt:
        print(f"ascendcraft {args.cmd}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - every error ends as one paragraph
        if isinstance(e, _user_error_types()):
            msg = str(e).strip().strip("'\"")  # KeyError quotes its message
            print(one_paragraph(f"ascendcraft {args.cmd}: {msg}"), file=sys.stderr)
            return EXIT_USAGE
        if os.environ.get("ASCENDCRAFT_DEBUG") == "1":
            raise
        print(one_paragraph(f"ascendcraft {args.cmd}: {_internal_error(args, e)}"), file=sys.stderr)
        return EXIT_INTERNAL
