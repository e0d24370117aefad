"""TPE vs random vs exhaustive grid on the real objective (emulator + performance model).

For each op (``relu`` elementwise, ``softmax`` row-wise, ``max_middim`` reduce by default):

1. **Grid pass** — every assignment of every builtin candidate's tunables is checked for
   feasibility and, if feasible, evaluated once with the real :class:`KernelObjective`
   (build, emulate, verify, trace + SoC model: the times are *modeled*).  The outcomes are
   cached as JSON under ``<cache>/bench/`` (``$ASCENDCRAFT_CACHE`` or ``~/.cache/ascendcraft``),
   keyed by a hash of the task, the SoC and the candidates' sources and domains, so a rerun
   only replays.  ``--jobs`` processes share the pass.
2. **Replay** — each sampler × seed runs the real search driver (:func:`run_search`: dedupe,
   infeasible pruning, allocation across candidates) against an objective that looks the
   outcomes up, so every sampler sees exactly the real landscape.

Printed per op and sampler: the median over seeds of the number of evaluations until the
best time so far reaches the target, with how many seeds never did within ``--budget`` in
brackets, and the wall time of the grid pass.  Targets (``--tol``): within 3% of the grid
optimum, and the optimum itself — with the modeled landscapes the defaults are often within
a few % already, which makes the 3% target say little about the samplers.  Two modes:
**defaults first**, as ``ascendcraft tune`` runs (every candidate's default parameters are
evaluated before the sampler proposes anything; when a default is within the target every
sampler needs 1), and **from scratch**, every point chosen by the sampler
(``run_search(defaults_first=False)``): the samplers alone.  "expects" is what sampling
without replacement needs on average, ``(N+1)/(k+1)`` for ``k`` good points among ``N``
feasible ones.

Domains: relu (126 points) and max_middim (162 points) use the builtin candidates' own.
softmax's full grid is 126 + 630 points, 405 of them feasible (every ``softmax/rows``
assignment overflows UB at the full shape), and a small column chunk makes the trace-only
timing run long (CHUNK 256: ~50 s per point), so it is restricted (``RESTRICT``) to CHUNK
1024..16384 and CORES 8..48: 84 + 300 points, 150 feasible.  The points dropped are all
slow ones, so the restriction makes good points denser — it helps random sampling, not TPE.
``--restrict NAME=V1,V2`` overrides it (for every op given); ``--full`` uses the
unrestricted domains.

    python benchmarks/search_samplers.py                  # 3 ops, tpe/random/grid, 5 seeds
    python benchmarks/search_samplers.py --ops relu --seeds 10 --budget 60
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import optuna
from ascendcraft.cluster import LocalExecutor
from ascendcraft.search.builtin import propose
from ascendcraft.search.driver import run_search
from ascendcraft.search.space import Candidate, TrialOutcome, crash_outcome

from ascendcraft.app.candidates import searchable
from ascendcraft.app.objective import KernelObjective
from ascendcraft.app.task import TaskRef
from ascendcraft.emulator.build import cache_root
from ascendcraft.tasks.registry import get_task

OPS = ("relu", "softmax", "max_middim")
SAMPLERS = ("tpe", "random", "grid")
# as ``ascendcraft tune`` runs (every candidate's defaults first, identical for all samplers),
# and from scratch (every point chosen by the sampler: the samplers alone)
MODES = (("defaults first", True), ("from scratch", False))
RESTRICT: dict[str, dict[str, tuple[int, ...]]] = {
    "softmax": {"CHUNK": (1024, 2048, 4096, 8192, 16384), "CORES": (8, 16, 24, 32, 40, 48)},
}
CACHE_VERSION = 1


# ---- the grid pass -------------------------------------------------------------------------


def point_key(params: dict[str, int]) -> str:
    return ",".join(f"{k}={params[k]}" for k in sorted(params))


def restrict(
    specs: list[Candidate], domains: dict[str, tuple[int, ...]]
) -> list[Candidate]:
    """Shrink tunable domains (keeping each default, which the driver evaluates first)."""
    out = []
    for s in specs:
        tun = []
        for t in s.tunables:
            if t.name in domains:
                keep = set(domains[t.name]) | {t.default}
                t = replace(t, values=tuple(v for v in t.values if v in keep))
            tun.append(t)
        out.append(replace(s, tunables=tuple(tun)))
    return out


def code_fingerprint() -> str:
    """Hash of the sources that decide an outcome (DSL, lowering, evaluator, backends, emulator,
    model, SoC specs), so a cached grid is redone when any of them changes."""
    import ascendcraft.dsl  # binds ``ascendcraft`` too

    h = hashlib.sha256()
    pkg = Path(ascendcraft.__file__).parent
    files = [pkg / "evaluate.py", pkg / "app" / "objective.py"]
    for root in (
        pkg / "backends",
        pkg / "emulator",
        pkg / "model",
        pkg / "soc",
        pkg / "tasks",
        Path(ascendcraft.dsl.__file__).parent,
    ):
        files += sorted(f for f in root.rglob("*") if f.suffix in (".py", ".h", ".json"))
    for f in files:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def grid_cache_path(op: str, soc: str, specs: list[Candidate], cache_dir: Path) -> Path:
    task = get_task(op)
    ident = {
        "version": CACHE_VERSION,
        "code": code_fingerprint(),
        "op": op,
        "soc": soc,
        "shapes": [list(s) for s in task.shapes],
        "dtype": str(task.dtype),
        "candidates": [
            [s.name, s.source, [[t.name, list(t.ordered())] for t in s.tunables]] for s in specs
        ],
    }
    digest = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]
    return cache_dir / f"grid-{op}-{soc}-{digest}.json"


_WORKER: dict[str, KernelObjective] = {}


def _evaluate_point(job: tuple[str, str, Candidate, dict[str, int]]) -> tuple[str, str, dict]:
    op, soc, spec, params = job
    obj = _WORKER.get(op)
    if obj is None:
        obj = _WORKER[op] = KernelObjective(TaskRef(op=op), soc)
    t0 = time.perf_counter()
    try:
        out = obj.evaluate(spec, params, 300.0)
    except Exception as exc:  # noqa: BLE001 - recorded like the executor would
        out = crash_outcome(f"{type(exc).__name__}: {exc}")
    d = out.to_dict()
    d["eval_s"] = time.perf_counter() - t0
    return spec.name, point_key(params), d


def grid_pass(
    op: str, soc: str, specs: list[Candidate], cache_dir: Path, jobs: int, refresh: bool
) -> tuple[dict[str, dict[str, dict]], float, bool]:
    """Every point's outcome: ``table[candidate][point_key] = outcome dict`` (or
    ``{"infeasible": reason}``); the wall time of the pass; whether it came from the cache."""
    path = grid_cache_path(op, soc, specs, cache_dir)
    if path.exists() and not refresh:
        data = json.loads(path.read_text())
        return data["table"], float(data["wall_s"]), True
    t0 = time.perf_counter()
    checker = KernelObjective(TaskRef(op=op), soc)
    table: dict[str, dict[str, dict]] = {s.name: {} for s in specs}
    todo = []
    for s in specs:
        for p in s.all_params():
            reason = checker.feasible(s, p)
            if reason is not None:
                table[s.name][point_key(p)] = {"infeasible": reason}
            else:
                todo.append((op, soc, s, p))
    done = 0
    if jobs <= 1:
        results = map(_evaluate_point, todo)
        pool = None
    else:
        pool = ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn"))
        results = pool.map(_evaluate_point, todo, chunksize=4)
    try:
        for name, key, d in results:
            table[name][key] = d
            done += 1
            if sys.stderr.isatty():
                sys.stderr.write(f"\r  {op}: {done}/{len(todo)} evaluated")
                sys.stderr.flush()
    finally:
        if pool is not None:
            pool.shutdown()
    if sys.stderr.isatty():
        sys.stderr.write("\n")
    wall = time.perf_counter() - t0
    evaluated = [d for v in table.values() for d in v.values() if "infeasible" not in d]
    broken = sum(d.get("status") in ("build_error", "crash") for d in evaluated)
    if evaluated and broken > len(evaluated) / 2:
        print(
            f"warning: {op}: {broken}/{len(evaluated)} points failed to build or crashed — "
            "the toolchain looks broken; not caching this grid",
            file=sys.stderr,
        )
        return table, wall, False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"op": op, "soc": soc, "wall_s": wall, "jobs": jobs, "table": table}))
    tmp.replace(path)
    return table, wall, False


# ---- the replay ----------------------------------------------------------------------------


@dataclass
class ReplayObjective:
    """The grid pass's outcomes as an objective; records the evaluation order."""

    table: dict[str, dict[str, dict]]
    calls: list[float | None] = field(default_factory=list)

    def feasible(self, candidate: Candidate, params: dict[str, int]) -> str | None:
        entry = self.table[candidate.name][point_key(params)]
        return entry.get("infeasible")

    def evaluate(
        self, candidate: Candidate, params: dict[str, int], timeout_s: float
    ) -> TrialOutcome:
        out = TrialOutcome.from_dict(self.table[candidate.name][point_key(params)])
        self.calls.append(out.time_us if out.ok else None)
        return out

    def revalidate(self, candidate: Candidate, params: dict[str, int]) -> TrialOutcome:
        out = TrialOutcome.from_dict(self.table[candidate.name][point_key(params)])
        return TrialOutcome("ok", None, out.timing) if out.ok else out


