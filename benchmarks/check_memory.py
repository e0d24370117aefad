"""Peak resident memory of ``ascendcraft check`` over the largest corpus task files.

Each check runs in its own process (``ascendcraft check --task FILE``, timing model on), so
its peak RSS is its own (``os.wait4``'s ``ru_maxrss``). The files are the ``--count`` largest
of ``tests/taskfiles/corpus`` by the bytes of their full-shape inputs (1-8 GiB shapes): a
check allocates only the reduced shapes it runs, and the model reads a summarised trace, so
the peak must stay under the ceiling whatever the task size.

    python benchmarks/check_memory.py [--count 6] [--ceiling-gib 4]

Prints one line per file and exits 1 if any peak is over the ceiling.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from ascendcraft.tasks.taskfile import load_task_file

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "taskfiles" / "corpus"


def largest(count: int) -> list[tuple[int, Path]]:
    """The ``count`` corpus files with the most full-shape input bytes (loaded on meta)."""
    sized = [(load_task_file(p).total_bytes, p) for p in sorted(CORPUS.glob("*.py"))]
    return sorted(sized, key=lambda s: -s[0])[:count]


def peak_rss(path: Path) -> tuple[int, float, int]:
    """(exit code, wall seconds, peak RSS in bytes) of one ``check`` process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "ascendcraft.cli", "check", "--task", str(path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    return os.waitstatus_to_exitcode(status), time.perf_counter() - t0, usage.ru_maxrss * 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=6)
    ap.add_argument("--ceiling-gib", type=float, default=4.0)
    args = ap.parse_args()
    ceiling = args.ceiling_gib * (1 << 30)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    over = 0
    for nbytes, path in largest(args.count):
        rc, wall, rss = peak_rss(path)
        over += rss > ceiling
        print(f"{path.name:<34} inputs {nbytes / (1 << 30):5.2f} GiB  check exit {rc}  "
              f"{wall:6.1f} s  peak RSS {rss / (1 << 20):7.0f} MiB"
              f"{'  OVER THE CEILING' if rss > ceiling else ''}")
    print(f"ceiling {args.ceiling_gib:g} GiB: {'all under' if not over else f'{over} over'}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
