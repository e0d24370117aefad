"""Compile an AscendC kernel translation unit against the emulator headers into a shared
library, with a content-addressed on-disk cache that is safe under concurrent builds.

Why a cache: the tuner evaluates many trials of one candidate; tiling values are runtime
data, so every trial of a candidate reuses one build.

Why a prebuilt runtime: a kernel's own code is a fraction of its translation unit. The
emulator's fixed runtime (crash handler, fibers, the run loop: ``RunKernel`` in
``acx_runtime.h``) is compiled once per header version into an object every kernel links,
and the headers are parsed once into a precompiled header: a cold kernel compile then costs
about 0.6x the CPU time of a header-only one (``benchmarks/build_cold.py``). Both are
keyed like kernels (headers, flags, compiler) and published atomically; if they cannot be
built (or ``$ASCENDCRAFT_PREBUILT_RUNTIME=0``) kernels build header-only, as before.

The compiler runs confined (``_confine.py``): in its own process group that is killed whole
on timeout, on an exception (e.g. Ctrl-C) and when the calling process dies, under CPU-time,
address-space and file-size limits, with its temporary files inside the build directory.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from ascendcraft.emulator import _confine

INCLUDE_DIR = Path(__file__).resolve().parent / "include"
DEFAULT_FLAGS: tuple[str, ...] = ("-std=c++17", "-O1", "-shared", "-fPIC")
PREBUILT_ENV = "ASCENDCRAFT_PREBUILT_RUNTIME"
"""``0`` builds every kernel header-only (no prebuilt runtime object, no precompiled header)."""
PREBUILT_DEFINE = "-DACX_RUNTIME_PREBUILT"
RUNTIME_TIMEOUT_S = 300.0
_BUILD_VERSION = "1"  # bump to invalidate every cached build
_SUPERVISOR = Path(__file__).resolve().parent / "_confine.py"
COMPILER_AS_BYTES = 4 << 30
"""Address-space limit of each compiler process (g++, cc1plus, as, ld): 4 GiB. A generated
source needing more fails with the compiler's 'out of memory' message instead of swapping."""
COMPILER_FSIZE_BYTES = 1 << 30
"""Largest file a compiler process may write (its assembly, object and library): 1 GiB."""


class BuildError(RuntimeError):
    """The kernel source did not compile; ``args[0]`` holds the first compiler errors."""

    def __init__(self, message: str, log: str = "", timed_out: bool = False) -> None:
        super().__init__(message)
        self.log = log
        self.timed_out = timed_out  # stopped by its time limit, not by an error in the source


class ToolchainError(RuntimeError):
    """No usable C++ compiler on this machine."""


