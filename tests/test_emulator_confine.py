"""The emulator and the compiler are confined: time, memory and file-size limits hold, a
runaway trace is stopped by its cap, and nothing (no process, no scratch file) outlives a
run or the process that asked for it - including one killed with SIGKILL mid-timing."""

from __future__ import annotations

import os
import shutil
import signal
import struct
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from ascendcraft.emulator import BuildError, build_kernel, run_kernel, rundir
from ascendcraft.emulator._server import AS_MARGIN, SUMMARY_AS_FACTOR
from ascendcraft.emulator.build import COMPILER_AS_BYTES, entry_glue
from ascendcraft.emulator.runner import DEFAULT_MAX_SUMMARY_RECORDS


def _shell_signals() -> None:
    """Run in a caller's child before exec: the signal state a caller started from a shell
    has (default dispositions, nothing blocked), whatever the test process inherited or
    changed (pytest-xdist workers, Ray, earlier tests in the same worker)."""
    sigs = (signal.SIGINT, signal.SIGHUP, signal.SIGTERM)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, sigs)
    for sig in sigs:
        signal.signal(sig, signal.SIG_DFL)


pytestmark = [
    pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed to build emulator kernels"),
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="walks /proc (Linux)"),
]

REPO = Path(__file__).resolve().parents[1]

CONFINE_SRC = r"""
#include <sys/types.h>
#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void confine(GM_ADDR z, GM_ADDR ws, GM_ADDR tiling) {
    uint32_t mode = *(const uint32_t*)tiling;
    const char* path = (const char*)tiling + 8;
    GlobalTensor<int32_t> zg;
    zg.SetGlobalBuffer((__gm__ int32_t*)z, 8);
    TPipe pipe;
    TBuf<TPosition::VECCALC> tb;
    pipe.InitBuffer(tb, 1024);
    LocalTensor<float> t = tb.Get<float>();
    switch (mode) {
        case 1: { volatile uint64_t i = 0; while (true) i = i + 1; }       // never ends
        case 2: { while (true) Duplicate(t, 1.0f, 64); }                    // endless trace
        case 3: {                                                           // leaves a process behind
            pid_t p = fork();
            if (p == 0) { for (;;) pause(); }
            zg.SetValue(0, (int32_t)p);
            break;
        }
        case 4: {                                                           // writes a 64 MiB file
            FILE* f = std::fopen(path, "wb");
            if (!f) acx::Fail("fopen failed: %s", std::strerror(errno));
            static char chunk[1 << 16];
            size_t done = 0;
            for (int i = 0; i < 1024; i++) {
                if (std::fwrite(chunk, 1, sizeof chunk, f) != sizeof chunk || std::fflush(f) != 0) {
                    int e = errno;
                    std::fclose(f);
                    acx::Fail("fwrite failed after %zu bytes: %s", done, std::strerror(e));
                }
                done += sizeof chunk;
            }
            std::fclose(f);
            break;
        }
        case 5: {                                                           // asks for 8 GiB
            size_t n = (size_t)8 << 30;
            char* p = new char[n];
            std::memset(p, 1, n);
            zg.SetValue(0, p[12345]);
            delete[] p;
            break;
        }
        case 6: { std::printf("kernel says hello\n"); break; }
        case 7: { for (int i = 0; i < 100000; i++) std::printf("a flood of kernel output, line %d\n", i); break; }
        default: break;
    }
}
""" + entry_glue("confine", 3)


@pytest.fixture(scope="module")
def confine_so():
    return build_kernel({"confine.cpp": CONFINE_SRC}, "confine.cpp")


def _tiling(mode: int, path: str = "") -> bytes:
    return struct.pack("<II", mode, 0) + path.encode() + b"\0"


def _run(so, mode: int, path: str = "", **kw):
    kw.setdefault("timeout_s", 20)
    return run_kernel(so, [], outputs=[(8, np.int32)], tiling=_tiling(mode, path), block_dim=1, **kw)


