"""The rounds of an LLM session for one task: propose, repair, optimise — and their accounts.

* **propose**: the task, the SoC, the DSL reference and few-shot kernels go out; up to
  ``candidates`` programs with tiling proposals come back.
* **repair**: a program that fails — to parse or check (found here, before anything is
  built), to fit the SoC at its defaults, or later to build, run or match the reference
  (found by whoever evaluates it: ``check``, or the search through :mod:`.reviser`) — goes
  back with the exact error (line, message, error figures, failing shape). A line of
  repairs is at most ``repair_rounds`` deep. An answer with no readable program gets one
  reminder of the format, which counts as a repair round.
* **optimise**: the best correct kernel so far goes back with its time, pipe utilisation,
  bound, roofline share and tuned parameters; the faster structures asked for join the
  search like any candidate.

Every answer passes :mod:`.extract` and :mod:`.screen` first: a program that reaches
outside the DSL is rejected and counted, never repaired. A tiling proposal becomes the
candidate's ``seeds`` when its names and values are the program's tunables' and it fits
(``feasible``); otherwise it is dropped and the reason kept. Each round is one
:class:`RoundRecord`; :meth:`LlmSession.report` sums them (tokens, wall time, where the
answers came from, what was rejected).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...dsl.errors import DslError
from ...dsl.kernel import prepare
from ...status import Status
from ..space import Candidate
from .answers import AnswerSource, Usage
from .config import LlmConfig
from .extract import SCHEMA, Draft, TilingHint, extract
from .prompt import Failure, Incumbent, Prompts, failure_line
from .screen import printable, safe_name, unsafe_reason

#: What the session is told about a candidate's fit: the reason an assignment cannot work
#: on the task's shapes and SoC (before any build), or None.
FeasibleFn = Callable[[Candidate, dict[str, int]], "str | None"]

ORIGIN = "llm"


@dataclass(frozen=True)
class _Naming:
    """How a round names its candidates: after the answer (with ``prefix``), or after the
    candidate it repairs; ``parent``: the candidate the round started from."""

    parent: str | None = None
    prefix: str = ""
    repair_of: str | None = None


@dataclass
class Lineage:
    """One candidate the session made: where it came from and what it proposed."""

    candidate: Candidate
    round: int
    kind: str  # propose | repair | optimise
    parent: str | None
    depth: int  # repair rounds behind it
    structure: str
    tiling: dict[str, int] = field(default_factory=dict)  # the proposal, over the defaults
    reasons: dict[str, str] = field(default_factory=dict)
    tiling_note: str = "none proposed"
    sent_back: bool = False  # already sent to a repair round


@dataclass
class RoundRecord:
    """One question and what became of its answer."""

    number: int
    kind: str
    about: str
    usage: Usage
    form: str = "none"
    drafts: int = 0
    accepted: list[str] = field(default_factory=list)
    unsafe: int = 0
    invalid: int = 0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Flat: the usage's fields next to the round's."""
        d = dataclasses.asdict(self)
        return {**d, **d.pop("usage")}


