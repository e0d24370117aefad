"""Output forms of one lowering (``ascendcraft.dsl.lowering.outputs``).

Golden files: ``tests/golden/<op>/`` pins the generated kernel source, plain tiling header and
CANN op_host sources of ``add`` (tiles), ``softmax`` (rows) and ``max_middim`` (slabs). After an
intended change to the lowering, regenerate them and review the diff:

    ASCENDCRAFT_UPDATE_GOLDEN=1 python -m pytest tests/test_lowering_outputs.py -k golden

There is no CANN here, so the C++ checks are: the emulator form of every op is compiled for
real by the project's emulator; the plain tiling header (with a small driver), the CANN op_host
code and the direct-launch ``main.cpp`` go through ``g++ -std=c++17 -fsyntax-only`` against the
stub headers in ``tests/golden/stubs/``. That shows our generated C++ is well-formed against the
API as the stubs declare it (names, signatures, types), not that it links against CANN.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sysconfig
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from ascendcraft.dsl.lowering.kernel import LoweredKernel, lower
from ascendcraft.dsl.lowering.outputs import output_shapes, render_outputs
from ascendcraft.search.builtin import propose

from ascendcraft.emulator.build import build_kernel
from ascendcraft.tasks.registry import get_task

OPS = ["add", "mul_scalar", "relu", "gelu", "sigmoid", "swish", "softmax", "log_softmax",
       "layer_norm", "rms_norm", "sum_lastdim", "max_middim"]
GOLDEN_OPS = ["add", "softmax", "max_middim"]
GOLDEN_DIR = Path(__file__).parent / "golden"
STUBS = GOLDEN_DIR / "stubs"
UPDATE_GOLDEN = os.environ.get("ASCENDCRAFT_UPDATE_GOLDEN") == "1"

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")


def golden_files(op: str) -> list[str]:
    """The pinned outputs of one op, relative to its output directory."""
    return [f"direct/{op}_custom_kernel.cpp", f"direct/{op}_custom_tiling.h",
            f"cann/op_host/{op}_custom.cpp", f"cann/op_host/{op}_custom_tiling.h"]


@pytest.fixture(scope="session")
def lowered() -> dict[str, LoweredKernel]:
    return {op: lower(propose(get_task(op))[0].source) for op in OPS}


@pytest.fixture(scope="session")
def written(lowered: dict[str, LoweredKernel], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("outputs")
    for op, lk in lowered.items():
        for rel, text in render_outputs(lk).items():
            (root / op / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / op / rel).write_text(text)
    return {op: root / op for op in OPS}


def _parallel(fn: Callable, items: list) -> list:
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        return list(pool.map(fn, items))


def _gxx_syntax(source: Path, includes: list[Path], extra: tuple[str, ...] = ()) -> str:
    """'' when g++ accepts the file, else its first error lines."""
    cmd = ["g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", *extra,
           *(f"-I{i}" for i in includes), str(source)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return "" if proc.returncode == 0 else f"{source}:\n{proc.stderr[:3000]}"


def _launch_stub(lk: LoweredKernel, folder: Path) -> Path:
    """Stand-in for the aclrtlaunch_<op>.h that ascendc_library generates: one launch function
    taking every kernel argument as a device pointer."""
    folder.mkdir(parents=True, exist_ok=True)
    args = ", ".join(f"void* {t.name}" for t in lk.program.tensors)
    (folder / f"aclrtlaunch_{lk.op}.h").write_text(
        "#pragma once\n#include \"acl/acl.h\"\n"
        "#define ACLRT_LAUNCH_KERNEL(kernel) aclrtlaunch_##kernel\n"
        f"extern \"C\" uint32_t aclrtlaunch_{lk.op}(uint32_t blockDim, aclrtStream stream, {args}, "
        "void* workspace, void* tiling);\n")
    return folder


# ---- layout and content ------------------------------------------------------------------------

def test_every_form_is_written(written: dict[str, Path], lowered: dict[str, LoweredKernel]) -> None:
    for op, out in written.items():
        lk = lowered[op]
        expected = set(render_outputs(lk))
        found = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
        assert found == expected, op
        assert (out / f"cann/op_kernel/{op}_custom.cpp").read_text() == lk.cann_kernel_source()
        assert (out / f"emulator/{op}_custom.cpp").read_text() == lk.emulator_source()
        assert (out / f"cann/op_host/{op}_custom_tiling_plain.h").read_text() == lk.tiling_header
        assert "GET_TILING_DATA" in (out / f"cann/op_kernel/{op}_custom.cpp").read_text()
        readme = (out / "README.md").read_text()
        for t in lk.program.tunables:
            assert f"`{t.name}`" in readme


def test_msopgen_json(written: dict[str, Path], lowered: dict[str, LoweredKernel]) -> None:
    for op, out in written.items():
        p = lowered[op].program
        ops = json.loads((out / f"cann/{op}_custom.json").read_text())
        assert len(ops) == 1
        d = ops[0]
        assert d["op"] == "".join(w.capitalize() for w in op.split("_")) + "Custom"
        assert [x["name"] for x in d["input_desc"]] == [t.name for t in p.inputs]
        assert [x["name"] for x in d["output_desc"]] == [t.name for t in p.outputs]
        for x in d["input_desc"] + d["output_desc"]:
            assert x["param_type"] == "required" and x["format"] == ["ND"] and x["type"] == ["float"]
        if p.scalars:
            assert [(a["name"], a["type"]) for a in d["attr"]] == [(s.name, "float") for s in p.scalars]
            assert all("default_value" in a for a in d["attr"])
        else:
            assert "attr" not in d


def test_cann_tiling_class_mirrors_plain_struct(written: dict[str, Path], lowered: dict[str, LoweredKernel]) -> None:
    """Same fields, types and order as the POD struct, and TilingFunc sets every one."""
    for op, out in written.items():
        lk = lowered[op]
        header = (out / f"cann/op_host/{op}_custom_tiling.h").read_text()
        fields = re.findall(r"TILING_DATA_FIELD_DEF\((\w+), (\w+)\);", header)
        expected = ([("int64_t", f) for f in lk.tiling.fields()] + [("float", f"sc_{s}") for s in lk.tiling.scalars]
                    + [("float", n) for n, _ in lk.tiling.host])
        assert fields == expected, op
        plain = re.findall(r"^    (int64_t|float) (\w+);$", lk.tiling_header, re.M)
        assert plain == expected, op
        assert f"BEGIN_TILING_DATA_DEF({lk.tiling.struct_name})" in header
        host = (out / f"cann/op_host/{op}_custom.cpp").read_text()
        assert re.findall(r"tiling\.set_(\w+)\(plain\.(\w+)\);", host) == [(f, f) for _, f in expected]
        assert f'#include "{op}_custom_tiling_plain.h"' in host
        for s in lk.program.scalars:
            assert f'this->Attr("{s.name}")' in host


def test_output_shape_rules(lowered: dict[str, LoweredKernel]) -> None:
    def rule(op: str):
        (r,) = output_shapes(lowered[op])
        return r

    assert rule("add").apply([3, 5]) == [3, 5]
    assert rule("softmax").apply([2, 3, 7]) == [2, 3, 7]
    assert rule("sum_lastdim").apply([4, 5, 6]) == [4, 5]
    assert rule("max_middim").apply([2, 3, 4]) == [2, 4]
    assert rule("layer_norm").source == "x"
    host = render_outputs(lowered["max_middim"])["cann/op_host/max_middim_custom.cpp"]
    assert "if (i != 1) shape_out->SetDim(j++, shape_x->GetDim(i));" in host


def test_tunables_are_baked_in(lowered: dict[str, LoweredKernel]) -> None:
    src = propose(get_task("softmax"))[0].source
    files = render_outputs(lowered["softmax"], params={"ROWS": 16})
    for path in ("cann/op_host/softmax_custom.cpp", "direct/main.cpp", "torch/softmax_custom_binding.cpp"):
        assert re.search(r"constexpr int64_t tun_ROWS\s+= 16;\s+// tuned \(DSL default 4\)", files[path]), path
    assert "| `ROWS` | 16 | 4 |" in files["README.md"]
    with pytest.raises(ValueError, match="unknown tunables"):
        render_outputs(lowered["softmax"], params={"NOPE": 1})
    with pytest.raises(ValueError, match="depth"):  # the kernel was compiled with DEPTH=2
        render_outputs(lowered["softmax"], params={"DEPTH": 1})
    one = lower(src, {"DEPTH": 1})
    assert "constexpr int32_t DEPTH = 1;" in render_outputs(one, params={"DEPTH": 1})["direct/softmax_custom_kernel.cpp"]


def test_rejects_what_cann_cannot_take(lowered: dict[str, LoweredKernel]) -> None:
    swapped = lower('@kernel(category="elementwise")\n'
                    "def swapped(y: Out[f32], x: In[f32]):\n"
                    "    TILE = tunable(pow2(256, 32768), default=8192)\n"
                    "    for t in tiles(x, tile=TILE):\n"
                    "        store(y, t, load(x, t))\n")
    with pytest.raises(ValueError, match="before the Out"):
        render_outputs(swapped)
    with pytest.raises(ValueError, match="310P"):  # every kernel uses DataCopyPad
        render_outputs(lowered["add"], soc="Ascend310P3")


# ---- C++: emulator build and syntax checks --------------------------------------------------------

@needs_gxx
def test_emulator_form_compiles(written: dict[str, Path]) -> None:
    def build(op: str) -> Path:
        d = written[op] / "emulator"
        sources = {f"{op}_custom.cpp": (d / f"{op}_custom.cpp").read_text(), f"{op}_custom_tiling.h": (d / f"{op}_custom_tiling.h").read_text()}
        return build_kernel(sources, f"{op}_custom.cpp")

    for so in _parallel(build, OPS):
        assert so.exists()


@needs_gxx
def test_plain_tiling_header_syntax(written: dict[str, Path], lowered: dict[str, LoweredKernel],
                                    tmp_path: Path) -> None:
    """The host-side plain C++ on its own, called the way every host form calls it."""
    def check(op: str) -> str:
        lk = lowered[op]
        p = lk.program
        fn = f"{lk.tiling.struct_name.removesuffix('TilingData')}ComputeTiling"
        args = "".join(f", int64_t{{{t.default}}}" for t in p.tunables) + "".join(", 1.5f" for _ in p.scalars)
        driver = tmp_path / f"{op}_driver.cpp"
        driver.write_text(
            f'#include "{op}_custom_tiling_plain.h"\n'
            "int main() {\n"
            "    const int64_t dims[] = " + "{" + ", ".join(["8", "16", "32"] * len(p.tensors)) + "};\n"
            "    const int32_t ranks[] = " + "{" + ", ".join(["3"] * len(p.tensors)) + "};\n"
            f"    {lk.tiling.struct_name} t{{}};\n"
            f"    const char* error = {fn}(dims, ranks, {len(p.tensors)}, 48{args}, &t);\n"
            "    return error == nullptr ? static_cast<int>(t.blockDim > 0 ? 0 : 1) : 2;\n"
            "}\n")
        return _gxx_syntax(driver, [written[op] / "cann/op_host"])

    errors = [e for e in _parallel(check, OPS) if e]
    assert not errors, "\n".join(errors)


@needs_gxx
def test_host_cpp_syntax_against_stubs(written: dict[str, Path], lowered: dict[str, LoweredKernel],
                                       tmp_path: Path) -> None:
    """CANN op_host (tiling class + TilingFunc/InferShape/OpDef) and the direct launcher."""
    jobs: list[tuple[Path, list[Path]]] = []
    for op in OPS:
        out = written[op]
        jobs.append((out / f"cann/op_host/{op}_custom.cpp", [STUBS, out / "cann/op_host"]))
        launch = _launch_stub(lowered[op], tmp_path / f"launch_{op}")
        jobs.append((out / "direct/main.cpp", [STUBS, launch, out / "direct"]))
    errors = [e for e in _parallel(lambda job: _gxx_syntax(*job), jobs) if e]
    assert not errors, "\n".join(errors)


@needs_gxx
@pytest.mark.slow
def test_torch_binding_syntax(written: dict[str, Path], lowered: dict[str, LoweredKernel], tmp_path: Path) -> None:
    """The torch_npu binding against the real torch headers (torch_npu / acl stubbed); ~20 s."""
    from torch.utils.cpp_extension import include_paths

    python_include = Path(sysconfig.get_paths()["include"])
    if not (python_include / "Python.h").exists():
        pytest.skip("Python.h not installed")
    op = "mul_scalar"
    out = written[op]
    launch = _launch_stub(lowered[op], tmp_path / "launch")
    err = _gxx_syntax(out / f"torch/{op}_custom_binding.cpp",
                      [STUBS, launch, out / "direct", *map(Path, include_paths()), python_include],
                      extra=("-w", "-Wno-error", f"-DTORCH_EXTENSION_NAME=acx_{op}"))
    assert not err, err


# ---- golden files ------------------------------------------------------------------------------

@pytest.mark.parametrize("op", GOLDEN_OPS)
def test_golden(op: str, lowered: dict[str, LoweredKernel]) -> None:
    files = render_outputs(lowered[op])
    stale = []
    for rel in golden_files(op):
        path = GOLDEN_DIR / op / rel
        if UPDATE_GOLDEN:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(files[rel])
        elif not path.exists() or path.read_text() != files[rel]:
            stale.append(rel)
    assert not stale, (f"{op}: generated {stale} differ from tests/golden/{op}/; if intended, regenerate "
                       "with ASCENDCRAFT_UPDATE_GOLDEN=1 and review the diff")
