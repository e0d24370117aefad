"""SoC specs: every number sourced, loader behaviour, derived peaks match the facts sheet."""

import json
from importlib import resources

import pytest

from ascendcraft.model import DEFAULT_SOC, list_socs, load_soc
from ascendcraft.model.soc import GIB, OP_CLASS

EXPECTED = {"Ascend910B1", "Ascend910B2", "Ascend910B3", "Ascend910B4", "Ascend310P3"}


def test_all_socs_load_with_sources():
    assert EXPECTED <= set(list_socs())
    for name in EXPECTED:
        raw = json.loads((resources.files("ascendcraft.model") / "socs" / f"{name}.json").read_text())
        for key, entry in raw.items():
            if key == "name":
                continue
            if key == "paths":
                assert all("source" in p and p["source"] for p in entry.values())
            else:
                assert "source" in entry and entry["source"], key
        soc = load_soc(name)
        assert soc.name == name and soc.vector_cores > 0 and soc.hbm_gbps > 0


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
