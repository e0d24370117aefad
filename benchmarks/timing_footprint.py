"""Disk and memory footprint of timing the largest registry op, the way a user runs it.

The largest op is the one whose inputs + outputs at its default full shapes are the most
bytes. It is checked and timed with ``ascendcraft check --op NAME`` in a subprocess (with a
fresh ``$TMPDIR``), while this script polls /proc every ``--poll-ms``:

* disk: bytes allocated by the run's scratch files (``/dev/shm/acx-<pid>-*`` GM files and
  ``$TMPDIR/acx-<pid>-*`` traces);
* memory: resident set (VmRSS) and proportional set (Pss, shared pages split between the
  processes that map them) summed over the whole process tree - the CLI, the emulator's
  fork server and its child - plus the peak of each process.

Prints the figures, the CLI's modeled time (timing is MODELED, not measured) and that the
scratch directories are gone afterwards.

    python benchmarks/timing_footprint.py [--op NAME] [--poll-ms 50]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHECK = "import sys; from ascendcraft.cli import main; sys.exit(main())"


def io_bytes(task) -> int:
    """Bytes of a task's tensor inputs and outputs at its default full shapes."""
    import torch

    def nbytes(shape, dtype) -> int:
        n = 1
        for d in shape:
            n *= int(d)
        return n * torch.empty((), dtype=dtype).element_size()

    ins = sum(nbytes(s.shape, s.dtype) for s in task.inputs if s.is_tensor)
    return ins + sum(nbytes(sh, dt) for sh, dt in task.output_meta(task.shapes))


def largest_op() -> tuple[str, int, list[str]]:
    """(name, bytes, other ops of the same size); ties go to the alphabetically last."""
    from ascendcraft.tasks.registry import list_tasks

    sizes = [(io_bytes(t), t.name) for t in list_tasks()]
    size, name = max(sizes)
    return name, size, sorted(n for b, n in sizes if b == size and n != name)


def _tree(root: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(p))
    out, todo = [root], [root]
    while todo:
        for c in kids.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _memory_kib(pid: int) -> tuple[int, int]:
    """(VmRSS, Pss) of a process in KiB; (0, 0) if it is gone."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except (OSError, ValueError):
        pass
    return rss, pss


def _role(pid: int, root: int) -> str:
    if pid == root:
        return "cli"
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        with open(f"/proc/{pid}/stat") as fh:
            ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return "gone"
    if b"_server.py" in cmd:
        return "server" if ppid == root else "emulator child"
    if b"_confine.py" in cmd or any(t in cmd for t in (b"g++", b"cc1plus", b"/as\0", b"collect2", b"ld\0")):
        return "compiler"
    return "forked (pre-exec)" if ppid == root else "other"


def _disk_bytes(dirs: list[Path]) -> int:
    total = 0
    for d in dirs:
        for root, _, files in os.walk(d):
            for f in files:
                try:
                    total += os.stat(os.path.join(root, f)).st_blocks * 512
                except OSError:
                    pass
    return total


def _scratch(pid: int, roots: list[Path]) -> list[Path]:
    return [p for r in roots if r.is_dir() for p in r.iterdir() if p.name.startswith(f"acx-{pid}-")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--op", help="op to time (default: the largest registry op by I/O bytes)")
    ap.add_argument("--poll-ms", type=float, default=50.0)
    a = ap.parse_args()
    from ascendcraft.emulator.rundir import shm_root
    from ascendcraft.tasks.registry import get_task

    ties: list[str] = []
    if a.op:
        op, size = a.op, io_bytes(get_task(a.op))
    else:
        op, size, ties = largest_op()
    print(f"op: {op} — inputs + outputs at the default full shapes: {size:,} B ({size / 2**30:.2f} GiB)"
          + (f"; as large: {', '.join(ties)}" if ties else ""))
    with tempfile.TemporaryDirectory(prefix="footprint-") as tmp:
        env = {**os.environ, "TMPDIR": tmp}
        t0 = time.perf_counter()
        cli = subprocess.Popen([sys.executable, "-c", CHECK, "check", "--op", op, "--json"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        roots = [Path(tmp), shm_root()]
        peak_disk = peak_trace = peak_shm = 0
        peak_rss = peak_pss = 0
        per_role: dict[str, int] = {}
        samples = 0
        while cli.poll() is None:
            dirs = _scratch(cli.pid, roots)
            trace = _disk_bytes([d for d in dirs if d.parent == Path(tmp)])
            shm = _disk_bytes([d for d in dirs if d.parent != Path(tmp)])
            peak_trace, peak_shm = max(peak_trace, trace), max(peak_shm, shm)
            peak_disk = max(peak_disk, trace + shm)
            rss = pss = 0
            for pid in _tree(cli.pid):
                r, p = _memory_kib(pid)
                rss, pss = rss + r, pss + p
                role = _role(pid, cli.pid)
                per_role[role] = max(per_role.get(role, 0), p)
            peak_rss, peak_pss = max(peak_rss, rss), max(peak_pss, pss)
            samples += 1
            time.sleep(a.poll_ms / 1000)
        out, err = cli.communicate()
        wall = time.perf_counter() - t0
        left = _scratch(cli.pid, roots)
    try:
        rep = json.loads(out)
    except json.JSONDecodeError:
        print(f"check failed (exit {cli.returncode}):\n{err[-3000:]}")
        sys.exit(1)
    best = next((c for c in rep["candidates"] if c.get("candidate") == rep.get("best")), {})
    print(f"ascendcraft check --op {op}: exit {cli.returncode}, {wall:.1f} s wall, {samples} samples")
    print(f"  best {rep.get('best')}: modeled {rep.get('modeled_us', float('nan')):.1f} us (MODELED), "
          f"{best.get('trace_records', 0):,} trace records, timing run + model {best.get('model_wall_s', 0):.1f} s")
    print(f"  peak disk of scratch files: {peak_disk / 2**20:,.0f} MiB "
          f"(traces {peak_trace / 2**20:,.0f} MiB, shared-memory GM files {peak_shm / 2**20:,.0f} MiB)")
    print(f"  peak memory of the process tree: RSS sum {peak_rss / 2**20:.2f} GiB, "
          f"PSS sum {peak_pss / 2**20:.2f} GiB")
    print("  peak PSS per process: " + ", ".join(f"{k} {v / 2**20:.3f} GiB" for k, v in sorted(per_role.items())
                                                if k != "gone"))
    print(f"  scratch directories left after exit: {len(left)}")


if __name__ == "__main__":
    main()