# ------------------------------------------------------------------ /proc helpers
def _stat(pid: int) -> tuple[str, int, int, int, int] | None:
    """(state, ppid, pgid, sid, start time) of a live process, None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            f = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return f[0], int(f[1]), int(f[2]), int(f[3]), int(f[19])


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _all_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _living(pid: int, start: int | None = None) -> bool:
    st = _stat(pid)
    return st is not None and st[0] not in ("Z", "X") and (start is None or st[4] == start)


def _descendants(root: int) -> dict[int, tuple[int, int]]:
    """pid -> (start time, process group) of every live descendant of ``root``."""
    kids: dict[int, list[int]] = {}
    for pid in _all_pids():
        st = _stat(pid)
        if st is not None:
            kids.setdefault(st[1], []).append(pid)
    out, todo = {}, [root]
    while todo:
        for c in kids.get(todo.pop(), []):
            st = _stat(c)
            if st is not None and st[0] not in ("Z", "X"):
                out[c] = (st[4], st[2])
                todo.append(c)
    return out


def _server_children() -> set[int]:
    srv = _server_pid()
    return {p for p in _all_pids() if (st := _stat(p)) is not None and st[1] == srv and st[0] != "Z"}


def _server_pid() -> int:
    from ascendcraft.emulator import runner

    assert runner._server_obj is not None
    return runner._server_obj.proc.pid


def _wait_until(cond, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for: {what}")
        time.sleep(0.05)


def _long_running_child(caller: int, age_s: float) -> bool:
    """Has the caller's fork server had one emulator child (grandchild of the caller) for
    at least ``age_s`` seconds?"""
    tick = os.sysconf("SC_CLK_TCK")
    with open("/proc/uptime") as fh:
        now = float(fh.read().split()[0])
    tree = _descendants(caller)
    servers = {p for p in tree if (st := _stat(p)) is not None and st[1] == caller
               and "_server.py" in _cmdline(p)}
    return any(st[1] in servers and now - st[4] / tick >= age_s
               for p in tree if (st := _stat(p)) is not None)


def _survivors(caller: int, tree: dict[int, tuple[int, int]]) -> list[str]:
    """Processes of a dead caller that are still alive: its recorded tree, anything in its
    session or in the process groups of the tree, anything started for it (``--parent <pid>``)."""
    groups = {caller} | {pgid for _, pgid in tree.values()}
    found = [f"{p} {_cmdline(p)[:80]}" for p, (start, _) in tree.items() if _living(p, start)]
    for pid in _all_pids():
        st = _stat(pid)
        if st is None or st[0] in ("Z", "X") or pid in tree:
            continue
        if st[3] == caller or st[2] in groups or f"--parent {caller} " in _cmdline(pid) + " ":
            found.append(f"{pid} {_cmdline(pid)[:80]}")
    return found


def _scratch_of(pid: int, roots: list[Path]) -> list[Path]:
    return [p for r in roots if r.is_dir() for p in r.iterdir() if p.name.startswith(f"acx-{pid}-")]


# ------------------------------------------------------------------ kernel runs
def test_endless_kernel_is_killed_at_its_limits_and_nothing_survives(confine_so):
    seen: dict[int, str] = {}
    done = threading.Event()

    def watch() -> None:  # the running child's limits, last read before it ends
        while not done.is_set():
            for pid in _server_children():
                try:
                    seen[pid] = Path(f"/proc/{pid}/limits").read_text()
                except OSError:
                    pass
            time.sleep(0.02)

    _run(confine_so, 0)  # make sure the server is up before watching its children
    w = threading.Thread(target=watch)
    w.start()
    try:
        r = _run(confine_so, 1, timeout_s=1.5)
    finally:
        done.set()
        w.join()
    assert r.status == "timeout" and "timeout after 1.5 s (child killed)" in r.message
    assert seen, "never saw the emulator child"
    (pid, limits), = seen.items()
    rows = {ln[:26].strip(): ln[26:].split() for ln in limits.splitlines()[1:]}
    assert rows["Max cpu time"][:2] == ["3", "4"]  # timeout + 1 s, then SIGKILL a second later
    fsize = int(rows["Max file size"][0])
    assert fsize == int(rows["Max file size"][1]) and fsize < 8 << 30  # trace cap + 1 MiB
    as_bytes = int(rows["Max address space"][0])
    summary = SUMMARY_AS_FACTOR * 64 * DEFAULT_MAX_SUMMARY_RECORDS  # the trace summary at its cap
    assert AS_MARGIN + summary < as_bytes < AS_MARGIN + summary + (256 << 20)  # + what one core needs
    assert rows["Max core file size"][0] == "0"
    _wait_until(lambda: not _living(pid), 2, "the killed child to disappear")
    assert not _server_children()


def test_processes_a_kernel_starts_are_killed_with_its_group(confine_so):
    r = _run(confine_so, 3)
    assert r.ok, r.message
    grandchild = int(r.outputs[0][0])
    assert grandchild > 0
    _wait_until(lambda: not _living(grandchild), 2, f"the kernel's forked process {grandchild} to die")


def test_file_size_limit_applies_to_the_child(confine_so, tmp_path):
    target = tmp_path / "big.bin"
    r = _run(confine_so, 4, str(target), trace=False)  # no trace: the child may write 1 MiB
    assert r.status == "error" and "File too large" in r.message
    r = _run(confine_so, 4, str(target))  # the default trace lives in memory: 1 MiB too
    assert r.status == "error" and "fwrite failed after" in r.message and "File too large" in r.message
    assert target.stat().st_size <= 1 << 20
    r = _run(confine_so, 4, str(target), max_trace_records=2 << 20, trace="records")  # 128 MiB of trace allowed
    assert r.ok, r.message
    assert target.stat().st_size == 64 << 20


def test_address_space_limit_turns_a_huge_allocation_into_an_error(confine_so):
    r = _run(confine_so, 5)
    assert r.status == "error"
    assert "bad_alloc" in r.message and "address-space limit of this run" in r.message


def test_kernel_output_reaches_stderr_and_is_capped(confine_so):
    from ascendcraft.emulator._server import OUTPUT_CAP

    script = textwrap.dedent(f"""
        import struct, numpy as np
        from ascendcraft.emulator import run_kernel
        for mode in (6, 7):
            r = run_kernel({str(confine_so)!r}, [], outputs=[(8, np.int32)],
                           tiling=struct.pack("<II", mode, 0), block_dim=1)
            assert r.ok, r.message
        print("done")
    """)
    p = subprocess.run([sys.executable, "-c", script], preexec_fn=_shell_signals, capture_output=True, text=True, timeout=60)
    tail = f"{len(p.stderr)} B of stderr, ending {p.stderr[-300:]!r}"
    assert p.returncode == 0 and p.stdout == "done\n", tail
    assert p.stderr.startswith("kernel says hello\n"), tail  # flushed before the child exits
    assert f"[emulator: kernel output truncated after {OUTPUT_CAP >> 10} KiB]" in p.stderr, tail
    assert OUTPUT_CAP < len(p.stderr) < OUTPUT_CAP + 1024, tail  # 3.4 MB printed, 64 KiB passed on


# ------------------------------------------------------------------ trace cap
def test_runaway_trace_is_stopped_by_the_cap(confine_so):
    dirs = rundir.run_dirs()
    t0 = time.perf_counter()
    r = _run(confine_so, 2, trace_only=True, max_trace_records=100_000, timeout_s=30, trace="records")
    assert r.status == "trace_limit" and not r.ok and r.trace is None
    assert "trace limit: the trace exceeded 100000 records (6400000 B)" in r.message
    assert "ASCENDCRAFT_MAX_TRACE_RECORDS" in r.message
    assert time.perf_counter() - t0 < 10  # stopped at the cap, not at the time limit
    assert r.stats["records_written"] == 100_000
    assert list(dirs.tmp.iterdir()) == [] and list(dirs.shm.iterdir()) == []
    # the in-memory summary (the default trace) is capped the same way: what it holds
    # (1/16 record per repeated call) reaches the cap after 16x the calls
    r = _run(confine_so, 2, trace_only=True, max_trace_records=100_000, timeout_s=30)
    assert r.status == "trace_limit" and r.trace is None
    assert "trace limit: the trace exceeded 100000 records (6400000 B)" in r.message
    assert 1_500_000 < r.stats["records_written"] < 1_700_000
    assert list(dirs.tmp.iterdir()) == [] and list(dirs.shm.iterdir()) == []


def test_trace_cap_defaults_and_overrides(monkeypatch, tmp_path):
    from ascendcraft.emulator.runner import (
        DEFAULT_MAX_TRACE_BYTES,
        DEFAULT_MAX_TRACE_RECORDS,
        trace_cap,
    )

    monkeypatch.delenv("ASCENDCRAFT_MAX_TRACE_RECORDS", raising=False)
    monkeypatch.delenv("ASCENDCRAFT_MAX_TRACE_BYTES", raising=False)
    assert trace_cap() == min(DEFAULT_MAX_TRACE_RECORDS, DEFAULT_MAX_TRACE_BYTES // 64)
    assert trace_cap(max_trace_records=10) == 10
    assert trace_cap(max_trace_bytes=6400) == 100
    monkeypatch.setenv("ASCENDCRAFT_MAX_TRACE_RECORDS", "1234")
    assert trace_cap() == 1234
    monkeypatch.setenv("ASCENDCRAFT_MAX_TRACE_BYTES", "640")
    assert trace_cap() == 10
    st = os.statvfs(tmp_path)
    half_free = st.f_bavail * st.f_frsize // 2 // 64
    # other processes write to the same disk between the two readings: within 64 MiB of free space
    assert trace_cap(max_trace_records=1 << 62, max_trace_bytes=1 << 62, trace_dir=tmp_path) == \
        pytest.approx(half_free, abs=(64 << 20) // 2 // 64)
    with pytest.raises(ValueError, match="max_trace_records must be >= 1"):
        trace_cap(max_trace_records=0)
    monkeypatch.setenv("ASCENDCRAFT_MAX_TRACE_RECORDS", "lots")
    with pytest.raises(ValueError, match="ASCENDCRAFT_MAX_TRACE_RECORDS must be a positive integer"):
        trace_cap()


def test_env_cap_reaches_the_run(confine_so, monkeypatch):
    monkeypatch.setenv("ASCENDCRAFT_MAX_TRACE_RECORDS", "5000")
    r = _run(confine_so, 2, trace_only=True)
    assert r.status == "trace_limit" and "exceeded 5000 records" in r.message


# ------------------------------------------------------------------ compiler
SLOW_SRC = textwrap.dedent("""
    // constant evaluation of ~10^10 steps: minutes of compiler time
    constexpr unsigned long long spin(unsigned long long n) {
        unsigned long long s = 0;
        for (unsigned long long i = 0; i < n; ++i)
            for (unsigned long long j = 0; j < 200000; ++j) s += i ^ j;
        return s;
    }
    constexpr unsigned long long v = spin(50000);
    extern "C" unsigned long long slow_value() { return v; }
