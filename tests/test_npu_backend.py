"""The npu backend without an NPU: what it detects, what it refuses, the exact build commands,
its timing loop, and the projects it builds configuring with CMake.

There is no CANN, torch_npu or NPU here. CANN installs and ``npu-smi`` are stood in by files
in a temporary folder (detection reads only files, the environment and ``npu-smi``'s output);
a torch_npu that cannot load (its import raises, as the real one does without CANN) shows that
``import torch`` itself then fails, that ascendcraft detects it without importing torch, and
what it says. Running on an NPU is skipped with that reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from ascendcraft.dsl.kernel import lower
from ascendcraft.search.builtin import propose
from ascendcraft.search.space import Candidate

from ascendcraft.app.objective import KernelObjective
from ascendcraft.backends import BackendUnavailable, get_backend
from ascendcraft.backends.factory import backend_resources
from ascendcraft.backends.npu import plan_build, unavailable_reason
from ascendcraft.backends.npu_build import custom_op_commands
from ascendcraft.backends.npu_env import cann_version, detect, find_cann, parse_npu_smi
from ascendcraft.backends.npu_timing import MeasureTimeout, TimingPolicy, measure, needs_l2_flush
from ascendcraft.cli import main
from ascendcraft.tasks.registry import get_task
from tests.cann_standin import fake_cann_home, recorded_kernels

NPU_SMI_M = """\
        NPU ID                         Chip ID                        Chip Logic ID                  Chip Name
        0                              0                              0                              Ascend 910B2
        0                              1                              -                              Mcu
        1                              0                              1                              Ascend 910B2
