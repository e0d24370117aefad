"""How each traced API call is costed: its instruction class, its data path, its element size.

The only place these mappings live; the numbers behind each class and path are the SoC's
(``ascendcraft.soc``), read by the timeline.
"""

from __future__ import annotations

from ascendcraft.emulator.trace_format import DType, Op

#: Vector instruction class of each vector op; the class keys ``vector_cycles_per_repeat``.
OP_CLASS: dict[Op, str] = {
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
}

#: Data moves that go through a GM <-> on-chip path (and so through HBM), by path name.
GM_PATH: dict[Op, str] = {
    Op.DATA_COPY_GM2UB: "GM2UB", Op.DATA_COPY_PAD_GM2UB: "GM2UB",
    Op.DATA_COPY_UB2GM: "UB2GM", Op.DATA_COPY_PAD_UB2GM: "UB2GM",
    Op.DATA_COPY_GM2L1: "GM2L1", Op.FIXPIPE_L0C2GM: "L0C2GM",
}

#: On-chip moves costed at a fixed bytes/cycle rate.
LOCAL_PATH: dict[Op, str] = {Op.LOAD_DATA_L1_L0A: "L1L0A", Op.LOAD_DATA_L1_L0B: "L1L0B"}

#: Scalar-pipe API calls.
SCALAR_OPS = (Op.GET_VALUE, Op.SET_VALUE)

#: Element size in bytes per trace dtype.
DTYPE_BYTES: dict[int, int] = {
    DType.NONE: 1, DType.F32: 4, DType.F16: 2, DType.BF16: 2, DType.I32: 4, DType.I8: 1,
    DType.U8: 1, DType.I16: 2, DType.U16: 2, DType.I64: 8, DType.BOOL: 1, DType.U32: 4,
}


def dtype_row(dtype: int) -> str:
    """Row of the per-repeat table used for a dtype: 32/64-bit types use the fp32 row."""
    return "f32" if DTYPE_BYTES.get(int(dtype), 2) >= 4 else "f16"
