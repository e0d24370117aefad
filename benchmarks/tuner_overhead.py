"""The tuner's own overhead in a real ``ascendcraft tune`` run, as a fraction of its wall time.

Runs ``ascendcraft tune --op OP --budget N --workers W`` as a fresh process for each ``W``
(default softmax, budget 30, workers 1 and 2 — two or more go through Ray) and reads the
timings the driver records in ``summary.json``:

* **evaluation** — building, emulating, verifying and modelling, measured inside
  ``Objective.evaluate`` (summed over workers), plus the end-of-run re-validation;
* **Ray start-up and shut-down** — ``ray.init``/``ray.shutdown``, once per run; reported
  separately, and the overhead is printed both without and with them;
* **tuner overhead** — everything else on the driver that is not spent waiting for workers:
  opening storage and studies, the objective's warm-up (its first feasibility checks, which
  import torch; overlapped with Ray's start-up, only the rest is counted), Optuna ask/tell
  (samplers), writes to the storage, the static feasibility checks before a build, handing
  jobs to the executor, the trial log, the summary, T4 export and the plots.  The target is
  < 10% of wall.

With several workers the driver's time overlaps the workers', so the overhead above is the
time the driver kept the run from finishing; ``worker utilisation`` (evaluation seconds /
(workers x loop wall)) shows how busy the workers were, idle time included (scheduling,
worker start-up, and the tail of the run where fewer trials than workers remain).

    python benchmarks/tuner_overhead.py                      # softmax, budget 30, workers 1 and 2
    python benchmarks/tuner_overhead.py --op relu --budget 40 --workers 1
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
from typing import Any

TARGET = 0.10


def run_tune(
    op: str, budget: int, workers: int, soc: str, out: Path, sampler: str
) -> tuple[dict, float]:
    cmd = [
        sys.executable,
        "-m",
        "ascendcraft.cli",
        "tune",
        "--op",
        op,
        "--budget",
        str(budget),
        "--workers",
        str(workers),
        "--soc",
        soc,
        "--sampler",
        sampler,
        "--out",
        str(out),
        "--json",
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    wall = time.perf_counter() - t0
    summary = out / "summary.json"
    if not summary.exists():
        raise SystemExit(f"tune failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(summary.read_text()), wall


def breakdown(times: dict[str, Any]) -> dict[str, float]:
    """The overhead components; ``other`` is the rest of the loop (trial log, bookkeeping)."""
    keys = (
        "setup_s",
        "warmup_wait_s",
        "sampler_s",
        "storage_s",
        "feasible_s",
        "submit_s",
        "report_s",
    )
    parts = {k: float(times.get(k, 0.0)) for k in keys}
    parts["other_s"] = max(0.0, float(times["overhead_s"]) - sum(parts.values()))
    return parts


def report(
    op: str, budget: int, workers: int, d: dict[str, Any], process_s: float
) -> dict[str, Any]:
    t = d["times"]
    wall = float(t["wall_s"])
    over = float(t["overhead_s"])
    start = float(t["executor_startup_s"])
    close = float(t.get("executor_close_s", 0.0))
    frac = over / wall
    frac_ray = (over + start + close) / wall
    loop = float(t.get("loop_s") or 0.0)
    util = float(t["evaluate_s"]) / (workers * loop) if loop > 0 else float("nan")
    evaluated = int(d["evaluated"])
    best = d.get("best") or {}
    outcome = best.get("outcome") or {}
    print(
        f"\n{op}, budget {budget}, workers {workers}: run_search wall {wall:.1f} s "
        f"(process {process_s:.1f} s incl. imports), {evaluated} evaluated, "
        f"{d.get('infeasible', 0)} infeasible, {d.get('duplicates', 0)} duplicates"
    )
    print(f"  evaluation, summed over workers  {float(t['evaluate_s']):8.2f} s")
    print(f"  driver waiting on workers        {float(t['wait_s']):8.2f} s")
    print(f"  re-validation                    {float(t['revalidate_s']):8.2f} s")
    print(f"  executor (Ray) start-up, once    {start:8.2f} s")
    print(f"  executor (Ray) shut-down, once   {close:8.2f} s")
    print(
        f"  tuner overhead                   {over:8.2f} s = {100 * frac:.1f}% of wall "
        f"({'OK' if frac < TARGET else 'ABOVE'} target < {100 * TARGET:.0f}%); "
        f"{100 * frac_ray:.1f}% counting Ray start-up and shut-down"
    )
    for k, v in breakdown(t).items():
        print(f"    {k[:-2]:<30} {v:8.2f} s")
    print(
        f"  in-loop overhead per evaluated trial {float(t['overhead_per_trial_ms']):.1f} ms; "
        f"worker utilisation {100 * util:.0f}%"
    )
    if outcome:
        print(
            f"  winner {best.get('candidate')} {json.dumps(best.get('params'))}: "
            f"{outcome.get('time_us'):.1f} us modeled"
        )
    return {
        "op": op,
        "budget": budget,
        "workers": workers,
        "wall_s": wall,
        "process_s": process_s,
        "overhead_s": over,
        "overhead_frac": frac,
        "overhead_frac_with_startup": frac_ray,
        "worker_utilisation": util,
        "breakdown": breakdown(t),
        "times": t,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--op", default="softmax")
    ap.add_argument("--budget", type=int, default=30)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--soc", default="Ascend910B2")
    ap.add_argument("--sampler", default="tpe")
    ap.add_argument("--out", type=Path, help="keep the run directories here (default: a temp dir)")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    a = ap.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        base = a.out or Path(tmp)
        for w in a.workers:
            out = base / f"{a.op}-b{a.budget}-w{w}-{time.strftime('%Y%m%d-%H%M%S')}"
            d, process_s = run_tune(a.op, a.budget, w, a.soc, out, a.sampler)
            results.append(report(a.op, a.budget, w, d, process_s))
    worst = max(r["overhead_frac"] for r in results)
    print(f"\nworst tuner overhead {100 * worst:.1f}% of wall (target < {100 * TARGET:.0f}%)")
    if a.json:
        a.json.write_text(json.dumps(results, indent=2))
    return 0 if worst < TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
