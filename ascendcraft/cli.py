"""The ``ascendcraft`` command: ops, check, lower, tune, campaign, bench, prompt, export, library,
doctor.

A thin shell over the application layer (:mod:`ascendcraft.app`): it parses the command
line into typed configuration, calls a verb, and prints its typed result — the only module
that prints for the user. Errors a user can cause (a bad flag value, unknown op or SoC,
broken task file, malformed DSL, unusable run directory or storage, a resume that does not
match its run) end as one readable paragraph on stderr and exit code 2.  Anything else is a
bug: one paragraph naming the file that holds the traceback, exit code 3
(``ASCENDCRAFT_DEBUG=1`` re-raises instead). A signal stopping ``tune`` writes the partial
summary and exits 128 + the signal number.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, NoReturn

from .version import MODEL_VERSION

EXIT_USAGE = 2
EXIT_INTERNAL = 3
DEFAULT_SOC = "Ascend910B2"


def _one_paragraph(text: str) -> str:
    return " ".join(str(text).split())


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad command line is one paragraph (not usage + error), exit 2."""

    def error(self, message: str) -> NoReturn:
        print(_one_paragraph(f"{self.prog}: {message} (see `{self.prog} --help`)"), file=sys.stderr)
        sys.exit(EXIT_USAGE)


def _int_at_least(lo: int, hi: int | None = None):
    """argparse type: an integer in [lo, hi]."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < lo or (hi is not None and value > hi):
            bound = f"between {lo} and {hi}" if hi is not None else f"at least {lo}"
            raise argparse.ArgumentTypeError(f"must be {bound}, got {value}")
        return value

    return parse


def _positive_seconds(text: str) -> float:
    """argparse type: a finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds > 0, got {text}")
    return value


def _task_ref(args: argparse.Namespace):
    from .app.task import TaskRef

    return TaskRef(op=getattr(args, "op", None), task_file=getattr(args, "task", None),
                   shape=getattr(args, "shape", None), dtype=getattr(args, "dtype", None))


def _load_task(args: argparse.Namespace, ref: Any = None):
    """The task the flags name (``ref``: their TaskRef, when the caller keeps it)."""
    from .app.task import load_task

    return load_task(ref or _task_ref(args), args.soc)


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
def cmd_check(args: argparse.Namespace) -> int:
    from .app.candidates import dsl_file_candidate
    from .app.checking import CheckConfig, check

    if getattr(args, "tasks", None):
        return _check_folder(args)
    task = _load_task(args)
    candidates = (dsl_file_candidate(args.dsl),) if getattr(args, "dsl", None) else None
    proposer = _proposer_config(args)
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
        mark = "PASS" if r.correct else "FAIL"
        line = f"  {mark} {r.candidate:<28}" + (f" ({r.origin})" if report.llm is not None else "")
        if r.correct:
            line += f" max abs err {r.max_abs_err:.3g}  max rel err {r.max_rel_err:.3g}"
            t = r.timing
            if r.time_us:
                line += (f"  {_kind_word(t)}{r.time_us:.1f} us ({t['roofline_frac'] * 100:.0f}% of "
                         f"roofline, {t['bound']}-bound, {t['speedup']:.2f}x vs eager model)")
            elif t.get("error"):
                line += f"  (no {_kind_word(t)}time: {t['error']})"
        else:
            line += f" [{r.status.value}] {r.message}"
        print(line)
    best = report.best
    if best is not None and best.timing.get("pipes"):
        from .app.timing import timing_kind

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
    from .app.checking import CheckConfig
    from .app.errors import UserError
    from .app.folder import check_folder

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


def _not_measured(kind: str | None) -> str:
    """The reminder that a time is not a measurement, unless it is one."""
    return "" if kind == "measured" else f", model {MODEL_VERSION}, not measured"


def _kind_word(timing: dict[str, Any]) -> str:
    """The kind of time the fields hold, and a space (nothing when they do not say)."""
    from .app.timing import timing_kind

    kind = timing_kind(timing)
    return f"{kind} " if kind else ""


def _check_run_dir(args: argparse.Namespace, task_name: str) -> Path:
    """Where ``check`` with an LLM keeps its exchanges: ``--out`` or a new run directory."""
    from .app.tuning import run_dir_for

    return run_dir_for(f"{task_name}-check", args.out)


