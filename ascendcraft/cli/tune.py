"""``tune``: the search, its progress line and the winner's line."""

from __future__ import annotations

import argparse
import json
import sys

from .shell import not_measured, one_paragraph, proposer_config, task_from_args, task_ref_from_args


def cmd_tune(args: argparse.Namespace) -> int:
    import signal

    from ..app.tuning import TuneConfig, TuneInterrupted, run_dir_for, tune
    from ..cluster.config import ExecutorConfig
    from ..search.progress import ProgressLine

    ref = task_ref_from_args(args)
    task = task_from_args(args, ref)
    args.run_dir = run_dir_for(task.name, args.out)  # also where an internal error's traceback goes
    config = TuneConfig(
        soc=args.soc, backend=args.backend, budget=args.budget, sampler=args.sampler, seed=args.seed,
        storage=args.storage, study=args.study, resume=args.resume, run_dir=args.run_dir,
        timeout_per_trial_s=args.timeout_per_trial,
        executor=ExecutorConfig(workers=args.workers, address=args.ray_address),
        proposer=proposer_config(args), cache=not args.no_cache,
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
        print(one_paragraph(
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
                  f"roofline ({kind}{not_measured(kind)})")
        else:
            print("no correct kernel found")
        print(f"run directory: {summary.run_dir}")
    return 0 if summary.best.correct else 1