"""

NPU_SMI_INFO = """\
+------------------------------------------------------------------------------------------------+
| npu-smi 23.0.6                   Version: 23.0.6                                               |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     310P3               | OK            | 15.6        49                0    / 0             |
| 0                         | 0000:82:00.0  | 0           1445 / 21527                           |
+===========================+===============+====================================================+
"""


def _fake_cann(root: Path, *, with_tools: bool = True) -> Path:
    home = fake_cann_home(root / "ascend-toolkit" / "latest")
    (home / "version.cfg").write_text("toolkit_running_version=[8.0.RC3.10:8.0.RC3]\n")
    if with_tools:
        for rel in ("compiler/ccec_compiler/bin/bisheng", "python/site-packages/bin/msopgen"):
            (home / rel).parent.mkdir(parents=True, exist_ok=True)
            (home / rel).write_text("#!/bin/sh\n")
            (home / rel).chmod(0o755)
    return home


def _fake_npu_smi(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    smi = folder / "npu-smi"
    body = text.replace("'", "")
    smi.write_text(f"#!/bin/sh\nif [ \"$2\" = \"-m\" ]; then cat <<'EOF'\n{body}EOF\nelse exit 3; fi\n")
    smi.chmod(0o755)
    return folder


def test_this_machine_has_no_npu_and_the_backend_says_what_is_missing() -> None:
    with pytest.raises(BackendUnavailable) as e:
        get_backend("npu")
    msg = str(e.value)
    assert "ASCEND_HOME_PATH" in msg and "ASCEND_TOOLKIT_HOME" in msg
    assert "torch_npu (not installed" in msg and "an Ascend NPU" in msg and "--backend emulator" in msg


def test_backend_npu_on_the_command_line_fails_at_once(capsys: pytest.CaptureFixture) -> None:
    assert main(["check", "--op", "relu", "--backend", "npu"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--backend npu: the npu backend is not available" in err
    assert main(["tune", "--op", "relu", "--backend", "npu", "--budget", "1"]) == 2
    assert "the CANN toolkit" in capsys.readouterr().err


def test_detection_reads_the_toolkit_and_npu_smi(tmp_path: Path) -> None:
    home = _fake_cann(tmp_path)
    smi = _fake_npu_smi(tmp_path / "bin", NPU_SMI_M)
    env = {"ASCEND_TOOLKIT_HOME": str(home), "PATH": f"{smi}:{os.environ['PATH']}"}
    found = detect(env)
    assert found.cann.present and found.cann.variable == "ASCEND_TOOLKIT_HOME"
    assert found.cann.version == "8.0.RC3" and found.cann.cmake_module.name == "ascendc_kernel_cmake"
    assert found.devices.chips == ("Ascend910B2", "Ascend910B2") and found.devices.soc == "Ascend910B2"
    assert found.missing() == ["torch_npu (not installed; `pip install torch_npu` matching torch and CANN)"]
    assert "torch_npu" in unavailable_reason(found)
    bare = find_cann({"ASCEND_HOME_PATH": str(_fake_cann(tmp_path / "b", with_tools=False)), "PATH": "/nonexistent"})
    assert [m.split(" (")[0] for m in bare.missing()] == ["the bisheng compiler", "msopgen", "cmake"]
    assert find_cann({"ASCEND_HOME_PATH": str(tmp_path / "nope")}).missing()[0].endswith("which is not a directory)")


def test_npu_smi_tables() -> None:
    assert parse_npu_smi(NPU_SMI_M) == ("Ascend910B2", "Ascend910B2")
    assert parse_npu_smi(NPU_SMI_INFO) == ("Ascend310P3",)
    assert parse_npu_smi("command not found") == ()


def test_cann_version_files(tmp_path: Path) -> None:
    (tmp_path / "compiler").mkdir()
    (tmp_path / "compiler" / "version.info").write_text("Version=7.0.0\nsomething=else\n")
    assert cann_version(tmp_path) == "7.0.0"
    assert cann_version(tmp_path / "missing") is None


CLI = "import sys; from ascendcraft.cli import main; sys.exit(main(sys.argv[1:]))"
_BROKEN_TORCH_NPU = 'raise ImportError("libascendcl.so: cannot open shared object file")\n'


def test_torch_npu_without_cann_breaks_import_torch_and_is_explained(tmp_path: Path) -> None:
    (tmp_path / "torch_npu").mkdir()
    (tmp_path / "torch_npu" / "__init__.py").write_text(_BROKEN_TORCH_NPU)
    meta = tmp_path / "torch_npu-2.5.1.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: torch_npu\nVersion: 2.5.1\n")
    (meta / "entry_points.txt").write_text("[torch.backends]\ntorch_npu = torch_npu:_autoload\n")
    env = {k: v for k, v in os.environ.items() if k not in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME",
                                                              "TORCH_DEVICE_BACKEND_AUTOLOAD")}
    env["PYTHONPATH"] = str(tmp_path)
    broken = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True, text=True)
    assert broken.returncode != 0 and "torch_npu" in broken.stderr  # the problem is real
    doctor = subprocess.run([sys.executable, "-c", CLI, "doctor"], env=env, capture_output=True, text=True)
    assert doctor.returncode == 0, doctor.stderr
    line = next(x for x in doctor.stdout.splitlines() if "torch_npu" in x.split()[1])
    assert "BROKEN" in line and "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in line and "pip uninstall torch_npu" in line
    ops = subprocess.run([sys.executable, "-c", CLI, "ops"], env=env, capture_output=True, text=True)
    assert ops.returncode == 2 and "Traceback" not in ops.stderr and "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in ops.stderr
    fixed = subprocess.run([sys.executable, "-c", "import torch"], env={**env, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
                           capture_output=True, text=True)
    assert fixed.returncode == 0, fixed.stderr  # the way out the message names works


def test_timing_loop_repeats_until_the_minimum_time_and_flushes() -> None:
    times = iter([5.0] * 10 + [100.0, 1.0, 3.0] * 1000)
    flushes = []
    m = measure(lambda: next(times), flush=lambda: flushes.append(1),
                policy=TimingPolicy(warmup=10, min_reps=3, max_reps=500, min_total_s=0.0005))
    s = m.summary()
    assert len(flushes) == 10 + s["reps"]  # before every warm-up run and every timed run
    assert s["reps"] >= 3 and sum(m.samples_us) >= 500 and s["median_us"] == 3.0 and s["l2_flush"]
    assert s["spread_us"] > 0 and s["min_us"] == 1.0 and s["max_us"] == 100.0
    capped = measure(lambda: 0.001, policy=TimingPolicy(warmup=0, min_reps=1, max_reps=7, min_total_s=1.0))
    assert capped.summary()["reps"] == 7 and not capped.l2_flushed
    with pytest.raises(ValueError, match="device time"):
        measure(lambda: float("nan"), policy=TimingPolicy(warmup=0, min_reps=1, max_reps=1))
    with pytest.raises(ValueError):
        TimingPolicy(min_reps=5, max_reps=2)
    assert needs_l2_flush(8 << 20, 192 << 20) and not needs_l2_flush(1 << 30, 192 << 20)


class _Clock:
    """A wall clock the fake runs advance (each run "takes" ``step`` seconds)."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        return self.now

    def run(self) -> float:
        self.now += self.step
        return 10.0


def test_timing_loop_stops_at_the_trial_time_limit() -> None:
    policy = TimingPolicy(warmup=2, min_reps=20, max_reps=2000, min_total_s=0.2)
    clock = _Clock(step=1.0)  # each run takes 1 s of wall time; the limit is 5.5 s
    m = measure(clock.run, policy=policy, timeout_s=5.5, clock=clock)
    assert m.summary()["reps"] == 4  # 2 warm-up runs, then runs until 5.5 s had passed
    assert clock.now == 6.0
    slow = _Clock(step=30.0)  # a warm-up run alone takes past the limit: no measurement
    with pytest.raises(MeasureTimeout, match="exceeded 10s in the warm-up runs"):
        measure(slow.run, policy=policy, timeout_s=10.0, clock=slow)
    once = _Clock(step=30.0)  # no warm-up: the first run is kept even past the limit
    one = measure(once.run, policy=TimingPolicy(warmup=0, min_reps=20), timeout_s=10.0, clock=once)
    assert one.summary()["reps"] == 1
    free = _Clock(step=1.0)  # no limit: the policy alone decides
    assert measure(free.run, policy=TimingPolicy(warmup=0, min_reps=20, min_total_s=0.0), clock=free).summary()["reps"] == 20


