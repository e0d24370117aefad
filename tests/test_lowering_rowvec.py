"""Row values stay on the vector side in the lowered kernels (issue 18, "row statistics"): a
whole-row kernel applies its row max/sum/mean/rstd with Brcb + repeat-form ops and has no
scalar read of UB (no V->S sync) in its tile loop; a chunked kernel hoists its row values into
32 B blocks or into scalars as its tiling decides (the rowBlocks field, by chunks a row)."""

from __future__ import annotations

import pytest
from ascendcraft.dsl.lowering.tiling import ROW_BLOCKS_CHUNKS
from ascendcraft.search.builtin import propose

from ascendcraft.evaluate import prepare
from ascendcraft.soc import load_soc
from ascendcraft.tasks.registry import get_task


def _process(op: str, candidate: str, params: dict | None = None) -> str:
    cand = next(c for c in propose(get_task(op)) if c.name == candidate)
    kernel = prepare(cand.name, cand.source).lower(params or {})
    src = "".join(launch.source for launch in kernel.launches)
    return src[src.index("void Process()"):]


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "layer_norm", "rms_norm", "group_norm"])
def test_whole_row_kernels_have_no_scalar_reads_in_the_tile_loop(op: str) -> None:
    body = _process(op, f"{op}/rows")
    assert "AcxBrcbRows(" in body and "AcxRowApply<" in body
    assert "GetValue" not in body and "SyncVS" not in body


def test_division_by_a_row_value_multiplies_by_its_reciprocal() -> None:
    # x / s was x * (1 / s) on the scalar path: the vector path keeps that rounding
    body = _process("softmax", "softmax/rows")
    assert "Reciprocal(" in body and "AcxRowApply<ACX_MUL, false>" in body and "ACX_DIV" not in body


def test_chunked_kernels_choose_blocks_or_scalars_by_tiling() -> None:
    body = _process("softmax", "softmax/chunked")
    assert body.count("if (td_.rowBlocks) {") >= 2  # hoisting and the chunk op
    assert "if (!td_.rowBlocks) {" in body  # the scalar read only on the other branch
    cand = next(c for c in propose(get_task("softmax")) if c.name == "softmax/chunked")
    kernel = prepare(cand.name, cand.source).lower({})
    soc = load_soc("Ascend910B2")
    assert kernel.tiling([[8, ROW_BLOCKS_CHUNKS * 4096]], soc)["rowBlocks"] == 1  # CHUNK 4096 by default
    assert kernel.tiling([[8, ROW_BLOCKS_CHUNKS * 4096 + 1]], soc)["rowBlocks"] == 0


def test_online_and_one_pass_statistics_avoid_scalar_reads() -> None:
    # running values change in every chunk (never hoisted): blocks each chunk; row_last as a
    # strided copy + block reduction
    online = _process("softmax", "softmax/online")
    assert "GetValue(ri" not in online.split("if (!td_.rowBlocks)")[0]
    onepass = _process("layer_norm", "layer_norm/onepass")
    assert "AcxRowLast(" in onepass
