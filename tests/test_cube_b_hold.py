"""Tall and narrow products on the emulator: b_hold (part of the B panel held, the other K steps
streamed), fix_defer (a block's Fixpipe issued after the next block's stages) and tail=2 (the last
partial wave cut along M) give exactly the result of the whole held panel, the immediate Fixpipe and
whole tail blocks, over ragged sizes and every B layout."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from ascendcraft.dsl.errors import DslError
from ascendcraft.search.cube_builtin import MatmulSpec, matmul_candidates

from tests.test_cube_lowering import _build, _run, panel_operands

pytestmark = pytest.mark.slow


def _src(**kw) -> str:
    spec = MatmulSpec(**{"a": "a", "b": "b", "dtype": "f16", "out_dtype": "f16", **kw})
    return matmul_candidates("mm", spec)[0].source


@pytest.mark.parametrize("batched, tb, dtype", [(False, False, "f16"), (False, True, "f16"), (True, False, "f16"),
                                                (True, True, "f32")])
def test_b_hold_and_fix_defer_match_the_whole_panel(batched: bool, tb: bool, dtype: str) -> None:
    """A K range of 333 (ten 32-row steps and a 13-row one) with 64 or 128 rows held: the streamed
    steps are spread over the stages, the last (ragged) one streamed; with the Fixpipe deferred by
    one, two or more stages than a block has, tail blocks cut along M or N, runs of blocks per core,
    the output is bit for bit the one of the whole held panel with immediate Fixpipes."""
    np_in, ref = panel_operands(batched, tb, dtype, 5)
    plan, lk, libs = _build(_src(dtype=dtype, out_dtype=dtype, transpose_b=tb, batched=batched), {"ACCD": 2})
    base = {"BM": 64, "BN": 208, "BK": 32, "KL1": 128, "ORDER": 0, "CORES": 5, "BW": 1, "ACCD": 2}
    outs = []
    for bh, fdef, tail, run in [(0, 0, 0, 1), (2, 0, 0, 1), (1, 1, 1, 1), (2, 2, 2, 1), (2, 8, 2, 1), (0, 8, 1, 1),
                                (2, 8, 2, 2), (2, 1, 2, 4)]:
        params = {**base, "BH": bh, "FDEF": fdef, "TAIL": tail, "RUN": run}
        (out,), t = _run(plan, lk, libs, np_in, [(tuple(ref.shape), np_in[0].dtype)], params)
        assert t["kPerSplit"] == 352 and t["bHold"] == (bh * 64 if bh else 352)  # 11 steps of 32
        assert t["bStream"] == (1 if bh else 0)
        assert t["fixDefer"] == fdef and t["tailM"] == (1 if tail == 2 else 0)
        np.testing.assert_allclose(out.astype(np.float32), ref.float().numpy(), rtol=2e-3, atol=3e-2)
        outs.append(out)
    for out in outs[1:]:
        np.testing.assert_array_equal(outs[0], out)


@pytest.mark.parametrize("run", [1, 2])
def test_tail_pieces_along_m_cover_every_block(run: int) -> None:
    """tail=2 cuts the last partial wave's blocks into row pieces (16-row multiples, one per item,
    piece j of every block before piece j + 1): ragged rows, two column blocks, runs of blocks."""
    m, k, n = 470, 96, 160
    torch.manual_seed(6)
    a, b = torch.randn(m, k).half(), torch.randn(k, n).half()
    ref = (a.float() @ b.float()).half().numpy()
    plan, lk, libs = _build(_src())
    outs = []
    for tail in (0, 2):
        params = {"BM": 64, "BN": 96, "BK": 32, "KL1": 64, "ORDER": 0, "CORES": 5, "TAIL": tail, "RUN": run}
        (out,), t = _run(plan, lk, libs, [a.numpy(), b.numpy()], [(ref.shape, np.float16)], params)
        if tail:
            assert t["remTiles"] == 1 and t["tparts"] == 2  # 16 blocks on 5 cores: the last one cut in 2
        np.testing.assert_allclose(out.astype(np.float32), ref.astype(np.float32), rtol=2e-3, atol=3e-2)
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])


def test_fix_defer_is_refused_in_the_ring_form() -> None:
    """The mixed (ring) form signals a block's slot right after its Fixpipe: a program asking for a
    deferred one is refused before a build, with the reason."""
    from ascendcraft.dsl.checker import check_program
    from ascendcraft.dsl.lowering.cube import plan_cube
    from ascendcraft.dsl.parser import parse

    src = [c.source for c in matmul_candidates("mm", MatmulSpec(
        a="a", b="b", dtype="f16", out_dtype="f16", extra=(("bias", "f16"),),
        epilogue="gelu(v + cast(load_bcast(bias, cc), f32))")) if "ring=" in c.source][0]
    src = src.replace("acc_depth=ACCD,", "acc_depth=ACCD, fix_defer=1,")
    assert "fix_defer=1" in src
    with pytest.raises(DslError, match="no fix_defer= with a ring workspace"):
        plan_cube(check_program(parse(src)))