# ---------------------------------------------------------------- LLM proposer
def _proposer_config(args: argparse.Namespace):
    """``--proposer`` and the LLM flags as a ProposerConfig (the endpoint falls back on
    OPENAI_BASE_URL / OPENAI_API_KEY)."""
    from .app.llm import ProposerConfig, llm_config

    kind = getattr(args, "proposer", "builtin")
    if kind == "builtin":
        return ProposerConfig()
    llm = llm_config(cache=args.llm_cache, no_cache=args.no_llm_cache, replay=args.replay,
                     base_url=args.base_url, model=args.model, candidates=args.llm_candidates,
                     repair_rounds=args.repair_rounds, optimise_rounds=args.optimise_rounds,
                     timeout_s=args.llm_timeout, retries=args.llm_retries)
    return ProposerConfig(kind, llm)


def cmd_prompt(args: argparse.Namespace) -> int:
    from .app.errors import UserError
    from .app.llm import prompt_messages

    if not (args.op or args.task):
        raise UserError("prompt needs --op NAME or --task FILE")
    messages = prompt_messages(_load_task(args), args.soc, args.candidates)
    if args.json:
        print(json.dumps(messages, ensure_ascii=False))
        return 0
    for m in messages:
        print(f"===== {m['role']} =====")
        print(m["content"].rstrip("\n"))
        print()
    return 0


# ---------------------------------------------------------------- lower
def cmd_lower(args: argparse.Namespace) -> int:
    from .app.candidates import dsl_file_candidate, pick_candidate
    from .app.lowering import LowerConfig, lower

    if args.dsl:
        name, source = Path(args.dsl).stem, dsl_file_candidate(args.dsl).source
    else:
        cand = pick_candidate(_load_task(args), args.candidate)
        name, source = cand.name, cand.source
    params = _parse_params(args.params)
    done = lower(name, source, LowerConfig(out=Path(args.out), soc=args.soc, params=params))
    print(f"lowered {done.name} → {done.out} ({len(done.paths)} files)")
    for p in done.paths:
        print(f"  {p.relative_to(done.out)}")
    return 0


def _parse_params(text: str | None) -> dict[str, int]:
    """``--params NAME=INT,NAME=INT``."""
    from .app.errors import UserError

    if not text:
        return {}
    out: dict[str, int] = {}
    for item in text.split(","):
        k, eq, v = item.partition("=")
        k = k.strip()
        try:
            if not (k and eq):
                raise ValueError
            value = int(v)
        except ValueError:
            raise UserError(f"--params takes NAME=INT pairs separated by commas, got {item!r}") from None
        if k in out:
            raise UserError(f"--params gives {k} twice")
        out[k] = value
    return out


# ---------------------------------------------------------------- tune
def cmd_tune(args: argparse.Namespace) -> int:
    import signal

    from .app.tuning import TuneConfig, TuneInterrupted, run_dir_for, tune
    from .cluster.config import ExecutorConfig
    from .search.progress import ProgressLine

    ref = _task_ref(args)
    task = _load_task(args, ref)
    args.run_dir = run_dir_for(task.name, args.out)  # also where an internal error's traceback goes
    config = TuneConfig(
        soc=args.soc, backend=args.backend, budget=args.budget, sampler=args.sampler, seed=args.seed,
        storage=args.storage, study=args.study, resume=args.resume, run_dir=args.run_dir,
        timeout_per_trial_s=args.timeout_per_trial,
        executor=ExecutorConfig(workers=args.workers, address=args.ray_address),
        proposer=_proposer_config(args), cache=not args.no_cache,
    )
    # a terminal: the line redrawn on stderr; otherwise plain lines on stdout, before the
    # summary (stderr stays one paragraph when something goes wrong)
    progress = (None if args.json or args.quiet else ProgressLine(sys.stderr) if sys.stderr.isatty()
                else ProgressLine(sys.stdout, tty=False))
    try:
        summary = tune(ref, config, progress=progress)
    except TuneInterrupted as stop:
        partial = stop.summary
        if args.json:
            print(json.dumps(partial.to_dict(), default=str))
        print(_one_paragraph(
            f"ascendcraft tune: {partial.partial} after {partial.trials}/{args.budget} "
            f"evaluated trials; partial summary in {args.run_dir / 'summary.txt'}; continue with "
            f"--resume --out {args.run_dir}"), file=sys.stderr)
        return 128 + int(getattr(signal, stop.signal_name, signal.SIGINT))
    if args.json:
        print(json.dumps(summary.to_dict(), default=str))
    else:
        print(summary.text)
        b = summary.best
        if b.correct:
            kind = summary.timing
            print(f"winner: {b.candidate} {b.params} — {kind} {b.time_us:.1f} us, "
                  f"{(b.speedup or 0):.2f}x vs eager model, {(b.roofline_frac or 0) * 100:.0f}% of "
                  f"roofline ({kind}{_not_measured(kind)})")
        else:
            print("no correct kernel found")
        print(f"run directory: {summary.run_dir}")
    return 0 if summary.best.correct else 1


