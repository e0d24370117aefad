"""``campaign`` and ``bench``: many tune runs under one budget or one suite."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .shell import DEFAULT_SOC, one_paragraph


def cmd_campaign(args: argparse.Namespace) -> int:
    import signal

    from ..campaign import CampaignConfig, CampaignInterrupted, campaign_ops, run_campaign
    from ..cluster.config import ExecutorConfig

    out = Path(args.out)
    task_files = tuple(str(p) for p in sorted(Path(args.tasks).glob("*.py"))) if args.tasks else ()
    if args.tasks and not task_files:
        from ..app.errors import UserError

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
        print(one_paragraph(
            f"ascendcraft campaign: {stop.result.state.stopped}; report so far in "
            f"{stop.result.report}; continue with --resume --out {out}"), file=sys.stderr)
        return 128 + int(getattr(signal, stop.signal_name, signal.SIGINT))
    print(f"report: {result.report}")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    import shlex
    import signal

    from ..bench import BenchConfig, regenerate, run_bench
    from ..bench.suite import categories_arg, names_arg
    from ..campaign import CampaignInterrupted
    from ..cluster.config import ExecutorConfig

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
        print(one_paragraph(
            f"ascendcraft bench: {stop.result.state.stopped}; report so far in "
            f"{stop.result.report}; continue with the same command and --resume"), file=sys.stderr)
        return 128 + int(getattr(signal, stop.signal_name, signal.SIGINT))
    if args.json:
        print((result.report.parent / "bench.json").read_text())
    else:
        print(f"report: {result.report}")
    return 0
