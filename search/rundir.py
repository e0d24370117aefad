"""The run directory: made and proved writable before any work, and held by one driver."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from .errors import SearchSetupError


def make_run_dir(path: Path) -> None:
    """Create the run directory and prove it is writable, before any work."""
    if path.exists() and not path.is_dir():
        raise SearchSetupError(f"run directory {path} exists and is not a directory; "
                               f"give --out a directory (new or from an earlier run)")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".write-test-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise SearchSetupError(f"cannot use {path} as the run directory: "
                               f"{e.strerror or e}{f' ({e.filename})' if e.filename else ''}") from None


class DriverLock:
    """Refuse to run two live drivers on one run dir (resume assumes the old one is dead)."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / "driver.lock"

    def acquire(self) -> None:
        host = socket.gethostname()
        if self.path.exists():
            try:
                info = json.loads(self.path.read_text())
            except (OSError, ValueError):
                info = {}
            pid = int(info.get("pid", 0) or 0)
            if info.get("host") == host and pid and pid != os.getpid() and _pid_alive(pid):
                raise SearchSetupError(
                    f"another run (pid {pid}, started {_ago(info.get('since'))}) is using "
                    f"{self.path.parent}; wait for it or stop it before resuming"
                )
        self.path.write_text(json.dumps({"pid": os.getpid(), "host": host, "since": time.time()}))

    def release(self) -> None:
        try:
            info = json.loads(self.path.read_text())
            if info.get("pid") == os.getpid():
                self.path.unlink()
        except (OSError, ValueError):
            pass


def _ago(since: Any) -> str:
    try:
        return f"{max(0.0, time.time() - float(since)):.0f} s ago"
    except (TypeError, ValueError):
        return "at an unknown time"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is dead for our purpose
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True