# ---------------------------------------------------------------- export, library, doctor
def cmd_export(args: argparse.Namespace) -> int:
    from .library import export

    done = export(args.run_dirs, args.library, args.version, message=args.message or "", fresh=args.fresh)
    if args.json:
        print(json.dumps({"library": str(done.library), "version": done.version, "path": str(done.path),
                          "entries": done.entries, "added": done.added, "replaced": done.replaced,
                          "carried": done.carried}))
        return 0
    print(f"exported {done.library} {done.version}: {len(done.entries)} entries "
          f"({len(done.added)} added, {len(done.replaced)} replaced, {len(done.carried)} carried over)")
    for eid in done.entries:
        how = "added" if eid in done.added else "replaced" if eid in done.replaced else "carried"
        print(f"  {how:<8} {eid}")
    return 0


def cmd_library(args: argparse.Namespace) -> int:
    from .library.store import resolve_ref

    lib, version = resolve_ref(args.dir)
    if args.action == "list":
        return _library_list(lib, version, args.json)
    if args.action == "show":
        return _library_show(lib, version, args.entry, args.json)
    if args.action == "verify":
        return _library_verify(lib, version, args.json, not args.hashes_only)
    if args.action == "diff":
        return _library_diff(lib, version, args.other, args.json)
    return _library_build(lib, version, args.build_soc, args.dry_run)


def _library_list(lib: Any, version: str | None, as_json: bool) -> int:
    m = lib.manifest(version)
    if as_json:
        print(json.dumps({"versions": list(lib.versions), "version": m["version"], "entries": m["entries"]}))
        return 0
    print(f"{lib.root}: versions {', '.join(lib.versions)}; {m['version']} has {len(m['entries'])} entries")
    for e in m["entries"].values():
        print(f"  {e['id']:<56} {e['timing_kind']} {e['time_us']:.1f} us  {e['candidate']} {json.dumps(e['params'])}")
    return 0


def _library_show(lib: Any, version: str | None, entry: str | None, as_json: bool) -> int:
    from .app.errors import UserError

    m = lib.manifest(version)
    if entry is None:
        out = {k: v for k, v in m.items() if k != "entries"}
        print(json.dumps(out, indent=2) if not as_json else json.dumps(out))
        return 0
    if entry not in m["entries"]:
        raise UserError(f"{m['version']} has no entry {entry!r}; `ascendcraft library list` shows them")
    data = json.loads((lib.path(m["version"]) / m["entries"][entry]["path"] / "entry.json").read_text())
    print(json.dumps(data) if as_json else json.dumps({k: v for k, v in data.items() if k != "files"}, indent=2))
    return 0


def _library_verify(lib: Any, version: str | None, as_json: bool, rebuild: bool) -> int:
    from .library import verify

    report = verify(lib, version, rebuild=rebuild)
    if as_json:
        print(json.dumps(report.to_dict()))
        return 0 if report.ok else 1
    for p in report.problems:
        print(f"  FAIL {p}")
    for e in report.entries:
        err = "" if e.max_abs_err is None else f"  max abs err {e.max_abs_err:.3g}"
        print(f"  {'PASS' if e.ok else 'FAIL'} {e.id}{err}")
        for p in e.problems:
            print(f"       {p}")
        for n in e.notes:
            print(f"       note: {n}")
    print(f"{report.library} {report.version}: " + ("verified" if report.ok else "VERIFY FAILED"))
    return 0 if report.ok else 1


