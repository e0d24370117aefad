"""Lower bounds on matmul operand traffic (model/capacity.py): the two-level I/O bound for any
kernel, and the re-reads of a kernel that keeps each output block's sums in L0C (the library's
Matmul API), which the eager matmul is charged (model 2.4)."""

import math

import pytest
import torch

from ascendcraft.model.capacity import (
    fast_elements,
    l0c_block_rereads,
    matmul_read_lower_bound,
    reread_share_of_compute,
)
from ascendcraft.model.eager import eager_us
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
    with an L2 figure it stays under the eager compute time for any shape. This bound lets
    partial sums live in L1, which the library's matmul never does; the eager charge is the
    L0C-block bound below."""
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


MIB = 1 << 20


def test_k_large_product_rereads_its_panels_across_the_block_grid():
    # 512 x 32768 @ 32768 x 512 fp16: 32768 fp32 sums fit L0C, so at least 8 blocks (2 x 4 is
    # the cheapest grid): A read once more, B three more times; 8 blocks on 24 cores keep nothing
    assert l0c_block_rereads(1, 512, 512, 32768, 2, "Ascend910B2") == 32 * MIB + 3 * 32 * MIB


def test_blocks_beyond_the_cores_keep_what_they_can():
    # 32768 x 1024 @ 1024 x 256: 256 row blocks of 128 x 256, B (512 KiB) re-read by each; a core
    # running its next block may keep up to L1 + L0A + L0B (640 KiB) - enough for all of B
    assert l0c_block_rereads(1, 32768, 256, 1024, 2, "Ascend910B2") == 0
    # 16384 x 4096 @ 4096 x 256: B is 2 MiB, so each further block still reads 1.375 MiB of it
    got = l0c_block_rereads(1, 16384, 256, 4096, 2, "Ascend910B2")
    assert got == 127 * 2 * MIB - (128 - 24) * 640 * 1024


def test_batches_multiply_the_rereads_and_each_is_counted_once():
    one = l0c_block_rereads(1, 300, 520, 777, 4, "Ascend910B2")
    assert one > 0
    assert l0c_block_rereads(3, 300, 520, 777, 4, "Ascend910B2") <= 3 * one
    assert l0c_block_rereads(1, 64, 64, 64, 2, "Ascend910B2") == 0  # one block


def test_eager_matmul_pays_its_rereads_at_the_l2_rate():
    """The library's K-large matmul: one pass over A, B and C from HBM plus 128 MiB of L2 hits,
    longer than its compute at the measured curve; a square 4096^3 stays compute-bound."""
    soc = load_soc("Ascend910B2")
    f16 = torch.float16
    e = eager_us(lambda a, b: a @ b, [((512, 32768), f16), ((32768, 512), f16)], soc).us
    hbm = soc.hbm_gbps * 1e3 * soc.hbm_sustained_frac  # bytes per us
    mem = (2 * 32 * MIB + 512 * 512 * 2) / hbm + 128 * MIB / (soc.l2_gbps * 1e3)
    assert e == pytest.approx(soc.launch_us(soc.cube_cores) + soc.eager_matmul_fill_us + mem)
    sq = eager_us(lambda a, b: a @ b, [((4096, 4096), f16), ((4096, 4096), f16)], soc).us
    compute = 2 * 4096 ** 3 / (soc.cube_peak_flops("float16") * soc.eager_matmul_efficiency) * 1e6
    assert sq == pytest.approx(soc.launch_us(soc.cube_cores) + soc.eager_matmul_fill_us + compute)
