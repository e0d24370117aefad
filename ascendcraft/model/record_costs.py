"""Per-record pipe costs and the HBM channel booking: what the event loop
(:mod:`.periodic`) and the chip simulation (:mod:`.timeline`) both build on, in a module of
its own so that neither imports the other back."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

import numpy as np

from ascendcraft.emulator.trace_format import DType, Op, Pipe, RecordKind
from ascendcraft.soc import Soc as SocSpec

from .op_costs import DTYPE_BYTES, GM_PATH, LOCAL_PATH, ON_CHIP_AT_PATH, OP_CLASS, dtype_row

_ALL = int(Pipe.ALL)
_INF = float("inf")


@dataclass
class _ProgramRun:
    segments_ns: list[float]
    busy_ns: list[float]
    hbm_busy_ns: float
    overhead_ns: list[float]
    unmatched_waits: int
    extrapolated: int = 0


# --------------------------------------------------------------------------------------
# per-record costs (vectorised)
# --------------------------------------------------------------------------------------


def _luts(soc: SocSpec) -> dict[str, np.ndarray]:
    """Lookup tables indexed by op / dtype so that record costs are computed with numpy."""
    cpr = np.zeros((65536, 2))  # cycles per repeat, [op, row f16=0 / f32=1]
    is_vec = np.zeros(65536, bool)
    for op, cls in OP_CLASS.items():
        cpr[int(op), 0] = soc.vector_cycles_per_repeat[cls]["f16"]
        cpr[int(op), 1] = soc.vector_cycles_per_repeat[cls]["f32"]
        is_vec[int(op)] = True
    path_idx = np.full(65536, -1, np.int64)
    names = sorted(soc.paths)
    for op, pname in GM_PATH.items():
        path_idx[int(op)] = names.index(pname)
    chip_idx = np.full(65536, -1, np.int64)
    for op, pname in ON_CHIP_AT_PATH.items():
        chip_idx[int(op)] = names.index(pname)
    lat = np.array([soc.paths[n].latency_ns for n in names] + [0.0])
    peak = np.array([soc.paths[n].peak_bytes_per_ns for n in names] + [1.0])
    local_bpc = np.zeros(65536)
    for op, pname in LOCAL_PATH.items():
        local_bpc[int(op)] = soc.local_bytes_per_cycle[pname]
    dsize = np.ones(256)
    row = np.zeros(256, np.int64)
    for dt, nb in DTYPE_BYTES.items():
        dsize[int(dt)] = nb
        row[int(dt)] = 1 if dtype_row(dt) == "f32" else 0
    macs = np.full(256, soc.macs_per_cycle("f16"))
    for dt in (DType.F16, DType.BF16, DType.F32, DType.I8, DType.U8):
        macs[int(dt)] = soc.macs_per_cycle(dt.name)
    k0 = np.maximum(1.0, 32.0 / dsize)  # fractal K0: 16 fp16/bf16, 8 fp32, 32 int8
    return dict(cpr=cpr, is_vec=is_vec, path_idx=path_idx, chip_idx=chip_idx, lat=lat, peak=peak,
                local_bpc=local_bpc, dsize=dsize, row=row, macs=macs, k0=k0)


def record_costs(rec: np.ndarray, soc: SocSpec, active: int, luts: dict | None = None,
                 l2_hit: np.ndarray | None = None):
    """Cost of each record on its pipe (ns), its HBM-channel occupancy (ns) and the fixed
    (latency / per-call) part of the pipe cost (ns), for ``active`` concurrently running cores.
    ``l2_hit`` marks GM reads served by L2 (see :func:`l2_reuse`): they occupy the core's
    channel at its share of the L2 bandwidth instead of the HBM share."""
    lu = luts or _luts(soc)
    kind = rec["kind"]
    op = rec["op"].astype(np.int64)
    dt = rec["dtype"].astype(np.int64)
    instr = kind == int(RecordKind.INSTR)
    n = len(rec)
    dur = np.zeros(n)
    hbm = np.zeros(n)
    ovh = np.zeros(n)
    vcyc, cyc = soc.vector_cycle_ns, soc.cycle_ns

    # vector ops: repeats x cycles-per-repeat + per-call overhead
    vec = instr & lu["is_vec"][op]
    if vec.any():
        reps = rec["repeats"][vec].astype(np.float64)
        by_elems = np.ceil(rec["elems"][vec] * lu["dsize"][dt[vec]] / 256.0)
        reps = np.where(reps > 0, reps, by_elems)
        c = lu["cpr"][op[vec], lu["row"][dt[vec]]]
        dur[vec] = (reps * c + soc.vector_call_overhead_cycles) * vcyc
        ovh[vec] = soc.vector_call_overhead_cycles * vcyc

    # GM <-> on-chip moves: latency + bytes / (peak x alignment), and the HBM share
    pi = lu["path_idx"][op]
    gm = instr & (pi >= 0)
    if gm.any():
        blocks = np.maximum(rec["blocks"][gm].astype(np.float64), 1.0)
        nbytes = rec["bytes"][gm].astype(np.float64)
        burst = np.ceil(nbytes / blocks / 32.0) * 32.0  # whole 32 B blocks per burst
        beff = np.where(nbytes > 0, burst * blocks, 0.0)
        fl = rec["flags"][gm]
        fac = np.where(fl & 1, 1.0, np.where(fl & 2, soc.aligned32_factor, soc.unaligned_factor))
        p = pi[gm]
        dur[gm] = lu["lat"][p] + beff / (lu["peak"][p] * fac)
        ovh[gm] = lu["lat"][p]
        share = soc.hbm_bytes_per_ns * soc.hbm_sustained_frac / max(1, active)
        h = beff / (share * fac)
        if l2_hit is not None and soc.l2_gbps:
            f = l2_hit[gm].astype(np.float64) / 255.0
            h = (1.0 - f) * h + f * beff / (float(soc.l2_gbps) / max(1, active))
        hbm[gm] = h

    # on-chip moves at a GM path's rate (L0C -> L1): its latency + bytes / peak, no channel share
    ci = lu["chip_idx"][op]
    chip = instr & (ci >= 0)
    if chip.any():
        dur[chip] = lu["lat"][ci[chip]] + rec["bytes"][chip] / lu["peak"][ci[chip]]
        ovh[chip] = lu["lat"][ci[chip]]

    # on-chip L1 -> L0 moves
    loc = instr & (lu["local_bpc"][op] > 0)
    if loc.any():
        dur[loc] = rec["bytes"][loc] / lu["local_bpc"][op[loc]] * cyc

    # Mmad: fixed + m*k*n / MACs-per-cycle, with m, n padded to 16 and k to the fractal K0
    mm = instr & (op == int(Op.MMAD))
    if mm.any():
        k0 = lu["k0"][dt[mm]]
        mkn = (np.ceil(rec["m"][mm] / 16.0) * 16.0) * (np.ceil(rec["k"][mm] / k0) * k0) \
            * (np.ceil(rec["n"][mm] / 16.0) * 16.0)
        dur[mm] = (soc.mmad_fixed_cycles + mkn / lu["macs"][dt[mm]]) * cyc
        ovh[mm] = soc.mmad_fixed_cycles * cyc

    # scalar UB access
    sc = instr & ((op == int(Op.GET_VALUE)) | (op == int(Op.SET_VALUE)))
    dur[sc] = soc.scalar_access_cycles * cyc

    # anything else on a pipe: at least the per-call overhead
    other = instr & ~(vec | gm | chip | loc | mm | sc)
    dur[other] = soc.vector_call_overhead_cycles * cyc
    ovh[other] = dur[other]
    return dur, hbm, ovh


# --------------------------------------------------------------------------------------
# the event loop (one core program)
# --------------------------------------------------------------------------------------


def _book(hs: list[float], he: list[float], lo: int, t: float, need: float) -> float:
    """Occupy ``need`` ns of a core's HBM channel at or after ``t``, filling idle gaps
    (bandwidth is shared, not first-come-first-served); return when the last byte is served."""
    i = bisect_right(he, t, lo)
    n = len(hs)
    while True:
        while i < n and hs[i] <= t:
            if he[i] > t:
                t = he[i]
            i += 1
        gap = (hs[i] if i < n else _INF) - t
        use = need if need < gap else gap
        new_end = t + use
        if i > lo and he[i - 1] >= t:
            he[i - 1] = new_end
        else:
            hs.insert(i, t)
            he.insert(i, new_end)
            i += 1
            n += 1
        if i < n and hs[i] <= new_end:
            he[i - 1] = he[i]
            del hs[i], he[i]
            n -= 1
        need -= use
        if need <= 1e-9:
            return new_end
        t = he[i - 1]
