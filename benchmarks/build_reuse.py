"""How many builds the trials of a search share: distinct emulator builds per tunable space.

Tiling values (tile sizes, rows per step, core counts) reach the kernel at run time in its
tiling struct, so trials that differ only in them run one build; only the values AscendC
needs at compile time (queue depths such as ``DEPTH``, ``STAGES``, ``L0D``) are in the
source. For every builtin candidate of the chosen registry ops this prints how many
assignments of its tunables lower (up to ``--sample`` of them, drawn at random), how many
distinct builds they need (by the emulator backend's content hash), which tunables change
the build, and what a warm build costs a fresh worker (lowering + hashing + finding the
cached library: what every trial pays when it does not compile).

    python benchmarks/build_reuse.py [--ops softmax,matmul,relu] [--sample 64]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time


def _distinct(prep, cand, sample: int, rng: random.Random):
    from ascendcraft.backends.emulator import _source_hash

    points = list(cand.all_params())
    rng.shuffle(points)
    hashes: dict[str, int] = {}
    lowered = 0
    for params in points[:sample]:
        try:
            k = prep.lower(params)
        except Exception:  # noqa: BLE001, S112 - an assignment that does not lower is not a trial
            continue
        lowered += 1
        h = _source_hash([k.emulator_sources(launch) for launch in k.launches])
        hashes[h] = hashes.get(h, 0) + 1
    varies = []
    base = cand.default_params()
    k0 = prep.lower(base)
    h0 = _source_hash([k0.emulator_sources(launch) for launch in k0.launches])
    for t in cand.tunables:
        for v in t.ordered():
            try:
                k = prep.lower({**base, t.name: v})
            except Exception:  # noqa: BLE001, S112
                continue
            if _source_hash([k.emulator_sources(launch) for launch in k.launches]) != h0:
                varies.append(t.name)
                break
    return lowered, len(hashes), varies


def _warm_build_s(prep, cand) -> float:
    from ascendcraft.backends.emulator import EmulatorBackend

    kernel = prep.lower(cand.default_params())
    EmulatorBackend("Ascend910B2").build(kernel)  # make sure it is on disk
    times = []
    for _ in range(3):
        backend = EmulatorBackend("Ascend910B2")  # a fresh worker: nothing in memory
        t0 = time.perf_counter()
        backend.build(prep.lower(cand.default_params()))
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", default="softmax,layer_norm,relu,matmul,avg_pool2d")
    ap.add_argument("--sample", type=int, default=64)
    args = ap.parse_args()

    from ascendcraft.dsl.kernel import prepare

    from ascendcraft.app.candidates import propose, searchable
    from ascendcraft.tasks import get_task

    rng = random.Random(0)
    print(f"{'candidate':32} {'assignments':>11} {'builds':>6} {'trials/build':>12} "
          f"{'warm build s':>12}  compile-time tunables")
    ratios = []
    for op in [o for o in args.ops.split(",") if o]:
        task = get_task(op)
        for cand in searchable(propose(task)):
            prep = prepare(cand.name, cand.source)
            lowered, builds, varies = _distinct(prep, cand, args.sample, rng)
            warm = _warm_build_s(prep, cand)
            ratio = lowered / builds if builds else 0.0
            ratios.append(ratio)
            print(f"{cand.name:32} {lowered:>11} {builds:>6} {ratio:>12.1f} {warm:>12.4f}  "
                  f"{','.join(varies) or '-'}")
    if ratios:
        print(f"median trials per build: {statistics.median(ratios):.1f}")


if __name__ == "__main__":
    main()