def cache_root() -> Path:
    """Root of the build cache: ``$ASCENDCRAFT_CACHE`` or ``~/.cache/ascendcraft``."""
    env = os.environ.get("ASCENDCRAFT_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "ascendcraft"


def find_compiler() -> str:
    """Path of the C++ compiler (``$CXX`` or ``g++``), or raise ToolchainError saying what to install."""
    cxx = os.environ.get("CXX", "g++")
    path = shutil.which(cxx)
    if path is None:
        raise ToolchainError(
            f"C++ compiler {cxx!r} not found: the AscendC emulator needs g++ >= 9 with C++17 "
            "(Debian/Ubuntu: apt-get install g++; Fedora: dnf install gcc-c++; or set CXX)"
        )
    return path


def _header_digest() -> str:
    h = hashlib.sha256()
    for p in sorted(INCLUDE_DIR.glob("*.h")):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def build_key(sources: Mapping[str, str], main: str, flags: Iterable[str]) -> str:
    """Cache key: hash of all sources, the emulator headers, the flags and the compiler."""
    h = hashlib.sha256()
    h.update(_BUILD_VERSION.encode())
    h.update(main.encode() + b"\0")
    for name in sorted(sources):
        h.update(name.encode() + b"\0" + sources[name].encode() + b"\0")
    h.update(_header_digest().encode())
    h.update("\0".join(flags).encode())
    h.update(os.environ.get("CXX", "g++").encode())
    return h.hexdigest()[:24]


def _first_errors(log: str, max_lines: int = 12) -> str:
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if "error" in line:
            return "\n".join(lines[i : i + max_lines])
    return "\n".join(lines[:max_lines])


def build_kernel(
    sources: Mapping[str, str], main: str, *, extra_flags: Iterable[str] = (), timeout_s: float = 300
) -> Path:
    """Build ``sources[main]`` (other entries are headers it includes) into a cached ``.so``.

    Returns the path of the shared library. Raises BuildError with the first compiler errors
    or ToolchainError when no compiler is installed.
    """
    if main not in sources:
        raise ValueError(f"main source {main!r} is not in sources")
    for name in sources:
        if os.path.isabs(name) or ".." in Path(name).parts:
            raise ValueError(f"source name must be a relative path inside the build dir: {name!r}")
    base_flags = (*DEFAULT_FLAGS, *extra_flags)
    root = cache_root() / "emulator"
    prebuilt = os.environ.get(PREBUILT_ENV, "1") != "0"
    flags = (*base_flags, PREBUILT_DEFINE) if prebuilt else base_flags
    key = build_key(sources, main, flags)
    out = root / key / "kernel.so"
    if out.exists():
        return out
    root.mkdir(parents=True, exist_ok=True)
    cxx = find_compiler()
    runtime = _prebuilt_runtime(root, cxx, flags) if prebuilt else None
    if prebuilt and runtime is None:  # could not be built: this kernel builds header-only
        flags = base_flags
        key = build_key(sources, main, flags)
        out = root / key / "kernel.so"
        if out.exists():
            return out
    pre_inc, post_inputs = _runtime_args(runtime)
    lock_path = root / f"{key}.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if out.exists():
                return out
            out.parent.mkdir(parents=True, exist_ok=True)
            _remove_stale_build_dirs(root, key)
            with tempfile.TemporaryDirectory(dir=root, prefix=f".{key}.") as tmp:
                tmpdir = Path(tmp)
                for name, text in sources.items():
                    p = tmpdir / name
                    p.parent.mkdir(parents=True, exist_ok=True)
                    p.write_text(text)
                so_tmp = tmpdir / "kernel.so"
                cmd = [cxx, *flags, *pre_inc, f"-I{INCLUDE_DIR}", f"-I{tmpdir}", str(tmpdir / main), *post_inputs,
                       "-o", str(so_tmp)]
                t0 = time.perf_counter()
                rc, log = _compile(cmd, tmpdir, timeout_s)
                log = log.replace(str(tmpdir) + "/", "")
                if rc != 0:
                    raise BuildError(f"compilation of {main} failed{_exit_reason(rc)}:\n{_first_errors(log)}", log,
                                     timed_out=rc == 128 + signal.SIGXCPU)
                # keep the sources next to the library for debugging
                for name in sources:
                    dst = out.parent / "src" / name
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(tmpdir / name, dst)
                seconds = time.perf_counter() - t0
                (out.parent / "build_seconds.txt").write_text(f"{seconds:.3f}\n")
                _log_compile(key, main, seconds)
                os.replace(so_tmp, out)  # atomic publish
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return out


RUNTIME_OBJECT = "acx_runtime.o"
PCH_NAME = "kernel_operator.h.gch"  # found before include/kernel_operator.h: its -I comes first


def _runtime_args(runtime: Path | None) -> tuple[list[str], list[str]]:
    """(include flags before the emulator's, inputs after the kernel source) for a build."""
    if runtime is None:
        return [], []
    pre = [f"-I{runtime}"] if (runtime / PCH_NAME).exists() else []
    return pre, [str(runtime / RUNTIME_OBJECT)]


_runtime_failed: set[str] = set()  # runtime keys that failed to build in this process


def _prebuilt_runtime(root: Path, cxx: str, flags: tuple[str, ...]) -> Path | None:
    """The directory holding the prebuilt runtime object (and, when the compiler made one,
    the precompiled header) for these kernel flags, built on first use; None if it cannot be
    built. Published by renaming a finished directory, under its own lock."""
    h = hashlib.sha256()
    for part in (_BUILD_VERSION, _header_digest(), str(INCLUDE_DIR), "\0".join(flags), cxx):
        h.update(part.encode() + b"\0")
    rkey = "runtime-" + h.hexdigest()[:24]
    final = root / rkey
    if (final / RUNTIME_OBJECT).exists():
        return final
    if rkey in _runtime_failed:
        return None
    with open(root / f"{rkey}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if (final / RUNTIME_OBJECT).exists():
                return final
            _remove_stale_build_dirs(root, rkey)
            with tempfile.TemporaryDirectory(dir=root, prefix=f".{rkey}.") as tmp:
                tmpdir = Path(tmp)
                impl = tmpdir / "acx_runtime.cpp"
                impl.write_text('#define ACX_RUNTIME_IMPL\n#include "kernel_operator.h"\n')
                obj_flags = [f for f in flags if f not in ("-shared", PREBUILT_DEFINE)]
                t0 = time.perf_counter()
                rc, log = _compile([cxx, *obj_flags, "-c", f"-I{INCLUDE_DIR}", str(impl), "-o",
                                    str(tmpdir / RUNTIME_OBJECT)], tmpdir, RUNTIME_TIMEOUT_S)
                if rc != 0:
                    _runtime_failed.add(rkey)
                    return None
                (tmpdir / "build_seconds.txt").write_text(f"{time.perf_counter() - t0:.3f}\n")
                _log_compile(rkey, RUNTIME_OBJECT, time.perf_counter() - t0)
                pch_dir = tmpdir / "pch"
                pch_dir.mkdir()
                t0 = time.perf_counter()
                rc, _ = _compile([cxx, *flags, "-x", "c++-header", str(INCLUDE_DIR / "kernel_operator.h"), "-o",
                                  str(pch_dir / PCH_NAME)], pch_dir, RUNTIME_TIMEOUT_S)
                if rc == 0:  # no precompiled header: kernels parse the headers themselves
                    os.replace(pch_dir / PCH_NAME, tmpdir / PCH_NAME)
                    _log_compile(rkey, PCH_NAME, time.perf_counter() - t0)
                shutil.rmtree(pch_dir, ignore_errors=True)
                os.replace(tmpdir, final)  # atomic publish (the directory is new: nobody else holds the lock)
                os.mkdir(tmpdir)  # for TemporaryDirectory's cleanup
        except BuildError:  # the runtime's compiler timed out
            _runtime_failed.add(rkey)
            return None
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return final


BUILD_LOG_ENV = "ASCENDCRAFT_BUILD_LOG"
"""If set, a file each compile (a cache miss) appends one tab-separated line to: key, main
source, compile seconds, the current pytest test (or '-'). For measuring where cold-cache
time goes (``benchmarks/build_cold.py``, the suite's compile count); off by default."""


def _log_compile(key: str, main: str, seconds: float) -> None:
    path = os.environ.get(BUILD_LOG_ENV)
    if not path:
        return
    test = os.environ.get("PYTEST_CURRENT_TEST", "-").rsplit(" (", 1)[0]
    with open(path, "a") as f:  # one short write per line: appends from many processes interleave whole
        f.write(f"{key}\t{main}\t{seconds:.3f}\t{test}\n")


def _compile(cmd: list[str], tmpdir: Path, timeout_s: float) -> tuple[int, str]:
    """Run the compiler under the supervisor; returns (exit code, stderr). The supervisor
    leads a new process group, killed whole on timeout or on any exception here."""
    sup = [sys.executable, "-I", str(_SUPERVISOR), "--parent", str(os.getpid()),
           "--cpu", f"{timeout_s + 5:g}", "--as", str(COMPILER_AS_BYTES),
           "--fsize", str(COMPILER_FSIZE_BYTES), "--", *cmd]
    env = {**os.environ, "TMPDIR": str(tmpdir)}  # g++'s own temporaries die with the build dir
    proc = subprocess.Popen(sup, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace", env=env,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _confine.kill_group(proc.pid)
        proc.communicate()
        raise BuildError(f"compiler timed out after {timeout_s:g} s (compiler processes killed)",
                         timed_out=True) from None
    except BaseException:
        _confine.kill_group(proc.pid)
        proc.communicate()
        raise
    return proc.returncode, err + out


def _exit_reason(rc: int) -> str:
    """Why the compiler stopped, when a limit (not a source error) stopped it."""
    if rc > 128:
        try:
            name = signal.Signals(rc - 128).name
        except ValueError:
            return f" (killed by signal {rc - 128})"
        hint = {"SIGXCPU": "CPU-time limit", "SIGXFSZ": "file-size limit",
                "SIGKILL": "killed", "SIGSEGV": "compiler crash, possibly out of memory"}.get(name, "")
        return f" ({name}{': ' + hint if hint else ''})"
    return ""


def _remove_stale_build_dirs(root: Path, key: str) -> None:
    """Temporary build dirs left by killed builds: this key's (we hold its lock) and any
    other key's whose lock nobody holds."""
    for p in root.glob(".*.*"):
        other = p.name[1:].split(".", 1)[0]
        if not p.is_dir():
            continue
        if other == key:
            shutil.rmtree(p, ignore_errors=True)
            continue
        try:
            with open(root / f"{other}.lock", "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                shutil.rmtree(p, ignore_errors=True)
                fcntl.flock(lock, fcntl.LOCK_UN)
        except OSError:  # being built right now (or the lock cannot be opened): leave it
            continue


def entry_glue(kernel_name: str, n_gm: int) -> str:
    """The ``acx_run`` export for a kernel entry taking ``n_gm`` GM_ADDR arguments
    (inputs, outputs, workspace, tiling - in that order)."""
    args = ", ".join(f"(GM_ADDR)gm[{i}]" for i in range(n_gm))
    return (
        'extern "C" int acx_run(void** gm, const uint64_t* gm_bytes, int n_gm, const AcxRunOptions* opt, '
        "char* err, int errlen) {\n"
        f"    if (n_gm != {n_gm}) {{ snprintf(err, errlen, \"acx_run: {kernel_name} takes {n_gm} GM buffers, got %d\", n_gm); return 1; }}\n"
        "    return acx::Run(gm, gm_bytes, n_gm, opt, err, errlen,\n"
        f"                    [&] {{ {kernel_name}({args}); }});\n"
        "}\n"
    )
