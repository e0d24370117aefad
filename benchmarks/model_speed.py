"""Speed of the performance model on a full-size trace: a 2^31-element fp32 add on 48 cores.

Uses the emulator's trace-only mode when ``ascendcraft.emulator.runner`` exists and offers
it; until then a synthetic trace with the same event pattern (``ascendcraft.model.synth``).
Prints records, modeled time, % of the HBM roofline and the model's own wall time.
"""

from __future__ import annotations

import argparse
import importlib.util
import time

from ascendcraft.emulator.trace_format import read_trace
from ascendcraft.model import breakdown_text, min_bytes, roofline_us, simulate
from ascendcraft.model.synth import elementwise_trace
from ascendcraft.soc import load_soc


def build_trace(n: int, tile: int, depth: int, cores: int):
    """Synthetic trace. ``ascendcraft.emulator.runner`` has a trace-only mode, but no built
    add kernel to drive it yet; run that kernel with ``trace_only=True`` and pass the trace
    file with ``--trace`` to model the real thing."""
    if importlib.util.find_spec("ascendcraft.emulator.runner") is not None:
        print("note: emulator runner present; using the synthetic trace "
              "(model a real one with --trace FILE)")
    return elementwise_trace(n, tile, depth, cores)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--log2n", type=int, default=31)
    ap.add_argument("--tile", type=int, default=16384)
    ap.add_argument("--depth", type=int, default=2)
    ap.add_argument("--cores", type=int, default=48)
    ap.add_argument("--soc", default="Ascend910B2")
    ap.add_argument("--trace", help="model an emulator trace file instead (read_trace); "
                    "the roofline then assumes it is the same fp32 add of 2^log2n elements")
    a = ap.parse_args()
    n = 1 << a.log2n
    soc = load_soc(a.soc)
    t0 = time.perf_counter()
    tr = read_trace(a.trace) if a.trace else build_trace(n, a.tile, a.depth, a.cores)
    t1 = time.perf_counter()
    r = simulate(tr, soc, None if a.trace else a.cores)
    t2 = time.perf_counter()
    rl = roofline_us(min_bytes([((n,), "float32")] * 3), n, soc)
    what = f"trace {a.trace}" if a.trace else f"tile {a.tile}, depth {a.depth}, {a.cores} cores"
    print(f"fp32 add n=2^{a.log2n}, {what}, {soc.name}")
    print(f"records: {len(tr):,} ({r.n_programs} distinct core programs)")
    print(f"modeled: {r.time_us:,.1f} us   roofline: {rl:,.1f} us   roofline %: {100 * rl / r.time_us:.1f}")
    print(f"trace build: {t1 - t0:.3f} s   model wall time: {t2 - t1:.3f} s")
    print(breakdown_text(r))


if __name__ == "__main__":
    main()
