"""The ``ascendcraft`` command: ops, check, lower, tune.

Errors a user can cause (a bad flag value, unknown op or SoC, broken task file, malformed
DSL, unusable run directory or storage, a resume that does not match its run) end as one
readable paragraph on stderr and exit code 2.  Anything else is a bug: one paragraph naming
the file that holds the traceback, exit code 3 (``ASCENDCRAFT_DEBUG=1`` re-raises instead).
A signal stopping ``tune`` writes the partial summary and exits 128 + the signal number.
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

EXIT_USAGE = 2
EXIT_INTERNAL = 3


class UserError(Exception):
    """A problem with the user's input, reported without a traceback."""


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
            first = next((s for s in task.inputs if s.is_tensor), None)
            if first is None:
                raise UserError(f"task {task.name!r} has no tensor input for --shape/--dtype to change")
            task = task.with_shape(shape or tuple(first.shape), dtype)
        _check_device_fit(task, args.soc)
        return task
    except (TaskError, KeyError, ValueError) as e:
        raise UserError(str(e).strip("'\"")) from None


def _check_device_fit(task, soc_name: str) -> None:
    """Refuse a task whose tensors could not fit the SoC's HBM (see tasks/limits.py)."""
    from .soc import load_soc
    from .tasks.limits import GIB, check_fits_device

    soc = load_soc(soc_name)
    check_fits_device(task, int(soc.hbm_gib * GIB), soc.name)


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
                  "timing", "model_version"):
            if k in best:
                report[k] = best[k]
        report["best"] = best["candidate"]
    return report


