"""Evaluated trials per second through the Ray executor with 1 and 2 workers, builds cached.

A fixed list of real trials (one op's first candidate, its first N feasible tunable
assignments) is evaluated once to fill the emulator's build cache, then timed through a
:class:`RayExecutor` of 1 and of 2 workers on one local Ray instance. Each executor's
workers first get one untimed trial each (a worker fetches the objective once and loads
the task), so the figures are the steady state of a long night. The target is a ratio of
at least 1.6 between 2 and 1 workers on a 2-core machine; the machine's load is printed
with the figures (other work on it lowers the ratio: compare runs taken at similar load).

    python benchmarks/cluster_throughput.py                 # relu, 12 trials
    python benchmarks/cluster_throughput.py --op softmax --trials 10
"""

from __future__ import annotations

import argparse
import os
import time

TARGET = 1.6


def _load() -> str:
    try:
        return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "load average unknown"


def _drain(ex, n: int) -> list:
    done = []
    while len(done) < n:
        done.extend(ex.poll(1.0))
    return done


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--op", default="relu")
    ap.add_argument("--soc", default="Ascend910B2")
    ap.add_argument("--trials", type=int, default=12)
    ap.add_argument("--timeout", type=float, default=120.0, help="CPU seconds per trial")
    args = ap.parse_args()

    import ray
    from ascendcraft.cluster.job import run_job
    from ascendcraft.cluster.ray_executor import RayExecutor

    from ascendcraft.app.candidates import propose, searchable
    from ascendcraft.app.objective import KernelObjective
    from ascendcraft.app.task import TaskRef

    ref = TaskRef(op=args.op)
    objective = KernelObjective(ref, args.soc)
    cand = searchable(propose(ref.load()))[0]
    jobs = [p for p in cand.all_params() if objective.feasible(cand, p) is None][:args.trials]
    print(f"{args.op}: candidate {cand.name}, {len(jobs)} trials; {os.cpu_count()} cores; {_load()}")
    t0 = time.perf_counter()
    for p in jobs:  # fill the build cache (content-addressed, on this node's disk)
        out = run_job(objective, cand, p, args.timeout)
        if out.status != "ok":
            print(f"  note: {p} -> {out.status}: {out.message[:100]}")
    print(f"builds cached in {time.perf_counter() - t0:.1f} s")

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             object_store_memory=200 * 1024 * 1024)
    rates = {}
    try:
        for workers in (1, 2):
            ex = RayExecutor(workers)
            ex.start()
            for i in range(workers):  # one untimed trial per worker: objective fetched, task loaded
                ex.submit(-1 - i, objective, cand, jobs[i % len(jobs)], args.timeout)
            _drain(ex, workers)
            t = time.perf_counter()
            pending = list(enumerate(jobs))
            done = []
            while pending or ex.in_flight():
                while pending and ex.in_flight() < ex.capacity:
                    i, p = pending.pop(0)
                    ex.submit(i, objective, cand, p, args.timeout)
                done.extend(ex.poll(1.0))
            wall = time.perf_counter() - t
            ex.close()
            bad = [f.outcome.status for f in done if f.outcome.status != "ok"]
            rates[workers] = len(done) / wall
            print(f"  {workers} worker{'s' if workers > 1 else ''}: {len(done)} trials in "
                  f"{wall:.1f} s = {rates[workers]:.3f} trials/s"
                  + (f" ({len(bad)} not ok: {sorted(set(bad))})" if bad else "")
                  + f"; {_load()}")
    finally:
        ray.shutdown()
    ratio = rates[2] / rates[1]
    print(f"2 workers / 1 worker: {ratio:.2f}x (target >= {TARGET}x): "
          f"{'met' if ratio >= TARGET else 'NOT met'}")


if __name__ == "__main__":
    main()
