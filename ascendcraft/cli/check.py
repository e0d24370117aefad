"""``check``: verify candidates against PyTorch (one task, or a folder of task files)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..status import Status
from ..version import MODEL_VERSION
from .shell import kind_word, proposer_config, task_from_args


def cmd_check(args: argparse.Namespace) -> int:
    from ..app.candidates import dsl_file_candidate
    from ..app.checking import CheckConfig, check

    if getattr(args, "tasks", None):
        return _check_folder(args)
    task = task_from_args(args)
    candidates = (dsl_file_candidate(args.dsl),) if getattr(args, "dsl", None) else None
    proposer = proposer_config(args)
    run_dir = _check_run_dir(args, task.name) if proposer.uses_llm and candidates is None else None
    report = check(task, CheckConfig(soc=args.soc, backend=args.backend, full=args.full,
                                     shape_given=bool(args.shape), timing=not args.no_timing,
                                     candidates=candidates, proposer=proposer, run_dir=run_dir))
    if args.json:
        print(json.dumps(report.to_dict(), default=str))
        return 0 if report.correct else 1
    shapes = "; ".join(", ".join("x".join(map(str, s)) or "()" for s in ss) for ss in report.shapes)
    print(f"{report.op} ({report.category}, {report.dtype}) on {report.soc} — checked at {shapes}")
    if report.note:
        print(f"  note: {report.note}")
    for r in report.candidates:
        # a candidate no assignment of its tunables fits was never run: not a wrong kernel
        mark = "PASS" if r.correct else "SKIP" if r.status is Status.INFEASIBLE else "FAIL"
        line = f"  {mark} {r.candidate:<28}" + (f" ({r.origin})" if report.llm is not None else "")
        if r.correct:
            line += f" max abs err {r.max_abs_err:.3g}  max rel err {r.max_rel_err:.3g}"
            t = r.timing
            if r.time_us:
                line += (f"  {kind_word(t)}{r.time_us:.1f} us ({t['roofline_frac'] * 100:.0f}% of "
                         f"roofline, {t['bound']}-bound, {t['speedup']:.2f}x vs eager model)")
            elif t.get("error"):
                line += f"  (no {kind_word(t)}time: {t['error']})"
        else:
            line += f" [{r.status.value}] {r.message}"
        print(line)
        if r.correct and r.message:  # e.g. judged against the correctly rounded result
            print(f"      note: {r.message[:400]}")
    best = report.best
    if best is not None and best.timing.get("pipes"):
        from ..app.timing import timing_kind

        kind = timing_kind(best.timing)
        how = ("" if kind == "measured"
               else f" (emulator trace + {report.soc} model {MODEL_VERSION}), not measured")
        print(f"  best: {best.candidate} — timing is {kind}{how}")
        print("  pipe utilisation: " + ", ".join(f"{k} {v * 100:.0f}%" for k, v in best.timing["pipes"].items()))
    for line in report.llm_lines:
        print(line)
    if run_dir is not None:
        print(f"  LLM exchanges: {run_dir / 'llm'}")
    print("PASS" if report.correct else "FAIL")
    return 0 if report.correct else 1


def _check_folder(args: argparse.Namespace) -> int:
    """``check --tasks DIR``: one line per task file as it ends, then the totals."""
    from ..app.checking import CheckConfig
    from ..app.errors import UserError
    from ..app.folder import check_folder

    if args.dsl or args.shape or args.dtype:
        raise UserError("--tasks checks each file as it is: --dsl, --shape and --dtype apply to one task")
    config = CheckConfig(soc=args.soc, full=args.full, shape_given=False, timing=not args.no_timing)

    def line(f) -> None:  # noqa: ANN001 - a FileCheck
        if args.json:
            return
        what = f.message
        if f.outcome == "pass":
            what = f.best or ""
            if f.time_us:
                what += f"  {f.timing_kind + ' ' if f.timing_kind else ''}{f.time_us:.1f} us"
        print(f"{f.outcome.upper():<8} {Path(f.path).name:<36} {what}", flush=True)

    report = check_folder(args.tasks, config, progress=line)
    if args.json:
        print(json.dumps(report.to_dict(), default=str))
    else:
        t = report.totals
        print(f"{len(report.files)} task files: {t['pass']} pass, {t['fail']} fail, "
              f"{t['refused']} refused, {t['error']} error")
    return 0 if report.all_pass else 1


def _check_run_dir(args: argparse.Namespace, task_name: str) -> Path:
    """Where ``check`` with an LLM keeps its exchanges: ``--out`` or a new run directory."""
    from ..app.tuning import run_dir_for

    return run_dir_for(f"{task_name}-check", args.out)
