"""``ascendcraft library diff``: what changed between two library versions — entries added,
removed, and for entries in both, the change of time (and of kernel) with the timing kinds.

Times of different kinds (measured vs modeled) or of different model versions are not
compared as a speed change; the difference is shown as such.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Change:
    id: str
    old_us: float
    new_us: float
    old_kind: str
    new_kind: str
    comparable: bool
    kernel_changed: bool
    note: str = ""

    @property
    def ratio(self) -> float | None:
        """old / new: above 1 the new version is faster."""
        return self.old_us / self.new_us if self.comparable and self.new_us > 0 else None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "old_us": self.old_us, "new_us": self.new_us, "old_kind": self.old_kind,
                "new_kind": self.new_kind, "comparable": self.comparable, "speedup": self.ratio,
                "kernel_changed": self.kernel_changed, "note": self.note}


@dataclass
class LibraryDiff:
    old: str
    new: str
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[Change] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"old": self.old, "new": self.new, "added": self.added, "removed": self.removed,
                "changed": [c.to_dict() for c in self.changed], "unchanged": self.unchanged}


def diff(old: dict[str, Any], new: dict[str, Any], old_name: str = "", new_name: str = "") -> LibraryDiff:
    """The difference between two manifests."""
    a, b = old["entries"], new["entries"]
    d = LibraryDiff(old_name or old["version"], new_name or new["version"],
                    added=sorted(set(b) - set(a)), removed=sorted(set(a) - set(b)))
    for eid in sorted(set(a) & set(b)):
        x, y = a[eid], b[eid]
        kernel_changed = (x["candidate"], x["params"]) != (y["candidate"], y["params"]) or x["sha256"] != y["sha256"]
        same_kind = x["timing_kind"] == y["timing_kind"] and x.get("model_version") == y.get("model_version")
        if not kernel_changed and x["time_us"] == y["time_us"]:
            d.unchanged.append(eid)
            continue
        note = "" if same_kind else (f"{x['timing_kind']} (model {x.get('model_version')}) vs "
                                     f"{y['timing_kind']} (model {y.get('model_version')}): not comparable")
        d.changed.append(Change(eid, float(x["time_us"]), float(y["time_us"]), x["timing_kind"],
                                y["timing_kind"], same_kind, kernel_changed, note))
    return d
