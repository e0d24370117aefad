"""Confinement of the processes the emulator starts (stdlib only: the fork server imports it
as a sibling file, and it runs as a script to supervise the compiler).

Why: a kernel or a generated source is untrusted work. Whatever runs it must stop when its
time is up or when the process that asked for it dies, and must not exhaust CPU, memory or
disk on the way. The tools are POSIX resource limits, Linux's parent-death signal and
process groups killed whole.

As a script it supervises one command (the compiler)::

    python -I _confine.py --parent PID --cpu S --as BYTES --fsize BYTES -- g++ ...

started by the caller with ``start_new_session=True``, so the supervisor leads a process
group holding the command and everything it spawns (``cc1plus``, ``as``, ``ld``). The
caller kills that group on timeout; if the caller dies first, the parent-death signal
makes the supervisor kill the group itself.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import os
import resource
import signal
import subprocess
import sys

_PR_SET_PDEATHSIG = 1
_libc: ctypes.CDLL | None = None


def set_parent_death_signal(sig: int) -> bool:
    """Ask the kernel to send ``sig`` to this process when the thread that created it exits
    (``prctl(PR_SET_PDEATHSIG)``). Returns False where that is not available (non-Linux)."""
    global _libc
    if not sys.platform.startswith("linux"):
        return False
    try:
        if _libc is None:
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return _libc.prctl(_PR_SET_PDEATHSIG, ctypes.c_ulong(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def lower_limit(which: int, soft: int, hard: int | None = None) -> None:
    """Set a limit to ``soft`` (``hard``: default ``soft``), never above the current hard
    limit (which would fail)."""
    _, cur_hard = resource.getrlimit(which)
    hard = soft if hard is None else hard
    if cur_hard != resource.RLIM_INFINITY:
        soft, hard = min(soft, cur_hard), min(hard, cur_hard)
    resource.setrlimit(which, (soft, hard))


def apply_limits(*, cpu_s: float | None = None, as_bytes: int | None = None,
                 fsize_bytes: int | None = None) -> None:
    """Apply CPU-time, address-space and file-size limits to this process (and so to what
    it starts) and disable core dumps. CPU: SIGXCPU at ``cpu_s``, SIGKILL one second later."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if cpu_s is not None:
        cpu = max(1, int(-(-cpu_s // 1)))
        lower_limit(resource.RLIMIT_CPU, cpu, cpu + 1)
    if as_bytes is not None:
        lower_limit(resource.RLIMIT_AS, int(as_bytes))
    if fsize_bytes is not None:
        lower_limit(resource.RLIMIT_FSIZE, int(fsize_bytes))


def kill_group(pgid: int) -> None:
    """SIGKILL every process of a process group; a group that is already gone is fine."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _supervise(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="_confine.py")
    ap.add_argument("--parent", type=int, required=True)
    ap.add_argument("--cpu", type=float)
    ap.add_argument("--as", dest="as_bytes", type=int)
    ap.add_argument("--fsize", type=int)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        ap.error("no command given")
    group = os.getpgrp()

    def kill_all(signum: int, frame: object) -> None:
        kill_group(group)  # includes this process
        os._exit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, kill_all)
    set_parent_death_signal(signal.SIGTERM)
    if os.getppid() != args.parent:  # the caller died before the signal was armed
        return 128 + signal.SIGTERM
    apply_limits(cpu_s=args.cpu, as_bytes=args.as_bytes, fsize_bytes=args.fsize)
    try:
        proc = subprocess.Popen(cmd)
    except OSError as e:
        print(f"cannot start {cmd[0]}: {e.strerror}", file=sys.stderr)
        return 127
    rc = proc.wait()
    return 128 - rc if rc < 0 else rc


if __name__ == "__main__":
    sys.exit(_supervise(sys.argv[1:]))
