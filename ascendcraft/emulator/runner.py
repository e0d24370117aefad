"""Run an emulator-built kernel in a child process and collect outputs, trace and status.

Why a child process: a candidate kernel may segfault or never terminate; that must become a
failed trial with its reason, never a crash or hang of the tuner. Children are forked from a
small stdlib-only fork server (``_server.py``), so the per-run overhead stays at a few ms even
when the caller has torch (and its threads) loaded. GM buffers live in one shared-memory file
that both sides map: inputs and outputs are never pickled.

Nothing outlives the caller and nothing grows without bound: the server and its children are
confined (``_server.py``), a trace is capped in records and bytes (``DEFAULT_MAX_TRACE_*``,
a run that reaches the cap stops with status ``trace_limit``), and every scratch file lives
in this process's run directories (``rundir.py``).

The trace of a timing run never touches the disk: by default the child builds a
:class:`~ascendcraft.emulator.trace_summary.TraceSummary` in memory (distinct records once,
GM moves whole, each distinct core program as loops) and sends it back with the result;
``trace="records"`` asks for every record (written to a shared-memory file of the run).
"""

from __future__ import annotations

import atexit
import itertools
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ascendcraft.emulator import _confine, _server, rundir
from ascendcraft.emulator.trace_format import RECORD_DTYPE
from ascendcraft.emulator.trace_summary import FULL_TRACE_ENV, TraceSummary
from ascendcraft.soc import DEFAULT_SOC, Soc, load_soc

DEFAULT_MAX_TRACE_RECORDS = 48 << 20
"""Cap of a ``trace="records"`` trace in records (48 Mi = 3 GiB) unless ``max_trace_records``
or ``$ASCENDCRAFT_MAX_TRACE_RECORDS`` says otherwise. The largest default-shape registry
trace (avg_pool3d, 33 M records, 2.0 GiB) fits with 1.5x to spare; the model holds a whole
trace in memory (about 2.2x its bytes at peak), so the cap also bounds the caller's memory."""
DEFAULT_MAX_SUMMARY_RECORDS = 8 << 20
"""Cap of a trace summary (the default trace) in 64-byte record equivalents of what it holds
(distinct records, GM moves, and the cores' symbol ids and loop tokens at 4 B each): 512 MiB.
The largest default-shape registry op holds about 0.4 M (avg_pool3d: 0.3 M GM moves)."""
TRACE_MODES = ("summary", "records")

DEFAULT_MAX_TRACE_BYTES = 3 << 30
"""Trace cap in bytes (``max_trace_bytes`` / ``$ASCENDCRAFT_MAX_TRACE_BYTES``). The cap used
is also at most half the free space of the trace directory's file system."""

CORE_TYPES: dict[str, int] = {"auto": 0, "aiv": 1, "aic": 2, "mix": 3}
"""``run_kernel(core_type=...)``: auto = vector core unless the kernel declares
``KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY)``; aiv / aic force the core type; mix runs
each block as one AI Core of 1 AIC + 2 AIV (``KERNEL_TYPE_MIX_AIC_1_2``, the 910B ratio) whose
cores synchronise with cross-core flags (the trace's core ids: AIC g -> g, AIV s of block g ->
block_dim + 2g + s)."""

MIX_CORES_PER_BLOCK = 3
"""Trace cores of one block of a mixed launch: its AIC and its two AIVs."""


def buffer_capacities(soc_buffers: Soc | Mapping[str, int] | None = None) -> dict[str, int]:
    """Per-core buffer capacities (bytes) a run enforces: a SoC's (``Soc.buffer_bytes``), or
    the default SoC's with the entries of a mapping (``ub``, ``l1``, ``l0a``, ``l0b``, ``l0c``)
    overriding them; an unknown key is a ValueError, never silently ignored."""
    if isinstance(soc_buffers, Soc):
        return soc_buffers.buffer_bytes
    caps = load_soc(DEFAULT_SOC).buffer_bytes
    for key, value in (soc_buffers or {}).items():
        if key not in caps:
            raise ValueError(f"unknown buffer {key!r} in soc_buffers; known: {', '.join(caps)}")
        caps[key] = int(value)
    return caps


