"""What this machine has for running kernels on an Ascend NPU, found without importing torch or
torch_npu.

torch (2.5 and later) imports every package registered under the ``torch.backends`` entry
point when it is itself imported, unless ``TORCH_DEVICE_BACKEND_AUTOLOAD=0``; torch_npu
registers itself there, and its import fails when the CANN libraries are absent. So a machine
with torch_npu but without CANN cannot ``import torch`` at all. Everything here reads package
metadata, the environment, the file system and ``npu-smi``, so it works on such a machine and
can say what is wrong.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

#: where CANN's ``set_env.sh`` points (the toolkit root): the first of these that is set
CANN_ENV_VARS = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME")
#: where CANN ships ascendc.cmake (the CMake module defining ``ascendc_library``)
ASCENDC_CMAKE_DIRS = ("compiler/tikcpp/ascendc_kernel_cmake", "tools/tikcpp/ascendc_kernel_cmake")
NPU_SMI_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class CannInstall:
    """The CANN toolkit this process would use. ``home`` is None when no variable names one."""

    home: Path | None
    variable: str | None  # which environment variable named it
    version: str | None
    bisheng: str | None  # the AscendC compiler
    msopgen: str | None  # the custom-op project generator
    cmake_module: Path | None  # the folder of ascendc.cmake
    cmake: str | None  # CMake itself (not part of CANN, needed by both builds)

    @property
    def present(self) -> bool:
        return self.home is not None and self.home.is_dir()

    def missing(self) -> list[str]:
        """What the direct-launch and custom-op builds need and this install lacks."""
        if self.home is None:
            return [f"the CANN toolkit (neither ${CANN_ENV_VARS[0]} nor ${CANN_ENV_VARS[1]} is set; "
                    "source the toolkit's set_env.sh)"]
        if not self.home.is_dir():
            return [f"the CANN toolkit (${self.variable} names {self.home}, which is not a directory)"]
        out = []
        if self.cmake_module is None:
            out.append(f"ascendc.cmake (none of {', '.join(ASCENDC_CMAKE_DIRS)} under ${self.variable})")
        if self.bisheng is None:
            out.append("the bisheng compiler (not on PATH nor under the toolkit's compiler/ccec_compiler/bin)")
        if self.msopgen is None:
            out.append("msopgen (not on PATH nor under the toolkit's python/site-packages/bin)")
        if self.cmake is None:
            out.append("cmake (not on PATH)")
        return out


@dataclass(frozen=True)
class TorchNpu:
    """torch_npu as installed (not imported): version, whether torch would import it on
    ``import torch`` (the ``torch.backends`` entry point, unless autoloading is off)."""

    installed: bool
    version: str | None
    autoloads: bool

    def breaks_torch(self, cann: CannInstall) -> bool:
        """True when ``import torch`` would import torch_npu and that import would fail for
        want of CANN."""
        return self.installed and self.autoloads and not cann.present

    def explain(self) -> str:
        """What is wrong and the two ways out (one paragraph)."""
        return ("torch_npu " + (self.version or "") + " is installed but the CANN toolkit is not "
                "(no $ASCEND_HOME_PATH / $ASCEND_TOOLKIT_HOME): torch imports torch_npu on `import "
                "torch` (its device-backend autoload), torch_npu then fails to load the CANN "
                "libraries, and so `import torch` itself fails. Either set "
                "TORCH_DEVICE_BACKEND_AUTOLOAD=0 (torch then skips torch_npu; ascendcraft runs on "
                "the emulator), or `pip uninstall torch_npu` on a machine without an NPU, or source "
                "CANN's set_env.sh where CANN is installed")


@dataclass(frozen=True)
class Devices:
    """The NPUs ``npu-smi`` reports (chip names normalised to SoC names, e.g. Ascend910B2),
    and the device files the driver creates."""

    npu_smi: str | None  # path of npu-smi, None when not installed
    chips: tuple[str, ...] = ()
    device_files: tuple[str, ...] = ()
    error: str = ""

    @property
    def soc(self) -> str | None:
        """The SoC of the first chip, when every chip is the same SoC."""
        names = set(self.chips)
        return self.chips[0] if len(names) == 1 else None

    def missing(self) -> list[str]:
        if self.chips:
            return []
        if self.npu_smi is None and not self.device_files:
            return ["an Ascend NPU (no npu-smi on PATH and no /dev/davinci* device)"]
        why = f": {self.error}" if self.error else ""
        return [f"an Ascend NPU (npu-smi reports no chip{why})"]


@dataclass(frozen=True)
class NpuEnvironment:
    """Everything the npu backend needs, as found on this machine."""

    cann: CannInstall
    torch_npu: TorchNpu
    devices: Devices
    notes: list[str] = field(default_factory=list)

    def missing(self) -> list[str]:
        """Exactly what is missing for ``--backend npu``, one item each (empty: all there)."""
        out = list(self.cann.missing())
        if not self.torch_npu.installed:
            out.append("torch_npu (not installed; `pip install torch_npu` matching torch and CANN)")
        out += self.devices.missing()
        return out


def find_cann(env: Mapping[str, str] | None = None) -> CannInstall:
    """The CANN toolkit named by ``$ASCEND_HOME_PATH`` (or ``$ASCEND_TOOLKIT_HOME``)."""
    env = os.environ if env is None else env
    variable = next((v for v in CANN_ENV_VARS if env.get(v)), None)
    path_dirs = env.get("PATH", "")
    cmake = shutil.which("cmake", path=path_dirs)
    if variable is None:
        return CannInstall(None, None, None, None, None, None, cmake)
    home = Path(env[variable])
    module = next((home / d for d in ASCENDC_CMAKE_DIRS if (home / d / "ascendc.cmake").is_file()), None)
    bisheng = shutil.which("bisheng", path=path_dirs) or _file(home / "compiler/ccec_compiler/bin/bisheng")
    msopgen = shutil.which("msopgen", path=path_dirs) or _file(home / "python/site-packages/bin/msopgen")
    return CannInstall(home, variable, cann_version(home), bisheng, msopgen, module, cmake)


def _file(path: Path) -> str | None:
    return str(path) if path.is_file() else None


def cann_version(home: Path) -> str | None:
    """The toolkit version: ``version.cfg``'s ``toolkit_running_version=[<build>:<release>]``
    (the release part), else ``compiler/version.info``'s ``Version=``."""
    cfg = _read(home / "version.cfg")
    m = re.search(r"toolkit_running_version\s*=\s*\[([^\]]*)\]", cfg or "")
    if m:
        return m.group(1).split(":")[-1].strip() or None
    info = _read(home / "compiler" / "version.info") or _read(home / "version.info")
    m = re.search(r"^\s*Version\s*=\s*(\S+)", info or "", re.MULTILINE)
    return m.group(1) if m else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return None


