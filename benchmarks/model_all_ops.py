"""Modeled time vs roofline for every built-in op at its default (full) shapes.

For each op, every builtin candidate is built at its default tunables (or the nearest
feasible assignment), run trace-only at the task's real shapes in the emulator, and the
trace is simulated on the SoC model. Prints, per op: the best candidate's modeled time,
the roofline bound, % of roofline, the eager-PyTorch model, speedup, the bound, and the
wall time the model took (trace-only emulation + simulation). All times are MODELED.

Also models a 2^31-element (8 GiB) fp32 relu through the same real path (the issue's
model-speed target: under 5 s). Correctness is not checked here (tests do that).

    python benchmarks/model_all_ops.py [--soc Ascend910B2] [--ops relu,softmax] [--skip-big]
"""

from __future__ import annotations

import argparse
import statistics
import time

from ascendcraft.search.builtin import ProposerError, propose

from ascendcraft.app.checking import first_feasible
from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.model import MODEL_VERSION
from ascendcraft.tasks.registry import get_task, list_tasks


def model_op(task, soc: str) -> dict | None:
    ev = Evaluator(task, soc, seeds=(0,))
    best = None
    for cand in propose(task):
        prep = prepare(cand.name, cand.source)
        params = first_feasible(ev, prep)
        if params is None:
            continue
        t0 = time.perf_counter()
        art = ev.build(prep, params)
        t1 = time.perf_counter()
        tim = ev.time(art)
        tim["build_s"] = t1 - t0
        tim["candidate"] = cand.name
        if "modeled_us" in tim and (best is None or tim["modeled_us"] < best["modeled_us"]):
            best = tim
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--soc", default="Ascend910B2")
    ap.add_argument("--ops", help="comma-separated subset (default: every built-in op)")
    ap.add_argument("--skip-big", action="store_true", help="skip the 2^31-element relu")
    a = ap.parse_args()
    tasks = [get_task(n) for n in a.ops.split(",")] if a.ops else list_tasks()
    print(f"{'op':28s} {'category':13s} {'modeled us':>11s} {'roofline us':>11s} {'% roof':>6s} "
          f"{'eager us':>10s} {'speedup':>7s} {'bound':8s} {'model s':>7s}  candidate")
    fracs, walls, speedups = [], [], []
    t_all = time.perf_counter()
    for task in tasks:
        try:
            r = model_op(task, a.soc)
        except ProposerError as e:
            print(f"{task.name:28s} no candidate: {e}")
            continue
        if r is None:
            print(f"{task.name:28s} no feasible candidate")
            continue
        fracs.append(r["roofline_frac"])
        walls.append(r["model_wall_s"])
        speedups.append(r["speedup"])
        print(f"{task.name:28s} {task.category:13s} {r['modeled_us']:11.1f} {r['roofline_us']:11.1f} "
              f"{100 * r['roofline_frac']:6.1f} {r['eager_us']:10.1f} {r['speedup']:7.2f} {r['bound']:8s} "
              f"{r['model_wall_s']:7.2f}  {r['candidate']}", flush=True)
    if fracs:
        print(f"\n{len(fracs)} ops (modeled, default tunables): median {100 * statistics.median(fracs):.1f}% of "
              f"roofline, min {100 * min(fracs):.1f}%, max {100 * max(fracs):.1f}%; model wall time "
              f"median {statistics.median(walls):.2f} s, max {max(walls):.2f} s, total "
              f"{time.perf_counter() - t_all:.0f} s including builds")
        q = statistics.quantiles(speedups, n=4) if len(speedups) > 1 else speedups * 3  # one op: its own
        print(f"speedup vs the eager model (model {MODEL_VERSION}): median {statistics.median(speedups):.2f}x, "
              f"quartiles {q[0]:.2f}-{q[2]:.2f}x, min {min(speedups):.2f}x, max {max(speedups):.2f}x; "
              f"{sum(s > 1 for s in speedups)} of {len(speedups)} ops above 1.0x")
    if not a.skip_big:
        big = get_task("relu").with_shape((1 << 31,))
        ev = Evaluator(big, a.soc, seeds=(0,))
        cand = propose(big)[0]
        prep = prepare(cand.name, cand.source)
        params = {"TILE": 8192, "DEPTH": 2, "CORES": 48}
        r = ev.time(ev.build(prep, params))
        print(f"\nrelu over 2^31 fp32 elements (8 GiB in, 8 GiB out), TILE 8192: modeled "
              f"{r['modeled_us']:.0f} us ({100 * r['roofline_frac']:.1f}% of roofline), "
              f"{r['trace_records']:,} trace records, model wall time {r['model_wall_s']:.2f} s "
              "(trace-only emulation + simulation)")


if __name__ == "__main__":
    main()
