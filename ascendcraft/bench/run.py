"""``bench``: every task of a suite tuned with the same trial budget, then the report.

The tuning is a campaign with ``fixed_budget`` (:mod:`ascendcraft.campaign`): the same
units, shared executor, record, signal handling and ``--resume``; the bench adds its
suite (``suite.json``) and writes its own report from the record in place of the
campaign's morning report. ``regenerate`` rewrites the report from a bench directory
without tuning anything.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..app.errors import UserError
from ..campaign import CampaignConfig, CampaignResult, run_campaign
from ..campaign.state import CampaignState
from ..cluster import ExecutorConfig
from ..search.protocols import Executor
from ..version import MODEL_VERSION, package_version, source_revision
from . import suite as suite_mod
from .report import write_bench_report
from .results import load_record

PROPOSERS = ("builtin",)
"""Proposers a bench can be run with (the builtin chain; others join as they land)."""


@dataclass(frozen=True)
class BenchConfig:
    """A bench: ``suite`` is ``builtin`` or a folder of task files; ``budget``: evaluated
    trials per task; ``command``: the command line, recorded in the report."""

    out: Path
    suite: str = "builtin"
    categories: tuple[str, ...] = ()
    only: tuple[str, ...] = ()
    budget: int = 20
    soc: str = "Ascend910B2"
    proposer: str = "builtin"
    resume: bool = False
    seed: int = 0
    timeout_per_trial_s: float = 120.0
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)
    command: str = ""


def _suite(config: BenchConfig) -> tuple[dict, list[suite_mod.Entry]]:
    """The suite to run: new (written to ``suite.json``) or, on resume, the recorded one
    (refused when the options name another)."""
    if config.proposer not in PROPOSERS:
        raise UserError(f"--proposer {config.proposer!r}: known proposers: {', '.join(PROPOSERS)}")
    path = config.out / suite_mod.FILE
    if config.resume:
        meta, entries = suite_mod.load(config.out)
        asked = {"suite": config.suite, "categories": list(config.categories),
                 "only": list(config.only), "budget": config.budget, "soc": config.soc,
                 "proposer": config.proposer}
        differ = [k for k, v in asked.items() if (meta.get(k) or None) != (v or None)]
        if differ:
            raise UserError(f"--resume with other {', '.join(differ)} than the bench in "
                            f"{config.out}; give the same options to continue it")
        if config.command:
            meta["resumed_with"] = [*meta.get("resumed_with", []), config.command]
            suite_mod.save(config.out, meta, entries)
        return meta, entries
    if path.exists():
        raise UserError(f"{config.out} already holds a bench; continue it with --resume, or "
                        f"give another --out")
    entries = suite_mod.resolve(config.suite, config.categories, config.only)
    meta = {"suite": config.suite, "categories": list(config.categories),
            "only": list(config.only), "budget": config.budget, "soc": config.soc, "proposer": config.proposer,
            "command": config.command, "ascendcraft": package_version(),
            "model_version": MODEL_VERSION, "revision": source_revision()}
    config.out.mkdir(parents=True, exist_ok=True)
    suite_mod.save(config.out, meta, entries)
    return meta, entries


def run_bench(config: BenchConfig, *, executor: Executor | None = None,
              say: Callable[[str], None] = lambda line: None) -> CampaignResult:
    """Run (or, with ``config.resume``, continue) a bench and write its report (the result
    names ``BENCHMARK.md``). A signal raises the campaign's
    :class:`~ascendcraft.campaign.CampaignInterrupted` once the record and a partial report
    are written."""
    meta, entries = _suite(config)
    runnable = [e for e in entries if not e.refused]
    for e in entries:
        if e.refused:
            say(f"    {e.name}: refused by the frontend — {e.refused[:200]}")

    def report(out: Path, st: CampaignState) -> Path:
        return write_bench_report(out, meta, entries, st)

    campaign = CampaignConfig(
        out=config.out, hours=0.0, ops=tuple(e.op for e in runnable if e.op),
        task_files=tuple(e.task_file for e in runnable if e.task_file), socs=(config.soc,),
        budget_per_op=config.budget, resume=config.resume, seed=config.seed,
        timeout_per_trial_s=config.timeout_per_trial_s, executor=config.executor,
        fixed_budget=True)
    if not runnable:
        raise UserError(f"--suite {config.suite}: the frontend refused every task file")
    return run_campaign(campaign, executor=executor, say=say, report=report)


def regenerate(out: Path, copy_to: Path | None = None) -> Path:
    """Rewrite the report of the bench in ``out`` from its record (no tuning); with
    ``copy_to``, write the report (BENCHMARK.md, bench.json, plots) there instead."""
    meta, entries = suite_mod.load(out)
    return write_bench_report(out, meta, entries, load_record(out), dest=copy_to)

