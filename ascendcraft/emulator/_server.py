"""Fork server of the emulator runner (stdlib only; run as a script by runner.py).

It is a small, clean process (no torch, no threads) that loads kernel libraries once and
forks one child per run. A child that crashes or hangs is killed and reported; the server
and the caller survive. Protocol on (stdin, stdout): length-prefixed pickles.

Confinement (nothing outlives the caller, nothing runs unbounded):

* the server leads its own session; it gets SIGUSR1 when the thread that started it exits
  (``PR_SET_PDEATHSIG``) and also watches stdin for EOF and polls its parent pid; when the
  caller is gone it kills the running child's group, removes the caller's scratch
  directories (``--dirs``) and exits;
* each child leads its own process group (killed whole after every run, so nothing the
  kernel forked survives), dies with the server (``PR_SET_PDEATHSIG`` = SIGKILL) and runs
  under RLIMIT_CPU (the run's timeout + 1 s), RLIMIT_FSIZE (1 MiB, + the trace cap for a
  ``trace="records"`` file) and RLIMIT_AS (see :func:`_address_space_limit`), core dumps off;
* a trace summary (the default trace) is built in the child's memory and returned with the
  result (:func:`_summary`): no trace file;
* the child's stdout/stderr (kernel ``printf``) come back through a pipe and are passed on
  to the server's stderr up to ``OUTPUT_CAP`` bytes per run.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import pickle
import resource
import select
import shutil
import signal
import struct
import sys
import time
import traceback

if __package__:
    from . import _confine
else:  # run as a script with ``python -I``: the package is not importable, the file is
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _confine

ERR_LEN = 4096  # the err buffer occupies the start of the shared file
FAKE_BASE = 0x2000_0000_0000  # trace-only GM addresses: never dereferenced
FAKE_SPAN = 1 << 40
AS_MARGIN = 512 << 20
"""Address space a child gets beyond what the run needs (its Python, libraries, scratch)."""
AS_CORES_CAP = 4096
"""Cores counted in the address-space budget (block_dim beyond it gets no more memory)."""
TRACE_BUFFER_BYTES = 2 << 20  # the C++ trace writer's buffer (32768 records)
SUMMARY_AS_FACTOR = 4
"""A trace summary of at most the cap (in 64 B records) may take this many times the cap's
bytes in the child: its vectors grow by doubling, then it is copied once and pickled."""
SUMMARY_PARTS = ("symbols", "footprints", "tokens", "programs")
SUMMARY_ITEM_BYTES = (64, 64, 4, 32)  # TraceRecord, TraceRecord, token, acx::CoreProgram
OUTPUT_CAP = 64 << 10
"""Bytes of kernel stdout/stderr passed on per run; the rest is dropped with a note."""
RC_TRACE_LIMIT = 3  # acx_run: the trace reached max_trace_records (acx_runtime.h)
POLL_S = 1.0  # how often the server checks that its parent is alive while idle


class AcxRunStats(ctypes.Structure):
    _fields_ = [
        ("records_written", ctypes.c_uint64),
        ("records_dropped", ctypes.c_uint64),
        ("api_calls", ctypes.c_uint64),
        ("ub_bytes_used", ctypes.c_uint64),
    ]


class AcxRunOptions(ctypes.Structure):
    """ctypes mirror of ``AcxRunOptions`` in include/acx_runtime.h."""

    _fields_ = [
        ("block_dim", ctypes.c_uint32),
        ("trace_only", ctypes.c_int32),
        ("trace_path", ctypes.c_char_p),
        ("max_trace_records", ctypes.c_uint64),
        ("ub_bytes", ctypes.c_uint64),
        ("l1_bytes", ctypes.c_uint64),
        ("l0a_bytes", ctypes.c_uint64),
        ("l0b_bytes", ctypes.c_uint64),
        ("l0c_bytes", ctypes.c_uint64),
        ("block_ids", ctypes.POINTER(ctypes.c_uint32)),
        ("n_block_ids", ctypes.c_int32),
        ("stack_kib", ctypes.c_uint32),
        ("stats", ctypes.POINTER(AcxRunStats)),
        ("core_type", ctypes.c_int32),
        ("trace_summary", ctypes.c_int32),
        ("bt_bytes", ctypes.c_uint64),
    ]


_libs: dict[str, ctypes.CDLL] = {}


def _lib(path: str) -> ctypes.CDLL:
    lib = _libs.get(path)
    if lib is None:
        lib = ctypes.CDLL(path)
        lib.acx_run.restype = ctypes.c_int
        lib.acx_run.argtypes = [
            ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_uint64), ctypes.c_int,
            ctypes.POINTER(AcxRunOptions), ctypes.c_void_p, ctypes.c_int,
        ]
        _libs[path] = lib
    return lib


def _tiling(lib: ctypes.CDLL, req: dict) -> tuple[bytes, int, int]:
    fn = getattr(lib, "acx_tiling", None)
    if fn is None:
        raise RuntimeError("the kernel library exports no acx_tiling function")
    fn.restype = ctypes.c_int
    shapes = req["shapes"]
    dims = [int(d) for s in shapes for d in s]
    ranks = [len(s) for s in shapes]
    tun = [int(t) for t in req.get("tunables", ())]
    sca = [float(s) for s in req.get("scalars", ())]
    cap = int(req.get("out_cap", 4096))
    out = ctypes.create_string_buffer(cap)
    bd = ctypes.c_uint32(0)
    ws = ctypes.c_uint64(0)
    err = ctypes.create_string_buffer(1024)
    n = fn(
        (ctypes.c_int64 * max(1, len(dims)))(*dims), (ctypes.c_int32 * max(1, len(ranks)))(*ranks),
        ctypes.c_int32(len(ranks)), (ctypes.c_int64 * max(1, len(tun)))(*tun), ctypes.c_int32(len(tun)),
        (ctypes.c_double * max(1, len(sca)))(*sca), ctypes.c_int32(len(sca)), ctypes.c_uint32(int(req["core_num"])),
        out, ctypes.c_uint32(cap), ctypes.byref(bd), ctypes.byref(ws), err, ctypes.c_int32(1024),
    )
    if n < 0:
        raise ValueError("tiling: " + err.value.decode(errors="replace"))
    if n > cap:
        raise ValueError(f"tiling: {n} bytes exceed the buffer of {cap}")
    return out.raw[:n], int(bd.value), int(ws.value)


def _summary(lib: ctypes.CDLL) -> dict[str, bytes]:
    """The in-memory trace summary of the run that just ended (``acx_summary``), as bytes."""
    fn = lib.acx_summary
    fn.restype = ctypes.c_int
    ptrs = [ctypes.c_void_p() for _ in range(4)]
    counts = [ctypes.c_uint64() for _ in range(4)]
    args = [a for pc in zip(ptrs, counts, strict=True) for a in map(ctypes.byref, pc)]
    if fn(*args) != 0:
        raise RuntimeError("the kernel library returned no trace summary")
    out = {}
    for name, size, p, n in zip(SUMMARY_PARTS, SUMMARY_ITEM_BYTES, ptrs, counts, strict=True):
        out[name] = ctypes.string_at(p.value, n.value * size) if n.value else b""
    return out


def _mapped_bytes() -> int:
    """Address space this process has mapped now (VmSize); 1 GiB where /proc cannot tell."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[0]) * mmap.PAGESIZE
    except OSError:
        return 1 << 30


