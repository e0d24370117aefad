"""The npu backend: kernels built with CANN, run on an Ascend NPU through torch_npu, timed
with NPU events (so every time it gives is ``measured``).

Build: the direct-launch form (``Kernel.render``'s ``direct/``) is configured and built with
CANN's CMake (``ascendc_library``, bisheng) as a shared library exporting one
``aclrtlaunch_<launch>`` function per launch; the host tiling is the same plain C++ function
the emulator and the CANN TilingFunc call, compiled for the host (the emulator build of the
kernel exports it as ``acx_tiling``). Run: the inputs are moved to the NPU, the outputs and
workspaces allocated there, each launch called on torch_npu's current stream with its tiling
bytes on the device, and the outputs copied back. Time: warm-up, then repetitions until a
minimum device time, each bracketed by NPU events, with L2 flushed between runs when the
working set is small (:mod:`.npu_timing`).

Nothing here imports torch_npu until a kernel is run on this backend, and the backend refuses
to be made (``BackendUnavailable``, listing exactly what is missing) on a machine without
CANN, torch_npu or an NPU.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

import torch

from ascendcraft.dsl.kernel import Kernel
from ascendcraft.emulator.build import BuildError, ToolchainError, build_kernel
from ascendcraft.emulator.runner import compute_tiling
from ascendcraft.soc import Soc, load_soc
from ascendcraft.status import Status

from .base import (
    Artifact,
    BackendError,
    BackendUnavailable,
    RunOutcome,
    TensorSpec,
    TilingArgs,
    Timing,
)
from .gm_plan import GmPlan
from .npu_build import Command, direct_commands
from .npu_env import NpuEnvironment, detect
from .npu_timing import Measurement, MeasureTimeout, TimingPolicy, measure, needs_l2_flush

KIND = "measured"
BUILD_TIMEOUT_S = 1800.0


def unavailable_reason(env: NpuEnvironment) -> str | None:
    """Why the npu backend cannot work with ``env`` (None: it can)."""
    missing = env.missing()
    if env.torch_npu.breaks_torch(env.cann):
        missing.append(env.torch_npu.explain())
    if not missing:
        return None
    return ("the npu backend is not available on this machine; missing: " + "; ".join(missing)
            + ". Use --backend emulator (the CPU emulator with the modeled SoC) instead")


def build_dir(root: Path, kernel: Kernel, soc: str) -> Path:
    """Where one kernel's CANN build goes: keyed by the hash of its rendered sources."""
    h = hashlib.sha256(soc.encode())
    for rel, text in sorted(kernel.render(soc).items()):
        h.update(rel.encode() + b"\0" + text.encode() + b"\0")
    return root / f"{kernel.op}-{h.hexdigest()[:16]}"


def write_forms(kernel: Kernel, soc: str, folder: Path) -> None:
    for rel, text in kernel.render(soc).items():
        path = folder / "src" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def plan_build(kernel: Kernel, soc: str, cann_home: str | Path, root: Path) -> tuple[Path, list[Command]]:
    """(build folder, the exact commands) that build ``kernel``'s direct-launch library."""
    folder = build_dir(root, kernel, soc)
    return folder, direct_commands(folder / "src" / "direct", folder / "build", soc, cann_home)


