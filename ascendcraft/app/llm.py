"""The LLM proposer wired into ``check``, ``tune`` and ``prompt``.

Which proposer runs is a :class:`ProposerConfig`: ``builtin`` (the default chain, no
endpoint), ``llm`` (an LLM session only) or ``both`` (the builtin candidates and the LLM's
in one check or one study, so the report says which origin won). This module opens the
session — endpoint or replay, response cache, the run directory's transcript, the static
check of the task's shapes and SoC — and adds the LLM's accounts and verdicts to the
results. Without an endpoint a user gets one paragraph saying how to configure one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..emulator.build import cache_root
from ..search.llm.answers import AnswerSource
from ..search.llm.cache import ReplayCache, ReplayError, ResponseCache
from ..search.llm.client import ChatClient, LlmRequestError
from ..search.llm.config import NO_ENDPOINT, LlmConfig, from_environment
from ..search.llm.prompt import Failure, Prompts
from ..search.llm.proposer import LlmProposer
from ..search.llm.report import accounting_lines, origin_lines, tiling_lines, tiling_verdicts
from ..search.llm.reviser import LlmReviser
from ..search.llm.session import FeasibleFn, LlmSession
from ..search.llm.transcript import Transcript
from ..search.proposer import ProposerError
from ..search.protocols import Revision, SearchView
from ..search.result import SearchResult
from ..search.space import Candidate
from ..soc import load_soc
from ..tasks.task import Task
from .candidates import propose
from .errors import UserError

PROPOSERS = ("builtin", "llm", "both")


@dataclass(frozen=True)
class ProposerConfig:
    """``kind``: ``builtin``, ``llm`` or ``both``; ``llm``: the endpoint and the rounds."""

    kind: str = "builtin"
    llm: LlmConfig = field(default_factory=LlmConfig)

    def __post_init__(self) -> None:
        if self.kind not in PROPOSERS:
            raise ValueError(f"unknown proposer {self.kind!r}; choose one of {', '.join(PROPOSERS)}")

    @property
    def uses_llm(self) -> bool:
        return self.kind != "builtin"


def llm_config(*, cache: str | None = None, no_cache: bool = False, replay: str | None = None,
               **given: Any) -> LlmConfig:
    """The LLM configuration from command-line values (None: not given) and the environment;
    the response cache defaults to ``<ascendcraft cache>/llm``."""
    cache_dir = None if no_cache else Path(cache) if cache else cache_root() / "llm"
    try:
        return from_environment(cache_dir=cache_dir, replay_dir=Path(replay) if replay else None,
                                **given)
    except ValueError as e:
        raise UserError(str(e)) from None


def prompt_messages(task: Task, soc: str, candidates: int = 3) -> list[dict[str, str]]:
    """The first round's messages for ``task`` on ``soc`` (``ascendcraft prompt``)."""
    return Prompts(task, load_soc(soc), candidates).propose()


def open_session(task: Task, soc: str, config: ProposerConfig, run_dir: Path | None,
                 feasible: FeasibleFn) -> LlmSession:
    """A session for ``task``: answers from the replayed run, the cache or the endpoint,
    every exchange kept in ``run_dir``. No endpoint, an unreadable replay or a model that
    cannot be chosen is a :class:`UserError`."""
    llm = config.llm
    replay = client = None
    if llm.offline:
        try:
            replay = ReplayCache(llm.replay_dir)
        except ReplayError as e:
            raise UserError(str(e)) from None
        model = llm.model or replay.model
    else:
        if not llm.has_endpoint:
            raise UserError(NO_ENDPOINT.format(kind=config.kind))
        client = ChatClient(llm)
        try:
            model = client.resolve_model()
        except LlmRequestError as e:
            raise UserError(f"--proposer {config.kind}: {e}") from None
    cache = ResponseCache(llm.cache_dir) if llm.cache_dir and not llm.offline else None
    prompts = Prompts(task, load_soc(soc), llm.candidates)
    answers = AnswerSource(model, Transcript(run_dir), client=client, cache=cache, replay=replay,
                           prompt_version=prompts.version)
    return LlmSession(prompts, answers, llm, feasible=feasible)


