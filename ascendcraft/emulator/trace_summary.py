"""The trace of a timing run as the emulator's child builds it in memory (``acx_summary.h``).

Why: a full trace holds one 64-byte record per API call of every core - 33 M records
(2 GiB) for a pooling kernel at its default shape - although cores with the same tiling
run the same program and a tile loop repeats the same records. The summary keeps

* ``symbols``: each distinct record once, with seq, core and GM address zeroed (the fields
  that do not change its cost), and ``is_gm``: which of them are GM moves;
* ``footprints``: every GM data move whole (core, seq, GM address): the L2 model's input;
* ``programs``: each distinct core program as tokens - a symbol id, or ``LOOP_BEGIN count
  body LOOP_END`` (nested) - and ``core_program``: which program each block runs. Cores are
  grouped by their complete record sequences (every core is emulated and compared; nothing
  is assumed from the tiling).

It is lossless: :meth:`TraceSummary.records` rebuilds exactly the records a full trace holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .trace_format import RECORD_DTYPE

FULL_TRACE_ENV = "ASCENDCRAFT_FULL_SIM"
"""``$ASCENDCRAFT_FULL_SIM=1``: no summary - every record is traced, and the model simulates
every core and every loop iteration (the reference the summary's extrapolation agrees with)."""

TOK_LOOP_BEGIN = 0xFFFFFFFE
TOK_LOOP_END = 0xFFFFFFFF

PROGRAM_DTYPE = np.dtype([("block", "<u4"), ("_pad", "<u4"), ("offset", "<u8"), ("length", "<u8"),
                          ("records", "<u8")])
"""``acx::CoreProgram``: a core's block index and its token range."""


@dataclass(frozen=True)
class Loop:
    """``count`` repetitions of ``body`` (a tuple of symbol ids and Loops)."""

    count: int
    body: tuple
    records: int = 0  # records of one iteration
    gm_moves: int = 0  # GM moves (footprints) of one iteration


def parse_tokens(tokens: np.ndarray, is_gm: np.ndarray) -> tuple:
    """Token stream -> nested tuple of symbol ids and :class:`Loop` (with per-iteration
    record and GM-move counts). ``is_gm[symbol]`` says whether a symbol is a GM move."""
    stack: list[list] = [[]]
    counts: list[int] = []
    it = iter(tokens.tolist())
    for t in it:
        if t == TOK_LOOP_BEGIN:
            counts.append(next(it))
            stack.append([])
        elif t == TOK_LOOP_END:
            body = tuple(stack.pop())
            rec, gm = _sizes(body, is_gm)
            stack[-1].append(Loop(counts.pop(), body, rec, gm))
        else:
            stack[-1].append(t)
    if len(stack) != 1:
        raise ValueError("trace summary: unbalanced loop tokens")
    return tuple(stack[0])


def _sizes(items: tuple, is_gm: np.ndarray) -> tuple[int, int]:
    rec = gm = 0
    for x in items:
        if isinstance(x, Loop):
            rec += x.count * x.records
            gm += x.count * x.gm_moves
        else:
            rec += 1
            gm += int(is_gm[x])
    return rec, gm


def expand(items: tuple) -> np.ndarray:
    """Symbol ids of a parsed program in execution order."""
    parts: list[np.ndarray] = []
    run: list[int] = []
    for x in items:
        if isinstance(x, Loop):
            if run:
                parts.append(np.asarray(run, np.uint32))
                run = []
            parts.append(np.tile(expand(x.body), x.count))
        else:
            run.append(x)
    if run:
        parts.append(np.asarray(run, np.uint32))
    return np.concatenate(parts) if parts else np.zeros(0, np.uint32)


@dataclass
class TraceSummary:
    """What a timing run's trace holds, without repeating it (see the module docstring)."""

    block_dim: int
    symbols: np.ndarray  # RECORD_DTYPE, masked
    footprints: np.ndarray  # RECORD_DTYPE, sorted by (core, seq)
    programs: list[np.ndarray]  # distinct token streams (uint32)
    core_program: np.ndarray  # per block index: index into programs
    core_records: np.ndarray  # per block index: records it issued
    is_gm: np.ndarray  # per symbol: a GM move (one footprint per occurrence)
    _parsed: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_buffers(cls, block_dim: int, symbols: bytes, footprints: bytes, tokens: bytes,
                     programs: bytes) -> TraceSummary:
        """From the child's raw buffers (``acx_summary``); cores with equal tokens share a program."""
        raw = np.frombuffer(symbols, np.uint8).reshape(-1, RECORD_DTYPE.itemsize)
        is_gm = raw[:, 14] != 0  # read before any copy: numpy does not copy padding bytes
        sym = np.zeros(len(raw), RECORD_DTYPE)
        sym.view(np.uint8).reshape(-1, RECORD_DTYPE.itemsize)[:] = raw
        sym.view(np.uint8).reshape(-1, RECORD_DTYPE.itemsize)[:, 14:16] = 0
        fp = np.zeros(len(footprints) // RECORD_DTYPE.itemsize, RECORD_DTYPE)
        fp.view(np.uint8)[:] = np.frombuffer(footprints, np.uint8)
        order = np.lexsort((fp["seq"], fp["core"]))
        if np.any(np.diff(order) < 0):
            fp = fp[order]
        tok = np.frombuffer(tokens, np.uint32)
        table = np.frombuffer(programs, PROGRAM_DTYPE)
        if len(np.unique(table["block"])) != len(table) or (len(table) and int(table["block"].max()) >= block_dim):
            raise ValueError(f"trace summary: {len(table)} core programs do not fit block_dim {block_dim}")
        core_program = np.full(block_dim, -1, np.int64)  # -1: block not run (block_ids)
        core_records = np.zeros(block_dim, np.int64)
        distinct: dict[bytes, int] = {}
        progs: list[np.ndarray] = []
        for row in table:
            t = tok[int(row["offset"]): int(row["offset"]) + int(row["length"])]
            key = t.tobytes()
            pid = distinct.get(key)
            if pid is None:
                pid = distinct[key] = len(progs)
                progs.append(t.copy())
            core_program[int(row["block"])] = pid
            core_records[int(row["block"])] = int(row["records"])
        return cls(block_dim, sym, fp, progs, core_program, core_records, is_gm)

    def __len__(self) -> int:
        """Records the full trace would hold."""
        return self.n_records

    @property
    def n_records(self) -> int:
        return int(self.core_records.sum())

    def parsed(self, program: int) -> tuple:
        """Program ``program`` as nested symbol ids and :class:`Loop` (cached)."""
        if program not in self._parsed:
            self._parsed[program] = parse_tokens(self.programs[program], self.is_gm)
        return self._parsed[program]

    def core_footprints(self, core: int) -> np.ndarray:
        """The GM moves of one core in program order."""
        c = self.footprints["core"]
        a, b = np.searchsorted(c, core, "left"), np.searchsorted(c, core, "right")
        return self.footprints[a:b]

    def records(self, core: int | None = None) -> np.ndarray:
        """The records a full trace holds (of one core, or of every core by block index)."""
        if core is None:
            parts = [self.records(c) for c in range(self.block_dim) if self.core_program[c] >= 0]
            return np.concatenate(parts) if parts else np.zeros(0, RECORD_DTYPE)
        ids = expand(self.parsed(int(self.core_program[core])))
        rec = self.symbols[ids]
        gm = self.is_gm[ids]
        fp = self.core_footprints(core)
        if int(gm.sum()) != len(fp):
            raise ValueError(f"trace summary: core {core} has {int(gm.sum())} GM moves but "
                             f"{len(fp)} footprints")
        rec["seq"] = np.arange(len(rec), dtype=np.uint32)
        rec["core"] = core
        rec["addr"][gm] = fp["addr"]
        return rec