class NpuBackend:
    """Build with CANN, run and time on the NPU of one SoC."""

    name = "npu"
    #: a trial holds one device while it runs (the cluster schedules NPU trials on the nodes
    #: that have one, no more at a time than they have)
    trial_resources: Mapping[str, float] = MappingProxyType({"NPU": 1.0})

    def __init__(self, soc: Soc | str | None = None, *, env: Mapping[str, str] | None = None,
                 work_dir: Path | None = None, policy: TimingPolicy | None = None) -> None:
        self.env = detect(env)
        why = unavailable_reason(self.env)
        if why is not None:
            raise BackendUnavailable(why)
        device = self.env.devices.soc
        self.soc = load_soc(soc or device)
        if device is not None and self.soc.name != device:
            raise BackendUnavailable(f"the NPU here is {device}, not {self.soc.name}: tune with --soc {device}")
        self.cann_home = str(self.env.cann.home)
        self.work = work_dir or Path(os.environ.get("ASCENDCRAFT_CACHE", Path.home() / ".cache" / "ascendcraft")) / "npu"
        self.policy = policy or TimingPolicy()
        self._libs: dict[str, ctypes.CDLL] = {}

    # ------------------------------------------------------------------ build
    def build(self, kernel: Kernel) -> Artifact:
        folder, commands = plan_build(kernel, self.soc.name, self.cann_home, self.work)
        lib = _find_library(folder / "build")
        if lib is None:
            write_forms(kernel, self.soc.name, folder)
            for cmd in commands:
                _run_step(cmd, folder)
            lib = _find_library(folder / "build")
            if lib is None:
                raise BackendError(Status.BUILD_ERROR, f"CANN build in {folder} produced no libkernels.so")
        try:  # the host tiling: the same plain C++ function, compiled for the host
            hosts = tuple(build_kernel(*kernel.emulator_sources(la)) for la in kernel.launches)
        except (BuildError, ToolchainError) as e:
            raise BackendError(Status.BUILD_ERROR, f"host tiling: {e}") from e
        return Artifact(kernel, self.name, folder.name, (lib, *hosts))

    # ------------------------------------------------------------------ run
    def run(self, artifact: Artifact, inputs: Sequence[torch.Tensor], outputs: Sequence[TensorSpec],
            *, tiling: TilingArgs, timeout_s: float) -> RunOutcome:
        t0 = time.perf_counter()
        torch_npu = _torch_npu()
        bufs = self._buffers(artifact, [t.to("npu") for t in inputs],
                             [torch.empty(s, dtype=d, device="npu") for s, d in outputs], tiling)
        for step in bufs["launches"]:
            step()
        torch_npu.npu.synchronize()
        return RunOutcome(Status.OK, "", [bufs["named"][p.name].cpu() for p in artifact.kernel.program.outputs],
                          time.perf_counter() - t0)

    def time(self, artifact: Artifact, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec],
             *, tiling: TilingArgs, timeout_s: float) -> Timing:
        torch_npu = _torch_npu()
        ins = [torch.randn(s, device="npu").to(d) if d.is_floating_point else torch.zeros(s, dtype=d, device="npu")
               for s, d in inputs]
        outs = [torch.empty(s, dtype=d, device="npu") for s, d in outputs]
        bufs = self._buffers(artifact, ins, outs, tiling)
        working = sum(t.numel() * t.element_size() for t in (*ins, *outs))
        l2 = int(self.soc.l2_mib * 2**20)
        scratch = torch.empty(2 * l2, dtype=torch.uint8, device="npu") if needs_l2_flush(working, l2) else None

        def once() -> float:
            start, end = torch_npu.npu.Event(enable_timing=True), torch_npu.npu.Event(enable_timing=True)
            start.record()
            for step in bufs["launches"]:
                step()
            end.record()
            end.synchronize()
            return float(start.elapsed_time(end)) * 1000.0  # ms -> us

        try:
            m: Measurement = measure(once, flush=None if scratch is None else scratch.zero_,
                                     policy=self.policy, timeout_s=timeout_s)
        except MeasureTimeout as e:
            raise BackendError(Status.TIMEOUT, f"timing run: {e}") from e
        return Timing(KIND, m.median_us, {"device": self.soc.name, **m.summary(),
                                          "working_set_bytes": working})

    def _buffers(self, artifact: Artifact, ins: list[torch.Tensor], outs: list[torch.Tensor],
                 tiling: TilingArgs) -> dict[str, Any]:
        """Device buffers by DSL name and one callable per launch (tiling on the device)."""
        torch_npu = _torch_npu()
        k = artifact.kernel
        gm = GmPlan(k, [(tuple(t.shape), t.dtype) for t in ins], [(tuple(t.shape), t.dtype) for t in outs],
                    tiling, self.soc)
        named = {p.name: t for p, t in zip(k.program.inputs, ins, strict=True)}
        named.update({p.name: t for p, t in zip(k.program.outputs, outs, strict=True)})
        named.update({w.name: torch.zeros(n, dtype=torch.uint8, device="npu") for w, n, _ in gm.workspaces})
        lib = self._lib(artifact.files[0])
        steps = []
        for launch, host in zip(k.launches, artifact.files[1:], strict=True):
            res = compute_tiling(host, gm.request(launch))
            if not res.ok:
                raise BackendError(Status.CHECK_ERROR, f"{gm.where(launch)}tiling: {res.message}")
            tiling_dev = torch.frombuffer(bytearray(res.tiling), dtype=torch.uint8).to("npu")
            ws = torch.zeros(max(1, res.workspace_bytes), dtype=torch.uint8, device="npu")
            fn = getattr(lib, f"aclrtlaunch_{launch.name}")
            fn.restype = ctypes.c_uint32
            ptrs = [ctypes.c_void_p(named[a].data_ptr()) for a in launch.gm_args]
            block = ctypes.c_uint32(res.block_dim)

            def step(fn=fn, block=block, ptrs=ptrs, ws=ws, tiling_dev=tiling_dev, name=launch.name) -> None:
                stream = ctypes.c_void_p(torch_npu.npu.current_stream().npu_stream)
                rc = fn(block, stream, *ptrs, ctypes.c_void_p(ws.data_ptr()), ctypes.c_void_p(tiling_dev.data_ptr()))
                if rc != 0:
                    raise BackendError(Status.CRASH, f"aclrtlaunch_{name} returned {rc}")
            steps.append(step)
        return {"named": named, "launches": steps}

    def _lib(self, path: Path) -> ctypes.CDLL:
        key = str(path)
        if key not in self._libs:
            self._libs[key] = ctypes.CDLL(key)
        return self._libs[key]


def _find_library(build: Path) -> Path | None:
    found = sorted(build.rglob("libkernels.so")) if build.is_dir() else []
    return found[0] if found else None


def _run_step(cmd: Command, folder: Path) -> None:
    try:
        proc = subprocess.run(list(cmd.argv), cwd=cmd.cwd, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise BackendError(Status.BUILD_ERROR, f"`{cmd.shell()}` failed: {e}") from e
    if proc.returncode != 0:
        log = folder / "build.log"
        log.write_text(proc.stdout + proc.stderr)
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-15:]
        raise BackendError(Status.BUILD_ERROR, f"`{cmd.shell()}` exited {proc.returncode} (log {log}): "
                           + " | ".join(tail))


def _torch_npu() -> Any:
    """torch_npu, imported only when a kernel runs on the NPU."""
    import torch_npu  # noqa: F401 - registers the npu device with torch

    return torch_npu
