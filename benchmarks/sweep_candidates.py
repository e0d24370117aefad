"""Correctness of every builtin candidate of every registry op at reduced shapes, in two dtypes.

For each built-in op, the task at its own dtype and, for a floating op, at the other of
fp32 / fp16 (fp16 when the op is fp32, fp32 otherwise), is checked the way ``ascendcraft
check`` does: every candidate the builtin proposer writes is built in the emulator and run
on the op's reduced check shapes, several seeds, on the task's own inputs and on signed
inputs, against the PyTorch reference (no timing). Prints one line per (op, dtype): how many
candidates were correct, how many were refused before a build (infeasible at that shape,
with the reason) and every candidate that ran and was wrong or failed, with its message. A wrong
verdict at fp16 / bf16 is re-examined: when the correctly rounded result (the reference run in
float64 on the same inputs, rounded) misses the CPU reference at as many elements, it is listed
as reference-limited, not wrong (the evaluator itself now accepts an output within tolerance of
the correctly rounded result, so this count should stay 0; it is kept as a cross-check). Exits 1 when any candidate was wrong (otherwise), crashed or
failed to build.

This is the evidence behind "each structure is correct on the reduced-shape sweep,
including fp16 inputs and signed data" (issue 18); the tests check the same per family.

    python benchmarks/sweep_candidates.py [--ops softmax,cumsum] [--dtypes own|both] [--json]
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import time

import torch

from ascendcraft.app.checking import CheckConfig, check
from ascendcraft.status import Status
from ascendcraft.tasks.registry import get_task, task_names

BAD = {Status.WRONG, Status.CRASH, Status.BUILD_ERROR, Status.CHECK_ERROR, Status.DSL_ERROR, Status.TIMEOUT}


def dtypes_of(task, mode: str) -> list[torch.dtype]:
    """The task's own dtype, then (``both``) the other of fp32/fp16 for a floating op."""
    own = task.dtype
    out = [own]
    if mode == "both" and own.is_floating_point:
        out.append(torch.float16 if own == torch.float32 else torch.float32)
    return out


_WHERE = re.compile(r"(\d+) of (\d+) elements out of tolerance.*\(shapes (\[.*\]), seed (\d+), (task|signed) inputs\)")


def rounded_truth_misses(task, message: str) -> tuple[int, int] | None:
    """For a wrong verdict: (elements the kernel missed, elements the correctly rounded result
    misses) on the same case — the reference run in float64 on the same inputs, rounded to the
    task's dtype, compared with the task-dtype reference at the task's tolerance. When the second
    is at least the first, the kernel is as close as rounding allows and the verdict measures the
    low-precision CPU reference's own rounding (fp16 sums, an fp16 sum of squares that overflows)."""
    m = _WHERE.search(message)
    if m is None or task.dtype not in (torch.float16, torch.bfloat16):
        return None
    shapes = [tuple(x) for x in ast.literal_eval(m.group(3))]
    ins = task.make_inputs(shapes, seed=int(m.group(4)), signed=m.group(5) == "signed")
    ref = task.run_reference(ins)[0]
    wide = task.with_shape(task.shapes[0], torch.float64)
    ins64 = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in ins]
    truth = wide.run_reference(ins64)[0].to(task.dtype).double()
    tol = task.tolerance
    miss = int(((truth - ref.double()).abs() > tol.atol + tol.rtol * ref.double().abs()).sum())
    return int(m.group(1)), miss


def sweep_op(name: str, dtype: torch.dtype) -> dict:
    task = get_task(name)
    if dtype != task.dtype:
        task = task.with_shape(task.shapes[0], dtype)
    t0 = time.perf_counter()
    try:
        rep = check(task, CheckConfig(soc="Ascend910B2", timing=False))
    except Exception as e:  # a user-level refusal (no proposer serves this dtype): reported, not fatal
        return {"op": name, "dtype": str(dtype).replace("torch.", ""), "refused": f"{type(e).__name__}: {e}",
                "ok": 0, "infeasible": [], "bad": [], "reference_limited": [], "seconds": round(time.perf_counter() - t0, 1)}
    row = {"op": name, "dtype": str(dtype).replace("torch.", ""), "refused": "", "ok": 0,
           "infeasible": [], "bad": [], "reference_limited": [], "seconds": round(time.perf_counter() - t0, 1)}
    for c in rep.candidates:
        if c.status == Status.OK:
            row["ok"] += 1
        elif c.status in BAD:
            why = rounded_truth_misses(task, c.message or "") if c.status == Status.WRONG else None
            if why is not None and why[1] >= why[0]:
                row["reference_limited"].append((c.candidate, why[0], why[1], (c.message or "")[:300]))
            else:
                row["bad"].append((c.candidate, str(c.status), (c.message or "")[:300]))
        else:
            row["infeasible"].append((c.candidate, str(c.status), (c.message or "")[:160]))
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", default="", help="comma-separated op names (default: every registry op)")
    ap.add_argument("--dtypes", choices=("own", "both"), default="both")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    names = [n for n in args.ops.split(",") if n] or task_names()
    rows = []
    for name in names:
        for dt in dtypes_of(get_task(name), args.dtypes):
            row = sweep_op(name, dt)
            rows.append(row)
            if not args.json:
                print(f"{row['op']:28s} {row['dtype']:8s} ok {row['ok']:2d}  infeasible {len(row['infeasible']):2d}"
                      f"  bad {len(row['bad']):2d}  {row['seconds']:6.1f} s  {row['refused']}", flush=True)
                for cand, st, msg in row["bad"]:
                    print(f"    BAD {cand}: {st}: {msg}", flush=True)
                for cand, k_miss, t_miss, _ in row["reference_limited"]:
                    print(f"    reference-limited {cand}: {k_miss} elements off the {row['dtype']} CPU reference; "
                          f"the correctly rounded result is off at {t_miss}", flush=True)
    n_ok = sum(r["ok"] for r in rows)
    n_bad = sum(len(r["bad"]) for r in rows)
    n_inf = sum(len(r["infeasible"]) for r in rows)
    n_lim = sum(len(r["reference_limited"]) for r in rows)
    no_ok = [f"{r['op']}/{r['dtype']}" for r in rows if r["ok"] == 0]
    if args.json:
        print(json.dumps({"rows": rows, "ok": n_ok, "bad": n_bad, "infeasible": n_inf, "reference_limited": n_lim},
                         indent=1))
    else:
        print(f"\n{len(rows)} (op, dtype) checks: {n_ok} candidates correct, {n_bad} wrong or failed, "
              f"{n_lim} off a low-precision CPU reference no more than its correctly rounded result is, "
              f"{n_inf} refused before a build; with no correct candidate: {', '.join(no_ok) or 'none'}")
    return 1 if n_bad else 0


if __name__ == "__main__":
    sys.exit(main())
