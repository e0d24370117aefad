"""The kernel library end to end (issue 17's acceptance): two tuning runs exported as 0.1.0,
one op re-tuned and exported as 0.2.0; ``library diff`` shows the change, ``library verify``
passes on both, the loader runs every entry in the emulator and matches PyTorch at shapes it
was not tuned at. An export SIGKILLed mid-write leaves 0.1.0 usable; a version is never
overwritten; one flipped byte in an exported kernel is reported by ``verify``.

Real runs: ``ascendcraft tune`` (emulator, budget 1-4) writes the run directories.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from ascendcraft.cli import main
from ascendcraft.library import LibraryError, export, load, open_library, verify
from tests.cann_standin import fake_cann_home, recorded_kernels


def _tune(op: str, out: Path, budget: int, seed: int = 0) -> Path:
    rc = main(["tune", "--op", op, "--budget", str(budget), "--seed", str(seed), "--workers", "1",
               "--out", str(out), "--json"])
    assert rc == 0, f"tune {op} failed"
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("runs")
    return {"relu": _tune("relu", root / "relu-a", 1), "add": _tune("add", root / "add-a", 2),
            "relu2": _tune("relu", root / "relu-b", 4, seed=3)}


@pytest.fixture(scope="module")
def library(runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    lib = tmp_path_factory.mktemp("lib") / "kernels"
    assert main(["export", str(runs["relu"]), str(runs["add"]), "--library", str(lib),
                 "--version", "0.1.0", "--message", "first two ops"]) == 0
    assert main(["export", str(runs["relu2"]), "--library", str(lib), "--version", "0.2.0",
                 "--message", "relu re-tuned"]) == 0
    return lib


def test_versions_and_manifest(library: Path) -> None:
    lib = open_library(library)
    assert lib.versions == ("0.1.0", "0.2.0")
    m = lib.manifest()
    assert m["version"] == "0.2.0" and m["previous"] == "0.1.0"
    assert [c["version"] for c in m["changelog"]] == ["0.2.0", "0.1.0"]
    assert m["changelog"][0]["message"] == "relu re-tuned"
    assert m["changelog"][0]["replaced"] == ["relu/Ascend910B2/fp32-4096x32768"]
    assert set(m["entries"]) == {"relu/Ascend910B2/fp32-4096x32768", "add/Ascend910B2/fp32-4096x32768_4096x32768"}
    for e in m["entries"].values():
        data = json.loads((lib.path("0.2.0") / e["path"] / "entry.json").read_text())
        assert data["timing"]["kind"] == e["timing_kind"] and data["timing"]["model_version"]
        assert data["correctness"]["export"]["correct"] and data["correctness"]["run"]["revalidation"]["status"] == "ok"
        assert data["versions"]["ascendcraft"] and data["versions"]["toolchain"]["emulator_cxx"]
        forms = {rel for rel in data["files"] if rel.startswith("forms/")}
        op = data["op"]
        for rel in (f"forms/cann/{op}_custom.json", f"forms/cann/op_host/{op}_custom.cpp",
                    f"forms/cann/op_kernel/{op}_custom.cpp", "forms/direct/CMakeLists.txt",
                    f"forms/torch/{op}_custom_binding.cpp"):
            assert rel in forms, rel
        assert data["tiling"]["blockDim"] >= 1
    assert (lib.path("0.2.0") / "CMakeLists.txt").is_file() and (lib.path("0.2.0") / "build_custom_ops.sh").is_file()
    assert "relu re-tuned" in (lib.path("0.2.0") / "CHANGELOG.md").read_text()


def test_diff_shows_the_retuned_op(library: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["library", "diff", str(library), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["old"], d["new"]) == ("0.1.0", "0.2.0")
    assert d["added"] == [] and d["removed"] == []
    assert [c["id"] for c in d["changed"]] == ["relu/Ascend910B2/fp32-4096x32768"]
    c = d["changed"][0]
    assert c["comparable"] and c["new_us"] < c["old_us"] and c["speedup"] > 1
    assert d["unchanged"] == ["add/Ascend910B2/fp32-4096x32768_4096x32768"]
    assert main(["library", "diff", f"{library}@0.1.0", f"{library}@0.2.0"]) == 0
    text = capsys.readouterr().out
    assert "changed  relu/Ascend910B2/fp32-4096x32768: modeled" in text and "1 changed, 1 unchanged" in text


@pytest.mark.parametrize("version", ["0.1.0", "0.2.0"])
def test_verify_passes(library: Path, version: str, capsys: pytest.CaptureFixture) -> None:
    assert main(["library", "verify", f"{library}@{version}"]) == 0
    out = capsys.readouterr().out
    assert out.count("PASS") == 2 and "verified" in out


def test_loader_matches_pytorch_away_from_the_tuned_shape(library: Path) -> None:
    lib = load(library, backend="emulator")
    assert sorted(lib.ops) == ["add", "relu"] and not lib.problems
    x = torch.randn(48, 1000)
    assert torch.equal(lib.relu(x), torch.relu(x))
    assert lib.relu.last.entry == "relu/Ascend910B2/fp32-4096x32768" and lib.relu.last.backend == "emulator"
    a, b = torch.randn(7, 333), torch.randn(7, 333)
    torch.testing.assert_close(lib["add"](a, b), a + b)
    assert lib.add.last.entry is not None
    y = lib.relu(torch.randn(2, 3, 4))  # rank 3: no entry fits, the reference answers
    assert lib.relu.last.entry is None and "ranks" in lib.relu.last.reason and y.shape == (2, 3, 4)
    h = torch.randn(8, 64).half()  # fp16: no fp16 entry
    torch.testing.assert_close(lib.relu(h), torch.relu(h))
    assert lib.relu.last.entry is None
    with pytest.raises(AttributeError, match="no op 'gelu'"):
        lib.gelu  # noqa: B018
    with pytest.raises(TypeError, match="takes 2 arguments"):
        lib.add(a)


def test_an_existing_or_older_version_is_refused(library: Path, runs: dict[str, Path]) -> None:
    before = sorted(p.name for p in (library / "versions").iterdir())
    with pytest.raises(LibraryError, match="never overwritten"):
        export([runs["add"]], library, "0.1.0")
    with pytest.raises(LibraryError, match="not newer"):
        export([runs["add"]], library, "0.1.5")
    with pytest.raises(LibraryError, match="semantic version"):
        export([runs["add"]], library, "1.0")
    assert main(["export", str(runs["add"]), "--library", str(library), "--version", "0.2.0"]) == 2
    assert sorted(p.name for p in (library / "versions").iterdir()) == before


def test_flipped_byte_is_reported(library: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    copy = tmp_path / "lib"
    shutil.copytree(library, copy)
    kernel = copy / "versions/0.2.0/entries/relu/Ascend910B2/fp32-4096x32768/forms/direct/relu_custom_kernel.cpp"
    data = bytearray(kernel.read_bytes())
    data[len(data) // 2] ^= 0x01
    kernel.write_bytes(bytes(data))
    assert main(["library", "verify", str(copy)]) == 1
    out = capsys.readouterr().out
    assert "FAIL relu/Ascend910B2/fp32-4096x32768" in out and "relu_custom_kernel.cpp differs" in out
    assert "PASS add/" in out and "VERIFY FAILED" in out
    # a hand-edited entry.json (a faster time written in) is caught by the manifest's hash
    ej = copy / "versions/0.2.0/entries/add/Ascend910B2/fp32-4096x32768_4096x32768/entry.json"
    ej.write_text(ej.read_text().replace('"kind": "modeled"', '"kind": "measured"'))
    report = verify(open_library(copy), rebuild=False)
    bad = {e.id: e.problems for e in report.entries if not e.ok}
    assert "entry.json differs from the manifest's hash" in " ".join(bad["add/Ascend910B2/fp32-4096x32768_4096x32768"])
    assert load(copy).problems  # the loader does not use the edited entry either


_KILLED_EXPORT = textwrap.dedent("""
    import sys, time
    from ascendcraft.library import export

    def hang(entry_id):
        print("WROTE", entry_id, flush=True)
        time.sleep(120)

    export(sys.argv[3:], sys.argv[1], sys.argv[2], after_entry=hang)
