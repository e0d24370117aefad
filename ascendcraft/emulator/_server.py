"""Fork server of the emulator runner (stdlib only; run as a script by runner.py).

It is a small, clean process (no torch, no threads) that loads kernel libraries once and
forks one child per run. A child that crashes or hangs is killed and reported; the server
and the caller survive. Protocol on (stdin, stdout): length-prefixed pickles.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import pickle
import resource
import select
import signal
import struct
import sys
import time
import traceback

ERR_LEN = 4096  # the err buffer occupies the start of the shared file
FAKE_BASE = 0x2000_0000_0000  # trace-only GM addresses: never dereferenced
FAKE_SPAN = 1 << 40


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


def _child(req: dict, wfd: int) -> None:
    """Body of the forked child: tiling, buffers, acx_run; writes a pickled result to wfd."""
    res: dict = {}
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        lib = _lib(req["so"])
        tiling = req.get("tiling_bytes")
        block_dim = req.get("block_dim")
        ws_bytes = int(req.get("workspace_bytes") or 0)
        if req.get("tiling_request") is not None:
            tiling, bd, ws = _tiling(lib, req["tiling_request"])
            block_dim = block_dim or bd
            ws_bytes = max(ws_bytes, ws)
        res.update(tiling=tiling or b"", block_dim=block_dim, workspace_bytes=ws_bytes)
        if req.get("tiling_only"):
            res["rc"] = 0
            return
        if not block_dim:
            raise ValueError("block_dim is 0 (give block_dim or a tiling request)")
        fd = os.open(req["shm"], os.O_RDWR)
        size = os.fstat(fd).st_size
        mm = mmap.mmap(fd, size)
        os.close(fd)
        base = ctypes.addressof(ctypes.c_char.from_buffer(mm))
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
        tb = ctypes.create_string_buffer(bytes(tiling or b""), max(64, len(tiling or b"")))
        ptrs.append(ctypes.addressof(tb) if tiling else 0)
        sizes.append(len(tiling or b""))
        n = len(ptrs)
        stats = AcxRunStats()
        ids = req.get("block_ids") or []
        opt = AcxRunOptions(
            block_dim=int(block_dim), trace_only=int(trace_only),
            trace_path=(req["trace_path"].encode() if req.get("trace_path") else None),
            max_trace_records=int(req.get("max_trace_records") or 0),
            ub_bytes=int(req["soc"]["ub"]), l1_bytes=int(req["soc"]["l1"]), l0a_bytes=int(req["soc"]["l0a"]),
            l0b_bytes=int(req["soc"]["l0b"]), l0c_bytes=int(req["soc"]["l0c"]),
            block_ids=(ctypes.c_uint32 * max(1, len(ids)))(*ids), n_block_ids=len(ids),
            stack_kib=int(req.get("stack_kib") or 0), stats=ctypes.pointer(stats),
            core_type=int(req.get("core_type") or 0),
        )
        rc = lib.acx_run(
            (ctypes.c_void_p * n)(*ptrs), (ctypes.c_uint64 * n)(*sizes), n, ctypes.byref(opt),
            ctypes.c_void_p(base), ERR_LEN,
        )
        res["rc"] = int(rc)
        res["message"] = ctypes.string_at(base).decode(errors="replace") if rc else ""
        res["stats"] = {k: int(getattr(stats, k)) for k, _ in AcxRunStats._fields_}
    except BaseException as e:  # noqa: BLE001 - everything becomes a reported error
        res["rc"] = -1
        res["message"] = f"{type(e).__name__}: {e}"
        res["tb"] = traceback.format_exc(limit=3)
    finally:
        data = pickle.dumps(res)
        view = memoryview(data)
        while view:
            k = os.write(wfd, view)
            view = view[k:]
        os.close(wfd)
        os._exit(0)


def _serve_one(req: dict) -> dict:
    try:
        _lib(req["so"])  # dlopen once in the server; children inherit it
    except OSError as e:
        return {"status": "error", "message": f"cannot load {req['so']}: {e}"}
    r, w = os.pipe()
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        _child(req, w)
        os._exit(0)
    os.close(w)
    deadline = t0 + float(req["timeout_s"])
    chunks = []
    timed_out = False
    while True:
        left = deadline - time.perf_counter()
        if left <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([r], [], [], left)
        if not ready:
            continue
        b = os.read(r, 1 << 16)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    wall = time.perf_counter() - t0
    if timed_out:
        return {"status": "timeout", "message": f"timeout after {req['timeout_s']:g} s (child killed)", "wall_s": wall}
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return {"status": "crash", "signal": name, "message": f"crash: {name}", "wall_s": wall}
    try:
        res = pickle.loads(b"".join(chunks))
    except Exception:  # noqa: BLE001
        return {"status": "crash", "message": f"crash: child exited with status {os.WEXITSTATUS(status)} without a result", "wall_s": wall}
    res["wall_s"] = wall
    res["status"] = "ok" if res.get("rc") == 0 else "error"
    return res


def _read_exact(fd: int, n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        b = os.read(fd, n - len(buf))
        if not b:
            return None
        buf += b
    return buf


def main() -> None:
    rfd = os.dup(0)
    wfd = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # kernel printf goes to stderr, never into the protocol pipe
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        head = _read_exact(rfd, 8)
        if head is None:
            return
        (n,) = struct.unpack("<Q", head)
        body = _read_exact(rfd, n)
        if body is None:
            return
        try:
            resp = _serve_one(pickle.loads(body))
        except Exception as e:  # noqa: BLE001
            resp = {"status": "error", "message": f"emulator server: {type(e).__name__}: {e}"}
        data = pickle.dumps(resp)
        os.write(wfd, struct.pack("<Q", len(data)))
        view = memoryview(data)
        while view:
            k = os.write(wfd, view)
            view = view[k:]


if __name__ == "__main__":
    sys.exit(main())