def _address_space_limit(req: dict, block_dim: int, ws_bytes: int, mapped_bytes: int) -> int:
    """RLIMIT_AS of a child: what it has mapped now (Python, the kernel library) + the GM
    file + the workspace + per core (fiber stack, guard page and, unless trace-only, the
    UB/L1/L0 arenas) + the trace buffer (or the summary at its cap) + ``AS_MARGIN``. Never
    unbounded."""
    now = _mapped_bytes()
    trace_only = bool(req.get("trace_only"))
    ids = req.get("block_ids") or []
    cores = min(len(ids) or int(block_dim or 1), AS_CORES_CAP)
    if int(req.get("core_type") or 0) == 3:  # mixed: an AIC and two AIVs per block
        cores *= 3
    stack = int(req.get("stack_kib") or 1024) * 1024 + 4096
    arenas = 0 if trace_only else sum(int(v) for v in (req.get("soc") or {}).values())
    ws = 0 if trace_only else ws_bytes
    summary = SUMMARY_AS_FACTOR * 64 * int(req.get("max_trace_records") or 0) if req.get("trace_summary") else 0
    return now + mapped_bytes + ws + cores * (stack + arenas) + TRACE_BUFFER_BYTES + summary + AS_MARGIN


def _memory_hint(message: str, as_bytes: int) -> str:
    words = ("bad_alloc", "MemoryError", "cannot allocate", "cannot map", "Cannot allocate")
    if as_bytes and any(w in message for w in words):
        return f"{message} (address-space limit of this run: {as_bytes >> 20} MiB)"
    return message


