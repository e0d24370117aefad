"""``ascendcraft doctor``: what this machine offers ascendcraft, one line per part, and what is
used where something is missing (the C++ compiler, CANN, torch_npu, NPUs, Ray and its
address, the PostgreSQL study store, the LLM endpoint).

Nothing here imports torch, torch_npu or Ray: a broken install (torch_npu without CANN makes
``import torch`` fail) is what the doctor must be able to explain. Probes are quick: package
metadata, the environment, ``npu-smi``, a TCP connect with a short timeout.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import socket
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .backends.npu_env import NpuEnvironment, detect
from .version import MODEL_VERSION

PROBE_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Finding:
    """One part: ``ok`` when it is there and usable; ``found`` what is there; ``instead``
    what ascendcraft does without it (empty when nothing is missing)."""

    part: str
    ok: bool
    found: str
    instead: str = ""

    def line(self) -> str:
        mark = "ok  " if self.ok else "--  "
        return f"{mark}{self.part:<11} {self.found}" + (f" -> {self.instead}" if self.instead else "")

    def to_dict(self) -> dict[str, Any]:
        return {"part": self.part, "ok": self.ok, "found": self.found, "instead": self.instead}


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def compiler(env: Mapping[str, str]) -> Finding:
    cxx = env.get("CXX", "g++")
    path = shutil.which(cxx, path=env.get("PATH", ""))
    if path is None:
        return Finding("compiler", False, f"{cxx} not found on PATH",
                       "nothing can be built: the emulator needs a C++17 compiler (install g++)")
    try:
        first = subprocess.run([path, "--version"], capture_output=True, text=True,
                               timeout=10).stdout.splitlines()[0]
    except (OSError, subprocess.TimeoutExpired, IndexError):
        first = path
    return Finding("compiler", True, f"{first} (builds kernels for the CPU emulator)")


def cann(npu: NpuEnvironment) -> Finding:
    c = npu.cann
    missing = c.missing()
    if not missing:
        return Finding("CANN", True, f"{c.version or 'unknown version'} at ${c.variable} "
                       f"(bisheng, msopgen, ascendc.cmake, cmake found)")
    return Finding("CANN", False, "; ".join(missing),
                   "kernels are built with g++ against the AscendC emulator; `ascendcraft lower` "
                   "and `export` still write the CANN projects to build elsewhere")


def torch_npu(npu: NpuEnvironment) -> Finding:
    t = npu.torch_npu
    if t.breaks_torch(npu.cann):
        return Finding("torch_npu", False, f"BROKEN: {t.explain()}", "nothing runs until this is fixed")
    if t.installed:
        how = "" if t.autoloads else " (TORCH_DEVICE_BACKEND_AUTOLOAD=0: not loaded by `import torch`)"
        return Finding("torch_npu", True, f"{t.version or 'installed'}{how}")
    torch_version = _version("torch")
    return Finding("torch_npu", False, "not installed",
                   f"kernels run on the CPU through torch {torch_version or '(not installed)'} and the emulator")


def devices(npu: NpuEnvironment) -> Finding:
    d = npu.devices
    if d.chips:
        return Finding("devices", True, f"{len(d.chips)} NPU(s): {', '.join(d.chips)} "
                       "(--backend npu measures on them)")
    return Finding("devices", False, f"no NPU: {'; '.join(d.missing())}",
                   f"kernels run in the CPU emulator and every time is modeled by the SoC "
                   f"performance model {MODEL_VERSION} (emulator trace + SoC numbers), not measured")


def _reachable(host: str, port: int) -> str | None:
    """None when a TCP connection opens, else why not."""
    try:
        with socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S):
            return None
    except OSError as e:
        return str(e) or type(e).__name__


def ray(env: Mapping[str, str], address: str | None) -> Finding:
    version = _version("ray")
    if version is None:
        return Finding("Ray", False, "not installed", "trials run in local worker processes")
    address = address or env.get("RAY_ADDRESS")
    if not address or address == "auto":
        return Finding("Ray", True, f"{version}; no cluster address (RAY_ADDRESS unset)",
                       "a local Ray is started for --workers > 1")
    host, _, port = address.removeprefix("ray://").rpartition(":")
    why = _reachable(host, int(port)) if port.isdigit() and host else "not HOST:PORT"
    if why is None:
        return Finding("Ray", True, f"{version}; cluster at {address} answers")
    return Finding("Ray", False, f"{version}; cluster at {address} unreachable ({why})",
                   "tune fails to start until the address works; unset RAY_ADDRESS for a local Ray")


def postgres(storage: str | None) -> Finding:
    drivers = [d for d in ("psycopg", "psycopg2") if importlib.util.find_spec(d)]
    have = f"driver {', '.join(drivers)}" if drivers else "no PostgreSQL driver (pip install psycopg)"
    if not storage:
        return Finding("PostgreSQL", bool(drivers), f"no URL given ({have})",
                       "studies are SQLite files in each run directory; tune --storage "
                       "postgresql://USER@HOST/DB shares one between machines")
    parts = urlsplit(storage)
    if not parts.scheme.startswith("postgres"):
        return Finding("PostgreSQL", True, f"storage {parts.scheme}:// (not PostgreSQL)")
    where = f"{parts.hostname or 'localhost'}:{parts.port or 5432}"
    why = _reachable(parts.hostname or "127.0.0.1", parts.port or 5432)
    if why is None and drivers:
        return Finding("PostgreSQL", True, f"{where} answers ({have})")
    return Finding("PostgreSQL", False, f"{where}: {why or have}",
                   "tune with this --storage will refuse to start; without --storage studies are SQLite")


def llm(env: Mapping[str, str]) -> Finding:
    base, key = env.get("OPENAI_BASE_URL"), env.get("OPENAI_API_KEY")
    if not base and not key:
        return Finding("LLM", False, "no endpoint (OPENAI_BASE_URL and OPENAI_API_KEY unset)",
                       "the built-in offline proposer writes the candidates")
    if not base:
        return Finding("LLM", True, "the OpenAI API (OPENAI_API_KEY set, default base URL)")
    parts = urlsplit(base)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    why = _reachable(parts.hostname or "", port) if parts.hostname else "no host in the URL"
    if why is None:
        return Finding("LLM", True, f"endpoint {parts.scheme}://{parts.hostname}:{port} answers")
    return Finding("LLM", False, f"endpoint {parts.scheme}://{parts.hostname}:{port} unreachable ({why})",
                   "the built-in offline proposer writes the candidates")


def diagnose(env: Mapping[str, str] | None = None, *, storage: str | None = None,
             ray_address: str | None = None) -> list[Finding]:
    """Every finding, in a fixed order."""
    env = os.environ if env is None else env
    npu = detect(env)
    return [compiler(env), cann(npu), torch_npu(npu), devices(npu), ray(env, ray_address),
            postgres(storage), llm(env)]


def backend_in_use(findings: list[Finding]) -> str:
    """The one sentence that ends the report: where kernels run and what their times are."""
    ok = {f.part: f.ok for f in findings}
    if ok.get("CANN") and ok.get("torch_npu") and ok.get("devices"):
        return "backend: npu available (--backend npu: built with CANN, times measured with NPU events)"
    return ("backend: emulator (no usable NPU here) — correctness is checked in the CPU emulator of the "
            "AscendC API and times are modeled, never measured")
