"""What a job's processes have done since it started, read from ``/proc``: CPU seconds, and
seconds spent waiting for a CPU.

A trial's time limit means something only if it counts the work the trial did: on a
machine shared with other CPU-heavy processes the wall clock of the same trial stretches
two or three times. So a job's limit is on the CPU time of the process that runs it and of
every process below it (the emulator's fork server and its children, the compiler), and
the time its processes sat on a run queue waiting for a core is known too, so that a job
that neither computes nor waits for a CPU (it sleeps, or waits on something that never
comes) can be told from one that a busy machine slows down.

Linux only (``/proc``); elsewhere the clock sees only this process's CPU time
(``os.times``) and no waiting.
"""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(pid: int | str) -> tuple[int, float] | None:
    """(parent pid, CPU seconds of the process and of its reaped children), or None."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[-1].split()
    try:
        ppid = int(fields[1])
        ticks = sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    except (IndexError, ValueError):
        return None
    return ppid, ticks / _TICK


def _run_queue_wait(pid: int) -> float:
    """Seconds the process's main thread has waited on a run queue (0 if unknown)."""
    try:
        return int((PROC / str(pid) / "schedstat").read_text().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def tree_cpu(root: int | None = None) -> dict[int, float]:
    """CPU seconds of ``root`` (default: this process) and of every live process below it,
    each including the children it has reaped: {pid: seconds}."""
    root = os.getpid() if root is None else root
    if not PROC.is_dir():
        t = os.times()
        return {root: t.user + t.system + t.children_user + t.children_system}
    parents: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        got = _stat(entry.name)
        if got is None:
            continue
        pid = int(entry.name)
        parents.setdefault(got[0], []).append(pid)
        cpu[pid] = got[1]
    out: dict[int, float] = {}
    todo = [root]
    while todo:
        pid = todo.pop()
        if pid in out or pid not in cpu:
            continue
        out[pid] = cpu[pid]
        todo.extend(parents.get(pid, ()))
    return out


class TreeClock:
    """CPU and run-queue seconds of a process tree (default: this process's) since the clock
    was made, as of the last :meth:`sample`.

    A process that finished was reaped by its parent, whose reaped-children time then holds
    its CPU, so each CPU second is counted once: the CPU used is the tree's total now minus
    its total when the clock started (the long-lived fork server's earlier runs), a process
    that was there then and is gone since having been reaped into its parent's. Waiting is
    summed over every process seen, up to its last sample (a short-lived child's last
    moments may be missed)."""

    def __init__(self, root: int | None = None) -> None:
        self.root = os.getpid() if root is None else root
        start = tree_cpu(self.root)
        self._cpu0 = sum(start.values())
        self._wait0 = {pid: _run_queue_wait(pid) for pid in start}
        self._wait = dict(self._wait0)
        self._cpu = 0.0

    def sample(self) -> None:
        now = tree_cpu(self.root)
        for pid in now:
            self._wait[pid] = max(self._wait.get(pid, 0.0), _run_queue_wait(pid))
        self._cpu = max(0.0, sum(now.values()) - self._cpu0)

    @property
    def cpu_s(self) -> float:
        return self._cpu

    @property
    def waited_s(self) -> float:
        return sum(w - self._wait0.get(pid, 0.0) for pid, w in self._wait.items())