def _child(req: dict, wfd: int) -> None:
    """Body of the forked child: tiling, buffers, acx_run; writes a pickled result to wfd.
    A batch request (``req["batch"]``: one dict of run fields per run, sharing the library,
    the GM file and the limits) runs each in turn in this one child and writes one result
    frame per run as it ends, stopping after the first run that fails."""
    res: dict = {}
    as_bytes = 0
    try:
        # until the run's own ceiling is known (after the tiling): what is mapped + the margin
        _confine.lower_limit(resource.RLIMIT_AS, _mapped_bytes() + AS_MARGIN, resource.RLIM_INFINITY)
        lib = _lib(req["so"])
        runs = [{**req, **sub} for sub in req["batch"]] if req.get("batch") else [req]
        plans = [_plan(lib, r) for r in runs]
        if req.get("tiling_only"):
            res.update(plans[0][0], rc=0)
            return
        fd = os.open(req["shm"], os.O_RDWR)
        size = os.fstat(fd).st_size
        as_bytes = max(_address_space_limit(r, int(p["block_dim"]), p["workspace_bytes"], size)
                       for r, (p, _) in zip(runs, plans, strict=True))
        _confine.apply_limits(as_bytes=as_bytes)
        mm = mmap.mmap(fd, size)
        os.close(fd)
        base = ctypes.addressof(ctypes.c_char.from_buffer(mm))
        for i, (run, (head, tiling)) in enumerate(zip(runs, plans, strict=True)):
            res = dict(head)
            if len(runs) > 1:
                _cpu_budget(float(req["timeout_s"]))
            res.update(_acx_run(lib, run, res, tiling, base, as_bytes))
            if i + 1 < len(runs):  # the last frame is written below, like a single run's
                _write_frame(wfd, res)
                if res["rc"]:
                    break
    except BaseException as e:  # noqa: BLE001 - everything becomes a reported error
        res["rc"] = -1
        res["message"] = _memory_hint(f"{type(e).__name__}: {e}", as_bytes)
        res["tb"] = traceback.format_exc(limit=3)
    finally:
        try:
            ctypes.CDLL(None).fflush(None)  # kernel printf output, before _exit drops it
        except (OSError, AttributeError):
            pass
        if not (req.get("batch") and res.get("rc") and res.get("written")):
            _write_frame(wfd, res)
        os.close(wfd)
        os._exit(0)


def _plan(lib: ctypes.CDLL, req: dict) -> tuple[dict, bytes]:
    """A run's tiling bytes, block dim and workspace size (from its tiling request if any)."""
    tiling = req.get("tiling_bytes")
    block_dim = req.get("block_dim")
    ws_bytes = int(req.get("workspace_bytes") or 0)
    if req.get("tiling_request") is not None:
        tiling, bd, ws = _tiling(lib, req["tiling_request"])
        block_dim = block_dim or bd
        ws_bytes = max(ws_bytes, ws)
    if not block_dim and not req.get("tiling_only"):
        raise ValueError("block_dim is 0 (give block_dim or a tiling request)")
    return {"tiling": tiling or b"", "block_dim": block_dim, "workspace_bytes": ws_bytes}, bytes(tiling or b"")


