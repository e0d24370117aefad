"""What every sub-command shares: exit codes, the one-paragraph argparse, argument
types, and the flags-to-configuration helpers (task, proposer, params, timing words)."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any, NoReturn

from ..version import MODEL_VERSION

EXIT_USAGE = 2
EXIT_INTERNAL = 3
DEFAULT_SOC = "Ascend910B2"


def one_paragraph(text: str) -> str:
    return " ".join(str(text).split())


class Parser(argparse.ArgumentParser):
    """argparse, but a bad command line is one paragraph (not usage + error), exit 2."""

    def error(self, message: str) -> NoReturn:
        print(one_paragraph(f"{self.prog}: {message} (see `{self.prog} --help`)"), file=sys.stderr)
        sys.exit(EXIT_USAGE)


def int_at_least(lo: int, hi: int | None = None):
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


def positive_seconds(text: str) -> float:
    """argparse type: a finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds > 0, got {text}")
    return value


def task_ref_from_args(args: argparse.Namespace):
    from ..app.task import TaskRef

    return TaskRef(op=getattr(args, "op", None), task_file=getattr(args, "task", None),
                   shape=getattr(args, "shape", None), dtype=getattr(args, "dtype", None))


def task_from_args(args: argparse.Namespace, ref: Any = None):
    """The task the flags name (``ref``: their TaskRef, when the caller keeps it)."""
    from ..app.task import load_task

    return load_task(ref or task_ref_from_args(args), args.soc)

def not_measured(kind: str | None) -> str:
    """The reminder that a time is not a measurement, unless it is one."""
    return "" if kind == "measured" else f", model {MODEL_VERSION}, not measured"


def kind_word(timing: dict[str, Any]) -> str:
    """The kind of time the fields hold, and a space (nothing when they do not say)."""
    from ..app.timing import timing_kind

    kind = timing_kind(timing)
    return f"{kind} " if kind else ""

def proposer_config(args: argparse.Namespace):
    """``--proposer`` and the LLM flags as a ProposerConfig (the endpoint falls back on
    OPENAI_BASE_URL / OPENAI_API_KEY)."""
    from ..app.llm import ProposerConfig, llm_config

    kind = getattr(args, "proposer", "builtin")
    if kind == "builtin":
        return ProposerConfig()
    llm = llm_config(cache=args.llm_cache, no_cache=args.no_llm_cache, replay=args.replay,
                     base_url=args.base_url, model=args.model, candidates=args.llm_candidates,
                     repair_rounds=args.repair_rounds, optimise_rounds=args.optimise_rounds,
                     timeout_s=args.llm_timeout, retries=args.llm_retries)
    return ProposerConfig(kind, llm)

def parse_params(text: str | None) -> dict[str, int]:
    """``--params NAME=INT,NAME=INT``."""
    from ..app.errors import UserError

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