def test_npu_trials_ask_the_cluster_for_a_device_without_one_here() -> None:
    assert backend_resources("npu") == {"NPU": 1.0} and backend_resources("emulator") == {}
    with pytest.raises(ValueError, match="unknown backend"):
        backend_resources("tpu")
    cand = Candidate("relu/tiles", "")
    objective = KernelObjective(ref=None, soc="Ascend910B2", backend="npu")  # type: ignore[arg-type]
    # asked on a driver with no NPU (this machine): answered from the class, no backend made
    assert objective.resources(cand, {}) == {"NPU": 1.0}
    assert KernelObjective(ref=None, soc="Ascend910B2").resources(cand, {}) == {}  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def relu_kernel():
    return lower(propose(get_task("relu"))[0].source, name="relu/tiles")


def test_build_commands_are_exact(relu_kernel, tmp_path: Path) -> None:
    folder, cmds = plan_build(relu_kernel, "Ascend910B2", "/opt/cann", tmp_path)
    assert folder.parent == tmp_path and folder.name.startswith("relu_custom-")
    assert [c.argv for c in cmds] == [
        ("cmake", "-S", str(folder / "src/direct"), "-B", str(folder / "build"), "-DSOC_VERSION=Ascend910B2",
         "-DASCEND_CANN_PACKAGE_PATH=/opt/cann", "-DACX_KERNEL_LIBRARY_TYPE=SHARED", "-DCMAKE_BUILD_TYPE=Release"),
        ("cmake", "--build", str(folder / "build"), "--target", "kernels", "-j")]
    assert plan_build(relu_kernel, "Ascend910B2", "/opt/cann", tmp_path)[0] == folder  # keyed by content
    assert plan_build(relu_kernel, "Ascend910B3", "/opt/cann", tmp_path)[0] != folder
    gen, cp, build = custom_op_commands("forms/cann", "relu_custom.json", "proj", "Ascend910B2")
    assert gen.shell() == "msopgen gen -i forms/cann/relu_custom.json -c ai_core-Ascend910B2 -lan cpp -out proj"
    assert cp.argv == ("cp", "-r", "forms/cann/op_host", "forms/cann/op_kernel", "proj")
    assert build.shell() == "(cd proj && bash build.sh)"


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")
def test_direct_project_configures_with_cmake(relu_kernel, tmp_path: Path) -> None:
    """The project the backend builds, configured by CMake with CANN's ascendc.cmake stood in."""
    home = _fake_cann(tmp_path)
    folder, cmds = plan_build(relu_kernel, "Ascend910B2", home, tmp_path / "work")
    for rel, text in relu_kernel.render("Ascend910B2").items():
        (folder / "src" / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / "src" / rel).write_text(text)
    proc = subprocess.run(list(cmds[0].argv), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert recorded_kernels(folder / "build") == [["kernels", "SHARED", "relu_custom_kernel.cpp"]]
    no_cann = subprocess.run([*cmds[0].argv[:5], "-DASCEND_CANN_PACKAGE_PATH=/nonexistent", "-B", str(tmp_path / "x")],
                             capture_output=True, text=True)
    assert no_cann.returncode != 0 and "is CANN installed?" in no_cann.stderr


def _has_npu() -> bool:
    try:
        get_backend("npu")
    except BackendUnavailable:
        return False
    return True


@pytest.mark.skipif(not _has_npu(), reason="needs an Ascend NPU with CANN and torch_npu (none here)")
def test_relu_on_the_npu_matches_pytorch_and_is_measured(relu_kernel) -> None:
    from ascendcraft.backends import TilingArgs

    be = get_backend("npu")
    art = be.build(relu_kernel)
    x = torch.randn(64, 4096)
    values = {**relu_kernel.program.defaults(), **relu_kernel.params}
    res = be.run(art, [x], [((64, 4096), torch.float32)], tiling=TilingArgs(values), timeout_s=120)
    assert res.ok and torch.equal(res.outputs[0], torch.relu(x))
    t = be.time(art, [((64, 4096), torch.float32)], [((64, 4096), torch.float32)], tiling=TilingArgs(values),
                timeout_s=120)
    assert t.kind == "measured" and t.us > 0 and t.fields["reps"] >= 20