def _library_diff(lib: Any, version: str | None, other: str | None, as_json: bool) -> int:
    from .app.errors import UserError
    from .library import diff
    from .library.store import resolve_ref

    if other is None:
        newer = version or lib.latest
        at = lib.versions.index(newer) if newer in lib.versions else -1
        if at < 1:
            raise UserError(f"{lib.root} has no version before {newer} to compare with; give OTHER")
        old_m, new_m = lib.manifest(lib.versions[at - 1]), lib.manifest(newer)
        names = (lib.versions[at - 1], newer)
    else:
        lib2, version2 = resolve_ref(other)
        old_m, new_m = lib.manifest(version), lib2.manifest(version2)
        names = (f"{lib.root}@{old_m['version']}", f"{lib2.root}@{new_m['version']}")
    d = diff(old_m, new_m, *names)
    if as_json:
        print(json.dumps(d.to_dict()))
        return 0
    print(f"{d.old} -> {d.new}")
    for eid in d.added:
        print(f"  added    {eid}")
    for eid in d.removed:
        print(f"  removed  {eid}")
    for c in d.changed:
        what = (f"{c.old_kind} {c.old_us:.1f} us -> {c.new_us:.1f} us ({c.ratio:.2f}x)" if c.comparable
                else f"{c.old_us:.1f} us -> {c.new_us:.1f} us ({c.note})")
        print(f"  changed  {c.id}: {what}" + ("; new kernel" if c.kernel_changed else ""))
    print(f"  {len(d.added)} added, {len(d.removed)} removed, {len(d.changed)} changed, "
          f"{len(d.unchanged)} unchanged")
    return 0


def _library_build(lib: Any, version: str | None, soc: str | None, dry_run: bool) -> int:
    from .app.errors import UserError
    from .library.build import build_library

    steps, missing = build_library(lib, version, soc=soc, run=not dry_run)
    if dry_run:
        for s in steps:
            print(s)
        if missing:
            print(f"# on this machine these would fail: missing {'; '.join(missing)}", file=sys.stderr)
        return 0
    if missing:
        raise UserError("cannot build the library with CANN here; missing: " + "; ".join(missing)
                        + " (--dry-run prints the commands)")
    print(f"built {len(steps)} steps")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from .doctor import backend_in_use, diagnose

    findings = diagnose(storage=args.storage, ray_address=args.ray_address)
    if args.json:
        print(json.dumps({"findings": [f.to_dict() for f in findings], "backend": backend_in_use(findings)}))
        return 0
    for f in findings:
        print(f.line())
    print(backend_in_use(findings))
# ---------------------------------------------------------------- campaign
def cmd_campaign(args: argparse.Namespace) -> int:
    import signal

    from .campaign import CampaignConfig, CampaignInterrupted, campaign_ops, run_campaign
    from .cluster.config import ExecutorConfig

    out = Path(args.out)
    task_files = tuple(str(p) for p in sorted(Path(args.tasks).glob("*.py"))) if args.tasks else ()
    if args.tasks and not task_files:
        from .app.errors import UserError

        raise UserError(f"--tasks {args.tasks}: no task files (*.py) there")
    config = CampaignConfig(
        out=out, hours=args.hours, ops=campaign_ops(args.ops.split(",")) if args.ops else (),
        task_files=task_files, socs=tuple(args.soc or [DEFAULT_SOC]),
        budget_per_op=args.budget_per_op, storage=args.storage, resume=args.resume,
        seed=args.seed, timeout_per_trial_s=args.timeout_per_trial,
        executor=ExecutorConfig(workers=args.workers, address=args.ray_address),
    )
    args.run_dir = out
    try:
        result = run_campaign(config, say=lambda line: print(line, flush=True))
    except CampaignInterrupted as stop:
        print(_one_paragraph(
            f"ascendcraft campaign: {stop.result.state.stopped}; report so far in "
            f"{stop.result.report}; continue with --resume --out {out}"), file=sys.stderr)
        return 128 + int(getattr(signal, stop.signal_name, signal.SIGINT))
    print(f"report: {result.report}")
    return 0


