// acx_trace.h - binary trace record of the ascendcraft AscendC CPU emulator.
// Mirror of ascendcraft/emulator/trace_format.py (RECORD_DTYPE); keep both in sync.
// Enums are append-only: their values are stored in trace files.
#pragma once
#include <cstddef>
#include <cstdint>

namespace acx {

enum TracePipe : uint8_t { P_S = 0, P_V = 1, P_MTE1 = 2, P_MTE2 = 3, P_MTE3 = 4, P_M = 5, P_FIX = 6, P_ALL = 7 };

// RK_CROSS_SET / RK_CROSS_WAIT (appended): CrossCoreSetFlag (pipe = its pipe, pipe2 = mode, event =
// flag id) and CrossCoreWaitFlag (event = flag id) between the AIC and the AIVs of one AI Core.
enum RecordKind : uint8_t { RK_INSTR = 0, RK_SET_FLAG = 1, RK_WAIT_FLAG = 2, RK_BARRIER = 3, RK_SYNC_ALL = 4,
                            RK_CROSS_SET = 5, RK_CROSS_WAIT = 6 };

enum TraceDType : uint8_t {
    DT_NONE = 0, DT_F32 = 1, DT_F16 = 2, DT_BF16 = 3, DT_I32 = 4, DT_I8 = 5, DT_U8 = 6,
    DT_I16 = 7, DT_U16 = 8, DT_I64 = 9, DT_BOOL = 10, DT_U32 = 11,
    DT_U64 = 12, DT_F64 = 13,  // appended (emulator extension)
};

enum TraceOp : uint16_t {
    OP_NONE = 0,
    OP_DATA_COPY_GM2UB = 1, OP_DATA_COPY_UB2GM = 2, OP_DATA_COPY_PAD_GM2UB = 3,
    OP_DATA_COPY_PAD_UB2GM = 4, OP_DATA_COPY_UB2UB = 5, OP_DATA_COPY_GM2L1 = 6,
    OP_LOAD_DATA_L1_L0A = 7, OP_LOAD_DATA_L1_L0B = 8, OP_MMAD = 9, OP_FIXPIPE_L0C2GM = 10,
    OP_ADD = 20, OP_SUB = 21, OP_MUL = 22, OP_DIV = 23, OP_MAX = 24, OP_MIN = 25,
    OP_ADDS = 30, OP_MULS = 31, OP_MAXS = 32, OP_MINS = 33,
    OP_EXP = 40, OP_LN = 41, OP_ABS = 42, OP_SQRT = 43, OP_RSQRT = 44, OP_RECIPROCAL = 45,
    OP_RELU = 46, OP_LEAKY_RELU = 47, OP_DUPLICATE = 48, OP_CAST = 49, OP_NOT = 50,
    OP_COMPARE = 60, OP_COMPARE_SCALAR = 61, OP_SELECT = 62,
    OP_MUL_ADD_DST = 70, OP_AXPY = 71,
    OP_REDUCE_SUM = 80, OP_REDUCE_MAX = 81, OP_REDUCE_MIN = 82,
    OP_WHOLE_REDUCE_SUM = 83, OP_WHOLE_REDUCE_MAX = 84, OP_WHOLE_REDUCE_MIN = 85,
    OP_BLOCK_REDUCE_SUM = 86, OP_BLOCK_REDUCE_MAX = 87, OP_BLOCK_REDUCE_MIN = 88,
    OP_GET_VALUE = 100, OP_SET_VALUE = 101,
    OP_AND = 110, OP_OR = 111,
    OP_INIT_GLOBAL_MEMORY = 120,  // appended: InitGlobalMemory (vector core fills GM via MTE3)
    OP_GATHER = 130, OP_CREATE_VEC_INDEX = 131,  // appended: vector gather / index generation
    OP_BRCB = 132,  // appended: per-row values broadcast into 32 B blocks
    OP_DATA_COPY_L1_BT = 133,  // appended: DataCopy L1 (C1) -> bias table (C2), MTE1
    OP_DATA_COPY_L1_L0C = 140,  // appended: DataCopy L1 (A1) -> L0C (CO1), MTE1 (split-K combine)
    OP_DATA_COPY_L12GM = 141,  // appended: DataCopy L1 (A1/B1) -> GM, MTE1 (split-K combine)
    OP_FIXPIPE_L0C2L1 = 142,  // appended: Fixpipe L0C -> L1 (Nz), FIX (partial sums held in L1)
};

// trace record flags
enum : uint8_t { TF_GM_ALIGN512 = 1, TF_GM_ALIGN32 = 2, TF_ATOMIC = 4 };

#pragma pack(push, 1)
struct TraceRecord {
    uint32_t seq;      // 0
    uint16_t core;     // 4
    uint8_t pipe;      // 6
    uint8_t kind;      // 7
    uint16_t op;       // 8
    uint8_t dtype;     // 10
    uint8_t dtype2;    // 11
    uint8_t pipe2;     // 12
    uint8_t flags;     // 13
    uint16_t _pad;     // 14
    uint32_t repeats;  // 16
    uint32_t blocks;   // 20
    uint32_t event;    // 24
    uint32_t m;        // 28
    uint32_t n;        // 32
    uint32_t k;        // 36
    uint64_t bytes;    // 40
    uint64_t elems;    // 48
    uint64_t addr;     // 56
};
#pragma pack(pop)
static_assert(sizeof(TraceRecord) == 64, "trace record must be 64 bytes");
static_assert(offsetof(TraceRecord, repeats) == 16 && offsetof(TraceRecord, bytes) == 40 &&
                  offsetof(TraceRecord, addr) == 56,
              "trace record layout");

// Event keys: queue events use (queue_id << 8) | slot with queue ids 1..65535 (per core, in
// InitBuffer order); explicit SetFlag/WaitFlag use EXPLICIT_EVENT_BASE | event_id.
static constexpr uint32_t EXPLICIT_EVENT_BASE = 0x01000000u;

}  // namespace acx
