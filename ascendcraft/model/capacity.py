"""Lower bounds on a matmul's operand traffic, from a cube core's on-chip buffers.

Why: a kernel re-reads operands its buffers cannot hold, and the timeline charges our kernels
those re-reads; the eager matmul must pay the same for the same blocking. Two bounds live
here: :func:`l0c_block_rereads`, the least re-reads of a kernel that keeps each output block's
sums in L0C (the library's Matmul API; the eager matmul is charged these, model/README.md
*Matmul re-reads*), and :func:`matmul_read_lower_bound`, the two-level I/O bound for a kernel
of any structure (partial sums in L1 allowed), with :func:`reread_share_of_compute`.
"""

from __future__ import annotations

import math

from ascendcraft.soc import Soc, load_soc


def fast_elements(soc: Soc | str | None, esize: int) -> float:
    """``S``: elements one cube core can hold on chip, operands in ``esize`` bytes (L1, L0A,
    L0B) plus fp32 partial sums (L0C). Counting L0A/L0B (copies of L1 data) only enlarges
    ``S`` and so lowers the bound: it stays a lower bound."""
    soc = load_soc(soc)
    return (soc.l1_kib + soc.l0a_kib + soc.l0b_kib) * 1024 / esize + soc.l0c_kib * 1024 / 4


def matmul_read_lower_bound(batch: int, m: int, n: int, k: int, esize: int,
                            soc: Soc | str | None = None) -> float:
    """Operand bytes every kernel must move into the cube cores for ``batch`` x (m x k @ k x n):

        Q >= esize x max(batch (m k + k n),  2 F / sqrt(S) - 2 P S)

    with F = batch m n k multiply-adds, S = :func:`fast_elements`, P = cube cores. The second
    term is the two-level I/O bound for classical matmul (reads >= 2 F_c / sqrt(S) - 2 S for a
    processor doing F_c multiply-adds with S words of fast memory: Smith, Lowery, Langou, van de
    Geijn, "A Tight I/O Lower Bound for Matrix Multiplication", arXiv:1702.02017, leading term
    2 n^3 / sqrt(S)) summed over the cores, whatever the split of F among them (the bound is
    linear in F_c); the first is every operand element read once."""
    soc = load_soc(soc)
    f = batch * m * n * k
    s = fast_elements(soc, esize)
    pebble = 2 * f / math.sqrt(s) - 2 * soc.cube_cores * s
    return esize * max(batch * (m * k + k * n), pebble)


def reread_share_of_compute(soc: Soc | str | None, dtype: str = "float16") -> float | None:
    """Upper bound, over all shapes, of (time to stream the capacity-bound traffic through L2)
    / (eager compute time at the measured efficiency): ``esize x peak x efficiency / (sqrt(S) x
    L2 bandwidth)``, the ratio of ``2 F esize / sqrt(S) / l2`` to ``2 F / (peak x efficiency)``.
    Every byte into a core passes L2, so the bound's time is at least Q / l2; when this share
    is below 1 the capacity term can never bind and compulsory bytes are the fair memory charge.
    None when the SoC has no L2 bandwidth figure."""
    soc = load_soc(soc)
    if not soc.l2_gbps:
        return None
    esize = 4 if str(dtype).lower().removeprefix("torch.") in ("float32", "float", "fp32", "f32") else 2
    peak = soc.cube_peak_flops(dtype)
    return esize * peak * soc.eager_matmul_efficiency / (math.sqrt(fast_elements(soc, esize)) * soc.l2_gbps * 1e9)


def l0c_block_rereads(batch: int, m: int, n: int, k: int, esize: int,
                      soc: Soc | str | None = None) -> int:
    """Fewest operand bytes read more than once by a matmul that accumulates each output block
    in L0C over the block's whole K range - what the library's Matmul API does: each
    ``Iterate`` computes one baseM x baseN block of C into CO1 (L0C), so a block's fp32 sums
    fit in L0C.

    With a grid of gm x gn blocks a product reads A's rows once per block column and B's
    columns once per block row: ``A (gn - 1) + B (gm - 1)`` bytes beyond one pass. A core
    that runs one block after another can keep at most its L1, L0A and L0B contents for the
    next block, so each block beyond the first on a core saves at most that many bytes; the
    first block on each of the cube cores saves nothing. The least over every grid, counted
    generously (a K split, which only adds partial sums, is not charged; every kept byte is
    assumed useful): a kernel of this kind cannot read less, so charging these bytes never
    flatters ours against it."""
    soc = load_soc(soc)
    sums = soc.l0c_kib * 1024 // 4
    kept = (soc.l1_kib + soc.l0a_kib + soc.l0b_kib) * 1024
    a_bytes, b_bytes = m * k * esize, k * n * esize
    best = None
    # a block height bm is reached by a range of gm; the count is linear in gm there, so its
    # least is at an end of the range (at most 2 x L0C / 16 / 16 grids, whatever the size)
    for bm in range(16, min(_up16(m), sums // 16) + 1, 16):
        ends = {math.ceil(m / bm), m if bm == 16 else math.ceil(m / (bm - 16)) - 1}
        for gm in sorted(g for g in ends if g >= 1 and _up16(math.ceil(m / g)) == bm):
            gn = math.ceil(n / (sums // bm // 16 * 16))
            again = batch * (a_bytes * (gn - 1) + b_bytes * (gm - 1))
            saved = max(0, batch * gm * gn - soc.cube_cores) * kept
            low = max(0, again - saved)
            best = low if best is None else min(best, low)
    return best or 0


def _up16(x: int) -> int:
    return -(-x // 16) * 16
