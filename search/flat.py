"""Flat aligned reads for reductions over rows that are not 512 B aligned (issue 18).

A row of 1023 fp32 is 4092 B: every per-row copy (one DataCopyPad burst a row, pitch
4092 B) is judged unaligned and the model charges the SoC's unaligned factor on all of it.
``rows(..., flat=True)`` and ``slabs(..., rows=R, flat=True)`` read a tile's whole rows as
one burst from a 512 B-aligned start instead and lay them out in UB with one Gather
(``dsl/lowering/compute_flat.py``). These helpers turn a rendered ``rows_whole`` /
``slabs_blocked`` candidate into its flat form, offered beside it so the search decides.
"""

from __future__ import annotations

import re

from .core_counts import balanced_cores, with_cores_default


def flat_rows(src: str) -> str:
    """A ``rows_whole`` candidate read flat; 8 rows a tile by default (the staging run, the
    gathered tile and the offset table each take a tile of UB, so 16 rows of 4 KB do not fit
    double buffered; modeled, model 2.1, max_dim 64x4096x1023: 8 rows 763 us, 4 rows 770 us)."""
    loop = "for t in rows("
    if loop not in src:
        raise ValueError("flat_rows: not a rows_whole candidate")
    head, rest = src.split(loop, 1)
    args, tail = rest.split("):", 1)
    return (head.replace("ROWS = tunable(pow2(1, 64), default=4)", "ROWS = tunable(pow2(1, 64), default=8)")
            + loop + args + ", flat=True):" + tail)


def flat_slabs(src: str, slabs: int, rows: int = 4, most: int = 48) -> str:
    """A ``slabs_blocked`` candidate read flat: a tile is all of B, so a block of steps is one
    contiguous run of GM. Its work items are the A slabs alone, so the default core count is
    the fewest that take as many rounds of slabs as ``most`` cores do (each active core then
    gets a larger share of HBM: 64 slabs on 32 cores are 2 full rounds, on 48 cores 1.33);
    ``rows`` steps a copy by default: 4 for fp32 (8 do not fit UB double buffered at B = 1023),
    8 for 16-bit inputs (modeled, model 2.1, sum_dim 64x4096x1023 fp16: 4 steps 469 us, 8 steps
    388 us; eager 384 us)."""
    cores = balanced_cores(slabs, most)
    out = with_cores_default(src.replace("    TILE = tunable(pow2(32, 4096), default=64)\n", "")
                             .replace("tile=TILE", "tile=32")
                             .replace("ROWS = tunable(pow2(1, 256), default=64)",
                                      f"ROWS = tunable(pow2(1, 256), default={rows})")
                             .replace("rows=ROWS):", "rows=ROWS, flat=True):"), cores)
    if "flat=True" not in out or "tile=32" not in out:
        raise ValueError("flat_slabs: not a slabs_blocked candidate")
    return out.replace("a tile is TILE contiguous elements of B,", "a tile is all of B (flat=True),")


def block_max_slabs(src: str) -> str:
    """A flat ``slabs_blocked`` online log-sum-exp candidate whose steps take one max a block of
    ROWS steps (``slabs(..., block_max=True)``, ``dsl/lowering/step_blockmax.py``): about four
    vector ops an element instead of eight, and only the step's values are ROWS rows tall, so
    8 steps a block fit UB at B = 1023 for fp32 and fp16 inputs (modeled, model 2.1,
    logsumexp_dim 64x4096x1023 fp32, 32 cores: 4 steps 1028.4 us, 8 steps 959.9 us; 16 do not fit)."""
    out = re.sub(r"^(\s*for \w+ in slabs\(.*flat=True)", r"\1, block_max=True", src, count=1, flags=re.M)
    if out == src or "block_max=True, block_max" in out:
        raise ValueError("block_max_slabs: not a flat slabs candidate")
    return out.replace("folded into one after the steps (full vectors, no per-row calls).",
                       "the block's max taken over them and the running sum rescaled once a block.")