def find_torch_npu(env: Mapping[str, str] | None = None) -> TorchNpu:
    """torch_npu from its spec and metadata, never imported."""
    env = os.environ if env is None else env
    try:
        installed = importlib.util.find_spec("torch_npu") is not None
    except (ImportError, ValueError):
        installed = False
    try:
        version: str | None = importlib.metadata.version("torch_npu")
    except importlib.metadata.PackageNotFoundError:
        version = None
    installed = installed or version is not None
    registered = any(ep.value.split(":")[0].split(".")[0] == "torch_npu"
                     for ep in importlib.metadata.entry_points(group="torch.backends"))
    autoload_on = env.get("TORCH_DEVICE_BACKEND_AUTOLOAD", "1") == "1"
    return TorchNpu(installed, version, installed and registered and autoload_on)


def find_devices(env: Mapping[str, str] | None = None, timeout_s: float = NPU_SMI_TIMEOUT_S) -> Devices:
    """NPUs from ``npu-smi info -m`` (the chip-name table), else ``npu-smi info``."""
    env = os.environ if env is None else env
    files = tuple(sorted(str(p) for p in Path("/dev").glob("davinci[0-9]*")))
    smi = shutil.which("npu-smi", path=env.get("PATH", ""))
    if smi is None:
        return Devices(None, (), files)
    error = ""
    for args in (["info", "-m"], ["info"]):
        try:
            proc = subprocess.run([smi, *args], capture_output=True, text=True, timeout=timeout_s)
        except (OSError, subprocess.TimeoutExpired) as e:
            error = f"`npu-smi {' '.join(args)}` failed: {e}"
            continue
        chips = parse_npu_smi(proc.stdout)
        if chips:
            return Devices(smi, chips, files)
        error = (proc.stderr or proc.stdout).strip().splitlines()[0][:200] if (proc.stderr or proc.stdout).strip() \
            else f"`npu-smi {' '.join(args)}` exited {proc.returncode} with no chip listed"
    return Devices(smi, (), files, error)


_CHIP = re.compile(r"\bAscend\s*([0-9]{3}[A-Z][0-9A-Z_]*)|\|\s*\d+\s+([0-9]{3}[A-Z][0-9A-Z_]*)\s")


def parse_npu_smi(text: str) -> tuple[str, ...]:
    """SoC names (``Ascend910B2``) of the chips in ``npu-smi info -m`` output ("Chip Name"
    column, e.g. ``Ascend 910B2``; ``Mcu`` rows are not chips) or in the device rows of
    ``npu-smi info`` (``| 0     910B2  | OK ...``)."""
    out = []
    for line in text.splitlines():
        m = _CHIP.search(line)
        if m:
            out.append("Ascend" + (m.group(1) or m.group(2)))
    return tuple(out)


def detect(env: Mapping[str, str] | None = None) -> NpuEnvironment:
    """The whole picture, for the npu backend and ``ascendcraft doctor``."""
    return NpuEnvironment(find_cann(env), find_torch_npu(env), find_devices(env))


def npu_missing(env: Mapping[str, str] | None = None) -> list[str]:
    """What this machine lacks for running kernels on an Ascend NPU (empty: nothing)."""
    return detect(env).missing()
