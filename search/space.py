"""The interface between the search engine and the rest of the pipeline.

The proposer produces :class:`CandidateSpec` objects (one DSL program each, with declared
tunables) and the evaluator implements :class:`Objective`.  The search driver
(:mod:`ascendcraft.search.driver`) only ever talks to these types, so the pipeline and the
search engine can evolve independently.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import product
from typing import Any, Protocol, runtime_checkable

#: Every status a trial can end with.  ``infeasible`` is decided by ``Objective.feasible``
#: before any build; ``interrupted`` is set by the driver for trials a killed run left behind.
STATUSES: tuple[str, ...] = (
    "ok",
    "infeasible",
    "build_error",
    "check_error",
    "wrong",
    "timeout",
    "crash",
)
FAILED_STATUSES: tuple[str, ...] = tuple(s for s in STATUSES if s not in ("ok", "infeasible"))
TIMINGS: tuple[str, ...] = ("modeled", "measured")


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
class CandidateSpec:
    """One kernel program proposed for the op, with the tunables the search may set."""

    name: str
    source: str
    tunables: tuple[TunableSpec, ...] = ()

    def default_params(self) -> dict[str, int]:
        return {t.name: t.default for t in self.tunables}

    def space_size(self) -> int:
        return math.prod(len(t.ordered()) for t in self.tunables)

    def all_params(self):
        """Iterate over every assignment (the Cartesian product of the domains)."""
        names = [t.name for t in self.tunables]
        for combo in product(*(t.ordered() for t in self.tunables)):
            yield dict(zip(names, combo, strict=True))


@dataclass
class TrialOutcome:
    """What one evaluation of (candidate, params) produced."""

    status: str
    time_us: float | None
    timing: str = "modeled"
    message: str = ""
    metrics: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.time_us is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "time_us": self.time_us,
            "timing": self.timing,
            "message": self.message,
            "metrics": self.metrics,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrialOutcome:
        return cls(
            status=str(d.get("status", "crash")),
            time_us=d.get("time_us"),
            timing=str(d.get("timing", "modeled")),
            message=str(d.get("message", "")),
            metrics=dict(d.get("metrics") or {}),
        )


@runtime_checkable
class Objective(Protocol):
    """Evaluates one candidate with one assignment of its tunables.

    ``evaluate`` must never raise for a bad kernel (it returns a failed outcome) and the
    object must be picklable: it is shipped to Ray workers.
    """

    def feasible(self, candidate: CandidateSpec, params: dict[str, int]) -> str | None:
        """Cheap static check (capacity, alignment) before any build: the reason, or None."""
        ...

    def evaluate(
        self, candidate: CandidateSpec, params: dict[str, int], timeout_s: float
    ) -> TrialOutcome:
        """Build, run, verify and time the kernel."""
        ...

    def revalidate(self, candidate: CandidateSpec, params: dict[str, int]) -> TrialOutcome:
        """Re-check correctness on fresh inputs (end of run)."""
        ...


def validate_candidates(candidates: list[CandidateSpec] | tuple[CandidateSpec, ...]) -> None:
    """Reject specs the search cannot represent, early and with a clear message."""
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
