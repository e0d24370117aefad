"""Synthetic traces with exactly the event pattern the emulator emits for standard AscendC
kernels, so the model can be tested (and benchmarked at full size) without the emulator.

Queue protocol (per tile, queue depth 1 or 2, slot = tile % depth):

* VECIN queue q:  AllocTensor of a reused slot -> WAIT(MTE2 waits V); DataCopy GM->UB on
  MTE2; EnQue -> SET(MTE2->V); DeQue -> WAIT(V waits MTE2); FreeTensor -> SET(V->MTE2)
* VECOUT queue:   Alloc of a reused slot -> WAIT(V waits MTE3); EnQue -> SET(V->MTE3);
  DeQue -> WAIT(MTE3 waits V); DataCopy UB->GM on MTE3; FreeTensor -> SET(MTE3->V)

Event key = (queue id << 8) | slot.
"""

from __future__ import annotations

import math

import numpy as np

from ascendcraft.emulator.trace_format import RECORD_DTYPE, DType, Op, Pipe, RecordKind

from .op_costs import DTYPE_BYTES


def gm_flags(addr: int) -> int:
    """Alignment flags of a GM byte address: bit0 512 B aligned, bit1 32 B aligned."""
    return (1 if addr % 512 == 0 else 0) | (2 if addr % 32 == 0 else 0)


