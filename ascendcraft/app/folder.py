"""``check`` over a folder of task files: one outcome per file plus totals.

A user points it at their own benchmark folder. Each file is loaded and checked on its own:
a file that cannot be loaded or expressed is *refused* with its one-paragraph reason, a file
whose candidates are all wrong *fails*, and neither stops the files after it. An unexpected
error in one file is that file's outcome (``error``), named by its type and first line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..tasks.task import TaskError
from .checking import CheckConfig, check
from .errors import UserError
from .task import TaskRef, load_task
from .timing import timing_kind

OUTCOMES = ("pass", "fail", "refused", "error")


@dataclass
class FileCheck:
    """The outcome of one task file: ``pass``, ``fail``, ``refused`` or ``error``."""

    path: str
    outcome: str
    message: str = ""
    best: str | None = None
    time_us: float | None = None
    timing_kind: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class FolderReport:
    """Every file's outcome, in file-name order, and the totals by outcome."""

    folder: str
    files: list[FileCheck] = field(default_factory=list)

    @property
    def totals(self) -> dict[str, int]:
        return {o: sum(1 for f in self.files if f.outcome == o) for o in OUTCOMES}

    @property
    def all_pass(self) -> bool:
        return bool(self.files) and all(f.outcome == "pass" for f in self.files)

    def to_dict(self) -> dict[str, Any]:
        return {"folder": self.folder, "files": [f.to_dict() for f in self.files],
                "totals": self.totals}


def task_files(folder: str | Path) -> list[Path]:
    """The ``*.py`` files directly in ``folder``, sorted; :class:`UserError` if there are none."""
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise UserError(f"--tasks {folder}: not a directory")
    files = sorted(p for p in root.glob("*.py") if p.is_file() and not p.name.startswith("__"))
    if not files:
        raise UserError(f"--tasks {folder}: no task files (*.py) in it")
    return files


def check_file(path: Path, config: CheckConfig) -> FileCheck:
    """One file's outcome; never raises for what the file contains."""
    try:
        task = load_task(TaskRef(task_file=str(path)), config.soc)
        report = check(task, config)
    except (UserError, TaskError) as e:
        return FileCheck(str(path), "refused", " ".join(str(e).split()))
    except Exception as e:  # noqa: BLE001 - one file's bug is its outcome, not the run's end
        first = (str(e).strip().splitlines() or [""])[0][:300]
        return FileCheck(str(path), "error", f"{type(e).__name__}: {first}")
    best = report.best
    if not report.correct:
        why = "; ".join(f"{c.candidate}: {c.status.value}" for c in report.candidates[:3])
        return FileCheck(str(path), "fail", why)
    return FileCheck(str(path), "pass", best=best.candidate if best else None,
                     time_us=best.time_us if best else None,
                     timing_kind=timing_kind(best.timing) if best else None)


def check_folder(folder: str | Path, config: CheckConfig,
                 progress: Callable[[FileCheck], None] | None = None) -> FolderReport:
    """``check`` of every task file in ``folder``; ``progress`` sees each outcome as it ends."""
    report = FolderReport(str(folder))
    for path in task_files(folder):
        outcome = check_file(path, config)
        report.files.append(outcome)
        if progress is not None:
            progress(outcome)
    return report