def _cpu_budget(timeout_s: float) -> None:
    """Before each run of a batch: the CPU-time limit is what the child used so far + one
    run's limit (so each run of a batch is limited as a single run is)."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    soft = int(ru.ru_utime + ru.ru_stime) + max(1, int(-(-(timeout_s + 1) // 1)))
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _acx_run(lib: ctypes.CDLL, req: dict, res: dict, tiling: bytes, base: int, as_bytes: int) -> dict:
    """One ``acx_run`` on the mapped GM file at ``base``: rc, message, stats (and summary)."""
    block_dim = int(res["block_dim"])
    ws_bytes = int(res["workspace_bytes"])
    trace_only = bool(req["trace_only"])
    ptrs, sizes = [], []
    for i, (off, nbytes) in enumerate(req["layout"]):
        ptrs.append(FAKE_BASE + i * FAKE_SPAN if trace_only else base + off)
        sizes.append(nbytes)
    # workspace
    ws_map = None
    if ws_bytes:
        if trace_only:
            ptrs.append(FAKE_BASE + len(ptrs) * FAKE_SPAN)
        else:
            ws_map = mmap.mmap(-1, ws_bytes)
            ptrs.append(ctypes.addressof(ctypes.c_char.from_buffer(ws_map)))
    else:
        ptrs.append(0)
    sizes.append(ws_bytes)
    # tiling (always real: kernels read it with plain loads)
    tb = ctypes.create_string_buffer(tiling, max(64, len(tiling)))
    ptrs.append(ctypes.addressof(tb) if tiling else 0)
    sizes.append(len(tiling))
    n = len(ptrs)
    stats = AcxRunStats()
    ids = req.get("block_ids") or []
    opt = AcxRunOptions(
        block_dim=block_dim, trace_only=int(trace_only),
        trace_path=(req["trace_path"].encode() if req.get("trace_path") else None),
        max_trace_records=int(req.get("max_trace_records") or 0),
        ub_bytes=int(req["soc"]["ub"]), l1_bytes=int(req["soc"]["l1"]), l0a_bytes=int(req["soc"]["l0a"]),
        l0b_bytes=int(req["soc"]["l0b"]), l0c_bytes=int(req["soc"]["l0c"]),
        block_ids=(ctypes.c_uint32 * max(1, len(ids)))(*ids), n_block_ids=len(ids),
        stack_kib=int(req.get("stack_kib") or 0), stats=ctypes.pointer(stats),
        core_type=int(req.get("core_type") or 0), trace_summary=int(bool(req.get("trace_summary"))),
        bt_bytes=int(req["soc"]["bt"]),
    )
    rc = lib.acx_run(
        (ctypes.c_void_p * n)(*ptrs), (ctypes.c_uint64 * n)(*sizes), n, ctypes.byref(opt),
        ctypes.c_void_p(base), ERR_LEN,
    )
    out: dict = {"rc": int(rc), "as_bytes": as_bytes}
    out["message"] = _memory_hint(ctypes.string_at(base).decode(errors="replace"), as_bytes) if rc else ""
    out["stats"] = {k: int(getattr(stats, k)) for k, _ in AcxRunStats._fields_}
    if rc == 0 and req.get("trace_summary"):
        out["summary"] = _summary(lib)
    del ws_map
    return out


def _write_frame(wfd: int, res: dict) -> None:
    """One result, framed (length first): known complete even if a forked process keeps the
    pipe open."""
    data = pickle.dumps(res)
    _write_all(wfd, struct.pack("<Q", len(data)) + data)
    res["written"] = True


def _confine_child(req: dict, server_pid: int, out_fd: int) -> None:
    """First steps of a forked child: own process group, die with the server, limits,
    output into the server's pipe, default signal handling."""
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1):  # the server's handlers
        signal.signal(sig, signal.SIG_DFL)                         # are not the child's
    os.setpgid(0, 0)
    _confine.set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != server_pid:
        os._exit(1)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an over-long write fails (EFBIG), reported
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    os.close(out_fd)
    cap = int(req.get("max_trace_records") or 0) * 64 if req.get("trace_path") else 0
    runs = len(req.get("batch") or ()) or 1  # a batch: each run's own limit is rolled on
    _confine.apply_limits(cpu_s=runs * (float(req["timeout_s"]) + 1), fsize_bytes=cap + (1 << 20))


class _Parent:
    """The caller this server works for: its pid, its scratch dirs, the running child."""

    def __init__(self, pid: int, dirs: list[str]) -> None:
        self.pid = pid
        self.dirs = dirs
        self.child = 0  # pid (= process group) of the running child, 0 if none

    def alive(self) -> bool:
        return os.getppid() == self.pid

    def gone(self) -> None:
        """The caller died: kill the child's group, remove its scratch dirs, exit."""
        if self.child:
            _confine.kill_group(self.child)
        for d in self.dirs:
            shutil.rmtree(d, ignore_errors=True)
        os._exit(0)

    def on_pdeathsig(self, signum: int, frame: object) -> None:
        # the starting thread exited; that is the caller's death only if we were re-parented
        if not self.alive():
            self.gone()

    def on_terminate(self, signum: int, frame: object) -> None:
        if self.child:
            _confine.kill_group(self.child)
        os._exit(128 + signum)


_parent: _Parent | None = None
_stdin_pending = bytearray()  # bytes the caller sent while a run was in flight


def _watch_stdin(rfd: int) -> None:
    """stdin became readable during a run: EOF means the caller is gone; data is kept."""
    b = os.read(rfd, 1 << 16)
    if not b:
        assert _parent is not None
        _parent.gone()
    _stdin_pending.extend(b)


