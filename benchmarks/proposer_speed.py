"""What the proposer chain costs: wall time of ``propose(task)`` per task, and who served it.

Matching recipes by meaning traces the task's reference and the candidate ops' references
on meta tensors and runs a small numeric check, so ``propose`` is no longer a dictionary
look-up. This prints, for every registry op and every task file under ``tests/taskfiles``
(recursively), the time of the first call (cold caches, as ``ascendcraft check`` sees it)
and of a second call (registry traces cached), grouped by the proposer that served the
task, plus the process's peak resident memory.

    python benchmarks/proposer_speed.py
    python benchmarks/proposer_speed.py --files-only
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path

from ascendcraft.search.builtin import propose
from ascendcraft.search.proposer import ProposerError

from ascendcraft.tasks.registry import get_task, task_names
from ascendcraft.tasks.taskfile import load_task_file

TASKFILES = Path(__file__).resolve().parent.parent / "tests" / "taskfiles"


def _timed(task) -> tuple[float, str]:
    t0 = time.perf_counter()
    try:
        origins = sorted({c.origin for c in propose(task)})
        who = "+".join(origins)
    except ProposerError:
        who = "refused"
    return time.perf_counter() - t0, who


def _report(label: str, rows: list[tuple[str, str, float, float]]) -> None:
    print(f"\n{label}: {len(rows)} tasks")
    print(f"  {'served by':<10} {'n':>4} {'cold mean ms':>13} {'cold max ms':>12} "
          f"{'warm mean ms':>13}  slowest")
    for who in sorted({r[1] for r in rows}):
        sel = [r for r in rows if r[1] == who]
        cold = [r[2] * 1e3 for r in sel]
        warm = [r[3] * 1e3 for r in sel]
        slowest = max(sel, key=lambda r: r[2])[0]
        print(f"  {who:<10} {len(sel):>4} {statistics.mean(cold):>13.1f} {max(cold):>12.1f} "
              f"{statistics.mean(warm):>13.1f}  {slowest}")
    print(f"  total cold {sum(r[2] for r in rows):.2f} s, warm {sum(r[3] for r in rows):.2f} s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files-only", action="store_true", help="skip the registry ops")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    propose(get_task("relu"))  # imports and torch's first dispatch, not the proposer's cost
    print(f"warm-up (imports, first trace): {time.perf_counter() - t0:.2f} s")
    if not args.files_only:
        rows = []
        for name in task_names():
            task = get_task(name)
            cold, who = _timed(task)
            warm, _ = _timed(task)
            rows.append((name, who, cold, warm))
        _report("registry ops", rows)
    rows = []
    for path in sorted(TASKFILES.rglob("*.py")):
        task = load_task_file(path)
        cold, who = _timed(task)
        warm, _ = _timed(task)
        rows.append((str(path.relative_to(TASKFILES)), who, cold, warm))
    _report("task files", rows)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak resident memory: {peak:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