""")


def test_export_killed_mid_write_leaves_the_previous_version(library: Path, runs: dict[str, Path],
                                                             tmp_path: Path) -> None:
    copy = tmp_path / "lib"
    shutil.copytree(library, copy)
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_EXPORT, str(copy), "0.3.0", str(runs["add"])],
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        line = proc.stdout.readline()
        assert line.startswith("WROTE add/"), line
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert list(copy.glob(".tmp-0.3.0-*")), "the half-written version stays in its temporary folder"
    lib = open_library(copy)
    assert lib.versions == ("0.1.0", "0.2.0") and not (copy / "versions/0.3.0").exists()
    assert verify(lib, rebuild=False).ok
    x = torch.randn(4, 256)
    assert torch.equal(load(copy).relu(x), torch.relu(x))
    # a crash between the rename and the index leaves an unlisted folder: not a version
    orphan = copy / "versions/0.3.0"
    shutil.copytree(copy / "versions/0.2.0", orphan)
    assert open_library(copy).versions == ("0.1.0", "0.2.0")
    done = export([runs["add"]], copy, "0.3.0", message="after the crash")
    assert done.carried == ["relu/Ascend910B2/fp32-4096x32768"] and done.replaced == ["add/Ascend910B2/fp32-4096x32768_4096x32768"]
    assert not list(copy.glob(".tmp-*")), "the next export removes what the dead one left"
    assert open_library(copy).versions == ("0.1.0", "0.2.0", "0.3.0")
    assert open_library(copy).manifest("0.3.0")["message"] == "after the crash"


def test_runs_that_cannot_be_exported(tmp_path: Path, runs: dict[str, Path]) -> None:
    with pytest.raises(LibraryError, match="does not exist"):
        export([tmp_path / "nope"], tmp_path / "lib", "0.1.0")
    half = tmp_path / "half"
    shutil.copytree(runs["add"], half)
    (half / "summary.json").unlink()
    with pytest.raises(LibraryError, match="not a finished tuning run"):
        export([half], tmp_path / "lib", "0.1.0")
    with pytest.raises(LibraryError, match="both tuned relu"):
        export([runs["relu"], runs["relu2"]], tmp_path / "lib", "0.1.0")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "something").write_text("x")
    with pytest.raises(LibraryError, match="not a kernel library"):
        export([runs["add"]], tmp_path / "full", "0.1.0")
    assert not (tmp_path / "lib").exists() or not list((tmp_path / "lib").glob("versions/*"))


def test_library_cmake_configures_against_a_cann_stand_in(library: Path, tmp_path: Path) -> None:
    """The version's CMakeLists (every entry's direct project as its own target) configures with
    CMake; CANN's ascendc.cmake is replaced by a stand-in that records the kernel libraries."""
    if shutil.which("cmake") is None:
        pytest.skip("cmake not installed")
    cann = fake_cann_home(tmp_path / "cann")
    src = open_library(library).path("0.2.0")
    proc = subprocess.run(["cmake", "-S", str(src), "-B", str(tmp_path / "b"), f"-DASCEND_CANN_PACKAGE_PATH={cann}",
                           "-DACX_KERNEL_LIBRARY_TYPE=SHARED"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert sorted(recorded_kernels(tmp_path / "b")) == [
        ["acx_add__fp32_4096x32768_4096x32768", "SHARED", "add_custom_kernel.cpp"],
        ["acx_relu__fp32_4096x32768", "SHARED", "relu_custom_kernel.cpp"]]
    wrong = subprocess.run(["cmake", "-S", str(src), "-B", str(tmp_path / "c"), "-DSOC_VERSION=Ascend310P3",
                            f"-DASCEND_CANN_PACKAGE_PATH={cann}"], capture_output=True, text=True)
    assert wrong.returncode != 0 and "no kernels for Ascend310P3" in wrong.stderr


def test_build_dry_run_prints_the_commands(library: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["library", "build", str(library), "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("cmake -S ") and "-DSOC_VERSION=Ascend910B2" in out[0]
    assert out[1].startswith("cmake --build ")
    gens = [line for line in out if line.startswith("msopgen gen -i ")]
    assert len(gens) == 2 and all("-c ai_core-Ascend910B2 -lan cpp -out" in g for g in gens)
    assert sum(line.endswith("&& bash build.sh)") for line in out) == 2
    script = (open_library(library).path("0.2.0") / "build_custom_ops.sh").read_text()
    assert subprocess.run(["bash", "-n", "-c", script]).returncode == 0
    if shutil.which("msopgen") is None:
        assert main(["library", "build", str(library)]) == 2  # no CANN: refused, saying what is missing
