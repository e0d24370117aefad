"""The ``ascendcraft`` command: ops, check, lower, tune.

Errors a user can cause (unknown op, broken task file, malformed DSL, missing toolchain)
end as one readable paragraph on stderr and exit code 2 — never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

EXIT_USAGE = 2


class UserError(Exception):
    """A problem with the user's input, reported without a traceback."""


def _load_task(args: argparse.Namespace):
    from .tasks.registry import get_task
    from .tasks.task import TaskError
    from .tasks.taskfile import load_task_file

    try:
        if getattr(args, "task", None):
            task = load_task_file(args.task)
        elif getattr(args, "op", None):
            task = get_task(args.op)
        else:
            raise UserError("give --op NAME (see `ascendcraft ops`) or --task FILE")
        shape = getattr(args, "shape", None)
        dtype = getattr(args, "dtype", None)
        if shape or dtype:
            first = next(s for s in task.inputs if s.is_tensor)
            task = task.with_shape(shape or tuple(first.shape), dtype)
        return task
    except (TaskError, KeyError, ValueError) as e:
        raise UserError(str(e).strip("'\"")) from None


def _proposals(task):
    from .search.builtin import ProposerError, propose

    try:
        return propose(task)
    except ProposerError as e:
        raise UserError(str(e)) from None


# ---------------------------------------------------------------- ops
def cmd_ops(args: argparse.Namespace) -> int:
    from .tasks.registry import list_tasks

    tasks = list_tasks()
    if args.json:
        print(json.dumps([{"name": t.name, "category": t.category,
                           "shapes": [list(s) for s in t.shapes], "dtype": str(t.dtype).replace("torch.", "")}
                          for t in tasks]))
        return 0
    width = max(len(t.name) for t in tasks)
    for t in tasks:
        shapes = ", ".join("x".join(map(str, s)) or "scalar" for s in t.shapes)
        print(f"{t.name:<{width}}  {t.category:<13} {shapes}")
    print(f"{len(tasks)} ops")
    return 0


# ---------------------------------------------------------------- check
def _first_feasible(ev, prep, limit: int = 4000) -> dict[str, int] | None:
    """The default assignment if it fits, else the feasible one closest to it."""
    import itertools

    defaults = prep.program.defaults()
    if ev.feasible(prep, {}) is None:
        return {}
    # first every single-tunable change (smaller values first: they shrink buffers), then the product
    singles = sorted(((t.name, v) for t in prep.program.tunables for v in t.domain.values()
                      if v != t.default), key=lambda nv: nv[1])
    for name, v in singles:
        if ev.feasible(prep, {name: v}) is None:
            return {name: v}
    doms = []
    for t in prep.program.tunables:
        vals = t.domain.values()
        di = vals.index(t.default)
        doms.append(sorted(vals, key=lambda v, di=di, vals=vals: abs(vals.index(v) - di)))
    combos = itertools.islice(itertools.product(*doms), limit)
    scored = sorted(combos, key=lambda c: sum(abs(doms[i].index(v)) for i, v in enumerate(c)))
    for combo in scored:
        params = {t.name: v for t, v in zip(prep.program.tunables, combo, strict=True)}
        if params != defaults and ev.feasible(prep, params) is None:
            return params
    return None