class TraceBuilder:
    """Append records of one core in program order; ``array()`` gives the structured trace."""

    def __init__(self, core: int = 0) -> None:
        self.core = core
        self.rows: list[tuple] = []

    def _add(self, pipe: int, kind: int, op: int = 0, dtype: int = 0, pipe2: int = 0,
             flags: int = 0, repeats: int = 0, blocks: int = 0, event: int = 0, m: int = 0,
             n: int = 0, k: int = 0, nbytes: int = 0, elems: int = 0, addr: int = 0,
             dtype2: int = 0) -> None:
        self.rows.append((len(self.rows), self.core, pipe, kind, op, dtype, dtype2, pipe2, flags,
                          repeats, blocks, event, m, n, k, nbytes, elems, addr))

    def vec(self, op: Op, dtype: DType, elems: int, repeats: int | None = None) -> None:
        """A vector API call in count form over ``elems`` elements."""
        nb = elems * DTYPE_BYTES[int(dtype)]
        reps = math.ceil(nb / 256) if repeats is None else repeats
        self._add(Pipe.V, RecordKind.INSTR, op, dtype, repeats=reps, nbytes=nb, elems=elems)

    def copy_in(self, nbytes: int, addr: int, dtype: DType = DType.F32,
                op: Op = Op.DATA_COPY_GM2UB, blocks: int = 1) -> None:
        """GM -> UB data move on MTE2."""
        self._add(Pipe.MTE2, RecordKind.INSTR, op, dtype, flags=gm_flags(addr), blocks=blocks,
                  nbytes=nbytes, elems=nbytes // DTYPE_BYTES[int(dtype)], addr=addr)

    def copy_out(self, nbytes: int, addr: int, dtype: DType = DType.F32,
                 op: Op = Op.DATA_COPY_UB2GM, blocks: int = 1) -> None:
        """UB -> GM data move on MTE3."""
        self._add(Pipe.MTE3, RecordKind.INSTR, op, dtype, flags=gm_flags(addr), blocks=blocks,
                  nbytes=nbytes, elems=nbytes // DTYPE_BYTES[int(dtype)], addr=addr)

    def mmad(self, m: int, k: int, n: int, dtype: DType = DType.F16) -> None:
        """A cube Mmad call."""
        self._add(Pipe.M, RecordKind.INSTR, Op.MMAD, dtype, m=m, n=n, k=k)

    def get_value(self) -> None:
        """A scalar GetValue (reads UB)."""
        self._add(Pipe.S, RecordKind.INSTR, Op.GET_VALUE, DType.F32, elems=1)

    def set_flag(self, src: Pipe, dst: Pipe, key: int) -> None:
        self._add(src, RecordKind.SET_FLAG, pipe2=dst, event=key)

    def wait_flag(self, waiting: Pipe, src: Pipe, key: int) -> None:
        self._add(waiting, RecordKind.WAIT_FLAG, pipe2=src, event=key)

    def barrier(self, pipe: Pipe = Pipe.ALL) -> None:
        self._add(pipe, RecordKind.BARRIER)

    def sync_all(self) -> None:
        self._add(Pipe.ALL, RecordKind.SYNC_ALL)

    def array(self) -> np.ndarray:
        return np.array(self.rows, dtype=RECORD_DTYPE)


def _core_program(b: TraceBuilder, base_elem: int, n_elems: int, tile: int, depth: int,
                  n_inputs: int, ops: list[Op], dtype: DType) -> None:
    es = DTYPE_BYTES[int(dtype)]
    out_q = n_inputs
    ntiles = math.ceil(n_elems / tile) if n_elems > 0 else 0
    for i in range(ntiles):
        slot = i % depth
        cnt = min(tile, n_elems - i * tile)
        nb = cnt * es
        addr = (base_elem + i * tile) * es
        # CopyIn
        for q in range(n_inputs):
            if i >= depth:
                b.wait_flag(Pipe.MTE2, Pipe.V, (q << 8) | slot)
        for _ in range(n_inputs):
            b.copy_in(nb, addr, dtype)
        for q in range(n_inputs):
            b.set_flag(Pipe.MTE2, Pipe.V, (q << 8) | slot)
        # Compute
        for q in range(n_inputs):
            b.wait_flag(Pipe.V, Pipe.MTE2, (q << 8) | slot)
        if i >= depth:
            b.wait_flag(Pipe.V, Pipe.MTE3, (out_q << 8) | slot)
        for op in ops:
            b.vec(op, dtype, cnt)
        b.set_flag(Pipe.V, Pipe.MTE3, (out_q << 8) | slot)
        for q in range(n_inputs):
            b.set_flag(Pipe.V, Pipe.MTE2, (q << 8) | slot)
        # CopyOut
        b.wait_flag(Pipe.MTE3, Pipe.V, (out_q << 8) | slot)
        b.copy_out(nb, addr, dtype)
        b.set_flag(Pipe.MTE3, Pipe.V, (out_q << 8) | slot)


def elementwise_trace(n_elems: int, tile: int, depth: int = 2, block_dim: int = 1,
                      n_inputs: int = 2, ops: list[Op] | Op = Op.ADD,
                      dtype: DType = DType.F32, core_align_elems: int = 128) -> np.ndarray:
    """Trace of a tiled elementwise kernel (CopyIn / Compute / CopyOut per tile).

    Work is split in contiguous per-core ranges rounded up to ``core_align_elems`` (so each
    core's GM range starts 512 B aligned for fp32); the last core takes the remainder.
    Identical cores are generated once and replicated with numpy (fast at 2^31 elements)."""
    if depth not in (1, 2):
        raise ValueError("queue depth must be 1 or 2")
    ops = [ops] if isinstance(ops, Op) else list(ops)
    per = math.ceil(n_elems / block_dim / core_align_elems) * core_align_elems
    lens = [max(0, min(per, n_elems - c * per)) for c in range(block_dim)]
    es = DTYPE_BYTES[int(dtype)]
    cache: dict[int, np.ndarray] = {}
    parts = []
    for c, ln in enumerate(lens):
        if ln not in cache:
            b = TraceBuilder(0)
            _core_program(b, 0, ln, tile, depth, n_inputs, ops, dtype)
            cache[ln] = b.array()
        a = cache[ln].copy()
        a["core"] = c
        gm = a["kind"] == int(RecordKind.INSTR)
        gm &= np.isin(a["op"], [int(Op.DATA_COPY_GM2UB), int(Op.DATA_COPY_UB2GM)])
        off = c * per * es
        if off:
            a["addr"][gm] += off
            a["flags"][gm] = (np.where(a["addr"][gm] % 512 == 0, 1, 0)
                              | np.where(a["addr"][gm] % 32 == 0, 2, 0))
        parts.append(a)
    return concat(parts)


def concat(parts: list[np.ndarray]) -> np.ndarray:
    """Concatenate traces keeping RECORD_DTYPE (np.concatenate drops its padding bytes,
    silently turning the 64-byte record into a packed 62-byte one)."""
    out = np.zeros(sum(len(p) for p in parts), RECORD_DTYPE)
    i = 0
    for p in parts:
        out[i:i + len(p)] = p
        i += len(p)
    return out


def single_instr_trace(op: Op, dtype: DType, repeats: int) -> np.ndarray:
    """One vector instruction of ``repeats`` 256 B repeats on one core (table checks)."""
    b = TraceBuilder(0)
    per = 256 // DTYPE_BYTES[int(dtype)]
    b.vec(op, dtype, repeats * per, repeats=repeats)
    return b.array()
