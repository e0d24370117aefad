"""Rows too wide for UB, read twice: keep what UB holds of the first read (``chunks(hold=H)``).

A softmax or a norm whose row does not fit UB makes a statistics pass and an output pass over
the row's chunks, so the row crosses GM twice. ``hold_first_pass`` turns such a program into one
whose first chunks loop keeps its first HOLD chunks of each row tile in UB for the later loops
(``dsl/lowering``: ``chunks(t, C, hold=H)``), offered beside it so the search decides: the
recipes and the graph frontend both use it.
"""

from __future__ import annotations

import re

#: a row of more fp32 values than UB_BUDGET / (4 x ROW_BUFFERS) is read twice (the eager model's rule)
ROW_BUFFERS, UB_BUDGET = 3, 184 * 1024
#: held candidates' chunk and the most chunks they keep (128 KiB of fp32: what UB leaves beside a
#: pass's queues and temporaries at that chunk; the nearest feasible takes fewer where it must)
HOLD_CHUNK, HOLD_MOST = 2048, 16
HOLD_CHOICES = (1, 2, 3, 4, 6, 8, 10, 12, 14, 16, 20, 24, 32)


def hold_first_pass(src: str, width: int) -> str:
    """A two-pass chunked row program whose first pass keeps its first HOLD chunks of each row
    tile in UB (``chunks(t, CHUNK, hold=HOLD)``), so the second pass copies only the rest of the
    row again: of a 256 KiB softmax row, 128 KiB stay (modeled, model 2.3: softmax over
    [4096, 65536] 1729 -> 1620 us, 0.96x -> 1.02x)."""
    head = "for c in chunks(t, CHUNK):"
    if head not in src:
        raise ValueError("hold_first_pass: no chunks loop")
    hold = min(HOLD_MOST, -(-width // HOLD_CHUNK))
    hold = max(h for h in HOLD_CHOICES if h <= hold)
    line = f"CHUNK = tunable(pow2(256, 16384), default={HOLD_CHUNK})"
    out, n = re.subn(r"CHUNK = tunable\(pow2\(256, 16384\), default=\d+\)", line, src, count=1)
    if n != 1:
        raise ValueError("hold_first_pass: no CHUNK tunable")
    out = out.replace(head, "for c in chunks(t, CHUNK, hold=HOLD):", 1)
    return out.replace(line, f"{line}\n    HOLD = tunable(choice({', '.join(map(str, HOLD_CHOICES))}), default={hold})", 1)


def wide_rows(width: int) -> bool:
    """Is a row of ``width`` values read twice by a two-pass chunked program (the eager model's
    rule: three fp32 copies of it do not fit UB)?"""
    return width * 4 * ROW_BUFFERS > UB_BUDGET
