"""Capacity lower bound on matmul operand traffic (model/capacity.py) and why the eager
matmul's compulsory-bytes charge does not flatter eager."""

import math

import pytest

from ascendcraft.model.capacity import (
    fast_elements,
    matmul_read_lower_bound,
    reread_share_of_compute,
)
from ascendcraft.soc import list_socs, load_soc


def test_fast_elements_counts_operand_buffers_and_fp32_accumulators():
    soc = load_soc("Ascend910B2")  # L1 512 KiB, L0A/L0B 64 KiB, L0C 128 KiB
    assert fast_elements(soc, 2) == (512 + 64 + 64) * 1024 / 2 + 128 * 1024 / 4
    assert fast_elements(soc, 4) == (512 + 64 + 64) * 1024 / 4 + 128 * 1024 / 4


def test_small_products_need_only_their_operands_once():
    # 1000 x 999 @ 999 x 1001 fp16: the pebble term is negative, every operand read once
    assert matmul_read_lower_bound(1, 1000, 1001, 999, 2, "Ascend910B2") == 2 * (1000 * 999 + 999 * 1001)
    # a K-large product (512 x 32768 @ 32768 x 512) still fits the compulsory bytes
    assert matmul_read_lower_bound(1, 512, 512, 32768, 2, "Ascend910B2") == 2 * 2 * 512 * 32768


def test_square_product_pays_rereads_by_the_io_bound():
    s = 640 * 1024 / 2 + 32768
    f = 4096 ** 3
    want = 2 * (2 * f / math.sqrt(s) - 2 * 24 * s)
    got = matmul_read_lower_bound(1, 4096, 4096, 4096, 2, "Ascend910B2")
    assert got == pytest.approx(want)
    assert got > 6 * 2 * 2 * 4096 * 4096  # over six times the operands: re-reads are forced


def test_batches_add_their_traffic():
    one = matmul_read_lower_bound(1, 1024, 1024, 512, 2, "Ascend910B3")
    assert matmul_read_lower_bound(32, 1024, 1024, 512, 2, "Ascend910B3") >= 32 * 2 * (2 * 1024 * 512)
    assert one == 2 * 2 * 1024 * 512  # one batch alone: the pebble term is below the operands


@pytest.mark.parametrize("soc_name", list_socs())
@pytest.mark.parametrize("dtype, esize", [("float16", 2), ("float32", 4)])
def test_rereads_through_l2_never_outlast_eager_compute(soc_name, dtype, esize):
    """Every byte into a core passes L2, so Q / l2 bounds any kernel from below; on every SoC
    with an L2 figure it stays under the eager compute time for any shape, so charging eager
    the compulsory bytes (not Q) is not a flattering omission."""
    soc = load_soc(soc_name)
    share = reread_share_of_compute(soc, dtype)
    if soc.l2_gbps is None:
        assert share is None
        return
    assert share < 1
    peak = soc.cube_peak_flops(dtype) * soc.eager_matmul_efficiency
    for bt, m, n, k in [(1, 8192, 8192, 8192), (7, 333, 4097, 2500), (1, 65536, 64, 64), (64, 128, 128, 8192)]:
        q = matmul_read_lower_bound(bt, m, n, k, esize, soc)
        compute_s = 2 * bt * m * n * k / peak
        pebble_s = (q - esize * bt * (m * k + k * n)) / (soc.l2_gbps * 1e9)
        assert pebble_s <= share * compute_s * (1 + 1e-9)
