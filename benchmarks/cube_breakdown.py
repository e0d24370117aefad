"""Where a cube op's modeled time goes: per-pipe busy time, HBM channel, L2 hits, bytes moved,
blocks and cores, beside the capacity bound on operand reads (model/capacity.py).

For one built-in op, each builtin candidate (or the ones named with ``--cand``) is built at
its default tunables, overridden by ``--set NAME=VALUE``, traced at the task's full shapes and
simulated; ``--sweep NAME=V1,V2,...`` times the candidates at each value of one tunable
instead. All times are MODELED (the model version is printed).

    python benchmarks/cube_breakdown.py matmul_batched [--cand matmul_batched/cube] [--set BM=64 ...]
    python benchmarks/cube_breakdown.py matmul --sweep GROUP=4,6,12
    python benchmarks/cube_breakdown.py path/to/task_file.py --set FSPLIT=0   # a task file instead of an op
    python benchmarks/cube_breakdown.py matmul_tall_skinny --cand matmul_tall_skinny/cube --timeline 40:50

``--timeline FROM:TO`` prints, for block ``--core`` (0) of each launch, every MTE2 / M / FIX / MTE3
instruction the full simulation started in that window (us): start, end, bytes, HBM-channel time
booked and the L2 share — which copy a Fixpipe stretched, where the cube pipe waited (``--mte1``:
the L1 -> L0 moves too).
"""

from __future__ import annotations

import argparse

import numpy as np
from ascendcraft.dsl.parse_blocks import ORDER_NAMES
from ascendcraft.search.builtin import propose
from ascendcraft.search.cube_builtin import MatmulSpec, registry_spec, spec_dims, traced_spec

import ascendcraft.backends.emulator as emulator
from ascendcraft.app.checking import first_feasible
from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.model import MODEL_VERSION
from ascendcraft.model.capacity import matmul_read_lower_bound
from ascendcraft.model.timeline import core_timeline
from ascendcraft.tasks.registry import get_task
from ascendcraft.tasks.taskfile import load_task_file

MIB = 1 << 20


def _value(v: str) -> int:
    """A tunable value as the program takes it: an integer, or a block order's name
    (row_major, col_major, swizzled), which the DSL encodes as its index."""
    if v.lstrip("-").isdigit():
        return int(v)
    if v in ORDER_NAMES:
        return ORDER_NAMES[v]
    raise SystemExit(f"--set/--sweep value {v!r}: an integer or one of {', '.join(ORDER_NAMES)}")


