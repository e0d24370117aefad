"""Capacity lower bound on a matmul's operand traffic, from a cube core's on-chip buffers.

Why: the eager matmul is charged ``max(flops at the measured efficiency, compulsory bytes)``.
If no tiling on a SoC could avoid re-reading operands (L1 / L0 too small), charging eager only
the compulsory bytes would flatter it. This module gives the re-read traffic *any* kernel on
the SoC pays, and the largest share of the compute time that traffic can take; the eager model
needs the term only if that share can exceed 1 (model/README.md, *Capacity bound*).
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
