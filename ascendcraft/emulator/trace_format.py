"""Binary layout of the emulator's per-call trace: the contract between the C++ emulator
(which writes it) and the performance model (which reads it).

One record is 64 bytes, little-endian, naturally aligned. The C++ side mirrors this in
``include/acx_trace.h``; ``tests/test_trace_format.py`` checks that both agree.
Keep the enums append-only: their numeric values are stored in trace files.
"""

from __future__ import annotations

import enum

import numpy as np

RECORD_DTYPE = np.dtype(
    {
        "names": [
            "seq", "core", "pipe", "kind", "op", "dtype", "dtype2", "pipe2", "flags",
            "repeats", "blocks", "event", "m", "n", "k", "bytes", "elems", "addr",
        ],
        "formats": [
            "<u4", "<u2", "u1", "u1", "<u2", "u1", "u1", "u1", "u1",
            "<u4", "<u4", "<u4", "<u4", "<u4", "<u4", "<u8", "<u8", "<u8",
        ],
        "offsets": [0, 4, 6, 7, 8, 10, 11, 12, 13, 16, 20, 24, 28, 32, 36, 40, 48, 56],
        "itemsize": 64,
    }
)
"""Fields:

seq      call index within its core (program order)
core     block index that issued the call
pipe     pipe the record executes on (for SET_FLAG: the source pipe; WAIT_FLAG: the
         waiting pipe; BARRIER: the pipe barred, ALL for PipeBarrier<PIPE_ALL>)
kind     RecordKind
op       Op (API call) for INSTR records; 0 otherwise
dtype    DType of the operands (source dtype for Cast)
dtype2   DType of the destination for Cast; 0 otherwise
pipe2    for SET_FLAG: the destination pipe; for WAIT_FLAG: the source pipe; for GM data
         moves (INSTR): 1 + index of the GM kernel argument (0: unknown)
flags    bit 0: GM address 512 B aligned; bit 1: GM address 32 B aligned;
         bit 2: atomic accumulation active for this GM write
repeats  vector repeats (256 B each) the call processes
blocks   number of bursts (blockCount) of a data move; 1 for contiguous moves; LoadData:
         number of 512 B fractals
event    synchronisation key for SET_FLAG / WAIT_FLAG: (queue or event id << 8) | slot
m, n, k  Mmad: m, n, k; Fixpipe: m = mSize, n = nSize; GM data moves with several
         bursts: k = GM byte distance between burst starts (0: contiguous); 0 otherwise
bytes    bytes moved (data moves) or bytes of the destination operand (vector ops)
elems    elements processed (count)
addr     GM byte offset of a data move within its GM buffer
"""


class Pipe(enum.IntEnum):
    S = 0
    V = 1
    MTE1 = 2
    MTE2 = 3
    MTE3 = 4
    M = 5
    FIX = 6
    ALL = 7


class RecordKind(enum.IntEnum):
    INSTR = 0
    SET_FLAG = 1
    WAIT_FLAG = 2
    BARRIER = 3
    SYNC_ALL = 4
    CROSS_SET = 5  # CrossCoreSetFlag: pipe = its pipe, pipe2 = mode, event = flag id
    CROSS_WAIT = 6  # CrossCoreWaitFlag: event = flag id


class DType(enum.IntEnum):
    NONE = 0
    F32 = 1
    F16 = 2
    BF16 = 3
    I32 = 4
    I8 = 5
    U8 = 6
    I16 = 7
    U16 = 8
    I64 = 9
    BOOL = 10
    U32 = 11
    U64 = 12
    F64 = 13