class LlmSession:
    """The LLM's rounds for one task. ``feasible``: the static check of the task's shapes
    and SoC (None: only parsing is checked here)."""

    def __init__(self, prompts: Prompts, answers: AnswerSource, config: LlmConfig, *,
                 feasible: FeasibleFn | None = None) -> None:
        self.prompts = prompts
        self.task = prompts.task
        self.answers = answers
        self.config = config
        self.feasible = feasible
        self.rounds: list[RoundRecord] = []
        self.lineages: dict[str, Lineage] = {}
        self.rejected: list[dict[str, str]] = []  # unsafe programs: round, name, reason
        self.optimise_rounds = 0
        self._named: set[str] = set()  # every name given, admitted or not

    # ---- the three kinds of round -------------------------------------------------------
    def propose(self) -> list[Candidate]:
        """The first round: ``config.candidates`` distinct kernels (fewer if some fail)."""
        n = self.config.candidates
        return self._round("propose", "the task", self.prompts.propose(n), n, 0, _Naming())

    def repair(self, name: str, failure: Failure) -> list[Candidate]:
        """Send one of this session's candidates back with its failure (once per candidate,
        at most ``repair_rounds`` deep); its corrected version, or nothing."""
        lin = self.lineages.get(name)
        if lin is None or lin.sent_back or lin.depth >= self.config.repair_rounds:
            return []
        lin.sent_back = True
        messages = self.prompts.repair(name, lin.candidate.source, failure)
        return self._round("repair", name, messages, 1, lin.depth + 1, _Naming(parent=name,
                                                                            repair_of=name))

    def optimise(self, incumbent: Incumbent, n: int) -> list[Candidate]:
        """Ask for ``n`` kernels faster than ``incumbent``."""
        self.optimise_rounds += 1
        messages = self.prompts.optimise(incumbent, n)
        return self._round("optimise", incumbent.name, messages, n, 0,
                           _Naming(parent=incumbent.name, prefix=f"o{self.optimise_rounds}-"))

    def owns(self, name: str) -> bool:
        return name in self.lineages

    # ---- one round ----------------------------------------------------------------------
    def _round(self, kind: str, about: str, messages: list[dict[str, str]], wanted: int,
               depth: int, naming: _Naming) -> list[Candidate]:
        ans = self.answers.ask(kind, about, messages, SCHEMA)
        rec = RoundRecord(ans.number, kind, about, ans.usage)
        if ans.note:
            rec.notes.append(ans.note)
        self.rounds.append(rec)
        if ans.text is None:
            self._written(rec)
            return []
        ex = extract(ans.text)
        rec.form, rec.drafts = ex.form, len(ex.drafts)
        rec.notes += ex.problems
        if len(ex.drafts) > wanted:
            rec.notes.append(f"{len(ex.drafts)} candidates given, {wanted} asked for: the rest "
                             f"were ignored")
        out: list[Candidate] = []
        follow_ups: list[tuple[str, Draft, Failure]] = []
        for draft in ex.drafts[:wanted]:
            out += self._admit(draft, rec, kind, depth, naming, follow_ups)
        self._written(rec)
        for name, draft, failure in follow_ups:  # static repairs, after this round's record
            out += self._static_repair(name, draft, failure, depth)
        if not ex.drafts and depth < self.config.repair_rounds:
            problem = "; ".join(ex.problems) or "no program found"
            out += self._round("repair", about, self.prompts.reformat(messages, ans.text, problem),
                               wanted, depth + 1, naming)
        return out

    def _written(self, rec: RoundRecord) -> None:
        self.answers.transcript.write_round(rec.to_dict())

    def _name(self, draft: Draft, depth: int, naming: _Naming, rec: RoundRecord) -> str:
        """A new, unique candidate name: ``llm/<answer's name, made safe>`` (with the
        optimisation round's prefix), or ``<repaired one>-r<depth>`` for a repair."""
        if naming.repair_of is not None:
            base = re.sub(r"-r\d+(-\d+)?$", "", naming.repair_of.removeprefix(f"{ORIGIN}/"))
            base += f"-r{depth}"
        else:
            raw = draft.name
            base = naming.prefix + safe_name(raw)
            if safe_name(raw) != raw.strip().lower():
                rec.notes.append(f"candidate name {printable(raw, 60)!r} made safe as "
                                 f"{base!r}")
        name, k = f"{ORIGIN}/{base}", 2
        while name in self._named:
            name, k = f"{ORIGIN}/{base}-{k}", k + 1
        self._named.add(name)
        return name

    def _admit(self, draft: Draft, rec: RoundRecord, kind: str, depth: int, naming: _Naming,
               follow_ups: list[tuple[str, Draft, Failure]]) -> list[Candidate]:
        """A draft that is safe, parses, checks and fits becomes a candidate; a mistake is
        queued for a static repair; an escape attempt is rejected."""
        name = self._name(draft, depth, naming, rec)
        why = unsafe_reason(draft.dsl)
        if why is not None:
            rec.unsafe += 1
            self.rejected.append({"round": str(rec.number), "candidate": name, "reason": why})
            rec.notes.append(f"{name} rejected as unsafe: it {why}")
            return []
        try:
            prep = prepare(name, draft.dsl)
        except DslError as e:
            rec.invalid += 1
            rec.notes.append(f"{name}: {printable(str(e), 200)}")
            follow_ups.append((name, draft, Failure("parse/check", Status.DSL_ERROR.value, str(e),
                                                    line=e.loc.line if e.loc else None)))
            return []
        cand = Candidate(name, draft.dsl, origin=ORIGIN)
        defaults = prep.defaults()
        tiling, reasons, note = self._tiling(prep, draft.tiling)
        if self.feasible is not None:
            misfit = self.feasible(cand, defaults)
            seed_misfit = self.feasible(cand, tiling) if tiling else "none proposed"
            if misfit and seed_misfit and depth < self.config.repair_rounds:
                rec.invalid += 1
                rec.notes.append(f"{name}: does not fit at its defaults: {printable(misfit, 200)}")
                follow_ups.append((name, draft, Failure("fit (checked before any build)",
                                                        Status.INFEASIBLE.value, misfit,
                                                        line=failure_line(misfit),
                                                        params=defaults)))
                return []
            if tiling and seed_misfit:
                note = f"infeasible: {printable(seed_misfit, 200)}"
                tiling = {}
        seeds = ()
        if tiling:
            if tiling == defaults:
                note = "the program's defaults"
            else:
                seeds = ({k: v for k, v in tiling.items() if defaults.get(k) != v},)
                note = "enqueued after the defaults"
        cand = dataclasses.replace(cand, seeds=seeds)
        self.lineages[name] = Lineage(cand, rec.number, kind, naming.parent, depth,
                                      printable(draft.structure, 160), tiling, reasons, note)
        rec.accepted.append(name)
        return [cand]

    def _static_repair(self, name: str, draft: Draft, failure: Failure, depth: int) -> list[Candidate]:
        """A draft that failed before becoming a candidate goes back with its error."""
        if depth >= self.config.repair_rounds:
            return []
        messages = self.prompts.repair(name, draft.dsl, failure)
        return self._round("repair", name, messages, 1, depth + 1,
                           _Naming(parent=name, repair_of=name))

    @staticmethod
    def _tiling(prep: Any, hints: tuple[TilingHint, ...]) -> tuple[dict[str, int], dict[str, str], str]:
        """The proposal as a full assignment over the defaults, its reasons, and a note
        naming what was ignored (unknown tunables, values outside a domain)."""
        if not hints:
            return {}, {}, "none proposed"
        domains = {t.name: t.domain.values() for t in prep.tunables}
        values = prep.defaults()
        reasons: dict[str, str] = {}
        ignored = []
        for h in hints:
            if h.tunable not in domains:
                ignored.append(f"{printable(h.tunable, 40)} is not a tunable")
            elif h.value not in domains[h.tunable]:
                ignored.append(f"{h.tunable}={h.value} is outside its domain")
            else:
                values[h.tunable] = h.value
                reasons[h.tunable] = printable(h.reason, 160)
        if not reasons:
            return {}, {}, "ignored: " + "; ".join(ignored)
        return values, reasons, ("partly ignored: " + "; ".join(ignored)) if ignored else ""

    # ---- accounts -----------------------------------------------------------------------
    def failure_summary(self) -> str:
        """Why the session has no candidate, in one paragraph (its rounds' errors and notes)."""
        parts = []
        for r in self.rounds:
            what = r.usage.error or "; ".join(r.notes[:3]) or "no usable candidate"
            parts.append(f"round {r.number} ({r.kind}): {printable(what, 300)}")
        return "; ".join(parts) or "no round was run"

    def report(self) -> dict[str, Any]:
        """The session's accounts: per round and in total (``to_dict``-ready)."""
        rs = self.rounds
        us = [r.usage for r in rs]
        return {
            "model": self.answers.model,
            "endpoint": self.config.where(),
            "prompt_version": self.prompts.version,
            "rounds": [r.to_dict() for r in rs],
            "requests": len(rs),
            "from_endpoint": sum(u.source == "endpoint" for u in us),
            "from_cache": sum(u.source == "cache" for u in us),
            "from_replay": sum(u.source == "replay" and u.error is None for u in us),
            "prompt_tokens": sum(u.prompt_tokens for u in us),
            "completion_tokens": sum(u.completion_tokens for u in us),
            "tokens": sum(u.prompt_tokens + u.completion_tokens for u in us),
            "wall_s": round(sum(u.wall_s for u in us), 3),
            "retries": sum(u.retries for u in us),
            "failed_requests": sum(u.error is not None for u in us),
            "unreadable_answers": sum(r.usage.error is None and r.drafts == 0 for r in rs),
            "rejected_unsafe": len(self.rejected),
            "rejected": list(self.rejected),
            "invalid": sum(r.invalid for r in rs),
            "candidates": {name: {"round": lin.round, "kind": lin.kind, "parent": lin.parent,
                                  "structure": lin.structure, "tiling": lin.tiling,
                                  "reasons": lin.reasons, "tiling_note": lin.tiling_note}
                           for name, lin in self.lineages.items()},
        }