def check_task(task, *, soc: str, full: bool, timing: bool, explicit_shape: bool,
               candidates: list | None = None) -> dict[str, Any]:
    from .dsl.parser import DslError
    from .evaluate import Evaluator, prepare

    shape_sets = [list(task.shapes)] if explicit_shape else None
    ev = Evaluator(task, soc, full=full, shape_sets=shape_sets)
    results = []
    for cand in candidates if candidates is not None else _proposals(task):
        entry: dict[str, Any] = {"candidate": cand.name}
        try:
            prep = prepare(cand.name, cand.source)
        except DslError as e:
            entry.update(status="dsl_error", correct=False, message=str(e))
            results.append(entry)
            continue
        params = _first_feasible(ev, prep)
        if params is None:
            entry.update(status="infeasible", correct=False, message=ev.feasible(prep, {}))
            results.append(entry)
            continue
        out = ev.evaluate(prep, params, timing=timing)
        entry.update(status=out.status, correct=out.correct, message=out.message,
                     max_abs_err=out.max_abs_err, max_rel_err=out.max_rel_err,
                     params={**prep.program.defaults(), **params}, **out.timing)
        results.append(entry)
    good = [r for r in results if r["correct"]]
    best = min(good, key=lambda r: r.get("modeled_us") or float("inf")) if good else None
    report: dict[str, Any] = {
        "op": task.name, "category": task.category, "correct": best is not None,
        "max_abs_err": best["max_abs_err"] if best else None,
        "max_rel_err": best["max_rel_err"] if best else None,
        "shapes": [[list(s) for s in ss] for ss in ev.shape_sets],
        "timing_shapes": [list(s) for s in task.shapes],
        "dtype": str(task.dtype).replace("torch.", ""),
        "soc": ev.soc.name, "candidates": results,
    }
    if best:
        for k in ("modeled_us", "eager_us", "speedup", "roofline_us", "roofline_frac", "bound", "pipes",
                  "timing"):
            if k in best:
                report[k] = best[k]
        report["best"] = best["candidate"]
    return report


def _dsl_candidates(args: argparse.Namespace) -> list | None:
    """--dsl FILE: check a hand-written (or LLM-written) program instead of the proposer's."""
    if not getattr(args, "dsl", None):
        return None
    from .search.builtin import Candidate

    try:
        source = Path(args.dsl).read_text(encoding="utf-8")
    except OSError as e:
        raise UserError(f"cannot read DSL file {args.dsl}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise UserError(f"DSL file {args.dsl} is not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset "
                        f"{e.start})") from None
    return [Candidate(f"{Path(args.dsl).stem}/file", source, origin="file")]


def cmd_check(args: argparse.Namespace) -> int:
    task = _load_task(args)
    report = check_task(task, soc=args.soc, full=args.full, timing=not args.no_timing,
                        candidates=_dsl_candidates(args),
                        explicit_shape=bool(args.shape))
    if args.json:
        print(json.dumps(report, default=str))
        return 0 if report["correct"] else 1
    shapes = "; ".join(", ".join("x".join(map(str, s)) or "()" for s in ss) for ss in report["shapes"])
    print(f"{report['op']} ({report['category']}, {report['dtype']}) on {report['soc']} — checked at {shapes}")
    for r in report["candidates"]:
        mark = "PASS" if r["correct"] else "FAIL"
        line = f"  {mark} {r['candidate']:<28}"
        if r["correct"]:
            line += f" max abs err {r['max_abs_err']:.3g}  max rel err {r['max_rel_err']:.3g}"
            if r.get("modeled_us"):
                line += (f"  modeled {r['modeled_us']:.1f} us ({r['roofline_frac'] * 100:.0f}% of roofline,"
                         f" {r['bound']}-bound, {r['speedup']:.2f}x vs eager model)")
        else:
            line += f" [{r['status']}] {r['message']}"
        print(line)
    if report["correct"] and report.get("pipes"):
        print(f"  best: {report['best']} — timing is modeled (emulator trace + {report['soc']} model), not measured")
        print("  pipe utilisation: " + ", ".join(f"{k} {v * 100:.0f}%" for k, v in report["pipes"].items()))
    print("PASS" if report["correct"] else "FAIL")
    return 0 if report["correct"] else 1


