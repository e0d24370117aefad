"""Cube kernels' CANN custom-op project (what a library entry of a matmul ships): the msopgen
JSON, the op_host sources (tiling class, TilingFunc, InferShape, OpDef) compiling against the
stub CANN headers of ``tests/golden/stubs``, one op_kernel entry, and the direct-launch CMake
project configuring with CANN's ascendc.cmake stood in. No CANN here: g++ -fsyntax-only shows
the C++ is well-formed against the API as the stubs declare it, not that it links with CANN.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from ascendcraft.dsl.kernel import prepare
from ascendcraft.search.builtin import propose

from ascendcraft.tasks.registry import get_task
from tests.cann_standin import fake_cann_home, recorded_kernels

STUBS = Path(__file__).parent / "golden" / "stubs"
OPS = ["matmul", "matmul_bias_relu", "matmul_fp32"]
DTYPE_WORD = {"f16": "float16", "f32": "float", "bf16": "bfloat16"}


@pytest.fixture(scope="module")
def rendered() -> dict[str, tuple]:
    out = {}
    for op in OPS:
        c = propose(get_task(op))[0]
        k = prepare(c.name, c.source).lower({})
        out[op] = (k, k.render("Ascend910B2"))
    return out


def test_msopgen_json_describes_the_op(rendered: dict) -> None:
    for op, (k, files) in rendered.items():
        name = f"{op}_custom"
        (d,) = json.loads(files[f"cann/{name}.json"])
        assert d["op"] == "".join(w.capitalize() for w in name.split("_"))
        assert [x["name"] for x in d["input_desc"]] == [p.name for p in k.program.inputs]
        assert [x["name"] for x in d["output_desc"]] == [p.name for p in k.program.outputs]
        for x, p in zip(d["input_desc"] + d["output_desc"], [*k.program.inputs, *k.program.outputs], strict=True):
            assert x["param_type"] == "required" and x["format"] == ["ND"]
            assert x["type"] == [DTYPE_WORD[p.dtype]], (op, x)


def test_op_host_defines_the_operator(rendered: dict) -> None:
    for op, (k, files) in rendered.items():
        name = f"{op}_custom"
        cls = "".join(w.capitalize() for w in name.split("_"))
        host = files[f"cann/op_host/{name}.cpp"]
        assert f"class {cls} : public OpDef" in host and f"OP_ADD({cls});" in host
        assert "SetTiling(optiling::TilingFunc)" in host and 'AddConfig("ascend910b")' in host
        for p in (*k.program.inputs, *k.program.outputs):
            assert f'("{p.name}")' in host, (op, p.name)
        assert "SetBlockDim" in host and "GetCoreNumAic" in host
        kernel = files[f"cann/op_kernel/{name}.cpp"]
        assert "GET_TILING_DATA" in kernel and kernel.count("__global__") == 1


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")
def test_op_host_compiles_against_the_stub_headers(rendered: dict, tmp_path: Path) -> None:
    errors = []
    for op, (_, files) in rendered.items():
        root = tmp_path / op
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        proc = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
                               f"-I{STUBS}", f"-I{root / 'cann/op_host'}", str(root / f"cann/op_host/{op}_custom.cpp")],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            errors.append(f"{op}: {proc.stderr[:2000]}")
    assert not errors, "\n".join(errors)


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")
def test_direct_project_configures(rendered: dict, tmp_path: Path) -> None:
    cann = fake_cann_home(tmp_path / "cann")
    k, files = rendered["matmul_bias_relu"]
    src = tmp_path / "src"
    for rel, text in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    proc = subprocess.run(["cmake", "-S", str(src / "direct"), "-B", str(tmp_path / "b"),
                           f"-DASCEND_CANN_PACKAGE_PATH={cann}"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    ((target, kind, sources),) = recorded_kernels(tmp_path / "b")
    assert (target, kind) == ("kernels", "STATIC")
    assert sorted(sources.split(";")) == sorted(f"{la.name}.cpp" for la in k.launches)
