"""The command line: every sub-command's flags, and the checks argparse cannot express."""

from __future__ import annotations

import argparse

from .check import cmd_check
from .info import cmd_doctor, cmd_ops, cmd_prompt
from .library import cmd_export, cmd_library
from .lower import cmd_lower
from .runs import cmd_bench, cmd_campaign
from .shell import DEFAULT_SOC, Parser, int_at_least, positive_seconds
from .tune import cmd_tune


def build_parser() -> argparse.ArgumentParser:
    from ..search.samplers import SAMPLERS

    p = Parser(prog="ascendcraft", description="Write and tune AscendC kernels for Ascend NPUs. "
                "Timing without an NPU is modeled (emulator trace + SoC model), never measured.")
    sub = p.add_subparsers(dest="cmd", required=True)

    def many_runs_args(sp):  # campaign and bench: one executor for many tune runs
        sp.add_argument("--workers", type=int_at_least(1), default=None,
                        help="trials in flight (default: CPU cores, or the cluster's)")
        sp.add_argument("--ray-address", default=None,
                        help="join this Ray cluster (default: $RAY_ADDRESS; neither: local)")
        sp.add_argument("--seed", type=int_at_least(0, 2**32 - 1), default=0)
        sp.add_argument("--timeout-per-trial", type=positive_seconds, default=120.0,
                        help="CPU seconds (> 0) a trial may use before it is stopped")
    def llm_args(sp):
        g = sp.add_argument_group("proposer", "who writes the candidates; an LLM is reached "
                                  "through any OpenAI-compatible chat-completions endpoint")
        g.add_argument("--proposer", choices=["builtin", "llm", "both"], default="builtin",
                       help="builtin (default, no endpoint), llm, or both competing in one run")
        g.add_argument("--model", help="model name (default: the server's only model)")
        g.add_argument("--base-url", help="endpoint, e.g. http://127.0.0.1:11434/v1 (default "
                       "$OPENAI_BASE_URL; the key is read from $OPENAI_API_KEY)")
        g.add_argument("--llm-candidates", type=int_at_least(1, 8), default=3,
                       help="distinct kernels asked for per round (1-8, default 3)")
        g.add_argument("--repair-rounds", type=int_at_least(0, 8), default=2,
                       help="repairs of one failing candidate (0-8, default 2)")
        g.add_argument("--optimise-rounds", type=int_at_least(0, 8), default=2,
                       help="rounds sending the best kernel back for a faster one (tune; 0-8, default 2)")
        g.add_argument("--llm-timeout", type=positive_seconds, default=300.0,
                       help="seconds per request (default 300)")
        g.add_argument("--llm-retries", type=int_at_least(0, 10), default=3,
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
    sp.add_argument("--candidate", type=int_at_least(0), default=0,
                    help="which proposed candidate (default 0)")
    sp.add_argument("--params", help="tunable values, e.g. ROWS=4,DEPTH=2")
    sp.add_argument("--out", required=True)
    sp.set_defaults(fn=cmd_lower)

    sp = sub.add_parser("tune", help="search candidates × tunables with Optuna; keep the fastest correct")
    task_args(sp)
    sp.add_argument("--budget", type=int_at_least(1), default=60,
                    help="evaluated trials across all candidates (>= 1)")
    sp.add_argument("--sampler", default="tpe", choices=list(SAMPLERS))
    sp.add_argument("--seed", type=int_at_least(0, 2**32 - 1), default=0, help="0 to 2^32-1")
    sp.add_argument("--storage", help="SQLAlchemy URL (default: SQLite in the run directory)")
    sp.add_argument("--study", help="study name")
    sp.add_argument("--resume", action="store_true",
                    help="continue the run in --out (same task, shapes, SoC and candidates)")
    sp.add_argument("--workers", type=int_at_least(1), default=None,
                    help="parallel trials (default: CPU cores)")
    sp.add_argument("--out", default=None, help="run directory (default results/runs/<op>-<time>)")
    sp.add_argument("--timeout-per-trial", type=positive_seconds, default=120.0,
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
    sp.add_argument("--hours", type=positive_seconds, required=True,
                    help="the time budget in hours (> 0), shared by every op")
    sp.add_argument("--budget-per-op", type=int_at_least(1), default=100,
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
    sp.add_argument("--budget", type=int_at_least(1), default=20,
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
    sp.add_argument("--candidates", type=int_at_least(1, 8), default=3,
                    help="distinct kernels asked for (default 3)")
    sp.add_argument("--json", action="store_true", help="the messages as JSON")
    sp.set_defaults(fn=cmd_prompt)
    return p


def validate(args: argparse.Namespace) -> None:
    """Checks argparse cannot express: torch importable, a known SoC, --resume with the run it
    continues, an npu backend that can work here."""
    from ..app.errors import UserError

    if args.cmd != "doctor":
        from ..backends.npu_env import find_cann, find_torch_npu

        npu = find_torch_npu()
        if npu.breaks_torch(find_cann()):  # `import torch` would fail: say why, not a traceback
            raise UserError(npu.explain() + " (`ascendcraft doctor` shows the whole picture)")
    soc = getattr(args, "soc", None)
    if soc is not None:
        from ..app.task import known_socs

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
        from ..backends import BackendUnavailable, get_backend

        try:
            get_backend(args.backend, soc)  # fails at once, listing what is missing
        except BackendUnavailable as e:
            raise UserError(f"--backend {args.backend}: {e}") from None
