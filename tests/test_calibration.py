"""The model against public measurements (ascendcraft/model/calibration.json): every row is
within its tolerance or says why not, every row names its source, and CALIBRATION.md shows
the current table."""

from __future__ import annotations

from pathlib import Path

import pytest

from ascendcraft.model import MODEL_VERSION
from ascendcraft.model.calibration import evaluate, load_rows, markdown, model_value

RESULTS = evaluate()


@pytest.mark.parametrize("c", RESULTS, ids=[c.row["id"] for c in RESULTS])
def test_row_within_tolerance_or_says_why(c) -> None:
    assert c.row["source"].strip() and c.row["value"] > 0
    assert c.within or c.row.get("why_not", "").strip(), (
        f"{c.row['id']}: model {c.model:.4g} vs public {c.row['value']} {c.row['unit']} "
        f"({c.error:+.1%}) and no reason given")


def test_rows_cover_the_issue_list() -> None:
    kinds = {r["model"]["kind"] for r in load_rows()["rows"]}
    assert kinds >= {"vector_instr", "mmad", "path_bw", "chip_copy", "unaligned_ratio", "eager_mm",
                     "host_enqueue", "single_op_wall", "eager_bw"}
    ids = {r["id"] for r in load_rows()["rows"]}
    assert len(ids) == len(load_rows()["rows"]), "row ids must be unique"


def test_matmul_curve_rows_are_close() -> None:
    # the fitted range (fp16 / bf16 up to 8192^2) is where the eager matmul curve must hold tightly
    mm = [c for c in RESULTS if c.row["model"]["kind"] == "eager_mm"
          and c.row["model"]["dtype"] != "float32" and c.row["model"]["n"] <= 8192]
    assert len(mm) == 8 and max(abs(c.error) for c in mm) < 0.05


def test_unknown_kind_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown model kind"):
        model_value({"id": "x", "model": {"kind": "nope"}})


def test_calibration_md_is_current() -> None:
    md = (Path(__file__).parents[1] / "ascendcraft" / "model" / "CALIBRATION.md").read_text()
    table = md.split("-->\n", 1)[1].rsplit("<!-- /table -->", 1)[0]
    assert table == markdown(RESULTS), "regenerate with: python -m ascendcraft.model.calibration"
    assert f"Model version {MODEL_VERSION}." in table