def _bound_text(task) -> str:
    """The capacity bound on operand reads at the task's shapes, when it is a plain product."""
    try:
        spec = registry_spec(task, task.name, dict(getattr(task, "init_args", None) or {}))
    except (KeyError, TypeError, ValueError):
        spec = None
    if spec is None:  # a task file: its traced product, if it is one
        traced = traced_spec(task)
        spec = traced if isinstance(traced, MatmulSpec) else None
    dims = spec_dims(task, spec) if spec is not None else None
    if dims is None:
        return "capacity bound: not one matrix product"
    bt, m, n, k = dims
    esize = 4 if spec.dtype == "f32" else 2
    q = matmul_read_lower_bound(bt, m, n, k, esize)
    comp = esize * bt * (m * k + k * n)
    return (f"batch {bt} M {m} N {n} K {k}: operand reads >= {q / MIB:.1f} MiB "
            f"(compulsory {comp / MIB:.1f} MiB)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("op", help="a built-in op, or a task file (*.py)")
    ap.add_argument("--soc", default="Ascend910B2")
    ap.add_argument("--cand", action="append", help="candidate name (repeatable; default: all)")
    ap.add_argument("--set", action="append", default=[], help="NAME=VALUE tunable override")
    ap.add_argument("--sweep", help="NAME=V1,V2,... one tunable's values, a time per value")
    ap.add_argument("--timeline", help="FROM:TO (us): block --core's GM, cube and Fixpipe instructions then")
    ap.add_argument("--core", type=int, default=0, help="the block --timeline shows (default 0)")
    ap.add_argument("--mte1", action="store_true", help="--timeline shows the MTE1 (L1 -> L0) moves too")
    a = ap.parse_args()
    caught = []  # (result, args, keywords) of each simulation
    simulate = emulator.simulate

    def keep(*args, **kw):
        r = simulate(*args, **kw)
        caught.append((r, args, kw))
        return r

    emulator.simulate = keep  # every single-launch simulation of this run, kept for the breakdown
    task = load_task_file(a.op) if a.op.endswith(".py") else get_task(a.op)
    ev = Evaluator(task, a.soc, seeds=(0,))
    sets = {k: _value(v) for k, v in (s.split("=", 1) for s in a.set)}
    print(f"{a.op} on {a.soc} (modeled, model {MODEL_VERSION}); {_bound_text(task)}")
    for cand in propose(task):
        if a.cand and cand.name not in a.cand:
            continue
        prep = prepare(cand.name, cand.source)
        found = first_feasible(ev, prep)
        if found is None:
            print(f"{cand.name}: no feasible default")
            continue
        params = {**prep.defaults(), **found, **sets}
        if a.sweep:
            name, values = a.sweep.split("=", 1)
            row = []
            for v in values.split(","):
                p = dict(params, **{name: _value(v)})
                why = ev.feasible(prep, p)
                row.append(f"{v}: infeasible" if why else f"{v}: {ev.time(ev.build(prep, p))['modeled_us']:.1f}")
            print(f"{cand.name:40s} default {name}={params.get(name)}  " + "  ".join(row), flush=True)
            continue
        why = ev.feasible(prep, params)
        if why:
            print(f"{cand.name}: infeasible: {why}")
            continue
        caught.clear()
        tim = ev.time(ev.build(prep, params))
        print(f"{cand.name}: modeled {tim['modeled_us']:.1f} us, eager {tim['eager_us']:.1f} us, "
              f"speedup {tim['speedup']:.2f}, roofline {tim['roofline_us']:.1f} us, bound {tim['bound']}")
        for r, _, _ in caught:
            cu = np.asarray(r.core_us)
            print(f"  launch: {r.time_us:.1f} us (kernel {r.kernel_us:.1f} + launch {r.launch_us:.1f}), "
                  f"blocks {r.block_dim}, distinct programs {r.n_programs}, core us {cu.min():.1f}..{cu.max():.1f}")
            print("  busy us: " + ", ".join(f"{p} {v:.1f}" for p, v in r.pipe_busy_us.items() if v)
                  + f"; HBM channel {r.hbm_busy_us:.1f}")
            print("  resources us: " + ", ".join(f"{p} {v:.1f}" for p, v in r.resources_us.items()))
            print(f"  GM bytes {r.gm_bytes / MIB:.1f} MiB; reads {r.l2_read_bytes / MIB:.1f} MiB, "
                  f"L2 hits {r.l2_hit_bytes / MIB:.1f} MiB ({100 * r.l2_hit_frac:.0f}%)")
        if a.timeline:
            for _, args, kw in caught:
                _print_timeline(args, kw, a.timeline, a.core, SHOWN + (("MTE1",) if a.mte1 else ()))


SHOWN = ("MTE2", "M", "FIX", "MTE3")


def _print_timeline(args: tuple, kw: dict, window: str, core: int, shown: tuple[str, ...] = SHOWN) -> None:
    """Block ``core``'s instructions on the GM, cube and Fixpipe pipes that start in ``window``."""
    lo, hi = (float(x) for x in window.split(":", 1))
    trace, soc = args[0], args[1] if len(args) > 1 else kw.get("soc")
    block_dim = args[2] if len(args) > 2 else kw.get("block_dim")
    rows = core_timeline(trace, soc, block_dim, core)
    print(f"  timeline of block {core} (modeled; full simulation), {lo:g}..{hi:g} us:")
    print(f"  {'start':>9} {'end':>9} {'pipe':5} {'op':22} {'bytes':>8} {'hbm us':>7} {'L2':>4}")
    for r in rows:
        if lo <= r.start_us <= hi and r.pipe in shown:
            print(f"  {r.start_us:9.3f} {r.end_us:9.3f} {r.pipe:5} {r.op:22} {r.bytes:8d} {r.hbm_us:7.3f} "
                  f"{100 * r.l2_frac:3.0f}%")


if __name__ == "__main__":
    main()
