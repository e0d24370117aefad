"""The issue-14 speed targets, measured as a new user meets them: in a fresh clone.

Clones the repository this script belongs to (its committed HEAD) into a temporary
directory, makes a virtual environment there that installs the clone (``pip install -e .
--no-deps``) and borrows the already installed dependencies of the running interpreter
(torch, Optuna, Ray: installing them again measures the disk, not ascendcraft), and runs,
each with an empty outcome cache and the machine's ``uptime`` before and after:

* ``ascendcraft tune --op softmax --budget 20``  (target: <= 90 s wall on 2 cores)
* ``ascendcraft tune --op matmul --budget 200``  (target: <= 120 s)
* ``python benchmarks/model_all_ops.py``         (target: <= 120 s)

For a tune it also prints the trials that ended as timeout (target: none) and where the
tuner's time went (``summary.json`` ``times``). ``--cold`` also empties the emulator's
build cache (a first run on a new machine); by default the shared build cache is used.
Other CPU-heavy work on the machine distorts the absolute figures: compare the ``uptime``
load averages printed with each, and compare ratios within one run.

    python benchmarks/targets.py [--only softmax,matmul,model_all_ops] [--cold] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import site
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGETS = {
    "softmax": (["tune", "--op", "softmax", "--budget", "20"], 90.0),
    "matmul": (["tune", "--op", "matmul", "--budget", "200"], 120.0),
    "model_all_ops": (None, 120.0),
}


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        load = os.getloadavg()
        return f"load average: {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}"


def fresh_clone(where: Path) -> tuple[Path, Path]:
    """(clone, its python): HEAD of this repository, installed into its own venv."""
    clone = where / "ascendcraft"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    venv = clone / ".venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    inner = subprocess.run([str(py), "-c", "import site; print(site.getsitepackages()[0])"],
                           capture_output=True, text=True, check=True).stdout.strip()
    # the running interpreter's packages, behind the clone's own (its editable install wins)
    outer = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (Path(inner) / "borrowed_dependencies.pth").write_text("\n".join(outer) + "\n")
    # the build backend too (the new venv's bundled setuptools may be too old)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(outer)}
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "-e", str(clone)], check=True, env=env)
    return clone, py


def run_one(name: str, clone: Path, py: Path, env: dict[str, str]) -> dict:
    argv, target = TARGETS[name]
    out_dir = clone / "results" / name
    if argv is None:
        cmd = [str(py), str(clone / "benchmarks" / "model_all_ops.py")]
    else:
        cmd = [str(py), "-m", "ascendcraft.cli", *argv, "--out", str(out_dir), "--quiet"]
    before = _uptime()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=clone, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    row = {"name": name, "command": " ".join(["ascendcraft", *argv] if argv else
                                             ["python", "benchmarks/model_all_ops.py"]),
           "wall_s": round(wall, 1), "target_s": target, "met": wall <= target and proc.returncode == 0,
           "rc": proc.returncode, "uptime_before": before, "uptime_after": _uptime()}
    summary = out_dir / "summary.json"
    if argv is not None and summary.exists():
        data = json.loads(summary.read_text())
        row["timeouts"] = int((data.get("failed") or {}).get("timeout", 0))
        row["evaluated"] = data.get("evaluated")
        row["times"] = {k: v for k, v in (data.get("times") or {}).items() if isinstance(v, (int, float))}
    if argv is None:
        row["tail"] = proc.stdout.strip().splitlines()[-4:]
    if proc.returncode not in (0, 1):
        row["stderr"] = proc.stderr.strip()[-600:]
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default=",".join(TARGETS), help="comma-separated subset of " + ", ".join(TARGETS))
    ap.add_argument("--cold", action="store_true", help="an empty emulator build cache too")
    ap.add_argument("--keep", action="store_true", help="keep the clone (its results/ holds the runs)")
    ap.add_argument("--json", help="also write the rows to this file")
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n]
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        ap.error(f"unknown target(s) {', '.join(unknown)}")
    where = Path(tempfile.mkdtemp(prefix="ascendcraft-targets-"))
    try:
        clone, py = fresh_clone(where)
        env = {**os.environ, "ASCENDCRAFT_OUTCOME_CACHE": str(where / "outcomes.sqlite")}
        if args.cold:
            env["ASCENDCRAFT_CACHE"] = str(where / "build-cache")
        rows = []
        for name in names:
            row = run_one(name, clone, py, env)
            rows.append(row)
            extra = f"  timeouts {row['timeouts']}" if "timeouts" in row else ""
            print(f"{row['command']}: {row['wall_s']:.1f} s wall (target <= {row['target_s']:.0f} s: "
                  f"{'met' if row['met'] else 'NOT met'}; exit {row['rc']}){extra}")
            print(f"    before: {row['uptime_before']}")
            print(f"    after:  {row['uptime_after']}")
            if row.get("times"):
                print("    tuner times (s): " + ", ".join(f"{k} {v:.1f}" for k, v in row["times"].items()))
            for line in row.get("tail", []):
                print(f"    | {line}")
            if "stderr" in row:
                print(f"    stderr: {row['stderr']}")
            sys.stdout.flush()
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    finally:
        if args.keep:
            print(f"clone kept in {where}")
        else:
            shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    main()
