"""Seconds and memory per modeled trial over every registry op at its default shapes.

A trial is what the tuner pays for one candidate x one assignment of its tunables: build
(cold: a fresh, empty ``$ASCENDCRAFT_CACHE``; warm: the same cache holding the build, made
by the cold trial or, with ``--no-cold``, by an untimed build first), correctness on
the reduced shapes, and the timing run (trace-only emulation at the full shapes + the
timeline model). Every builtin candidate of an op is one trial at its default (or nearest
feasible) tunables. Prints, per op: the slowest candidate's cold and warm trial seconds
(wall, and the warm trial's CPU seconds, which do not grow with the machine's load),
the seconds of its timing run, the peak resident memory of the process tree (this process,
the emulator's fork server and its child; polled) and the best candidate's modeled time;
then the median and maximum over all trials against the issue-14 targets
(median <= 1 s warm, maximum <= 10 s, memory <= 4 GiB).

``--compare`` also times every trial with the full simulation forced
(``ASCENDCRAFT_FULL_SIM=1``: every core traced, no loop extrapolation) and prints the
relative difference of the modeled times (the agreement the model promises: 0.5 %).
``--full-sim`` forces the full simulation for the whole run. Times are MODELED.

    python benchmarks/trial_cost.py [--ops softmax,avg_pool3d] [--compare] [--full-sim]
                                    [--no-cold] [--json out.json] [--baseline before.json]

The trial goes through today's ``ascendcraft.evaluate.Evaluator`` (``_trials``, ``_one``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing_footprint import _memory_kib, _tree  # noqa: E402  (same process-tree walk)

FULL_SIM_ENV = "ASCENDCRAFT_FULL_SIM"


class PeakMemory:
    """Polls the resident memory (VmRSS sum) of this process tree in a thread."""

    def __init__(self, poll_s: float = 0.02) -> None:
        self.poll_s = poll_s
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        me = os.getpid()
        while not self._stop.is_set():
            rss = sum(_memory_kib(p)[0] for p in _tree(me))
            self.peak_kib = max(self.peak_kib, rss)
            time.sleep(self.poll_s)

    def reset(self) -> None:
        self.peak_kib = 0

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _trials(task):
    """(candidate name, prepared, params) for every builtin candidate with a feasible assignment."""
    from ascendcraft.search.builtin import ProposerError, propose

    from ascendcraft.app.checking import first_feasible  # the assignment `ascendcraft check` times
    from ascendcraft.evaluate import Evaluator, prepare

    ev = Evaluator(task, "Ascend910B2")
    try:
        cands = propose(task)
    except ProposerError:
        return ev, []
    out = []
    for cand in cands:
        prep = prepare(cand.name, cand.source)
        params = first_feasible(ev, prep)
        if params is not None:
            out.append((cand.name, prep, params))
    return ev, out


def _cpu_s() -> float:
    """CPU seconds of this process and the emulator's fork server with its reaped children
    (the runs): a trial's cost that does not grow with the machine's load, as wall time does.
    (Compiler processes are not counted.)"""
    import resource

    from ascendcraft.emulator import runner

    ru = resource.getrusage(resource.RUSAGE_SELF)
    total = ru.ru_utime + ru.ru_stime
    server = runner._server_obj
    if server is not None and server.alive():
        try:
            fields = Path(f"/proc/{server.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            pass
    return total


def _one(ev, prep, params, mem: PeakMemory) -> dict:
    """One evaluate() (build + correctness + timing); seconds (wall and CPU), peak memory,
    modeled time."""
    mem.reset()
    c0 = _cpu_s()
    t0 = time.perf_counter()
    out = ev.evaluate(prep, params, timing=True)
    wall = time.perf_counter() - t0
    cpu = _cpu_s() - c0
    time.sleep(2 * mem.poll_s)
    tim = out.timing or {}
    return {"status": out.status, "s": wall, "cpu_s": cpu, "timing_s": tim.get("model_wall_s"),
            "peak_gib": mem.peak_kib / 2**20, "modeled_us": tim.get("modeled_us"),
            "records": tim.get("trace_records"), "error": tim.get("error") or out.message}


class _Env:
    """Set environment variables for a block (None removes one), restore them after."""

    def __init__(self, **values: str | None) -> None:
        self.values = values
        self.old: dict[str, str | None] = {}

    def __enter__(self) -> None:
        for k, v in self.values.items():
            self.old[k] = os.environ.get(k)
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def __exit__(self, *exc: object) -> None:
        for k, v in self.old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _prime(ev, prep, params) -> None:
    """Build the trial's kernel (the cache a warm trial finds it in); a failure shows in the
    trial itself."""
    try:
        ev.build(prep, params)
    except Exception:  # noqa: BLE001 - the timed trial reports it
        pass


def _op_trials(ev, trials, mem: PeakMemory, a: argparse.Namespace) -> list[dict]:
    """Every trial of one op: cold, warm and (``--compare``) fully simulated."""
    per = []
    full = "1" if a.full_sim else "0"
    for name, prep, params in trials:
        r: dict = {"candidate": name}
        # cold: a fresh, empty cache; --no-cold: the user's own (content-addressed) cache
        with tempfile.TemporaryDirectory(prefix="trial-cost-cache-") as cache, \
                (_Env() if a.no_cold else _Env(ASCENDCRAFT_CACHE=cache)):
            with _Env(**{FULL_SIM_ENV: full}):
                if not a.no_cold:
                    r["cold"] = _one(ev, prep, params, mem)
                else:  # warm means built: compile into the cache first (untimed)
                    _prime(ev, prep, params)
                r["warm"] = _one(ev, prep, params, mem)
            if a.compare:
                with _Env(**{FULL_SIM_ENV: "1", "ASCENDCRAFT_MAX_TRACE_RECORDS": str(1 << 27)}):
                    r["full"] = _one(ev, prep, params, mem)
        per.append(r)
    return per


def _row(name: str, per: list[dict], base: dict | None, compare: bool) -> tuple[str, list[float]]:
    """One table line and the relative differences fast vs full of its trials."""
    warm = [r["warm"] for r in per]
    cold = [r["cold"] for r in per if "cold" in r]
    modeled = [w["modeled_us"] for w in warm if w["modeled_us"]]
    line = (f"{name:26s} {max((c['s'] for c in cold), default=float('nan')):7.2f} "
            f"{max(w['s'] for w in warm):7.2f} {max(w['cpu_s'] for w in warm):7.2f} "
            f"{max((w['timing_s'] or 0) for w in warm):7.2f} "
            f"{max(w['peak_gib'] for w in warm + cold):8.2f} {min(modeled, default=float('nan')):11.2f}")
    if base is not None:
        line += (f" {base.get('s', float('nan')):7.2f} {base.get('timing_s', float('nan')):7.2f} "
                 f"{base.get('peak_gib', float('nan')):8.2f} {base.get('modeled_us', float('nan')):11.2f}")
    diffs = []
    if compare:
        for r in per:
            f, w = r["full"]["modeled_us"], r["warm"]["modeled_us"]
            if f and w:
                diffs.append(abs(w - f) / f)
        line += (f" {max(diffs, default=float('nan')) * 100:8.5f} "
                 f"{max(r['full']['s'] for r in per):7.2f}")
    bad = [f"{r['candidate']}: {r['warm']['status']} {r['warm']['error']}"[:90]
           for r in per if r["warm"]["status"] != "ok" or r["warm"]["modeled_us"] is None]
    return line + f"  {len(per)}" + (f"  ({'; '.join(bad)})" if bad else ""), diffs


def _baseline(path: str | None) -> dict[str, dict]:
    """Per op from an earlier ``--json`` file: the slowest warm trial, its timing seconds and
    memory, and the best modeled time."""
    if not path:
        return {}
    out: dict[str, dict] = {}
    for r in json.loads(Path(path).read_text()):
        w, b = r["warm"], out.setdefault(r["op"], {})
        b["s"] = max(b.get("s", 0.0), w["s"])
        b["timing_s"] = max(b.get("timing_s", 0.0), w.get("timing_s") or 0.0)
        b["peak_gib"] = max(b.get("peak_gib", 0.0), w["peak_gib"])
        if w.get("modeled_us"):
            b["modeled_us"] = min(b.get("modeled_us", float("inf")), w["modeled_us"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", help="comma-separated subset (default: every registry op)")
    ap.add_argument("--compare", action="store_true", help="also run the full simulation and compare")
    ap.add_argument("--full-sim", action="store_true", help="force the full simulation throughout")
    ap.add_argument("--no-cold", action="store_true", help="skip the cold-cache trial")
    ap.add_argument("--json", help="write every trial's figures to this file")
    ap.add_argument("--baseline", help="an earlier --json file: print its figures beside (before)")
    ap.add_argument("--torch-threads", type=int, default=None,
                    help="torch intra-op threads (default: what a tune worker uses, app/threads.py)")
    a = ap.parse_args()
    from ascendcraft.app.threads import THREADS_ENV, limit_torch_threads
    from ascendcraft.tasks.registry import get_task, list_tasks

    if a.torch_threads is not None:
        os.environ[THREADS_ENV] = str(a.torch_threads)
    print(f"torch threads: {limit_torch_threads()}", flush=True)

    tasks = [get_task(n) for n in a.ops.split(",")] if a.ops else list_tasks()
    base = _baseline(a.baseline)
    mem = PeakMemory()
    rows, all_warm, all_cold, all_timing, peaks, diffs, all_cpu = [], [], [], [], [], [], []
    print(f"{'op':26s} {'cold s':>7s} {'warm s':>7s} {'cpu s':>7s} {'time s':>7s} {'peak GiB':>8s} {'modeled us':>11s}"
          + (f" {'before s':>7s} {'time s':>7s} {'peak GiB':>8s} {'modeled us':>11s}" if base else "")
          + (f" {'diff %':>8s} {'full s':>7s}" if a.compare else "") + "  trials", flush=True)
    t_all = time.perf_counter()
    print(f"load average at start: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)", flush=True)
    for task in tasks:
        ev, trials = _trials(task)
        if not trials:
            print(f"{task.name:26s} no feasible candidate", flush=True)
            continue
        per = _op_trials(ev, trials, mem, a)
        for r in per:
            r["op"] = task.name
            all_warm.append(r["warm"]["s"])
            all_cpu.append(r["warm"]["cpu_s"])
            all_timing.append(r["warm"]["timing_s"] or 0.0)
            peaks += [r[k]["peak_gib"] for k in ("cold", "warm") if k in r]
            if "cold" in r:
                all_cold.append(r["cold"]["s"])
        rows.extend(per)
        line, d = _row(task.name, per, base.get(task.name, {}) if base else None, a.compare)
        diffs += d
        print(line, flush=True)
    mem.stop()
    if all_warm:
        print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")
        print(f"{len(all_warm)} trials over {len({r['op'] for r in rows})} ops in "
              f"{time.perf_counter() - t_all:.0f} s (MODELED times; seconds are wall time on this machine)")
        print(f"warm trial: median {statistics.median(all_warm):.2f} s (target <= 1), "
              f"max {max(all_warm):.2f} s (target <= 10)")
        print(f"  CPU seconds (this process + the emulator's runs; load-independent): median "
              f"{statistics.median(all_cpu):.2f} s, max {max(all_cpu):.2f} s")
        print(f"  of it the timing run (trace-only emulation + model): median "
              f"{statistics.median(all_timing):.2f} s, max {max(all_timing):.2f} s")
        if all_cold:
            print(f"cold trial: median {statistics.median(all_cold):.2f} s, max {max(all_cold):.2f} s (target <= 10)")
        print(f"peak resident memory of the process tree: {max(peaks):.2f} GiB (target <= 4)")
        if diffs:
            print(f"extrapolated vs full simulation: max |diff| {100 * max(diffs):.5f} % over "
                  f"{len(diffs)} trials (bound 0.5 %)")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