def optimum(table: dict[str, dict[str, dict]]) -> tuple[float, str, str] | None:
    best = None
    for name, points in table.items():
        for key, d in points.items():
            if d.get("status") == "ok" and d.get("time_us") is not None:
                if best is None or d["time_us"] < best[0]:
                    best = (float(d["time_us"]), name, key)
    return best


def evals_to_target(times: list[float | None], target: float) -> int | None:
    """1-based index of the first evaluation at or below ``target``; None if never."""
    for i, t in enumerate(times, start=1):
        if t is not None and t <= target:
            return i
    return None


def replay(
    specs: list[Candidate],
    table: dict,
    sampler: str,
    seed: int,
    budget: int,
    defaults_first: bool = True,
) -> list:
    """One search through the real driver; the times (None if failed) in evaluation order."""
    obj = ReplayObjective(table)
    with tempfile.TemporaryDirectory() as tmp:
        run_search(
            obj,
            specs,
            budget=budget,
            sampler=sampler,
            seed=seed,
            storage=optuna.storages.InMemoryStorage(),
            study_name=f"{sampler}-{seed}",
            run_dir=tmp,
            executor=LocalExecutor(),
            plots=False,
            defaults_first=defaults_first,
        )
    return obj.calls


def median_censored(values: list[int | None], budget: int) -> str:
    """Median where None (never reached) counts as more than the budget."""
    key = [v if v is not None else budget + 1 for v in values]
    m = statistics.median(key)
    return f">{budget}" if m > budget else f"{m:g}"