_ALIGN = 4096


@dataclass(frozen=True)
class TilingRequest:
    """Ask the child to compute the tiling with the library's ``acx_tiling`` export."""

    shapes: Sequence[Sequence[int]]
    tunables: Sequence[int] = ()
    scalars: Sequence[float] = ()
    core_num: int = 48
    out_cap: int = 4096


@dataclass
class RunResult:
    """Outcome of one kernel run. ``status`` is one of ok, error, crash, timeout,
    trace_limit (the trace reached its cap and the run was stopped: no trace is returned)."""

    ok: bool
    status: str
    message: str
    outputs: list[np.ndarray] = field(default_factory=list)
    trace: np.ndarray | None = None
    block_dim: int = 0
    tiling: bytes = b""
    wall_s: float = 0.0
    workspace_bytes: int = 0
    stats: dict[str, int] = field(default_factory=dict)
    """``trace`` is a :class:`TraceSummary` (the default), every record as a ``RECORD_DTYPE``
    array (``trace="records"``), or None; ``len(trace)`` is the record count either way."""


ArraySpec = Any  # np.ndarray | (shape, dtype) | int (bytes; trace-only)


def _spec_nbytes(spec: ArraySpec) -> tuple[int, tuple[int, ...] | None, np.dtype | None]:
    if isinstance(spec, np.ndarray):
        return spec.nbytes, spec.shape, spec.dtype
    if isinstance(spec, (int, np.integer)):
        return int(spec), None, None
    shape, dtype = spec
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    dt = np.dtype(dtype)
    return int(np.prod(shape, dtype=np.int64)) * dt.itemsize, shape, dt


class _Server:
    """One fork server per calling process (re-created after fork or if it died)."""

    def __init__(self) -> None:
        env = dict(os.environ)
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
        env.setdefault("OMP_NUM_THREADS", "1")
        dirs = rundir.run_dirs()
        self.proc = subprocess.Popen(
            [sys.executable, "-I", _server.__file__, "--parent", str(os.getpid()),
             "--dirs", str(dirs.shm), str(dirs.tmp)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, close_fds=True,
            start_new_session=True,  # a terminal's Ctrl-C or a group kill is for the caller
        )
        self.pid = os.getpid()
        self.lock = threading.Lock()

    def alive(self) -> bool:
        return self.pid == os.getpid() and self.proc.poll() is None

    def request(self, req: dict, wait_s: float) -> dict:
        data = pickle.dumps(req)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(struct.pack("<Q", len(data)) + data)
        self.proc.stdin.flush()
        fd = self.proc.stdout.fileno()
        head = self._read(fd, 8, wait_s)
        (n,) = struct.unpack("<Q", head)
        return pickle.loads(self._read(fd, n, wait_s))

    def _read(self, fd: int, n: int, wait_s: float) -> bytes:
        buf = bytearray()
        deadline = time.monotonic() + wait_s
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError("emulator server did not answer")
            b = os.read(fd, n - len(buf))
            if not b:
                raise EOFError("emulator server exited")
            buf += b
        return bytes(buf)

    def close(self) -> None:
        if self.pid == os.getpid() and self.proc.poll() is None:
            try:
                self.proc.stdin.close()  # type: ignore[union-attr]
                self.proc.wait(timeout=2)
            except Exception:  # noqa: BLE001
                self.kill()

    def kill(self) -> None:
        """SIGKILL the server (its session); its children die with it (parent-death signal)."""
        if self.pid == os.getpid() and self.proc.poll() is None:
            _confine.kill_group(self.proc.pid)
            self.proc.wait()


_server_obj: _Server | None = None
_server_guard = threading.Lock()
_counter = itertools.count()


def _get_server() -> _Server:
    global _server_obj
    with _server_guard:
        if _server_obj is None or not _server_obj.alive():
            _server_obj = _Server()
        return _server_obj


@atexit.register
def _shutdown() -> None:
    if _server_obj is not None:
        _server_obj.close()


def _kill_server() -> None:
    """From a signal handler: SIGKILL only (no wait, which could block on Popen's lock)."""
    s = _server_obj
    if s is not None and s.pid == os.getpid():
        _confine.kill_group(s.proc.pid)


rundir.on_cleanup(_kill_server)


def _env_int(name: str, default: int) -> int:
    text = os.environ.get(name)
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"${name} must be a positive integer, not {text!r}") from None
    if value < 1:
        raise ValueError(f"${name} must be a positive integer, not {text!r}")
    return value


