"""What the search engine searches: candidates with their tunables, and trial outcomes.

A proposer makes :class:`Candidate` objects (a DSL program each); the application layer
fills in the tunables the program declares; the search driver (:mod:`.driver`) tunes them
through an :class:`~.protocols.Objective` and reads back a :class:`TrialOutcome` per
evaluation. These are the only types the driver shares with the rest of the pipeline, so
the pipeline and the search engine evolve independently.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import Any

from ..status import Status


@dataclass(frozen=True)
class TunableSpec:
    """One declared tunable of a candidate: its name, enumerated domain and default."""

    name: str
    values: tuple[int, ...]
    default: int

    def ordered(self) -> tuple[int, ...]:
        """The domain sorted and de-duplicated: the search encodes a value as its index here
        so that samplers see the order of tile sizes (64 is next to 128)."""
        return tuple(sorted(set(self.values)))


@dataclass(frozen=True)
class Candidate:
    """One proposed kernel: a name unique within the task, its DSL text, the proposer that
    made it (``origin``: ``recipe``, ``cube``, ``graph``, ``llm``, ``file``...) and the
    tunables the search may set. A proposer leaves ``tunables`` empty; they are read from
    the program when it is prepared for the search
    (:func:`ascendcraft.app.candidates.searchable`). ``seeds``: assignments the proposer
    suggests (e.g. an LLM's tiling proposal), each a subset of the tunables; the search
    evaluates them right after the defaults."""

    name: str
    source: str
    origin: str = ""
    tunables: tuple[TunableSpec, ...] = ()
    seeds: tuple[dict[str, int], ...] = field(default=(), compare=False)

    def with_tunables(self, tunables: Sequence[TunableSpec]) -> Candidate:
        return dataclasses.replace(self, tunables=tuple(tunables))

    def default_params(self) -> dict[str, int]:
        return {t.name: t.default for t in self.tunables}

    def space_size(self) -> int:
        return math.prod(len(t.ordered()) for t in self.tunables)

    def all_params(self) -> Iterator[dict[str, int]]:
        """Every assignment (the Cartesian product of the domains)."""
        names = [t.name for t in self.tunables]
        for combo in product(*(t.ordered() for t in self.tunables)):
            yield dict(zip(names, combo, strict=True))


@dataclass
class TrialOutcome:
    """What one evaluation of (candidate, params) produced.

    ``timing`` is the kind of time the evaluation produced (whatever the backend that timed
    it says: modeled or measured), empty when nothing was timed. An unknown ``status``
    string is refused here, so a typo in an objective ends as a crash with its name."""

    status: Status
    time_us: float | None
    timing: str = ""
    message: str = ""
    metrics: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.status = Status.parse(self.status)

    @property
    def ok(self) -> bool:
        return self.status is Status.OK and self.time_us is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "time_us": self.time_us,
            "timing": self.timing,
            "message": self.message,
            "metrics": self.metrics,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrialOutcome:
        """An outcome read back from a record; an unreadable status is a crash that says so."""
        try:
            status = Status.parse(str(d.get("status", Status.CRASH.value)))
        except ValueError as e:
            return crash_outcome(f"recorded outcome unreadable: {e}")
        return cls(
            status=status,
            time_us=d.get("time_us"),
            timing=str(d.get("timing") or ""),
            message=str(d.get("message", "")),
            metrics=dict(d.get("metrics") or {}),
        )


def crash_outcome(message: str) -> TrialOutcome:
    """A trial that died (an exception, a dead worker, a broken return value)."""
    return TrialOutcome(Status.CRASH, None, "", message)


def checked_outcome(result: Any) -> TrialOutcome:
    """Whatever an objective returned, as a well-formed outcome: anything else than a
    :class:`TrialOutcome` with a known status (and, when ok, a finite positive time) is a
    crash that says what was wrong."""
    if not isinstance(result, TrialOutcome):
        return crash_outcome(f"objective returned {type(result).__name__}, not TrialOutcome")
    try:
        result.status = Status.parse(result.status)  # set after construction, perhaps
    except ValueError as e:
        return crash_outcome(f"objective returned {e}")
    if result.status is Status.OK:
        t = result.time_us
        if t is None or not isinstance(t, (int, float)) or t != t or t <= 0 or t == float("inf"):
            return crash_outcome(f"objective returned status ok with invalid time {t!r}")
    return result


def validate_candidates(candidates: Sequence[Candidate]) -> None:
    """Reject candidates the search cannot represent, early and with a clear message."""
    seen: set[str] = set()
    if not candidates:
        raise ValueError("no candidates to search")
    for c in candidates:
        if c.name in seen:
            raise ValueError(f"duplicate candidate name {c.name!r}")
        seen.add(c.name)
        names: set[str] = set()
        for t in c.tunables:
            if t.name in names:
                raise ValueError(f"{c.name}: duplicate tunable {t.name!r}")
            names.add(t.name)
            if not t.values:
                raise ValueError(f"{c.name}: tunable {t.name!r} has an empty domain")
            if t.default not in t.values:
                raise ValueError(
                    f"{c.name}: default {t.default} of {t.name!r} is not in its domain {t.values}"
                )
        domains = {t.name: t.values for t in c.tunables}
        for seed in c.seeds:
            for k, v in seed.items():
                if k not in domains or v not in domains[k]:
                    raise ValueError(f"{c.name}: seed {k}={v!r} is not a value of its tunables")
