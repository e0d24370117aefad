"""Issue-2 acceptance: every vector-path op is correct in the emulator on aligned shapes,
ragged shapes and rows too wide for UB, in fp32 and fp16 (via the same path as
`ascendcraft check`)."""

from __future__ import annotations

import pytest
from checking import check_task

from ascendcraft.tasks.registry import get_task

ELEMENTWISE = ["add", "mul_scalar", "relu", "gelu", "sigmoid", "swish"]
ROWWISE = ["softmax", "log_softmax", "layer_norm", "rms_norm", "sum_lastdim"]
FLAT_SHAPES = ["1", "31", "1000003", "64x1024"]
ROW_SHAPES = ["64x1024", "3x65535", "1000x7", "1x500000"]
MIDDIM_SHAPES = ["8x64x1024", "4x31x1023", "3x7x65535", "2x5x7"]

CASES = (
    [(op, s, "fp32") for op in ELEMENTWISE for s in FLAT_SHAPES]
    + [(op, s, "fp32") for op in ROWWISE for s in ROW_SHAPES]
    + [("max_middim", s, "fp32") for s in MIDDIM_SHAPES]
    + [(op, s, "fp16") for op in ELEMENTWISE for s in ("31", "1000003")]
    + [(op, s, "fp16") for op in ROWWISE for s in ("1000x7", "1x500000")]
    + [("max_middim", "4x31x1023", "fp16")]
)


@pytest.mark.slow
@pytest.mark.parametrize(("op", "shape", "dtype"), CASES, ids=[f"{o}-{s}-{d}" for o, s, d in CASES])
def test_op_passes_check(op: str, shape: str, dtype: str) -> None:
    task = get_task(op).with_shape(shape, dtype)
    report = check_task(task, soc="Ascend910B2", full=False, timing=False, explicit_shape=True)
    assert report["correct"], report["candidates"]
    best = next(c for c in report["candidates"] if c["correct"])
    assert best["max_abs_err"] is not None


def test_wide_rows_pick_the_chunked_candidate() -> None:
    """A 1x500000 row cannot fit in UB: the whole-row candidate is rejected before any build
    with the bytes needed, and the column-chunked one passes."""
    task = get_task("softmax").with_shape("1x500000")
    report = check_task(task, soc="Ascend910B2", full=False, timing=False, explicit_shape=True)
    by_name = {c["candidate"]: c for c in report["candidates"]}
    assert by_name["softmax/rows"]["status"] == "infeasible"
    assert "UB budget exceeded: needs" in by_name["softmax/rows"]["message"]
    assert by_name["softmax/chunked"]["correct"]