def initial_candidates(task: Task, config: ProposerConfig,
                       session: LlmSession | None) -> list[Candidate]:
    """The builtin chain's candidates, the LLM's first round (through :class:`LlmProposer`),
    or both (builtin first). With ``both``, an LLM that proposes nothing leaves the builtin
    candidates (its rounds say why in its report); a task nobody serves is a
    :class:`UserError` naming both sides' reasons."""
    builtin: list[Candidate] = []
    why_not = ""
    if config.kind in ("builtin", "both"):
        try:
            builtin = propose(task)
        except UserError as e:
            if session is None:
                raise
            why_not = str(e)
    if session is None:
        return builtin
    try:
        llm = LlmProposer(lambda _task: session).propose(task)
    except ProposerError as e:
        if builtin:
            return builtin
        builtin_part = f" The builtin proposers: {why_not}" if why_not else ""
        raise UserError(f"{e}.{builtin_part}") from None
    return builtin + llm


def repair_until_settled(session: LlmSession, candidates: Sequence[Candidate],
                         judge: Callable[[Candidate], Any],
                         failure: Callable[[Any], Failure | None]) -> list[Any]:
    """Judge every candidate; send each failing LLM candidate back with its failure (the
    session bounds the rounds) and judge the repairs. Every verdict, in order."""
    verdicts = []
    pending = list(candidates)
    while pending:
        nxt: list[Candidate] = []
        for c in pending:
            v = judge(c)
            verdicts.append(v)
            f = failure(v) if session.owns(c.name) else None
            if f is not None:
                nxt += session.repair(c.name, f)
        pending = nxt
    return verdicts


def finish_report(session: LlmSession, *, winner: tuple[str, str, float, str] | None,
                  bests: Sequence[tuple[str, str, float]],
                  rows: Sequence[dict[str, Any]] = ()) -> tuple[dict[str, Any], list[str]]:
    """The session's accounts with the verdicts (who won; whose tiling won), as a dict for
    ``--json`` and as lines for the summary; written to ``llm/report.json`` too."""
    rep = session.report()
    verdicts = tiling_verdicts(rep, rows) if rows else []  # a search's trials only
    rep["tiling"] = verdicts
    rep["winner_origin"] = winner[1] if winner else None
    lines = accounting_lines(rep) + tiling_lines(verdicts) + origin_lines(winner, bests)
    session.answers.transcript.write_report(rep)
    return rep, lines


def read_trial_rows(run_dir: Path) -> list[dict[str, Any]]:
    """The trial rows a search wrote (``trials.jsonl``); none when it is missing."""
    rows = []
    try:
        with open(run_dir / "trials.jsonl", encoding="utf-8") as fh:
            for line in fh:
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    continue
    except OSError:
        return []
    return rows


class SearchableReviser:
    """The session's reviser (:class:`~ascendcraft.search.llm.reviser.LlmReviser`) with each
    candidate it adds made searchable (its tunables read from its program), as the search
    driver needs them."""

    def __init__(self, session: LlmSession,
                 searchable: Callable[[Sequence[Candidate]], list[Candidate]]) -> None:
        self.inner = LlmReviser(session)
        self.searchable = searchable

    def revise(self, view: SearchView) -> Revision:
        rev = self.inner.revise(view)
        return Revision(tuple(self.searchable(rev.add)), rev.retire)


def search_verdicts(session: LlmSession, result: SearchResult, candidates: Sequence[Candidate],
                    run_dir: Path) -> tuple[dict[str, Any], list[str]]:
    """:func:`finish_report` for a search: who won (by candidate origin) and whose tiling
    won, from the result and the run's ``trials.jsonl``."""
    origin = {c.name: c.origin or "builtin" for c in candidates}
    bests = [(name, origin.get(name, "builtin"), float(b.outcome.time_us))
             for name, b in result.per_candidate.items()
             if b is not None and b.outcome.ok and b.outcome.time_us]
    winner = None
    if result.best is not None and result.best.outcome.ok and result.best.outcome.time_us:
        b = result.best
        winner = (b.candidate, origin.get(b.candidate, "builtin"), float(b.outcome.time_us),
                  b.outcome.timing)
    return finish_report(session, winner=winner, bests=bests, rows=read_trial_rows(run_dir))
