"""The reduced axis cut across cores (``slabs(..., rows=R, split=S)``, ``dsl/lowering/split_k.py``).

A blocked slabs candidate's work items are its slabs (flat: the A slabs alone; otherwise a slab's
tiles of B): 64 slabs take two rounds on 32 or 48 cores, so a reduction whose vector work is close
to its transfer (logsumexp's exp) runs on 32 cores' vector pipes, and a vector times a [4096, 1024]
matrix (one slab of 8 tiles) on 8. ``split_slabs`` turns such a candidate into one whose items are
(slab tile, slice of K), SPLIT slices a tile, offered beside it so the search decides: the
partials cost one SyncAll and a GM round trip of a few accumulator rows a slice.
"""

from __future__ import annotations

import re

from .core_counts import CORE_CHOICES, CORES_TUNABLE

#: SPLIT choices: slices of K a slab (1 is the unsplit loop plus the combine's SyncAll).
SPLIT_CHOICES: tuple[int, ...] = (1, 2, 3, 4, 6, 8, 12)


def even_split(slabs: int, most: int = 48) -> int:
    """The fewest slices (of SPLIT_CHOICES, at least 2) whose slabs x slices items leave the
    least of ``most`` cores idle in the last round: 64 slabs on 48 cores, 3 (192 items, 4
    rounds, none idle)."""
    def idle(s: int) -> float:
        items = slabs * s
        rounds = -(-items // most)
        return (rounds * most - items) / (rounds * most)
    return min((s for s in SPLIT_CHOICES if s >= 2), key=lambda s: (round(idle(s), 6), s))


def split_slabs(src: str, slabs: int, most: int = 48) -> str:
    """A blocked slabs candidate (``slabs(..., rows=...)``: flat, ``block_max`` or not) of
    ``slabs`` work items with K split SPLIT ways; ``most`` cores by default (the slices fill
    them evenly)."""
    head = re.search(r"^    for \w+ in slabs\(.*\brows=.*\):$", src, flags=re.M)
    if head is None or "split=" in src or "hold=True" in head.group(0):
        raise ValueError("split_slabs: not an unsplit blocked slabs candidate")
    default = even_split(slabs, most)
    out = re.sub(re.escape(CORES_TUNABLE) + r", default=\d+\)",
                 f"SPLIT = tunable(choice({', '.join(map(str, SPLIT_CHOICES))}), default={default})\n"
                 f"    {CORES_TUNABLE}, default={max(c for c in CORE_CHOICES if c <= most)})", src, count=1)
    if "flat=True" in head.group(0):
        out = re.sub(r"^(    for \w+ in slabs\(.*flat=True)", r"\1, split=SPLIT", out, count=1, flags=re.M)
    else:
        out = re.sub(r"^(    for \w+ in slabs\(.*\brows=.*)\):$", r"\1, split=SPLIT):", out, count=1, flags=re.M)
    if "split=SPLIT" not in out or "SPLIT = tunable" not in out:
        raise ValueError("split_slabs: no CORES tunable to put SPLIT beside")
    return out.replace("x seen as [A, K, B] around axis", "K cut into SPLIT slices on their own cores (partials "
                       "combined after a SyncAll); x seen as [A, K, B] around axis", 1)