def _read_dsl(path: str) -> str:
    """A user's DSL file as text: missing, unreadable, too big or not UTF-8 is a user error."""
    from .dsl.parser import MAX_SOURCE_BYTES

    p = Path(path)
    try:
        size = p.stat().st_size
        if p.is_dir():
            raise UserError(f"DSL file {path} is a directory")
        if size > MAX_SOURCE_BYTES:
            raise UserError(f"DSL file {path} is {size} bytes; a DSL program may have at most "
                            f"{MAX_SOURCE_BYTES} bytes")
        data = p.read_bytes()
    except OSError as e:
        raise UserError(f"cannot read DSL file {path}: {e.strerror or e}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise UserError(f"DSL file {path} is not UTF-8 text (byte 0x{data[e.start]:02x} on line "
                        f"{line}, offset {e.start}); save it as UTF-8") from None


def _prepare_user_dsl(path: str, source: str):
    """Parse and type-check a user's program; a DslError is the user's: line:col, exit 2."""
    from .dsl.parser import DslError
    from .evaluate import prepare

    try:
        return prepare(Path(path).stem, source)
    except DslError as e:
        raise UserError(f"{path}: {e}") from None


def _dsl_candidates(args: argparse.Namespace) -> list | None:
    """--dsl FILE: check a hand-written (or LLM-written) program instead of the proposer's."""
    if not getattr(args, "dsl", None):
        return None
    from .search.builtin import Candidate

    source = _read_dsl(args.dsl)
    _prepare_user_dsl(args.dsl, source)
    return [Candidate(f"{Path(args.dsl).stem}/file", source, origin="file")]


def _check_shapes_fit(task, args: argparse.Namespace) -> tuple[bool, str | None]:
    """Whether to check at the task's own (full) shapes, and a note when that was given up:
    a check at a shape whose tensors exceed the memory ceiling is never attempted — with
    --shape the check runs at reduced shapes derived from it, --full is refused."""
    from .tasks.limits import check_bytes, fmt_bytes, memory_ceiling

    explicit = bool(args.shape)
    if not (explicit or args.full):
        return False, None
    need, ceiling = check_bytes(task), memory_ceiling()
    if need <= ceiling:
        return explicit, None
    what = f"checking {task.name} at its full shapes {task.shapes}"
    if args.full:
        raise UserError(f"--full: {what} needs about {fmt_bytes(need)}, above this machine's "
                        f"ceiling of {fmt_bytes(ceiling)} (a quarter of its memory); drop --full "
                        f"to check at reduced shapes (timing is modeled at the full shape anyway)")
    return False, (f"{what} would need about {fmt_bytes(need)} (ceiling {fmt_bytes(ceiling)}): "
                   f"checked at reduced shapes derived from --shape instead; timing is modeled "
                   f"at the full shape")


def cmd_check(args: argparse.Namespace) -> int:
    task = _load_task(args)
    candidates = _dsl_candidates(args)
    explicit, note = _check_shapes_fit(task, args)
    report = check_task(task, soc=args.soc, full=args.full, timing=not args.no_timing,
                        candidates=candidates, explicit_shape=explicit)
    if note:
        report["note"] = note
    if args.json:
        print(json.dumps(report, default=str))
        return 0 if report["correct"] else 1
    shapes = "; ".join(", ".join("x".join(map(str, s)) or "()" for s in ss) for ss in report["shapes"])
    print(f"{report['op']} ({report['category']}, {report['dtype']}) on {report['soc']} — checked at {shapes}")
    if note:
        print(f"  note: {note}")
    for r in report["candidates"]:
        mark = "PASS" if r["correct"] else "FAIL"
        line = f"  {mark} {r['candidate']:<28}"
        if r["correct"]:
            line += f" max abs err {r['max_abs_err']:.3g}  max rel err {r['max_rel_err']:.3g}"
            if r.get("modeled_us"):
                line += (f"  modeled {r['modeled_us']:.1f} us ({r['roofline_frac'] * 100:.0f}% of roofline,"
                         f" {r['bound']}-bound, {r['speedup']:.2f}x vs eager model)")
            elif r.get("error"):
                line += f"  (no modeled time: {r['error']})"
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
        source = _read_dsl(args.dsl)
        name = Path(args.dsl).stem
        prep = _prepare_user_dsl(args.dsl, source)
    else:
        from .evaluate import prepare

        task = _load_task(args)
        cands = _proposals(task)
        idx = args.candidate
        if idx >= len(cands):
            n = len(cands)
            raise UserError(f"task {task.name!r} has {n} candidate{'s' if n != 1 else ''}: "
                            f"--candidate takes 0 to {n - 1}, not {idx}")
        source, name = cands[idx].source, cands[idx].name
        prep = prepare(name, source)
    params = _parse_params(args.params)
    _check_params(name, prep.program.tunables, params)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} exists and is not a directory")
    from .dsl.cube import is_cube_source

    try:
        if is_cube_source(source):
            from .dsl.lowering.cube import lower_cube, write_cube_outputs

            paths = write_cube_outputs(lower_cube(source, params), out, soc=args.soc, params=params)
        else:
            paths = write_outputs(lower(source, params), out, soc=args.soc, params=params)
    except DslError as e:
        raise UserError(f"{name}: {e}") from None
    except OSError as e:
        raise UserError(f"cannot write the lowered sources to --out {out}: {e.strerror or e}"
                        f"{f' ({e.filename})' if e.filename else ''}") from None
    print(f"lowered {name} → {out} ({len(paths)} files)")
    for p in paths:
        print(f"  {p.relative_to(out)}")
    return 0


def _parse_params(text: str | None) -> dict[str, int]:
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


def _check_params(name: str, tunables, params: dict[str, int]) -> None:
    """Every --params name must be a tunable of the program, every value in its domain."""
    known = {t.name: t for t in tunables}
    unknown = sorted(set(params) - set(known))
    if unknown:
        have = ", ".join(f"{t.name} {t.domain}" for t in tunables) or "none"
        raise UserError(f"{name} has no tunable {', '.join(unknown)}; its tunables: {have}")
    for k, v in params.items():
        d = known[k].domain
        if not _in_domain(d.kind, d.args, v):
            raise UserError(f"--params {k}={v} is outside the domain of {k} in {name}: {d}")


