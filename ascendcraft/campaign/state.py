"""The campaign's own record, ``campaign.json`` in its directory: what it is (its units,
hours, budgets) and how far it got (per unit: its round, trials, time, summary or failure).

Written whole after every unit, atomically (a temporary file renamed over the old one), so
a campaign killed at any moment leaves the last complete record, and ``--resume`` carries
on from it. The per-op studies hold the trials themselves; this file only says which unit
is where.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

FILE = "campaign.json"
VERSION = 1


@dataclass
class UnitState:
    """One op on one SoC. ``round``: the last round it ran in (0: not yet). ``state``:
    ``pending``, ``running`` (it was running when the record was written: a resume continues
    its study), ``done`` or ``failed`` (``error`` says why)."""

    key: str
    op: str | None
    task_file: str | None
    soc: str
    state: str = "pending"
    round: int = 0
    budget: int = 0
    trials: int = 0
    time_s: float = 0.0
    runs: int = 0
    improving: bool = True
    exhausted: bool = False
    error: str = ""
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.key


@dataclass
class CampaignState:
    """The whole record. ``used_s``: wall seconds spent so far over every start of the
    campaign; ``starts``: when each start began (Unix time); ``stopped``: why the last one
    ended early ("" when it completed)."""

    hours: float
    budget_per_op: int
    units: dict[str, UnitState]
    used_s: float = 0.0
    starts: list[float] = field(default_factory=list)
    stopped: str = ""
    finished: bool = False
    version: int = VERSION

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["units"] = [asdict(u) for u in self.units.values()]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CampaignState:
        if d.get("version") != VERSION:
            raise ValueError(f"record version {d.get('version')!r}, expected {VERSION}")
        units = {u["key"]: UnitState(**u) for u in d["units"]}
        return cls(hours=float(d["hours"]), budget_per_op=int(d["budget_per_op"]),
                   units=units, used_s=float(d.get("used_s", 0.0)),
                   starts=[float(s) for s in d.get("starts", [])],
                   stopped=str(d.get("stopped", "")), finished=bool(d.get("finished")))


def load(out: Path) -> CampaignState | None:
    """The record in ``out``, None if there is none; a damaged one raises ValueError."""
    path = out / FILE
    if not path.exists():
        return None
    try:
        return CampaignState.from_dict(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path} cannot be read as a campaign record ({e}); it is not "
                         f"replaced: move it away to start a new campaign there") from None


def save(out: Path, state: CampaignState) -> None:
    """Write the record atomically."""
    path = out / FILE
    tmp = path.with_name(f".{FILE}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(state.to_dict(), indent=1, default=str))
    os.replace(tmp, path)


def now() -> float:
    return time.time()
