"""``lower``: write a candidate's AscendC sources without building or running them."""

from __future__ import annotations

import argparse
from pathlib import Path

from .shell import parse_params, task_from_args


def cmd_lower(args: argparse.Namespace) -> int:
    from ..app.candidates import dsl_file_candidate, pick_candidate
    from ..app.lowering import LowerConfig, lower

    if args.dsl:
        name, source = Path(args.dsl).stem, dsl_file_candidate(args.dsl).source
    else:
        cand = pick_candidate(task_from_args(args), args.candidate)
        name, source = cand.name, cand.source
    params = parse_params(args.params)
    done = lower(name, source, LowerConfig(out=Path(args.out), soc=args.soc, params=params))
    print(f"lowered {done.name} → {done.out} ({len(done.paths)} files)")
    for p in done.paths:
        print(f"  {p.relative_to(done.out)}")
    return 0