class Op(enum.IntEnum):
    NONE = 0
    # data movement
    DATA_COPY_GM2UB = 1
    DATA_COPY_UB2GM = 2
    DATA_COPY_PAD_GM2UB = 3
    DATA_COPY_PAD_UB2GM = 4
    DATA_COPY_UB2UB = 5
    DATA_COPY_GM2L1 = 6
    LOAD_DATA_L1_L0A = 7
    LOAD_DATA_L1_L0B = 8
    MMAD = 9
    FIXPIPE_L0C2GM = 10
    # two-input vector
    ADD = 20
    SUB = 21
    MUL = 22
    DIV = 23
    MAX = 24
    MIN = 25
    # tensor-scalar vector
    ADDS = 30
    MULS = 31
    MAXS = 32
    MINS = 33
    # one-input vector
    EXP = 40
    LN = 41
    ABS = 42
    SQRT = 43
    RSQRT = 44
    RECIPROCAL = 45
    RELU = 46
    LEAKY_RELU = 47
    DUPLICATE = 48
    CAST = 49
    NOT = 50
    # compare / select
    COMPARE = 60
    COMPARE_SCALAR = 61
    SELECT = 62
    # fused
    MUL_ADD_DST = 70
    AXPY = 71
    # reductions
    REDUCE_SUM = 80
    REDUCE_MAX = 81
    REDUCE_MIN = 82
    WHOLE_REDUCE_SUM = 83
    WHOLE_REDUCE_MAX = 84
    WHOLE_REDUCE_MIN = 85
    BLOCK_REDUCE_SUM = 86
    BLOCK_REDUCE_MAX = 87
    BLOCK_REDUCE_MIN = 88
    # scalar pipe
    GET_VALUE = 100
    SET_VALUE = 101
    # bitwise / misc vector
    AND = 110
    OR = 111
    # emulator extensions
    INIT_GLOBAL_MEMORY = 120
    # gather / index generation
    GATHER = 130
    CREATE_VEC_INDEX = 131
    # per-row values broadcast into 32 B blocks
    BRCB = 132
    # L1 (C1) -> bias table (C2), MTE1: the bias of a cube Mmad
    DATA_COPY_L1_BT = 133
    # L1 (A1) -> L0C (CO1), MTE1: a fp32 matrix back into the accumulator (split-K combine)
    DATA_COPY_L1_L0C = 140
    # L1 (A1/B1) -> GM, MTE1 (asc_copy_l12gm): the split-K combine's atomic adds
    DATA_COPY_L12GM = 141
    # L0C -> L1 (Nz), FIX (asc_copy_l0c2l1): partial sums held in L1 across K stages
    FIXPIPE_L0C2L1 = 142


def read_trace(path: str) -> np.ndarray:
    """Load a trace file written by the emulator as a structured array."""
    return np.fromfile(path, dtype=RECORD_DTYPE)


#: Instruction class of each vector op, the key of a SoC's ``vector_cycles_per_repeat``: the
#: op identity carries its cost class, so a new vector API call is one ``Op`` member plus one
#: entry here (the performance model reads this table instead of keeping its own).
OP_INSTR_CLASS: dict[Op, str] = {
    Op.ADD: "two_input", Op.SUB: "two_input", Op.MUL: "two_input",
    Op.MAX: "two_input", Op.MIN: "two_input",
    Op.COMPARE: "two_input", Op.SELECT: "two_input", Op.AND: "two_input", Op.OR: "two_input",
    Op.DIV: "div",
    Op.ADDS: "one_input", Op.MULS: "one_input", Op.MAXS: "one_input", Op.MINS: "one_input",
    Op.COMPARE_SCALAR: "one_input",
    Op.ABS: "one_input", Op.RSQRT: "one_input", Op.RECIPROCAL: "one_input",
    Op.RELU: "one_input", Op.LEAKY_RELU: "one_input", Op.DUPLICATE: "one_input",
    Op.CAST: "one_input", Op.NOT: "one_input",
    Op.EXP: "transcendental", Op.LN: "transcendental", Op.SQRT: "transcendental",
    Op.MUL_ADD_DST: "fma", Op.AXPY: "fma",
    # ReduceX (high-level, multi-pass) approximated by the whole-repeat reduction cost.
    Op.REDUCE_SUM: "whole_reduce_sum", Op.WHOLE_REDUCE_SUM: "whole_reduce_sum",
    Op.REDUCE_MAX: "whole_reduce_maxmin", Op.REDUCE_MIN: "whole_reduce_maxmin",
    Op.WHOLE_REDUCE_MAX: "whole_reduce_maxmin", Op.WHOLE_REDUCE_MIN: "whole_reduce_maxmin",
    Op.BLOCK_REDUCE_SUM: "block_reduce", Op.BLOCK_REDUCE_MAX: "block_reduce",
    Op.BLOCK_REDUCE_MIN: "block_reduce",
    Op.DATA_COPY_UB2UB: "copy",
    Op.GATHER: "gather", Op.CREATE_VEC_INDEX: "one_input",
    # Brcb writes 8 blocks (256 B) a repeat, like Duplicate
    Op.BRCB: "one_input",
}