def _wait_exit(pid: int, deadline: float) -> bool:
    """Wait (without reaping) until ``pid`` exits; False if the deadline passed first."""
    delay = 0.0005
    while True:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if info is not None:
            return True
        if time.perf_counter() >= deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.02)


def _serve_one(req: dict, rfd: int) -> dict:
    try:
        _lib(req["so"])  # dlopen once in the server; children inherit it
    except OSError as e:
        return {"status": "error", "message": f"cannot load {req['so']}: {e}"}
    assert _parent is not None
    r, w = os.pipe()
    out_r, out_w = os.pipe()
    t0 = time.perf_counter()
    server_pid = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.close(out_r)
            _confine_child(req, server_pid, out_w)
            _child(req, w)
        finally:
            os._exit(1)
    os.close(w)
    os.close(out_w)
    try:
        os.setpgid(pid, pid)  # also done by the child; whichever runs first wins the race
    except OSError:
        pass
    _parent.child = pid
    try:
        return _collect(req, pid, r, out_r, rfd, t0)
    finally:
        if _parent.child == pid:  # _collect failed before reaping it
            _confine.kill_group(pid)
            os.waitpid(pid, 0)
            _parent.child = 0
        os.close(r)
        os.close(out_r)


def _collect(req: dict, pid: int, r: int, out_r: int, rfd: int, t0: float) -> dict:
    """Read the child's result frames and output until they are complete, the child exits
    or the deadline passes; then judge how the child ended. A batch's deadline is one run's
    wall limit after the last frame (each run has the time a single run has); its answer
    holds one result per run that ended (``results``) and the batch's own status."""
    assert _parent is not None
    wall_s = float(req.get("wall_s") or req["timeout_s"])
    want = len(req.get("batch") or ()) or 1
    deadline = t0 + wall_s
    result = bytearray()
    frames: list[dict] = []
    passed = 0
    timed_out = False
    exit_fd = _pidfd(pid)  # readable once the child exits (-1: poll instead)
    open_fds = [r, out_r, rfd] + ([exit_fd] if exit_fd >= 0 else [])
    while r in open_fds and not _done(frames, want):
        left = deadline - time.perf_counter()
        if left <= 0:
            timed_out = True
            break
        ready, _, _ = select.select(open_fds, [], [], min(left, POLL_S))
        if not ready:
            if not _parent.alive():
                _parent.gone()
            if exit_fd < 0 and _wait_exit(pid, 0):
                break
        if exit_fd in ready:  # exited; what it wrote is in the pipe already
            result += _read_available(r)
            break
        for fd in ready:
            if fd == rfd:
                _watch_stdin(rfd)
                if _stdin_pending:  # the caller never writes during a run; wait for EOF only
                    open_fds.remove(rfd)
                continue
            b = os.read(fd, 1 << 16)
            if not b:
                open_fds.remove(fd)
            elif fd == r:
                result += b
                n = len(frames)
                _take_frames(result, frames)
                if len(frames) > n:
                    deadline = time.perf_counter() + wall_s
            else:
                passed = _pass_output(b, passed)
    _take_frames(result, frames)
    if exit_fd >= 0:
        os.close(exit_fd)
    if not timed_out and not _wait_exit(pid, deadline):
        timed_out = True
    _confine.kill_group(pid)  # the child (if still running) and anything it started
    _, status = os.waitpid(pid, 0)  # (not reaped before: its pid and group were still ours)
    _parent.child = 0
    _pass_output(_read_available(out_r), passed)
    wall = time.perf_counter() - t0
    ended = _ended(req, status, timed_out, frames, wall_s)
    if not req.get("batch"):
        return {**frames[0], "wall_s": wall} if ended is None else {**ended, "wall_s": wall}
    if ended is None and len(frames) < want and not (frames and frames[-1]["status"] != "ok"):
        ended = {"status": "crash", "message": "crash: the child ended before every run of the batch"}
    last = frames[-1]["status"] if frames else "ok"
    return {"status": last if ended is None else ended["status"], "results": frames, "wall_s": wall,
            **({"message": ended["message"], "ended": ended} if ended else {})}