""")
#: without a higher constexpr budget g++ 12 stops SLOW_SRC at its default 2^25 operations (an
#: error after ~2.9 s on an idle machine, which raced the 3 s timeout test), not minutes in
SLOW_FLAGS = ("-fconstexpr-ops-limit=2147483647",)


def _compiler_procs(marker: str) -> list[int]:
    """Live processes working on the source named ``marker`` (not the test's own scripts)."""
    return [p for p in _all_pids() if marker in _cmdline(p) and _living(p)
            and not _cmdline(p).startswith(sys.executable + " -c ")]


def _cc1plus_running(marker: str) -> bool:
    return any(_comm(p) == "cc1plus" for p in _compiler_procs(marker))


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def test_compile_timeout_kills_the_whole_compiler(tmp_path, monkeypatch):
    monkeypatch.setenv("ASCENDCRAFT_CACHE", str(tmp_path / "cache"))
    marker = f"slow_{uuid.uuid4().hex[:12]}"
    seen: dict[int, str] = {}

    def watch() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and "cc1plus" not in seen.values():
            for p in _compiler_procs(marker):
                seen[p] = _comm(p)
                if seen[p] == "cc1plus":
                    try:
                        seen[-1] = Path(f"/proc/{p}/limits").read_text()
                    except OSError:
                        pass
            time.sleep(0.02)

    w = threading.Thread(target=watch)
    w.start()
    with pytest.raises(BuildError, match=r"compiler timed out after 3 s \(compiler processes killed\)"):
        build_kernel({f"{marker}.cpp": SLOW_SRC}, f"{marker}.cpp", timeout_s=3, extra_flags=SLOW_FLAGS)
    w.join()
    assert "cc1plus" in seen.values(), f"cc1plus never ran: {seen}"
    limits = {ln[:26].strip(): ln[26:].split() for ln in seen.get(-1, "").splitlines()[1:]}
    assert limits["Max address space"][0] == str(COMPILER_AS_BYTES)
    assert limits["Max cpu time"][0] == "8"  # timeout + 5 s
    assert _compiler_procs(marker) == []  # no g++, cc1plus or supervisor left, at once
    leftovers = [p for p in (tmp_path / "cache" / "emulator").iterdir() if p.name.startswith(".")]
    assert leftovers == []


def test_a_build_removes_temporary_dirs_of_killed_builds(tmp_path, monkeypatch):
    monkeypatch.setenv("ASCENDCRAFT_CACHE", str(tmp_path))
    root = tmp_path / "emulator"
    stale = root / ".0123456789abcdef01234567.x1y2z3"  # what a SIGKILLed build leaves
    (stale / "sub").mkdir(parents=True)
    (root / "0123456789abcdef01234567.lock").touch()
    build_kernel({"tiny.cpp": 'extern "C" int tiny() { return 1; }\n'}, "tiny.cpp")
    assert not stale.exists()


def test_compiler_dies_with_its_caller(tmp_path):
    marker = f"slow_{uuid.uuid4().hex[:12]}"
    script = textwrap.dedent(f"""
        from ascendcraft.emulator import build_kernel
        build_kernel({{"{marker}.cpp": {SLOW_SRC!r}}}, "{marker}.cpp", timeout_s=300, extra_flags={SLOW_FLAGS!r})
    """)
    env = {**os.environ, "ASCENDCRAFT_CACHE": str(tmp_path / "cache")}
    caller = subprocess.Popen([sys.executable, "-c", script], preexec_fn=_shell_signals, env=env, start_new_session=True)
    try:
        _wait_until(lambda: _cc1plus_running(marker), 30, "cc1plus")
        caller.kill()
        caller.wait()
        _wait_until(lambda: not _compiler_procs(marker), 5, "g++ and cc1plus to die with their caller")
    finally:
        caller.kill()
        for p in _compiler_procs(marker):
            os.kill(p, signal.SIGKILL)


def test_ctrl_c_during_a_compile_kills_the_compiler(tmp_path):
    marker = f"slow_{uuid.uuid4().hex[:12]}"
    script = textwrap.dedent(f"""
        from ascendcraft.emulator import build_kernel
        try:
            build_kernel({{"{marker}.cpp": {SLOW_SRC!r}}}, "{marker}.cpp", timeout_s=300, extra_flags={SLOW_FLAGS!r})
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            import time; time.sleep(30)  # still alive: the compiler must be gone already
    """)
    env = {**os.environ, "ASCENDCRAFT_CACHE": str(tmp_path / "cache")}
    caller = subprocess.Popen([sys.executable, "-c", script], preexec_fn=_shell_signals, env=env, stdout=subprocess.PIPE, text=True)
    try:
        _wait_until(lambda: _cc1plus_running(marker), 30, "cc1plus")
        caller.send_signal(signal.SIGINT)
        assert caller.stdout.readline() == "interrupted\n"
        assert _compiler_procs(marker) == []
    finally:
        caller.kill()
        caller.wait()
        for p in _compiler_procs(marker):
            os.kill(p, signal.SIGKILL)


def test_ctrl_c_during_a_run_kills_the_child_and_the_next_run_is_clean(confine_so, tmp_path):
    script = textwrap.dedent(f"""
        import os, signal, struct, threading, numpy as np
        from ascendcraft.emulator import run_kernel, rundir
        def run(mode, timeout_s=60):
            return run_kernel({str(confine_so)!r}, [], outputs=[(8, np.int32)],
                              tiling=struct.pack("<II", mode, 0), block_dim=1, timeout_s=timeout_s)
        threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
        try:
            run(1)
        except KeyboardInterrupt:
            pass
        d = rundir.current()
        assert not any(d.shm.iterdir()) and not any(d.tmp.iterdir())
        r = run(3)  # a fresh server answers this run, not the interrupted one
        assert r.ok and r.outputs[0][0] > 0, (r.status, r.message)
        print("clean")
    """)
    p = subprocess.run([sys.executable, "-c", script], preexec_fn=_shell_signals, capture_output=True, text=True, timeout=60,
                       env={**os.environ, "TMPDIR": str(tmp_path)})
    assert p.returncode == 0 and p.stdout == "clean\n", p.stderr[-2000:]
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ caller killed
CHECK = "import sys; from ascendcraft.cli import main; sys.exit(main())"


def test_check_killed_mid_timing_leaves_no_process_and_no_file(tmp_path):
    """SIGKILL `ascendcraft check` while its trace-only timing run traces.

    Guarantee: within a few seconds of the caller's death its fork server (which notices
    through the parent-death signal, stdin EOF and a parent poll) has killed the emulator
    child and removed the caller's run directories; nothing of it is left. The trace
    never touches $TMPDIR (it is summarised in the child's memory).
    The corpus's bf16 add, timed at four times its file's shape (2^33 elements, --shape: only
    the trace-only timing run sees it, nothing is allocated at that size; its emulator child
    traces every tile, about 3 s on an idle machine, where the file's own 2^31 elements took
    0.29 s and the check sometimes ended before the child was 0.3 s old); an emulator child
    alive for 0.3 s is that run, the correctness runs at reduced shapes take milliseconds.
    A registry op at its default shape no longer traces for a second on an idle machine."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    env.pop("ASCENDCRAFT_MAX_TRACE_RECORDS", None)
    env.pop("ASCENDCRAFT_MAX_TRACE_BYTES", None)
    env["ASCENDCRAFT_FULL_SIM"] = "1"  # the parent simulates every record too: a longer run
    task = Path(__file__).parent / "taskfiles" / "corpus" / "big_add_8gib_bf16.py"
    cli = subprocess.Popen([sys.executable, "-c", CHECK, "check", "--task", str(task), "--shape", "262144x32768"],
                           preexec_fn=_shell_signals, env=env,
                           cwd=tmp_path, start_new_session=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
    roots = [tmp, rundir.shm_root()]
    tree: dict[int, int] = {}
    try:
        def tracing() -> bool:
            assert cli.poll() is None, f"check ended before timing: {cli.stderr.read().decode()[-2000:]}"
            assert not [t for d in _scratch_of(cli.pid, [tmp]) for t in d.iterdir()], "a file in $TMPDIR"
            return _long_running_child(cli.pid, 0.3)

        _wait_until(tracing, 240, "the timing run's emulator child to run for 0.3 s")
        tree = _descendants(cli.pid)
        assert len(tree) >= 2, f"expected the fork server and the emulator child: {tree}"
        assert _scratch_of(cli.pid, roots)  # its run directories exist now
        os.kill(cli.pid, signal.SIGKILL)
        cli.wait()
        _wait_until(lambda: not _survivors(cli.pid, tree), 5, "every process of the killed check to die")
        _wait_until(lambda: not _scratch_of(cli.pid, roots), 5, "the killed check's scratch files to go")
    finally:
        cli.kill()
        cli.wait()
        for pid, (start, _) in tree.items():
            if _living(pid, start):
                os.kill(pid, signal.SIGKILL)
    assert not [p for p in tmp.iterdir() if p.name.startswith("acx-")]  # (torch may leave its own)


def test_sweep_removes_what_a_fully_killed_run_left(tmp_path, confine_so):
    """When the caller, the server and the child all die by SIGKILL at once, nobody can
    clean: the next process to create its run directories sweeps them."""
    mine = rundir.run_dirs()  # a live owner's directories must survive the sweep
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    script = textwrap.dedent(f"""
        import struct, numpy as np
        from ascendcraft.emulator import run_kernel
        run_kernel({str(confine_so)!r}, [], outputs=[(8, np.int32)], tiling=struct.pack("<II", 2, 0),
                   block_dim=1, trace_only=True, timeout_s=120)
    """)
    env = {**os.environ, "TMPDIR": str(tmp)}
    env.pop("ASCENDCRAFT_MAX_TRACE_RECORDS", None)
    caller = subprocess.Popen([sys.executable, "-c", script], preexec_fn=_shell_signals, env=env, start_new_session=True)
    tree: dict[int, int] = {}
    try:
        def tracing() -> bool:
            assert caller.poll() is None
            return _long_running_child(caller.pid, 0.3)

        _wait_until(tracing, 60, "the runaway trace to start")
        tree = _descendants(caller.pid)
        everyone = [caller.pid, *tree]
        for pid in everyone:  # freeze all first: none of them may react to the others' death
            os.kill(pid, signal.SIGSTOP)
        for pid in everyone:
            os.kill(pid, signal.SIGKILL)
        caller.wait()
        _wait_until(lambda: not _survivors(caller.pid, tree), 5, "the killed processes to die")
        left = _scratch_of(caller.pid, [tmp, rundir.shm_root()])
        assert left, "expected leftovers: the server had no chance to clean"
        nxt = subprocess.run([sys.executable, "-c", script.replace("2, 0", "0, 0")], preexec_fn=_shell_signals, env=env, timeout=60)
        assert nxt.returncode == 0  # the next run of the emulator, anywhere, sweeps on start
        assert not _scratch_of(caller.pid, [tmp, rundir.shm_root()])
        assert mine.shm.is_dir() and mine.tmp.is_dir()
        assert list(tmp.iterdir()) == []
    finally:
        caller.kill()
        for pid, (start, _) in tree.items():
            if _living(pid, start):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
def test_terminating_signal_of_the_caller_removes_its_files(tmp_path, confine_so, sig):
    """SIGTERM/SIGHUP: the handler cleans and re-raises; SIGINT: KeyboardInterrupt unwinds
    (the interrupted run's server and child are killed, files removed, then atexit)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    script = textwrap.dedent(f"""
        import struct, numpy as np
        from ascendcraft.emulator import run_kernel
        run_kernel({str(confine_so)!r}, [], outputs=[(8, np.int32)], tiling=struct.pack("<II", 1, 0),
                   block_dim=1, timeout_s=120)
    """)
    caller = subprocess.Popen([sys.executable, "-c", script], preexec_fn=_shell_signals, env={**os.environ, "TMPDIR": str(tmp)},
                              stderr=subprocess.DEVNULL)
    tree: dict[int, int] = {}
    try:
        _wait_until(lambda: len(_descendants(caller.pid)) >= 2, 30, "the emulator child to run")
        tree = _descendants(caller.pid)
        caller.send_signal(sig)
        assert caller.wait(10) == -sig  # re-raised (Python re-raises an uncaught Ctrl-C too)
        _wait_until(lambda: not _survivors(caller.pid, tree), 5, "the server and child to die")
        assert not _scratch_of(caller.pid, [tmp, rundir.shm_root()])
    finally:
        caller.kill()
        for pid, (start, _) in tree.items():
            if _living(pid, start):
                os.kill(pid, signal.SIGKILL)


def test_run_files_live_in_per_process_directories(confine_so):
    dirs = rundir.run_dirs()
    assert dirs.shm.name == dirs.tmp.name and dirs.shm.name.startswith(f"acx-{os.getpid()}-")
    assert (dirs.shm.stat().st_mode & 0o777) == 0o700
    r = _run(confine_so, 0)
    assert r.ok
    assert list(dirs.shm.iterdir()) == [] and list(dirs.tmp.iterdir()) == []


def test_server_started_by_a_thread_outlives_that_thread(confine_so):
    """The parent-death signal fires when the *thread* that started the server exits; the
    server must tell that apart from the caller's death and keep serving."""
    script = textwrap.dedent(f"""
        import struct, threading, time, numpy as np
        from ascendcraft.emulator import run_kernel, runner
        def once():
            r = run_kernel({str(confine_so)!r}, [], outputs=[(8, np.int32)],
                           tiling=struct.pack("<II", 0, 0), block_dim=1)
            assert r.ok, r.message
        t = threading.Thread(target=once)
        t.start(); t.join()
        pid = runner._server_obj.proc.pid
        time.sleep(0.5)
        once()
        assert runner._server_obj.proc.pid == pid and runner._server_obj.alive()
        print("same server")
    """)
    p = subprocess.run([sys.executable, "-c", script], preexec_fn=_shell_signals, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout == "same server\n", p.stderr[-2000:]


def test_sweep_judges_owners_by_pid_and_start_time(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    me, start = os.getpid(), rundir.start_time(os.getpid())
    entries = {
        f"acx-{dead.pid}-12345-0badf00d": "dir",      # owner gone
        f"acx-{me}-{start + 1}-0badf00d": "dir",      # pid recycled: another start time
        f"acx-{dead.pid}-7": "file",                   # GM file of an earlier version
        f"acx-{dead.pid}-7.trace": "file",             # trace of an earlier version
        f"acx-{me}-{start}-0badf00d": "dir",          # live owner: kept
        f"acx-{me}-3.trace": "file",                   # live owner: kept
        f"acx-{dead.pid}-not-ours": "dir",             # another naming scheme: not touched
    }
    for name, kind in entries.items():
        (tmp_path / name).mkdir() if kind == "dir" else (tmp_path / name).write_bytes(b"x")
    removed = {p.name for p in rundir.sweep([tmp_path])}
    assert removed == set(list(entries)[:4])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(list(entries)[4:])