def parse_restrict(items: list[str]) -> dict[str, tuple[int, ...]]:
    out = {}
    for item in items:
        name, _, vals = item.partition("=")
        out[name.strip()] = tuple(int(v) for v in vals.split(",") if v.strip())
    return out


def _tol_name(tol: float) -> str:
    return f"within {100 * tol:g}%" if tol > 0 else "optimum"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", nargs="+", default=list(OPS))
    ap.add_argument("--samplers", nargs="+", default=list(SAMPLERS))
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--budget", type=int, default=100, help="evaluations per search (default 100)")
    ap.add_argument(
        "--tol",
        type=float,
        nargs="+",
        default=[0.03, 0.0],
        help="targets: within this fraction of the optimum (default 0.03 and 0)",
    )
    ap.add_argument("--soc", default="Ascend910B2")
    ap.add_argument("--jobs", type=int, default=2, help="processes for the grid pass")
    ap.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help="grid outcomes cache (default <ascendcraft cache>/bench)",
    )
    ap.add_argument("--refresh", action="store_true", help="redo the grid pass even if cached")
    ap.add_argument(
        "--restrict",
        nargs="*",
        default=None,
        metavar="NAME=V1,V2",
        help="shrink a tunable's domain (replaces the built-in restrictions)",
    )
    ap.add_argument("--full", action="store_true", help="no domain restriction at all")
    ap.add_argument("--verbose", "-v", action="store_true", help="also print every seed's count")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    a = ap.parse_args(argv)
    cache_dir = a.cache_dir or cache_root() / "bench"
    given = parse_restrict(a.restrict) if a.restrict is not None else None
    report: dict[str, Any] = {"budget": a.budget, "seeds": a.seeds, "tol": a.tol, "ops": {}}
    print(
        f"evaluations until the best so far reaches the target: median over {a.seeds} seeds "
        f"(seeds that never did, of {a.seeds}), budget {a.budget}; times are modeled"
    )
    for op in a.ops:
        domains = {} if a.full else given if given is not None else RESTRICT.get(op, {})
        specs = restrict(searchable(propose(get_task(op))), domains)
        table, wall, cached = grid_pass(op, a.soc, specs, cache_dir, a.jobs, a.refresh)
        best = optimum(table)
        n_points = sum(len(v) for v in table.values())
        feas = [d for v in table.values() for d in v.values() if "infeasible" not in d]
        ok = [d for d in feas if d.get("status") == "ok"]
        print()
        if domains:
            print(
                f"{op}: domains restricted to "
                + ", ".join(f"{k} {list(v)}" for k, v in domains.items())
            )
        print(
            f"{op}: {n_points} points, {len(feas)} feasible, {len(ok)} correct; grid pass "
            f"{wall:.1f} s wall with {a.jobs} jobs" + (" (cached)" if cached else "")
        )
        if best is None:
            print("  no correct point: nothing to find")
            continue
        print(f"  optimum {best[0]:.2f} us ({best[1]} {best[2]})")
        targets = [best[0] * (1 + tol) for tol in a.tol]
        for tol, target in zip(a.tol, targets, strict=True):
            good = sum(1 for d in ok if d["time_us"] <= target)
            plural = "s" if good != 1 else ""
            print(
                f"  {_tol_name(tol)}: {good} point{plural}; sampling without replacement "
                f"expects {(len(feas) + 1) / (good + 1):.1f}"
            )
        for s in specs:
            d = table[s.name][point_key(s.default_params())]
            t = d.get("time_us") if d.get("status") == "ok" else None
            print(
                f"  default of {s.name}: "
                + (
                    f"{t:.2f} us, {100 * (t / best[0] - 1):.1f}% above the optimum"
                    if t
                    else d.get("status", "infeasible")
                )
            )
        rep_op: dict[str, Any] = {
            "points": n_points,
            "feasible": len(feas),
            "optimum_us": best[0],
            "grid_wall_s": wall,
            "targets": {},
        }
        # one set of searches per mode; every target is read off the same evaluation sequences
        runs: dict[tuple[str, str], list[list]] = {}
        for mode, defaults_first in MODES:
            for sampler in a.samplers:
                runs[mode, sampler] = [
                    replay(specs, table, sampler, seed, a.budget, defaults_first)
                    for seed in range(a.seeds)
                ]
        print(f"  {'target':<12} {'mode':<15}" + "".join(f"{smp:>13}" for smp in a.samplers))
        for tol, target in zip(a.tol, targets, strict=True):
            rep_t = rep_op["targets"][_tol_name(tol)] = {}
            for mode, _ in MODES:
                cells = []
                for sampler in a.samplers:
                    per_seed = [evals_to_target(calls, target) for calls in runs[mode, sampler]]
                    missed = sum(v is None for v in per_seed)
                    cells.append(f"{median_censored(per_seed, a.budget)} ({missed})")
                    rep_t.setdefault(mode, {})[sampler] = {
                        "median": median_censored(per_seed, a.budget),
                        "missed": missed,
                        "per_seed": per_seed,
                    }
                    if a.verbose:
                        shown = " ".join("-" if v is None else str(v) for v in per_seed)
                        print(f"    {_tol_name(tol)}, {mode}, {sampler}: {shown}")
                print(f"  {_tol_name(tol):<12} {mode:<15}" + "".join(f"{c:>13}" for c in cells))
        report["ops"][op] = rep_op
    if a.json:
        a.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
