"""Eager model 2.3: a library row op whose row does not fit in UB reads its input twice; the
second read is of a row read just before, so while the rows the vector cores hold at once fit
in L2 it is charged at the L2 bandwidth - as the timeline charges our own kernels' second reads
(their L2 model finds the rows resident). Rows too large for that (48 cores x 4 MiB channels of
a batch norm) keep the HBM rate."""

from __future__ import annotations

import pytest
import torch

from ascendcraft.model.eager import library_kernel_us, record_aten_ops
from ascendcraft.soc import load_soc

SOC = load_soc("Ascend910B2")
HBM = SOC.hbm_gbps * 1e3 * SOC.hbm_sustained_frac  # bytes per us
L2 = SOC.l2_gbps * 1e3


def _call(fn, *shapes):
    calls = [c for c in record_aten_ops(fn, [torch.empty(s, device="meta") for s in shapes]) if c.unit != "cube"]
    assert len(calls) == 1, calls
    return calls[0]


def test_softmax_rows_too_wide_for_ub_reread_from_l2() -> None:
    c = _call(lambda x: torch.softmax(x, -1), (4096, 65536))  # a 256 KiB row: two passes
    us, passes = library_kernel_us(c, SOC)
    assert passes == 2
    one = library_kernel_us(_call(lambda x: torch.softmax(x, -1), (65536, 4096)), SOC)  # same bytes, one pass
    assert one[1] == 1
    # the difference is the second read at the L2 rate, not at the HBM rate
    assert us - one[0] == pytest.approx(c.in_bytes / L2, rel=0.05)
    assert us - one[0] < c.in_bytes / HBM / 3


def test_rows_that_do_not_fit_l2_keep_the_hbm_rate() -> None:
    # batch norm over [64, 64, 128, 128] (training): a channel is 4 MiB, 48 of them are 192 MiB
    c = _call(lambda x: torch.nn.functional.batch_norm(x, None, None, training=True), (64, 64, 128, 128))
    us, passes = library_kernel_us(c, SOC)
    assert passes == 2
    assert c.row * 4 * SOC.vector_cores >= SOC.l2_mib * 2**20
    assert us > (c.bytes + c.in_bytes) / HBM
