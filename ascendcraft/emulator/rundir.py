"""Per-process scratch directories of the emulator runner, removed on every way out.

Why: a run's shared-memory GM file and its trace can be gigabytes. They live in two
directories owned by the calling process, ``/dev/shm/acx-<pid>-<start>-<rand>/`` (GM
files) and ``$TMPDIR/acx-<pid>-<start>-<rand>/`` (traces), where ``<start>`` is the
process start time, so a recycled pid is not mistaken for the owner. They are removed

* after each run (``runner.run_kernel`` deletes its files in ``finally``);
* at interpreter exit (``atexit``) and on a Ctrl-C that ends the program (the default
  SIGINT handler raises KeyboardInterrupt, which unwinds through those ``finally`` blocks);
* on SIGTERM / SIGHUP when the program left them at their default (terminate): a handler
  removes the directories, then re-raises the signal with its default action;
* by the fork server when it sees its parent die (SIGKILL cannot be caught);
* and, if the server died too, by the sweep the next process runs when it creates its
  own directories: every ``acx-<pid>-...`` entry of a dead (or recycled) pid is removed.
"""

from __future__ import annotations

import atexit
import os
import re
import secrets
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PREFIX = "acx-"
_DIR_RE = re.compile(r"^acx-(\d+)-(\d+)-[0-9a-f]{8}$")
_OLD_FILE_RE = re.compile(r"^acx-(\d+)-\d+(\.trace)?$")  # per-run files of earlier versions


@dataclass(frozen=True)
class RunDirs:
    """The calling process's scratch directories (``shm``: GM files, ``tmp``: traces)."""

    pid: int
    shm: Path
    tmp: Path


_state: RunDirs | None = None
_guard = threading.Lock()
_before_exit: list[Callable[[], None]] = []
_handled: set[int] = set()
_atexit_registered = False


def shm_root() -> Path:
    """Where GM files go: ``/dev/shm`` if writable, else the temp dir."""
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        return Path("/dev/shm")
    return Path(tempfile.gettempdir())


def tmp_root() -> Path:
    """Where traces go: ``$TMPDIR`` (``tempfile.gettempdir()``)."""
    return Path(tempfile.gettempdir())


def start_time(pid: int) -> int | None:
    """Start time of a process in clock ticks since boot (/proc), None if it is gone or a
    zombie, -1 if it exists but its start time is unknown (no /proc, or unreadable)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return None if os.path.isdir("/proc") else _exists(pid)
    except OSError:
        return -1
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def _exists(pid: int) -> int | None:
    """Without /proc: -1 if the pid exists (start time unknown), None if not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except OSError:  # EPERM: someone else's process
        pass
    return -1


def _owner_alive(pid: int, started: int | None) -> bool:
    now = start_time(pid)
    if now is None:
        return False
    return not started or now in (-1, started)  # 0: start time unknown when created


def sweep(roots: list[Path] | None = None) -> list[Path]:
    """Remove scratch entries of processes that are gone; returns what was removed.
    Only entries owned by this user are considered."""
    removed: list[Path] = []
    uid = os.getuid()
    for root in roots or sorted({shm_root(), tmp_root()}):
        try:
            entries = list(os.scandir(root))
        except OSError:
            continue
        for e in entries:
            if not e.name.startswith(PREFIX):
                continue
            m = _DIR_RE.match(e.name)
            old = None if m else _OLD_FILE_RE.match(e.name)
            if not (m or old):
                continue
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if st.st_uid != uid:
                continue
            pid = int((m or old).group(1))  # type: ignore[union-attr]
            if _owner_alive(pid, int(m.group(2)) if m else None):
                continue
            path = Path(e.path)
            if m and e.is_dir(follow_symlinks=False):
                shutil.rmtree(path, ignore_errors=True)
            elif old and e.is_file(follow_symlinks=False):
                path.unlink(missing_ok=True)
            else:
                continue
            removed.append(path)
    return removed


def run_dirs() -> RunDirs:
    """This process's scratch directories, created on first use (after a sweep of dead
    owners' leftovers; cleanup handlers are installed then)."""
    global _state
    pid = os.getpid()
    with _guard:
        if _state is not None and _state.pid == pid:
            for d in (_state.shm, _state.tmp):  # removed behind our back: same names again
                if not d.is_dir():
                    d.mkdir(mode=0o700, exist_ok=True)
            return _state
        sweep()
        started = start_time(pid)
        name = f"{PREFIX}{pid}-{max(started or 0, 0)}-{secrets.token_hex(4)}"
        shm, tmp = shm_root() / name, tmp_root() / name
        for d in (shm, tmp):
            d.mkdir(mode=0o700, exist_ok=True)
        _state = RunDirs(pid, shm, tmp)
        _install_handlers()
        return _state


def current() -> RunDirs | None:
    """This process's directories if they were created (not those inherited over fork)."""
    s = _state
    return s if s is not None and s.pid == os.getpid() else None


def on_cleanup(fn: Callable[[], None]) -> None:
    """Call ``fn`` (e.g. stop the fork server) before the directories are removed on a
    terminating signal."""
    _before_exit.append(fn)


def remove() -> None:
    """Remove this process's scratch directories (a later run creates them again, under
    the same names the fork server knows)."""
    s = current()
    if s is None:
        return
    for d in (s.shm, s.tmp):
        shutil.rmtree(d, ignore_errors=True)


def _on_signal(signum: int, frame: object) -> None:
    for fn in list(_before_exit):
        try:
            fn()
        except Exception:  # noqa: BLE001 - cleanup must go on
            pass
    remove()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _install_handlers() -> None:
    """atexit always; signal handlers only from the main thread and only where the
    program kept the default disposition (its own handlers decide for themselves)."""
    global _atexit_registered
    if not _atexit_registered:
        atexit.register(remove)
        _atexit_registered = True
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        if sig in _handled:
            continue
        try:
            if signal.getsignal(sig) is signal.SIG_DFL:
                signal.signal(sig, _on_signal)
        except (ValueError, OSError):
            continue
        _handled.add(sig)