def trace_cap(max_trace_records: int | None = None, max_trace_bytes: int | None = None,
              trace_dir: str | os.PathLike | None = None, *, summary: bool = False) -> int:
    """Records a trace may hold: the smallest of the record cap, the byte cap and half the
    free space where the trace is written (arguments first, then the environment, then
    ``DEFAULT_MAX_TRACE_*``; ``DEFAULT_MAX_SUMMARY_RECORDS`` for a summary, which is held in
    memory, not written)."""
    for name, v in (("max_trace_records", max_trace_records), ("max_trace_bytes", max_trace_bytes)):
        if v is not None and int(v) < 1:
            raise ValueError(f"{name} must be >= 1 (it caps the trace), not {v}")
    records = int(max_trace_records) if max_trace_records is not None else _env_int(
        "ASCENDCRAFT_MAX_TRACE_RECORDS", DEFAULT_MAX_SUMMARY_RECORDS if summary else DEFAULT_MAX_TRACE_RECORDS)
    nbytes = int(max_trace_bytes) if max_trace_bytes is not None else _env_int(
        "ASCENDCRAFT_MAX_TRACE_BYTES", DEFAULT_MAX_TRACE_BYTES)
    cap = min(records, nbytes // RECORD_DTYPE.itemsize)
    if trace_dir is not None:
        try:
            st = os.statvfs(trace_dir)
            cap = min(cap, st.f_bavail * st.f_frsize // 2 // RECORD_DTYPE.itemsize)
        except OSError:
            pass
    return max(cap, 1)


def _request(req: dict, timeout_s: float) -> dict:
    """One request to the fork server; a server that fails is killed (re-created next time)
    and the run becomes a crash result. Interrupted (e.g. KeyboardInterrupt), the server is
    killed too - with it the running child - so no stale answer is read by the next run."""
    server = _get_server()
    with server.lock:
        try:
            return server.request(req, wait_s=timeout_s + 30)
        except (TimeoutError, EOFError, OSError, struct.error) as e:
            server.kill()
            return {"status": "crash", "message": f"crash: emulator server failed ({e})"}
        except BaseException:
            server.kill()
            raise


def run_kernel(
    so_path: str | os.PathLike,
    gm_arrays: Sequence[ArraySpec],
    *,
    outputs: Sequence[ArraySpec],
    tiling: bytes | TilingRequest | None = None,
    block_dim: int | None = None,
    workspace_bytes: int = 0,
    trace_only: bool = False,
    trace: bool | str = True,
    max_trace_records: int | None = None,
    max_trace_bytes: int | None = None,
    timeout_s: float = 60,
    wall_timeout_s: float | None = None,
    soc_buffers: Soc | Mapping[str, int] | None = None,
    block_ids: Sequence[int] | None = None,
    stack_kib: int = 0,
    core_type: str = "auto",
) -> RunResult:
    """Run the kernel library at ``so_path`` on ``gm_arrays`` (inputs) and ``outputs``.

    Inputs/outputs are numpy arrays, ``(shape, dtype)`` specs or (trace-only) byte counts;
    an output given as an array supplies the initial GM contents (e.g. for atomics).
    ``tiling`` is raw tiling bytes or a TilingRequest evaluated in the child by ``acx_tiling``
    (its block dim and workspace size are used unless ``block_dim`` is given).
    In ``trace_only`` mode no GM memory is allocated: arithmetic and data movement are skipped.
    ``trace``: True or ``"summary"`` (a :class:`TraceSummary` built in memory by the child;
    True means ``"records"`` when ``$ASCENDCRAFT_FULL_SIM=1``), ``"records"`` (every record),
    False (none). The trace is capped (:func:`trace_cap`); a run that reaches the cap stops
    with status ``trace_limit`` and a message naming the cap, and returns no trace.
    ``soc_buffers``: the buffer capacities to enforce, those of a :class:`Soc` or the default
    SoC's overridden by a mapping (:func:`buffer_capacities`).
    ``core_type`` is one of :data:`CORE_TYPES` (cube kernels: ``"aic"`` or a declaration).
    ``timeout_s`` limits the child's CPU time (RLIMIT_CPU) and, unless ``wall_timeout_s``
    gives a longer backstop for a loaded machine, its wall time too.
    """
    t_start = time.perf_counter()
    if core_type not in CORE_TYPES:
        raise ValueError(f"core_type must be one of {sorted(CORE_TYPES)}, not {core_type!r}")
    mode = _trace_mode(trace)
    soc = buffer_capacities(soc_buffers)
    specs = [_spec_nbytes(s) for s in (*gm_arrays, *outputs)]
    n_in = len(gm_arrays)
    layout: list[tuple[int, int]] = []
    off = _server.ERR_LEN
    off = (off + _ALIGN - 1) // _ALIGN * _ALIGN
    for nbytes, _, _ in specs:
        layout.append((off, nbytes))
        if not trace_only:
            off += (nbytes + _ALIGN - 1) // _ALIGN * _ALIGN + _ALIGN
    total = off if not trace_only else _ALIGN
    dirs = rundir.run_dirs()
    n_run = next(_counter)
    shm_path = str(dirs.shm / f"gm-{n_run}")
    trace_path = str(dirs.shm / f"trace-{n_run}.bin") if mode == "records" else None
    cap = (trace_cap(max_trace_records, max_trace_bytes, dirs.shm if trace_path else None,
                     summary=mode == "summary") if mode else 0)
    mm = None
    try:
        with open(shm_path, "w+b") as f:
            f.truncate(total)
            mm = np.memmap(f, dtype=np.uint8, mode="r+", shape=(total,))
        if not trace_only:
            for i, spec in enumerate((*gm_arrays, *outputs)):
                if isinstance(spec, np.ndarray):
                    o, nb = layout[i]
                    mm[o : o + nb] = np.ascontiguousarray(spec).reshape(-1).view(np.uint8)
        req = {
            "so": str(Path(so_path).resolve()),
            "shm": shm_path,
            "layout": layout,
            "trace_only": bool(trace_only),
            "trace_path": trace_path,
            "trace_summary": mode == "summary",
            "max_trace_records": cap,
            "soc": soc,
            "block_dim": int(block_dim) if block_dim else None,
            "workspace_bytes": int(workspace_bytes),
            **_tiling_fields(tiling),
            "block_ids": list(block_ids or []),
            "stack_kib": int(stack_kib),
            "timeout_s": float(timeout_s),
            "wall_s": float(max(timeout_s, wall_timeout_s or 0)),
            "core_type": CORE_TYPES[core_type],
        }
        res = _request(req, req["wall_s"])
        status = res.get("status", "crash")
        message = res.get("message", "")
        if status == "crash":
            message = _with_detail(message, mm)
        outs = _read_outputs(mm, specs, layout, n_in) if status == "ok" and not trace_only else []
        tr: TraceSummary | np.ndarray | None = None
        if trace_path and status in ("ok", "error") and os.path.exists(trace_path):
            tr = np.fromfile(trace_path, dtype=RECORD_DTYPE)
        elif status == "ok" and res.get("summary") is not None:
            per = MIX_CORES_PER_BLOCK if core_type == "mix" else 1
            tr = TraceSummary.from_buffers(per * int(res.get("block_dim") or 0), **res["summary"])
        return RunResult(
            ok=status == "ok",
            status=status,
            message=message,
            outputs=outs,
            trace=tr,
            block_dim=int(res.get("block_dim") or 0),
            tiling=bytes(res.get("tiling") or b""),
            wall_s=time.perf_counter() - t_start,
            workspace_bytes=int(res.get("workspace_bytes") or 0),
            stats=dict(res.get("stats") or {}),
        )
    finally:
        del mm
        for p in (shm_path, trace_path):
            if p:
                try:
                    os.unlink(p)
                except FileNotFoundError:
                    pass


@dataclass(frozen=True)
class BatchRun:
    """One run of a :func:`run_batch`: inputs (arrays), outputs (arrays or specs), tiling."""

    gm_arrays: Sequence[ArraySpec]
    outputs: Sequence[ArraySpec]
    tiling: bytes | TilingRequest
    block_dim: int | None = None  # needed with raw tiling bytes (a request computes it)


def _tiling_fields(tiling: bytes | TilingRequest | None) -> dict:
    """The request fields of a run's tiling: raw bytes or a request for ``acx_tiling``."""
    return {
        "tiling_bytes": bytes(tiling) if isinstance(tiling, (bytes, bytearray)) else None,
        "tiling_request": (
            {"shapes": [list(map(int, s)) for s in tiling.shapes], "tunables": list(tiling.tunables),
             "scalars": list(tiling.scalars), "core_num": int(tiling.core_num), "out_cap": int(tiling.out_cap)}
            if isinstance(tiling, TilingRequest) else None
        ),
    }


def run_batch(
    so_path: str | os.PathLike,
    runs: Sequence[BatchRun],
    *,
    timeout_s: float = 60,
    wall_timeout_s: float | None = None,
    soc_buffers: Soc | Mapping[str, int] | None = None,
    core_type: str = "auto",
) -> list[RunResult]:
    """Run one kernel library on several sets of buffers (no trace) in ONE child of the fork
    server, in order: one round trip instead of one per run. Each run is limited as a single
    :func:`run_kernel` is (its own CPU time ``timeout_s``, its own wall backstop) and starts
    with fresh arenas (``acx_run`` allocates them per run). The runs stop at the first that
    does not end ok: the list holds one result per run up to and including that one."""
    if core_type not in CORE_TYPES:
        raise ValueError(f"core_type must be one of {sorted(CORE_TYPES)}, not {core_type!r}")
    if not runs:
        return []
    t_start = time.perf_counter()
    soc = buffer_capacities(soc_buffers)
    off = (_server.ERR_LEN + _ALIGN - 1) // _ALIGN * _ALIGN
    plans = []  # per run: its specs, its layout, how many inputs
    for run in runs:
        specs = [_spec_nbytes(s) for s in (*run.gm_arrays, *run.outputs)]
        layout = []
        for nbytes, _, _ in specs:
            layout.append((off, nbytes))
            off += (nbytes + _ALIGN - 1) // _ALIGN * _ALIGN + _ALIGN
        plans.append((specs, layout, len(run.gm_arrays)))
    dirs = rundir.run_dirs()
    shm_path = str(dirs.shm / f"gm-{next(_counter)}")
    mm = None
    try:
        with open(shm_path, "w+b") as f:
            f.truncate(off)
            mm = np.memmap(f, dtype=np.uint8, mode="r+", shape=(off,))
        for run, (_, layout, _) in zip(runs, plans, strict=True):
            for (o, nb), spec in zip(layout, (*run.gm_arrays, *run.outputs), strict=True):
                if isinstance(spec, np.ndarray):
                    mm[o : o + nb] = np.ascontiguousarray(spec).reshape(-1).view(np.uint8)
        wall = float(max(timeout_s, wall_timeout_s or 0))
        req = {
            "so": str(Path(so_path).resolve()), "shm": shm_path, "trace_only": False, "trace_path": None,
            "trace_summary": False, "max_trace_records": 0, "soc": soc, "block_dim": None,
            "workspace_bytes": 0, "block_ids": [], "stack_kib": 0, "timeout_s": float(timeout_s),
            "wall_s": wall, "core_type": CORE_TYPES[core_type],
            "batch": [{"layout": layout, "block_dim": int(run.block_dim) if run.block_dim else None,
                       **_tiling_fields(run.tiling)}
                      for run, (_, layout, _) in zip(runs, plans, strict=True)],
        }
        res = _request(req, wall * len(runs))
        frames = list(res.get("results") or [])
        out: list[RunResult] = []
        for frame, (specs, layout, n_in) in zip(frames, plans, strict=False):
            status = frame.get("status", "crash")
            outs = _read_outputs(mm, specs, layout, n_in) if status == "ok" else []
            out.append(_result(frame, status, frame.get("message", ""), outs, t_start))
        if len(out) < len(runs) and (not out or out[-1].ok):  # the child ended before a run's result
            message = res.get("message", "") or "crash: no result"
            if res.get("status", "crash") == "crash":
                message = _with_detail(message, mm)
            out.append(_result(res.get("ended") or {}, res.get("status", "crash"), message, [], t_start))
        return out
    finally:
        del mm
        try:
            os.unlink(shm_path)
        except FileNotFoundError:
            pass


def _read_outputs(mm: np.memmap, specs: list, layout: list, n_in: int) -> list[np.ndarray]:
    """The output buffers of one run, copied out of the GM file."""
    outs = []
    for i in range(n_in, len(specs)):
        o, nb = layout[i]
        _, shape, dt = specs[i]
        arr = np.array(mm[o : o + nb]).view(dt if dt is not None else np.uint8)
        outs.append(arr.reshape(shape) if shape is not None else arr)
    return outs


def _with_detail(message: str, mm: np.memmap) -> str:
    """A crash message with what the crash handler wrote into the GM file's err buffer."""
    detail = bytes(mm[: _server.ERR_LEN]).split(b"\0", 1)[0].decode(errors="replace")
    return f"{message}: {detail}" if detail else message


def _result(res: dict, status: str, message: str, outs: list[np.ndarray], t_start: float) -> RunResult:
    return RunResult(
        ok=status == "ok", status=status, message=message, outputs=outs,
        block_dim=int(res.get("block_dim") or 0), tiling=bytes(res.get("tiling") or b""),
        wall_s=time.perf_counter() - t_start, workspace_bytes=int(res.get("workspace_bytes") or 0),
        stats=dict(res.get("stats") or {}),
    )


def _trace_mode(trace: bool | str) -> str | None:
    """``run_kernel(trace=...)`` -> "summary", "records" or None."""
    if trace is True:
        return "records" if os.environ.get(FULL_TRACE_ENV, "") not in ("", "0") else "summary"
    if trace is False or trace is None:
        return None
    if trace not in TRACE_MODES:
        raise ValueError(f"trace must be True, False or one of {TRACE_MODES}, not {trace!r}")
    return str(trace)


def compute_tiling(so_path: str | os.PathLike, request: TilingRequest, *, timeout_s: float = 30) -> RunResult:
    """Evaluate only ``acx_tiling`` (in a child): returns tiling bytes, block dim, workspace size."""
    req = {
        "so": str(Path(so_path).resolve()),
        "tiling_only": True,
        "timeout_s": float(timeout_s),
        **_tiling_fields(request),
    }
    t0 = time.perf_counter()
    res = _request(req, float(timeout_s))
    status = res.get("status", "crash")
    return RunResult(
        ok=status == "ok", status=status, message=res.get("message", ""), block_dim=int(res.get("block_dim") or 0),
        tiling=bytes(res.get("tiling") or b""), wall_s=time.perf_counter() - t0,
        workspace_bytes=int(res.get("workspace_bytes") or 0),
    )