# ---------------------------------------------------------------- lower
def cmd_lower(args: argparse.Namespace) -> int:
    from .dsl.lowering.kernel import lower
    from .dsl.lowering.outputs import write_outputs
    from .dsl.parser import DslError

    if args.dsl:
        source = Path(args.dsl).read_text()
        name = Path(args.dsl).stem
    else:
        task = _load_task(args)
        cands = _proposals(task)
        idx = args.candidate
        if idx >= len(cands):
            raise UserError(f"task {task.name!r} has {len(cands)} candidates; --candidate {idx} is out of range")
        source, name = cands[idx].source, cands[idx].name
    params = _parse_params(args.params)
    out = Path(args.out)
    from .dsl.cube import is_cube_source

    try:
        if is_cube_source(source):
            from .dsl.lowering.cube import lower_cube, write_cube_outputs

            paths = write_cube_outputs(lower_cube(source, params), out, soc=args.soc, params=params)
        else:
            paths = write_outputs(lower(source, params), out, soc=args.soc, params=params)
    except DslError as e:
        raise UserError(f"{name}: {e}") from None
    print(f"lowered {name} → {out} ({len(paths)} files)")
    for p in paths:
        print(f"  {p.relative_to(out)}")
    return 0


def _parse_params(text: str | None) -> dict[str, int]:
    if not text:
        return {}
    out = {}
    for item in text.split(","):
        k, _, v = item.partition("=")
        try:
            out[k.strip()] = int(v)
        except ValueError:
            raise UserError(f"--params takes NAME=INT pairs separated by commas, got {item!r}") from None
    return out


# ---------------------------------------------------------------- tune
def cmd_tune(args: argparse.Namespace) -> int:
    from .tuning import tune

    task = _load_task(args)
    summary = tune(task, args, candidates=_proposals(task))
    if args.json:
        print(json.dumps(summary, default=str))
    return 0 if summary.get("best", {}).get("correct") else 1


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ascendcraft", description="Write and tune AscendC kernels for Ascend NPUs. "
                                "Timing without an NPU is modeled (emulator trace + SoC model), never measured.")
    sub = p.add_subparsers(dest="cmd", required=True)

    def task_args(sp):
        g = sp.add_mutually_exclusive_group()
        g.add_argument("--op", help="built-in op name (see `ascendcraft ops`)")
        g.add_argument("--task", help="KernelBench/MultiKernelBench-format task file")
        sp.add_argument("--shape", help="shape of the first tensor input, e.g. 1x500000")
        sp.add_argument("--dtype", help="fp32 | fp16 | bf16")
        sp.add_argument("--soc", default="Ascend910B2", help="SoC model (default Ascend910B2)")

    sp = sub.add_parser("ops", help="list built-in ops")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(fn=cmd_ops)

    sp = sub.add_parser("check", help="build candidates in the emulator, verify against PyTorch, model time")
    task_args(sp)
    sp.add_argument("--full", action="store_true", help="check at the full task shapes (memory permitting)")
    sp.add_argument("--no-timing", action="store_true", help="skip the performance model")
    sp.add_argument("--dsl", help="check this DSL file instead of the proposer's candidates")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(fn=cmd_check)

    sp = sub.add_parser("lower", help="write the CANN project, direct-launch, torch and emulator sources")
    task_args(sp)
    sp.add_argument("--dsl", help="lower this DSL file instead of a proposed candidate")
    sp.add_argument("--candidate", type=int, default=0, help="which proposed candidate (default 0)")
    sp.add_argument("--params", help="tunable values, e.g. ROWS=4,DEPTH=2")
    sp.add_argument("--out", required=True)
    sp.set_defaults(fn=cmd_lower)

    sp = sub.add_parser("tune", help="search candidates × tunables with Optuna; keep the fastest correct")
    task_args(sp)
    sp.add_argument("--budget", type=int, default=60, help="evaluated trials across all candidates")
    sp.add_argument("--sampler", default="tpe", choices=["tpe", "random", "grid", "cmaes", "gp"])
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--storage", help="SQLAlchemy URL (default: SQLite in the run directory)")
    sp.add_argument("--study", help="study name")
    sp.add_argument("--resume", action="store_true", help="continue a killed run")
    sp.add_argument("--workers", type=int, default=None, help="parallel trials (default: CPU cores)")
    sp.add_argument("--out", default=None, help="run directory (default results/runs/<op>-<time>)")
    sp.add_argument("--timeout-per-trial", type=float, default=120.0)
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(fn=cmd_tune)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.fn(args) or 0)
    except UserError as e:
        print(f"ascendcraft {args.cmd}: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
