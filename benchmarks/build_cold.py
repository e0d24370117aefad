"""Cold vs warm emulator build time of a representative kernel set, header-only vs prebuilt.

The kernels are the first builtin candidate of each op in ``--ops`` (vector, normalisation,
reduction, pooling and cube kernels by default), lowered at their default tunables; every
launch is one ``build_kernel`` call. Three passes, each over the whole set:

- cold, header-only (``ASCENDCRAFT_PREBUILT_RUNTIME=0``, a fresh empty cache): what every
  kernel compile cost before the prebuilt runtime;
- cold, prebuilt (a fresh empty cache): the one-off runtime object + precompiled header
  (timed on its own), then each kernel;
- warm (the same cache again): every build a cache hit.

Prints wall seconds and CPU seconds (the compilers' user+sys, which grow far less than wall
time with other load on the machine) per pass, per kernel, and the ratios. Times are
measured build times, not modeled ones.

    python benchmarks/build_cold.py [--ops relu,softmax,matmul] [--repeat 1] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from pathlib import Path

from ascendcraft.dsl.kernel import prepare
from ascendcraft.search.builtin import propose

from ascendcraft.emulator.build import (
    DEFAULT_FLAGS,
    PREBUILT_DEFINE,
    PREBUILT_ENV,
    _prebuilt_runtime,
    build_kernel,
    cache_root,
    find_compiler,
)
from ascendcraft.tasks.registry import get_task

DEFAULT_OPS = "relu,gelu,softmax,layer_norm,rms_norm,sum_dim,avg_pool2d,cumsum,matmul"


def kernel_set(ops: list[str]) -> list[tuple[str, dict[str, str], str]]:
    """(label, sources, main) of every launch of each op's first builtin candidate."""
    out = []
    for op in ops:
        cand = next(iter(propose(get_task(op))))
        kernel = prepare(cand.name, cand.source).lower({})
        for launch in kernel.launches:
            sources, main = kernel.emulator_sources(launch)
            out.append((f"{cand.name}:{launch.name}", sources, main))
    return out


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def build_pass(units: list[tuple[str, dict[str, str], str]], cache: Path, prebuilt: bool) -> dict:
    """Build every unit into ``cache``; wall and compiler CPU seconds, total and per unit."""
    env = {"ASCENDCRAFT_CACHE": str(cache), PREBUILT_ENV: "1" if prebuilt else "0"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        runtime = {}
        if prebuilt:  # the one-off part, timed on its own
            wall0, cpu0 = time.perf_counter(), _children_cpu()
            (cache / "emulator").mkdir(parents=True, exist_ok=True)
            _prebuilt_runtime(cache_root() / "emulator", find_compiler(), (*DEFAULT_FLAGS, PREBUILT_DEFINE))
            runtime = {"runtime_wall_s": time.perf_counter() - wall0, "runtime_cpu_s": _children_cpu() - cpu0}
        wall0, cpu0 = time.perf_counter(), _children_cpu()
        for _, sources, main in units:
            build_kernel(sources, main)
        return {"wall_s": time.perf_counter() - wall0, "cpu_s": _children_cpu() - cpu0, "n": len(units),
                **runtime}
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", default=DEFAULT_OPS, help=f"comma-separated registry ops (default {DEFAULT_OPS})")
    ap.add_argument("--repeat", type=int, default=1, help="cold passes of each kind (fresh caches); the best is kept")
    ap.add_argument("--json", type=Path, help="also write the figures as JSON here")
    a = ap.parse_args()
    units = kernel_set(a.ops.split(","))
    print(f"{len(units)} kernels from {a.ops}")
    res: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="build-cold-") as tmp:
        for kind, prebuilt in (("cold_header_only", False), ("cold_prebuilt", True)):
            runs = []
            for i in range(a.repeat):
                cache = Path(tmp) / f"{kind}-{i}"
                runs.append(build_pass(units, cache, prebuilt))
            res[kind] = min(runs, key=lambda r: r["cpu_s"])
            if prebuilt:
                res["warm"] = build_pass(units, cache, prebuilt)  # the last cold cache, now full
    n = len(units)
    for kind, r in res.items():
        print(f"{kind:17s} wall {r['wall_s']:7.2f} s  compiler CPU {r['cpu_s']:7.2f} s  "
              f"({r['wall_s'] / n:.3f} s wall per kernel)")
    ho, pb, warm = res["cold_header_only"], res["cold_prebuilt"], res["warm"]
    print(f"one-off prebuilt runtime (object + precompiled header): wall {pb['runtime_wall_s']:.2f} s, "
          f"CPU {pb['runtime_cpu_s']:.2f} s")
    print(f"per kernel, cold prebuilt / cold header-only: CPU {pb['cpu_s'] / ho['cpu_s']:.2f}x, "
          f"wall {pb['wall_s'] / ho['wall_s']:.2f}x")
    print(f"cold / warm (prebuilt): wall {pb['wall_s'] / max(warm['wall_s'], 1e-9):.0f}x "
          f"({warm['wall_s'] / n * 1000:.1f} ms per cached build)")
    if a.json:
        a.json.write_text(json.dumps({"kernels": [u[0] for u in units], **res}, indent=1))


if __name__ == "__main__":
    main()