# ---------------------------------------------------------------- bench
def cmd_bench(args: argparse.Namespace) -> int:
    import shlex
    import signal

    from .bench import BenchConfig, regenerate, run_bench
    from .bench.suite import categories_arg, names_arg
    from .campaign import CampaignInterrupted
    from .cluster.config import ExecutorConfig

    if args.report:
        path = regenerate(Path(args.report), Path(args.out) if args.out else None)
        print(f"report: {path}")
        return 0
    out = Path(args.out or "results/runs/bench")
    args.run_dir = out
    config = BenchConfig(
        out=out, suite=args.suite, categories=categories_arg(args.categories),
        only=names_arg(args.only), budget=args.budget, soc=args.soc, proposer=args.proposer, resume=args.resume,
        seed=args.seed, timeout_per_trial_s=args.timeout_per_trial,
        executor=ExecutorConfig(workers=args.workers, address=args.ray_address),
        command=shlex.join(["ascendcraft", *args.argv]))
    try:
        progress = sys.stderr if args.json else sys.stdout  # --json: stdout is the data
        result = run_bench(config, say=lambda line: print(line, file=progress, flush=True))
    except CampaignInterrupted as stop:
        print(_one_paragraph(
            f"ascendcraft bench: {stop.result.state.stopped}; report so far in "
            f"{stop.result.report}; continue with the same command and --resume"), file=sys.stderr)
        return 128 + int(getattr(signal, stop.signal_name, signal.SIGINT))
    if args.json:
        print((result.report.parent / "bench.json").read_text())
    else:
        print(f"report: {result.report}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from .search.samplers import SAMPLERS

    p = _Parser(prog="ascendcraft", description="Write and tune AscendC kernels for Ascend NPUs. "
                "Timing without an NPU is modeled (emulator trace + SoC model), never measured.")
    sub = p.add_subparsers(dest="cmd", required=True)

    def many_runs_args(sp):  # campaign and bench: one executor for many tune runs
        sp.add_argument("--workers", type=_int_at_least(1), default=None,
                        help="trials in flight (default: CPU cores, or the cluster's)")
        sp.add_argument("--ray-address", default=None,
                        help="join this Ray cluster (default: $RAY_ADDRESS; neither: local)")
        sp.add_argument("--seed", type=_int_at_least(0, 2**32 - 1), default=0)
        sp.add_argument("--timeout-per-trial", type=_positive_seconds, default=120.0,
                        help="CPU seconds (> 0) a trial may use before it is stopped")
    def llm_args(sp):
        g = sp.add_argument_group("proposer", "who writes the candidates; an LLM is reached "
                                  "through any OpenAI-compatible chat-completions endpoint")
        g.add_argument("--proposer", choices=["builtin", "llm", "both"], default="builtin",
                       help="builtin (default, no endpoint), llm, or both competing in one run")
        g.add_argument("--model", help="model name (default: the server's only model)")
        g.add_argument("--base-url", help="endpoint, e.g. http://127.0.0.1:11434/v1 (default "
                       "$OPENAI_BASE_URL; the key is read from $OPENAI_API_KEY)")
        g.add_argument("--llm-candidates", type=_int_at_least(1, 8), default=3,
                       help="distinct kernels asked for per round (1-8, default 3)")
        g.add_argument("--repair-rounds", type=_int_at_least(0, 8), default=2,
                       help="repairs of one failing candidate (0-8, default 2)")
        g.add_argument("--optimise-rounds", type=_int_at_least(0, 8), default=2,
                       help="rounds sending the best kernel back for a faster one (tune; 0-8, default 2)")
        g.add_argument("--llm-timeout", type=_positive_seconds, default=300.0,
                       help="seconds per request (default 300)")
        g.add_argument("--llm-retries", type=_int_at_least(0, 10), default=3,
                       help="retries of a 429/5xx/timeout, with exponential backoff (default 3)")
        g.add_argument("--llm-cache", help="response cache directory (default: in the ascendcraft cache)")
        g.add_argument("--no-llm-cache", action="store_true", help="always ask the endpoint")
        g.add_argument("--replay", metavar="RUN_DIR",
                       help="answer from the LLM exchanges stored in RUN_DIR (offline, no endpoint)")

    def task_args(sp):
        g = sp.add_mutually_exclusive_group()
        g.add_argument("--op", help="built-in op name (see `ascendcraft ops`)")
        g.add_argument("--task", help="KernelBench/MultiKernelBench-format task file")
        sp.add_argument("--shape", help="shape of the first tensor input, e.g. 1x500000")
        sp.add_argument("--dtype", help="fp32 | fp16 | bf16")
        sp.add_argument("--soc", default=DEFAULT_SOC, help=f"SoC model (default {DEFAULT_SOC})")
        return g

    def backend_arg(sp):
        sp.add_argument("--backend", default="emulator", choices=["emulator", "npu"],
                        help="where kernels are built, run and timed (default: emulator)")

    sp = sub.add_parser("ops", help="list built-in ops")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(fn=cmd_ops)

    sp = sub.add_parser("check", help="build candidates in the emulator, verify against PyTorch, model time")
    task_args(sp).add_argument("--tasks", metavar="DIR", help="check every task file (*.py) in DIR")
    sp.add_argument("--full", action="store_true", help="check at the full task shapes (memory permitting)")
    sp.add_argument("--no-timing", action="store_true", help="skip the performance model")
    sp.add_argument("--dsl", help="check this DSL file instead of the proposer's candidates")
    sp.add_argument("--out", default=None, help="with --proposer llm|both: where the LLM's "
                    "exchanges are kept (default results/runs/<op>-check-<time>)")
    sp.add_argument("--json", action="store_true")
    llm_args(sp)
    backend_arg(sp)
    sp.set_defaults(fn=cmd_check)

    sp = sub.add_parser("lower", help="write the CANN project, direct-launch, torch and emulator sources")
    task_args(sp)
    sp.add_argument("--dsl", help="lower this DSL file instead of a proposed candidate")
    sp.add_argument("--candidate", type=_int_at_least(0), default=0,
                    help="which proposed candidate (default 0)")
    sp.add_argument("--params", help="tunable values, e.g. ROWS=4,DEPTH=2")
    sp.add_argument("--out", required=True)
    sp.set_defaults(fn=cmd_lower)

    sp = sub.add_parser("tune", help="search candidates × tunables with Optuna; keep the fastest correct")
    task_args(sp)
    sp.add_argument("--budget", type=_int_at_least(1), default=60,
                    help="evaluated trials across all candidates (>= 1)")
    sp.add_argument("--sampler", default="tpe", choices=list(SAMPLERS))
    sp.add_argument("--seed", type=_int_at_least(0, 2**32 - 1), default=0, help="0 to 2^32-1")
    sp.add_argument("--storage", help="SQLAlchemy URL (default: SQLite in the run directory)")
    sp.add_argument("--study", help="study name")
    sp.add_argument("--resume", action="store_true",
                    help="continue the run in --out (same task, shapes, SoC and candidates)")
    sp.add_argument("--workers", type=_int_at_least(1), default=None,
                    help="parallel trials (default: CPU cores)")
    sp.add_argument("--out", default=None, help="run directory (default results/runs/<op>-<time>)")
    sp.add_argument("--timeout-per-trial", type=_positive_seconds, default=120.0,
                    help="CPU seconds (> 0) a trial may use before it is stopped (and run once more)")
    sp.add_argument("--ray-address", default=None,
                    help="join this Ray cluster (default: $RAY_ADDRESS; neither: local)")
    sp.add_argument("--no-cache", action="store_true",
                    help="evaluate every trial again instead of reusing outcomes of earlier runs "
                    "(also: ASCENDCRAFT_OUTCOME_CACHE=off)")
    sp.add_argument("--quiet", action="store_true", help="no progress line")
    sp.add_argument("--json", action="store_true")
    llm_args(sp)
    backend_arg(sp)
    sp.set_defaults(fn=cmd_tune)

    sp = sub.add_parser("export", help="export tuning runs' winners as a new version of a kernel library")
    sp.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    sp.add_argument("--library", required=True, metavar="DIR")
    sp.add_argument("--version", required=True, help="semantic version X.Y.Z, newer than the library's latest")
    sp.add_argument("--message", help="the changelog entry")
    sp.add_argument("--fresh", action="store_true",
                    help="only these runs (default: the previous version's other entries are carried over)")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(fn=cmd_export)

    sp = sub.add_parser("library", help="list, show, verify, diff or build a kernel library (DIR or DIR@X.Y.Z)")
    lsub = sp.add_subparsers(dest="action", required=True)
    for action, text in (("list", "the entries of a version"), ("show", "a version's manifest or one entry"),
                         ("verify", "re-hash, re-lower, rebuild and re-check every entry"),
                         ("diff", "entries added, removed and speed changes against OTHER or the previous version"),
                         ("build", "build every entry with CANN (direct-launch libraries)")):
        ap = lsub.add_parser(action, help=text)
        ap.add_argument("dir", metavar="DIR")
        if action == "show":
            ap.add_argument("entry", nargs="?", help="entry id, e.g. relu/Ascend910B2/fp32-4096x32768")
        if action == "diff":
            ap.add_argument("other", nargs="?", metavar="OTHER")
        if action == "verify":
            ap.add_argument("--hashes-only", action="store_true", help="check the hashes, do not rebuild")
        if action == "build":
            ap.add_argument("--soc", dest="build_soc", default=None, help="only the entries of this SoC")
            ap.add_argument("--dry-run", action="store_true", help="print the exact commands, run nothing")
        ap.add_argument("--json", action="store_true")
        ap.set_defaults(fn=cmd_library, entry=None, other=None, hashes_only=False, build_soc=None, dry_run=False)

    sp = sub.add_parser("doctor", help="what this machine offers (compiler, CANN, torch_npu, NPUs, Ray, "
                        "PostgreSQL, LLM) and what is used instead")
    sp.add_argument("--storage", help="a study storage URL to check (e.g. postgresql://user@host/db)")
    sp.add_argument("--ray-address", help="a Ray cluster address to check (default: RAY_ADDRESS)")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(fn=cmd_doctor)

    sp = sub.add_parser("campaign", help="tune many ops under one time budget; a morning report")
    g = sp.add_mutually_exclusive_group()
    g.add_argument("--ops", help="comma-separated op names, or all")
    g.add_argument("--tasks", help="a directory of task files (*.py)")
    sp.add_argument("--hours", type=_positive_seconds, required=True,
                    help="the time budget in hours (> 0), shared by every op")
    sp.add_argument("--budget-per-op", type=_int_at_least(1), default=100,
                    help="the most trials one op gets (default 100)")
    sp.add_argument("--soc", action="append", default=None,
                    help=f"SoC model; repeat for several (default {DEFAULT_SOC})")
    sp.add_argument("--out", default="results/campaign", help="campaign directory")
    sp.add_argument("--resume", action="store_true", help="continue the campaign in --out")
    sp.add_argument("--storage", help="SQLAlchemy URL for every op's study, e.g. PostgreSQL")
    many_runs_args(sp)
    sp.set_defaults(fn=cmd_campaign)

    sp = sub.add_parser("bench", help="tune every task of a suite with one trial budget; "
                        "BENCHMARK.md, bench.json and plots")
    sp.add_argument("--suite", default="builtin",
                    help="builtin (the registry) or a folder of task files (*.py)")
    sp.add_argument("--categories", help="comma-separated categories to run (default: all)")
    sp.add_argument("--only", help="comma-separated task names of the suite to run (default: all)")
    sp.add_argument("--budget", type=_int_at_least(1), default=20,
                    help="evaluated trials per task (default 20)")
    sp.add_argument("--soc", default=DEFAULT_SOC, help=f"SoC model (default {DEFAULT_SOC})")
    sp.add_argument("--proposer", default="builtin", help="proposer (default builtin)")
    sp.add_argument("--out", default=None,
                    help="bench directory (default results/runs/bench); with --report, "
                         "where to write the report")
    sp.add_argument("--resume", action="store_true", help="continue the bench in --out")
    sp.add_argument("--report", metavar="BENCH_DIR", default=None,
                    help="only rewrite the report of the bench in BENCH_DIR (no tuning)")
    many_runs_args(sp)
    sp.add_argument("--json", action="store_true", help="print bench.json when done")
    sp.set_defaults(fn=cmd_bench)
    sp = sub.add_parser("prompt", help="print the LLM proposer's first prompt for a task")
    task_args(sp)
    sp.add_argument("--candidates", type=_int_at_least(1, 8), default=3,
                    help="distinct kernels asked for (default 3)")
    sp.add_argument("--json", action="store_true", help="the messages as JSON")
    sp.set_defaults(fn=cmd_prompt)
    return p


def _validate(args: argparse.Namespace) -> None:
    from .app.errors import UserError

    """Checks argparse cannot express: torch importable, a known SoC, --resume with the run it
    continues, an npu backend that can work here."""
    if args.cmd != "doctor":
        from .backends.npu_env import find_cann, find_torch_npu

        npu = find_torch_npu()
        if npu.breaks_torch(find_cann()):  # `import torch` would fail: say why, not a traceback
            raise UserError(npu.explain() + " (`ascendcraft doctor` shows the whole picture)")
    soc = getattr(args, "soc", None)
    if soc is not None:
        from .app.task import known_socs

        known = known_socs()
        for one in soc if isinstance(soc, list) else [soc]:
            if one not in known:
                raise UserError(f"unknown SoC {one!r}; known SoCs: {', '.join(known)}")
    for flag in ("out", "storage", "study", "dsl", "task", "op"):
        if getattr(args, flag, None) == "":
            raise UserError(f"--{flag} is empty")
    if getattr(args, "resume", False) and not args.out and args.cmd != "bench":
        raise UserError("--resume needs --out: the run directory of the run to continue")
    if args.cmd == "campaign" and not args.resume and not (args.ops or args.tasks):
        raise UserError("campaign needs --ops LIST|all or --tasks DIR (or --resume)")
    proposer = getattr(args, "proposer", "builtin")
    if getattr(args, "resume", False) and proposer != "builtin":
        raise UserError(f"--resume with --proposer {proposer} is not supported: the LLM's "
                        f"rounds depend on how the search went; start a new run (--replay "
                        f"{args.out} answers it from this run's stored exchanges, offline)")
    if getattr(args, "replay", None) and proposer == "builtin":
        raise UserError("--replay answers an LLM's questions: use it with --proposer llm or both")
    if getattr(args, "backend", "emulator") != "emulator":
        from .backends import BackendUnavailable, get_backend

        try:
            get_backend(args.backend, soc)  # fails at once, listing what is missing
        except BackendUnavailable as e:
            raise UserError(f"--backend {args.backend}: {e}") from None


def _user_error_types() -> tuple[type[BaseException], ...]:
    """The user-facing errors of the layers below (imported only if they can be: the error
    report itself must not fail)."""
    import importlib

    found: list[type[BaseException]] = []
    for module, name in (("app.errors", "UserError"), ("tasks.task", "TaskError"),
                         ("search.errors", "SearchSetupError"), ("library.store", "LibraryError"),
                         ("backends.base", "BackendUnavailable")):
        try:
            found.append(getattr(importlib.import_module(f"ascendcraft.{module}"), name))
        except Exception:  # noqa: BLE001, S112 - then it is reported as an internal error
            continue
    return tuple(found)


def _internal_error(args: argparse.Namespace, exc: BaseException) -> str:
    """Write the traceback to the run directory (tune) or a temp log dir; the message."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    stamp = time.strftime("%Y%m%d-%H%M%S")
    places = []
    run_dir = getattr(args, "run_dir", None)
    if run_dir is not None and Path(run_dir).is_dir():
        places.append(Path(run_dir) / f"internal-error-{stamp}.txt")
    places.append(Path(tempfile.gettempdir()) / "ascendcraft" / f"internal-error-{stamp}-{os.getpid()}.txt")
    where = "could not be written anywhere"
    for path in places:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"ascendcraft {' '.join(getattr(args, 'argv', []))}\n\n{text}")
        except OSError:
            continue
        where = f"written to {path}"
        break
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    return (f"internal error: {type(exc).__name__}: {first}; full traceback {where}. This is a bug "
            f"in ascendcraft, not in your input; set ASCENDCRAFT_DEBUG=1 to see it here")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    try:
        _validate(args)
        return int(args.fn(args) or 0)
    except KeyboardInterrupt:
        print(f"ascendcraft {args.cmd}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - every error ends as one paragraph
        if isinstance(e, _user_error_types()):
            msg = str(e).strip().strip("'\"")  # KeyError quotes its message
            print(_one_paragraph(f"ascendcraft {args.cmd}: {msg}"), file=sys.stderr)
            return EXIT_USAGE
        if os.environ.get("ASCENDCRAFT_DEBUG") == "1":
            raise
        print(_one_paragraph(f"ascendcraft {args.cmd}: {_internal_error(args, e)}"), file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
