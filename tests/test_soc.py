"""SoC specs: every number sourced, loader behaviour, derived peaks match the facts sheet,
capabilities are data (a new SoC of a known family is one JSON file)."""

import json
from importlib import resources

import pytest

from ascendcraft.model.op_costs import OP_CLASS
from ascendcraft.soc import DEFAULT_SOC, GIB, Soc, SocError, list_socs, load_soc, parse_soc
from ascendcraft.soc import spec as soc_spec

EXPECTED = {"Ascend910B1", "Ascend910B2", "Ascend910B3", "Ascend910B4", "Ascend310P3"}


def _raw(name: str) -> dict:
    return json.loads((resources.files("ascendcraft.soc") / "data" / f"{name}.json").read_text())


def test_all_socs_load_with_sources():
    assert EXPECTED <= set(list_socs())
    for name in EXPECTED:
        raw = _raw(name)
        for key, entry in raw.items():
            if key == "name":
                continue
            if key == "paths":
                assert all("source" in p and p["source"] for p in entry.values())
            else:
                assert "source" in entry and entry["source"], key
        soc = load_soc(name)
        assert soc.name == name and soc.vector_cores > 0 and soc.hbm_gbps > 0
        assert load_soc(name) is soc  # parsed once, the same object handed everywhere


def test_default_and_unknown():
    assert DEFAULT_SOC == "Ascend910B2"
    assert load_soc().name == "Ascend910B2"
    with pytest.raises(ValueError, match="unknown SoC 'Ascend999'.*Ascend910B2"):
        load_soc("Ascend999")


@pytest.mark.parametrize("name,tflops", [("Ascend910B1", 363.8), ("Ascend910B2", 353.9),
                                         ("Ascend910B3", 294.9), ("Ascend910B4", 245.8),
                                         ("Ascend310P3", 69.5)])
def test_cube_peak_matches_facts(name, tflops):
    assert load_soc(name).cube_peak_flops("float16") / 1e12 == pytest.approx(tflops, abs=0.1)


def test_path_ramp_reproduces_table_points():
    soc = load_soc("Ascend910B1")
    p = soc.paths["GM2UB"]
    assert 1024 / p.time_ns(1024) * 1e9 / GIB == pytest.approx(7.0, rel=1e-6)
    big = 192 * 1024
    assert big / p.time_ns(big) * 1e9 / GIB > 0.9 * 78.0
    assert soc.paths["UB2GM"].peak_bytes_per_ns * 1e9 / GIB == pytest.approx(110.0)


def test_every_vector_op_has_a_class_with_costs():
    soc = load_soc()
    for op, cls in OP_CLASS.items():
        assert set(soc.vector_cycles_per_repeat[cls]) == {"f16", "f32"}, op


def test_capabilities_and_buffers_are_data():
    b2, p3 = load_soc("Ascend910B2"), load_soc("Ascend310P3")
    assert b2.capabilities.split_cores and not p3.capabilities.split_cores
    assert (b2.capabilities.cann_family, p3.capabilities.cann_family) == ("ascend910b", "ascend310p")
    assert b2.capabilities.missing(["data_copy_pad", "bf16"]) == []
    assert p3.capabilities.missing(["data_copy_pad", "bf16"]) == ["data_copy_pad", "bf16"]
    with pytest.raises(ValueError, match="unknown kernel feature 'fp8'"):
        b2.capabilities.missing(["fp8"])
    assert b2.buffer_bytes["ub"] == 192 * 1024 and p3.buffer_bytes["ub"] == 256 * 1024
    assert p3.buffer_bytes["l1"] == 1024 * 1024 and p3.buffer_bytes["l0c"] == 256 * 1024


@pytest.mark.parametrize("breakage,message", [
    (lambda r: r["ub_kib"].pop("source"), "field 'ub_kib' has no 'source'"),
    (lambda r: r.pop("hbm_gbps"), "field 'hbm_gbps' is missing"),
    (lambda r: r["capabilities"].update(bf16="yes"), "capabilities.bf16 must be true or false"),
    (lambda r: r["capabilities"].pop("cann_family"), "capabilities.cann_family must be a name"),
    (lambda r: r["organisation"].update(value="fused"), "organisation must be one of split, coupled"),
    (lambda r: r["clock_mhz"].update(value="fast"), "field 'clock_mhz' must be a number"),
    (lambda r: r["paths"]["GM2UB"].pop("source"), "path 'GM2UB' has no 'source'"),
    (lambda r: r["mmad"].pop("fixed_cycles"), "field 'mmad.fixed_cycles' must be a number"),
])
def test_malformed_spec_is_a_readable_error(breakage, message):
    raw = _raw("Ascend910B2")
    breakage(raw)
    with pytest.raises(SocError, match=message.replace(".", r"\.")):
        parse_soc(raw, "SoC spec test.json")


def test_a_new_soc_of_a_known_family_is_one_json_file(tmp_path, monkeypatch):
    """Drop one file next to the others: it is listed, loaded, and its numbers and
    capabilities reach the code that reads them (no name tests anywhere)."""
    for name in list_socs():
        (tmp_path / f"{name}.json").write_text(json.dumps(_raw(name)))
    raw = _raw("Ascend910B4")
    raw["name"] = "Ascend910B9"
    raw["ub_kib"]["value"] = 160
    raw["capabilities"]["bf16"] = False
    (tmp_path / "Ascend910B9.json").write_text(json.dumps(raw))
    monkeypatch.setattr(soc_spec, "_data_dir", lambda: tmp_path)
    monkeypatch.setattr(soc_spec, "_CACHE", {})
    assert "Ascend910B9" in list_socs()
    soc = load_soc("Ascend910B9")
    assert isinstance(soc, Soc) and soc.buffer_bytes["ub"] == 160 * 1024
    assert soc.capabilities.missing(["bf16"]) == ["bf16"] and soc.capabilities.cann_family == "ascend910b"
    (tmp_path / "Ascend910B8.json").write_text(json.dumps({**raw, "name": "Other"}))
    with pytest.raises(SocError, match="names itself 'Other'"):
        load_soc("Ascend910B8")
