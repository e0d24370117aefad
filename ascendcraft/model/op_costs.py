"""How each traced API call is costed: its instruction class, its data path, its element size.

The only place these mappings live; the numbers behind each class and path are the SoC's
(``ascendcraft.soc``), read by the timeline.
"""

from __future__ import annotations

from ascendcraft.emulator.trace_format import OP_INSTR_CLASS, DType, Op

#: Vector instruction class of each vector op (the key of ``vector_cycles_per_repeat``): the
#: trace format's table, so a new vector API call is costed where its ``Op`` is declared.
OP_CLASS: dict[Op, str] = OP_INSTR_CLASS

#: Data moves that go through a GM <-> on-chip path (and so through HBM), by path name.
GM_PATH: dict[Op, str] = {
    Op.DATA_COPY_GM2UB: "GM2UB", Op.DATA_COPY_PAD_GM2UB: "GM2UB",
    Op.DATA_COPY_UB2GM: "UB2GM", Op.DATA_COPY_PAD_UB2GM: "UB2GM",
    Op.DATA_COPY_GM2L1: "GM2L1", Op.FIXPIPE_L0C2GM: "L0C2GM",
    # L1 -> GM (asc_copy_l12gm, PIPE_MTE1, Atlas A2): no published rate; costed like UB -> GM
    # (the other on-chip -> GM copy) [assumption]
    Op.DATA_COPY_L12GM: "UB2GM",
}

#: On-chip moves costed at a fixed bytes/cycle rate.
LOCAL_PATH: dict[Op, str] = {Op.LOAD_DATA_L1_L0A: "L1L0A", Op.LOAD_DATA_L1_L0B: "L1L0B",
                             # L1 -> bias table is an MTE1 move too (copy_cbuf_to_bt, PIPE_MTE1, Huawei CCE
                             # intrinsic reference cceapi_0097); no rate is published: costed at the slower
                             # of the two L1 -> L0 rates [assumption]
                             Op.DATA_COPY_L1_BT: "L1L0B",
                             # L1 -> L0C (asc_copy_l12l0c, PIPE_MTE1, supported on Atlas A2: asc-devkit
                             # docs/zh/api/SIMD-API/C-API/cube_datamove/asc_copy_l12l0c.md); no rate is
                             # published: the same slower L1 -> L0 rate [assumption]
                             Op.DATA_COPY_L1_L0C: "L1L0B"}

#: On-chip moves costed on a GM path's latency + bytes / peak, without the HBM channel.
#: L0C -> L1 (asc_copy_l0c2l1, PIPE_FIX, supported on Atlas A2: asc-devkit docs/zh/api/SIMD-API/C-API/
#: cube_datamove/asc_copy_l0c2l1): no rate is published; costed like the Fixpipe's own L0C -> GM
#: path (the measured Fixpipe rate), but nothing crosses the GM channel [assumption]
ON_CHIP_AT_PATH: dict[Op, str] = {Op.FIXPIPE_L0C2L1: "L0C2GM"}

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