def _ended(req: dict, status: int, timed_out: bool, frames: list[dict], wall_s: float) -> dict | None:
    """How the child ended, when that is the answer (timeout, signal, no result); None when
    its result frames are the answer."""
    if timed_out:
        return {"status": "timeout", "message": f"timeout after {wall_s:g} s (child killed)"}
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        if sig == signal.SIGXCPU:
            return {"status": "timeout", "signal": name,
                    "message": f"timeout: CPU-time limit of {float(req['timeout_s']) + 1:g} s exceeded (child killed)"}
        return {"status": "crash", "signal": name, "message": f"crash: {name}"}
    if not frames:
        return {"status": "crash",
                "message": f"crash: child exited with status {os.WEXITSTATUS(status)} without a result"}
    return None


def _take_frames(buf: bytearray, frames: list[dict]) -> None:
    """Move every complete result frame from ``buf`` into ``frames`` (with its status)."""
    while _complete(buf):
        n = struct.unpack("<Q", buf[:8])[0]
        try:
            res = pickle.loads(bytes(buf[8 : 8 + n]))
        except Exception:  # noqa: BLE001 - a garbled frame ends the reading like a crash
            del buf[:]
            return
        del buf[: 8 + n]
        rc = res.get("rc")
        res["status"] = "ok" if rc == 0 else "trace_limit" if rc == RC_TRACE_LIMIT else "error"
        frames.append(res)


def _done(frames: list[dict], want: int) -> bool:
    """Every expected frame is in, or one says its run failed (the child stops there)."""
    return len(frames) >= want or bool(frames and frames[-1].get("rc"))


def _complete(frame: bytearray) -> bool:
    return len(frame) >= 8 and len(frame) >= 8 + struct.unpack("<Q", frame[:8])[0]


def _pidfd(pid: int) -> int:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return -1


def _read_available(fd: int) -> bytes:
    """What a pipe holds now, without waiting for writers that may never close it."""
    os.set_blocking(fd, False)
    out = bytearray()
    try:
        while b := os.read(fd, 1 << 16):
            out += b
    except BlockingIOError:
        pass
    return bytes(out)


def _pass_output(b: bytes, passed: int) -> int:
    """Forward kernel output to stderr up to OUTPUT_CAP bytes per run."""
    room = OUTPUT_CAP - passed
    try:
        if room > 0:
            _write_all(2, b[:room])
        if passed <= OUTPUT_CAP < passed + len(b):  # crossing the cap: say so, once
            _write_all(2, f"\n[emulator: kernel output truncated after {OUTPUT_CAP >> 10} KiB]\n".encode())
    except OSError:  # nobody reads our stderr any more: the output is best effort
        pass
    return passed + len(b)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_exact(fd: int, n: int) -> bytes | None:
    """Read n bytes of a request; None on EOF. Checks the parent while waiting."""
    assert _parent is not None
    while len(_stdin_pending) < n:
        ready, _, _ = select.select([fd], [], [], POLL_S)
        if not ready:
            if not _parent.alive():
                return None
            continue
        b = os.read(fd, 1 << 16)
        if not b:
            return None
        _stdin_pending.extend(b)
    out = bytes(_stdin_pending[:n])
    del _stdin_pending[:n]
    return out


def main(argv: list[str] | None = None) -> None:
    global _parent
    import argparse

    ap = argparse.ArgumentParser(prog="_server.py")
    ap.add_argument("--parent", type=int, default=os.getppid())
    ap.add_argument("--dirs", nargs="*", default=[])
    args = ap.parse_args(argv)
    _parent = _Parent(args.parent, list(args.dirs))
    rfd = os.dup(0)
    wfd = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # kernel printf goes to stderr, never into the protocol pipe
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGUSR1, _parent.on_pdeathsig)
    signal.signal(signal.SIGTERM, _parent.on_terminate)
    signal.signal(signal.SIGHUP, _parent.on_terminate)
    _confine.set_parent_death_signal(signal.SIGUSR1)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if not _parent.alive():  # the caller died before the signal was armed
        _parent.gone()
    while True:
        head = _read_exact(rfd, 8)
        body = None if head is None else _read_exact(rfd, struct.unpack("<Q", head)[0])
        if body is None:  # stdin closed or the parent died: either way the caller is done
            _parent.gone()
        try:
            resp = _serve_one(pickle.loads(body), rfd)
        except Exception as e:  # noqa: BLE001
            resp = {"status": "error", "message": f"emulator server: {type(e).__name__}: {e}"}
        data = pickle.dumps(resp)
        _write_all(wfd, struct.pack("<Q", len(data)) + data)


if __name__ == "__main__":
    sys.exit(main())