def _in_domain(kind: str, args: tuple[int, ...], v: int) -> bool:
    """Membership computed arithmetically (a domain may be far too large to list)."""
    if kind == "pow2":
        lo, hi = args
        return lo <= v <= hi and v > 0 and v & (v - 1) == 0
    if kind == "span":
        lo, hi, step = args
        return lo <= v <= hi and (v - lo) % step == 0
    return v in args


# ---------------------------------------------------------------- tune
def cmd_tune(args: argparse.Namespace) -> int:
    from .search.driver import SearchInterrupted
    from .tuning import run_dir_for, tune

    task = _load_task(args)
    candidates = _proposals(task)
    args.run_dir = run_dir_for(task, args.out)  # also where an internal error's traceback goes
    try:
        summary = tune(task, args, candidates=candidates, run_dir=args.run_dir)
    except SearchInterrupted as stop:
        partial = getattr(stop, "summary", None) or {}
        if args.json:
            print(json.dumps(partial, default=str))
        print(_one_paragraph(
            f"ascendcraft tune: {stop.result.partial} after {stop.result.evaluated}/{args.budget} "
            f"evaluated trials; partial summary in {args.run_dir / 'summary.txt'}; continue with "
            f"--resume --out {args.run_dir}"), file=sys.stderr)
        import signal

        return 128 + int(getattr(signal, stop.signal_name, signal.SIGINT))
    if args.json:
        print(json.dumps(summary, default=str))
    return 0 if summary.get("best", {}).get("correct") else 1


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="ascendcraft", description="Write and tune AscendC kernels for Ascend NPUs. "
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
    sp.add_argument("--candidate", type=_int_at_least(0), default=0,
                    help="which proposed candidate (default 0)")
    sp.add_argument("--params", help="tunable values, e.g. ROWS=4,DEPTH=2")
    sp.add_argument("--out", required=True)
    sp.set_defaults(fn=cmd_lower)

    sp = sub.add_parser("tune", help="search candidates × tunables with Optuna; keep the fastest correct")
    task_args(sp)
    sp.add_argument("--budget", type=_int_at_least(1), default=60,
                    help="evaluated trials across all candidates (>= 1)")
    sp.add_argument("--sampler", default="tpe", choices=["tpe", "random", "grid", "cmaes", "gp"])
    sp.add_argument("--seed", type=_int_at_least(0, 2**32 - 1), default=0, help="0 to 2^32-1")
    sp.add_argument("--storage", help="SQLAlchemy URL (default: SQLite in the run directory)")
    sp.add_argument("--study", help="study name")
    sp.add_argument("--resume", action="store_true",
                    help="continue the run in --out (same task, shapes, SoC and candidates)")
    sp.add_argument("--workers", type=_int_at_least(1), default=None,
                    help="parallel trials (default: CPU cores)")
    sp.add_argument("--out", default=None, help="run directory (default results/runs/<op>-<time>)")
    sp.add_argument("--timeout-per-trial", type=_positive_seconds, default=120.0,
                    help="seconds (> 0) before a trial is stopped")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(fn=cmd_tune)
    return p


def _validate(args: argparse.Namespace) -> None:
    """Checks argparse cannot express: a known SoC, --resume with the run it continues."""
    soc = getattr(args, "soc", None)
    if soc is not None:
        from .soc import list_socs

        known = list_socs()
        if soc not in known:
            raise UserError(f"unknown SoC {soc!r}; known SoCs: {', '.join(known)}")
    for flag in ("out", "storage", "study", "dsl", "task", "op"):
        if getattr(args, flag, None) == "":
            raise UserError(f"--{flag} is empty")
    if getattr(args, "resume", False) and not args.out:
        raise UserError("--resume needs --out: the run directory of the run to continue")


def _user_error_types() -> tuple[type[BaseException], ...]:
    """UserError and the user-facing errors of the layers below (imported only if they can
    be: the error report itself must not fail)."""
    import importlib

    found: list[type[BaseException]] = [UserError]
    for module, name in (("tasks.task", "TaskError"), ("search.driver", "SearchSetupError")):
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
