// acx_ops.h - data movement and vector instructions of the emulator (included by kernel_operator.h).
#pragma once

namespace acx {
using AscendC::GlobalTensor;
using AscendC::LocalTensor;
using AscendC::MemOf;

inline void CheckCount(const char* api, int64_t count) {
    if (count < 0) Fail("%s: count=%lld is negative", api, (long long)count);
}
inline uint64_t Repeats(uint64_t bytes) { return CeilDivU(bytes, 256); }

// A LocalTensor operand of a vector instruction or a copy: initialised, in UB (unless any_mem),
// 32 B aligned (unless align == 0: element alignment), and `bytes` within the tensor.
template <class T>
inline void Operand(const char* api, const char* role, const LocalTensor<T>& t, uint64_t bytes, uint32_t align = 32, bool ub_only = true) {
    if (!t.valid_) Fail("%s: %s LocalTensor is not initialised (use AllocTensor/DeQue/TBuf::Get first)", api, role);
    if (ub_only && MemOf(t.pos_) != MEM_UB)
        Fail("%s: %s is at position %s; this API needs a UB tensor (VECIN/VECOUT/VECCALC)", api, role, AscendC::PosName(t.pos_));
    if (align && t.off_ % align)
        Fail("%s: %s %s address %u is not %u B aligned", api, role, MemName(MemOf(t.pos_)), t.off_, align);
    if (bytes > t.len_)
        Fail("%s: out-of-bounds local access: %s needs %llu B but the tensor has %u B (%u %s elements)", api, role,
             (unsigned long long)bytes, t.len_, t.len_ / (uint32_t)sizeof(T), DT<T>::name);
}

template <class T>
inline void GmStore(T* dst, const T* src, uint64_t n, uint8_t atomic) {
    if (atomic == ATOMIC_NONE) { std::memcpy((void*)dst, (const void*)src, n * sizeof(T)); return; }
    for (uint64_t i = 0; i < n; i++) {
        auto a = Ld(dst[i]), b = Ld(src[i]);
        auto r = atomic == ATOMIC_ADD ? a + b : atomic == ATOMIC_MAX ? (a > b ? a : b) : (a < b ? a : b);
        dst[i] = St<T>(r);
    }
}
}  // namespace acx

namespace AscendC {

struct DataCopyParams {
    uint16_t blockCount = 1, blockLen = 0, srcStride = 0, dstStride = 0;
    DataCopyParams() = default;
    template <class A, class B, class C = int, class D = int>
    DataCopyParams(A count, B len, C srcS = 0, D dstS = 0)
        : blockCount((uint16_t)count), blockLen((uint16_t)len), srcStride((uint16_t)srcS), dstStride((uint16_t)dstS) {}
};
struct DataCopyExtParams {
    uint16_t blockCount = 1;
    uint32_t blockLen = 0, srcStride = 0, dstStride = 0, rsv = 0;
    DataCopyExtParams() = default;
    template <class A, class B, class C = int, class D = int, class E = int>
    DataCopyExtParams(A count, B len, C srcS = 0, D dstS = 0, E r = 0)
        : blockCount((uint16_t)count), blockLen((uint32_t)len), srcStride((uint32_t)srcS), dstStride((uint32_t)dstS), rsv((uint32_t)r) {}
};
template <class T>
struct DataCopyPadExtParams {
    bool isPad = false;
    uint8_t leftPadding = 0, rightPadding = 0;
    T paddingValue = T(0);
    DataCopyPadExtParams() = default;
    template <class A, class B, class C, class D>
    DataCopyPadExtParams(A pad, B l, C r, D v) : isPad((bool)pad), leftPadding((uint8_t)l), rightPadding((uint8_t)r), paddingValue((T)v) {}
};
struct DataCopyPadParams {
    bool isPad = false;
    uint8_t leftPadding = 0, rightPadding = 0;
    uint64_t paddingValue = 0;
    DataCopyPadParams() = default;
    template <class A, class B, class C, class D>
    DataCopyPadParams(A pad, B l, C r, D v) : isPad((bool)pad), leftPadding((uint8_t)l), rightPadding((uint8_t)r), paddingValue((uint64_t)v) {}
};

// ---------------------------------------------------------------- DataCopy (32 B blocks)
template <class T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p) {
    bool l1 = MemOf(dst.pos_) == acx::MEM_L1;
    const char* api = l1 ? "DataCopy(GM->L1)" : "DataCopy(GM->UB)";
    if (p.blockCount < 1 || p.blockCount > 4095) acx::Fail("%s: blockCount=%u not in [1, 4095]", api, p.blockCount);
    if (p.blockLen < 1) acx::Fail("%s: blockLen=0 (unit: 32 B blocks)", api);
    uint64_t burst = (uint64_t)p.blockLen * 32;
    uint64_t dext = ((uint64_t)(p.blockCount - 1) * (p.blockLen + p.dstStride)) * 32 + burst;
    uint64_t sext = ((uint64_t)(p.blockCount - 1) * (p.blockLen + p.srcStride)) * 32 + burst;
    acx::Operand(api, "dst", dst, dext, 32, false);
    uint64_t off = acx::CheckGm(src.gm_, src.Addr(), sext, api);
    acx::EmitGmMove(acx::P_MTE2, l1 ? acx::OP_DATA_COPY_GM2L1 : acx::OP_DATA_COPY_GM2UB, acx::DT<T>::id, p.blockCount,
                    burst * p.blockCount, burst * p.blockCount / sizeof(T), src.gm_, off,
                    (uint64_t)(p.blockLen + p.srcStride) * 32,
                    acx::GmAlignFlags2(off, (uint64_t)(p.blockLen + p.srcStride) * 32, p.blockCount));
    if (acx::TraceOnly()) return;
    for (uint32_t i = 0; i < p.blockCount; i++)
        std::memcpy((uint8_t*)dst.ptr() + (uint64_t)i * (p.blockLen + p.dstStride) * 32,
                    (const uint8_t*)src.ptr_ + (uint64_t)i * (p.blockLen + p.srcStride) * 32, burst);
}
template <class T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t count) {
    bool l1 = MemOf(dst.pos_) == acx::MEM_L1;
    const char* api = l1 ? "DataCopy(GM->L1)" : "DataCopy(GM->UB)";
    uint64_t bytes = (uint64_t)count * sizeof(T);
    if (count == 0) acx::Fail("%s: count=0", api);
    if (bytes % 32)
        acx::Fail("%s: length %llu B is not a multiple of 32 B (count=%u, %s); use DataCopyPad", api, (unsigned long long)bytes, count, acx::DT<T>::name);
    if (bytes / 32 > 65535) acx::Fail("%s: length %llu B exceeds 65535 blocks of 32 B", api, (unsigned long long)bytes);
    acx::Operand(api, "dst", dst, bytes, 32, false);
    uint64_t off = acx::CheckGm(src.gm_, src.Addr(), bytes, api);
    acx::EmitGmMove(acx::P_MTE2, l1 ? acx::OP_DATA_COPY_GM2L1 : acx::OP_DATA_COPY_GM2UB, acx::DT<T>::id, 1, bytes, count, src.gm_, off, 0,
                    acx::GmAlignFlags(off));
    if (!acx::TraceOnly()) std::memcpy((void*)dst.ptr(), (const void*)src.ptr_, bytes);
}
template <class T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p) {
    if (MemOf(src.pos_) == acx::MEM_L1) return CopyL1ToGm(dst, src, p);  // A1/B1 -> GM (acx_cube.h)
    const char* api = "DataCopy(UB->GM)";
    if (p.blockCount < 1 || p.blockCount > 4095) acx::Fail("%s: blockCount=%u not in [1, 4095]", api, p.blockCount);
    if (p.blockLen < 1) acx::Fail("%s: blockLen=0 (unit: 32 B blocks)", api);
    uint64_t burst = (uint64_t)p.blockLen * 32;
    uint64_t sext = ((uint64_t)(p.blockCount - 1) * (p.blockLen + p.srcStride)) * 32 + burst;
    uint64_t dext = ((uint64_t)(p.blockCount - 1) * (p.blockLen + p.dstStride)) * 32 + burst;
    acx::Operand(api, "src", src, sext);
    uint64_t off = acx::CheckGm(dst.gm_, dst.Addr(), dext, api);
    uint8_t at = acx::Cur().atomic;
    acx::EmitGmMove(acx::P_MTE3, acx::OP_DATA_COPY_UB2GM, acx::DT<T>::id, p.blockCount, burst * p.blockCount,
                    burst * p.blockCount / sizeof(T), dst.gm_, off, (uint64_t)(p.blockLen + p.dstStride) * 32,
                    acx::GmAlignFlags2(off, (uint64_t)(p.blockLen + p.dstStride) * 32, p.blockCount) |
                        (at ? acx::TF_ATOMIC : 0));
    if (acx::TraceOnly()) return;
    for (uint32_t i = 0; i < p.blockCount; i++)
        acx::GmStore((T*)((uint8_t*)dst.ptr_ + (uint64_t)i * (p.blockLen + p.dstStride) * 32),
                     (const T*)((const uint8_t*)src.ptr() + (uint64_t)i * (p.blockLen + p.srcStride) * 32), burst / sizeof(T), at);
}
template <class T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, uint32_t count) {
    const char* api = "DataCopy(UB->GM)";
    uint64_t bytes = (uint64_t)count * sizeof(T);
    if (count == 0) acx::Fail("%s: count=0", api);
    if (bytes % 32)
        acx::Fail("%s: length %llu B is not a multiple of 32 B (count=%u, %s); use DataCopyPad", api, (unsigned long long)bytes, count, acx::DT<T>::name);
    acx::Operand(api, "src", src, bytes);
    uint64_t off = acx::CheckGm(dst.gm_, dst.Addr(), bytes, api);
    uint8_t at = acx::Cur().atomic;
    acx::EmitGmMove(acx::P_MTE3, acx::OP_DATA_COPY_UB2GM, acx::DT<T>::id, 1, bytes, count, dst.gm_, off, 0,
                    acx::GmAlignFlags(off) | (at ? acx::TF_ATOMIC : 0));
    if (!acx::TraceOnly()) acx::GmStore(dst.ptr_, src.ptr(), count, at);
}
template <class T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p) {
    if (MemOf(dst.pos_) == acx::MEM_BT) return CopyL1ToBiasTable(dst, src, p);  // C1 -> C2 (acx_cube.h)
    if (MemOf(dst.pos_) == acx::MEM_L0C) return CopyL1ToL0C(dst, src, p);  // A1 -> CO1 (acx_cube.h)
    const char* api = "DataCopy(UB->UB)";
    if (p.blockCount < 1 || p.blockCount > 4095) acx::Fail("%s: blockCount=%u not in [1, 4095]", api, p.blockCount);
    if (p.blockLen < 1) acx::Fail("%s: blockLen=0 (unit: 32 B blocks)", api);
    uint64_t burst = (uint64_t)p.blockLen * 32;
    uint64_t sext = ((uint64_t)(p.blockCount - 1) * (p.blockLen + p.srcStride)) * 32 + burst;
    uint64_t dext = ((uint64_t)(p.blockCount - 1) * (p.blockLen + p.dstStride)) * 32 + burst;
    acx::Operand(api, "src", src, sext);
    acx::Operand(api, "dst", dst, dext);
    acx::EmitInstr(acx::P_V, acx::OP_DATA_COPY_UB2UB, acx::DT<T>::id, 0, acx::Repeats(burst * p.blockCount), p.blockCount,
                   burst * p.blockCount, burst * p.blockCount / sizeof(T));
    if (acx::TraceOnly()) return;
    for (uint32_t i = 0; i < p.blockCount; i++)
        std::memmove((uint8_t*)dst.ptr() + (uint64_t)i * (p.blockLen + p.dstStride) * 32,
                     (const uint8_t*)src.ptr() + (uint64_t)i * (p.blockLen + p.srcStride) * 32, burst);
}
template <class T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint32_t count) {
    const char* api = "DataCopy(UB->UB)";
    uint64_t bytes = (uint64_t)count * sizeof(T);
    if (count == 0) acx::Fail("%s: count=0", api);
    if (bytes % 32)
        acx::Fail("%s: length %llu B is not a multiple of 32 B (count=%u, %s)", api, (unsigned long long)bytes, count, acx::DT<T>::name);
    acx::Operand(api, "src", src, bytes);
    acx::Operand(api, "dst", dst, bytes);
    acx::EmitInstr(acx::P_V, acx::OP_DATA_COPY_UB2UB, acx::DT<T>::id, 0, acx::Repeats(bytes), 1, bytes, count);
    if (!acx::TraceOnly()) std::memmove((void*)dst.ptr(), (const void*)src.ptr(), bytes);
}

// ---------------------------------------------------------------- DataCopyPad (byte lengths)
template <class T>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& p,
                        const DataCopyPadExtParams<T>& pad = DataCopyPadExtParams<T>()) {
    const char* api = "DataCopyPad(GM->UB)";
    const uint32_t sz = sizeof(T);
    if (p.blockCount < 1 || p.blockCount > 4095) acx::Fail("%s: blockCount=%u not in [1, 4095]", api, p.blockCount);
    if (p.blockLen < 1 || p.blockLen > 2097151) acx::Fail("%s: blockLen=%u B not in [1, 2097151]", api, p.blockLen);
    if (p.blockLen % sz) acx::Fail("%s: blockLen=%u B is not a multiple of sizeof(%s)=%u", api, p.blockLen, acx::DT<T>::name, sz);
    if (pad.leftPadding * sz > 32 || pad.rightPadding * sz > 32)
        acx::Fail("%s: leftPadding=%u / rightPadding=%u elements exceed 32 B", api, pad.leftPadding, pad.rightPadding);
    uint64_t burst_ub = acx::Align32(p.blockLen + (uint64_t)(pad.leftPadding + pad.rightPadding) * sz);
    uint64_t dstep = burst_ub + (uint64_t)p.dstStride * 32;   // UB stride unit: 32 B blocks
    uint64_t sstep = (uint64_t)p.blockLen + p.srcStride;      // GM stride unit: bytes
    uint64_t dext = (uint64_t)(p.blockCount - 1) * dstep + burst_ub;
    uint64_t sext = (uint64_t)(p.blockCount - 1) * sstep + p.blockLen;
    acx::Operand(api, "dst", dst, dext, 32, false);
    uint64_t off = acx::CheckGm(src.gm_, src.Addr(), sext, api);
    uint64_t payload = (uint64_t)p.blockCount * p.blockLen;
    acx::EmitGmMove(acx::P_MTE2, acx::OP_DATA_COPY_PAD_GM2UB, acx::DT<T>::id, p.blockCount, payload, payload / sz, src.gm_, off, sstep,
                    acx::GmAlignFlags2(off, sstep, p.blockCount));
    if (acx::TraceOnly()) return;
    for (uint32_t i = 0; i < p.blockCount; i++) {
        uint8_t* d = (uint8_t*)dst.ptr() + i * dstep;
        if (pad.isPad)
            for (uint64_t j = 0; j < burst_ub / sz; j++) std::memcpy(d + j * sz, &pad.paddingValue, sz);
        std::memcpy(d + (uint64_t)pad.leftPadding * sz, (const uint8_t*)src.ptr_ + i * sstep, p.blockLen);
    }
}
template <class T>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& p) {
    const char* api = "DataCopyPad(UB->GM)";
    const uint32_t sz = sizeof(T);
    if (p.blockCount < 1 || p.blockCount > 4095) acx::Fail("%s: blockCount=%u not in [1, 4095]", api, p.blockCount);
    if (p.blockLen < 1 || p.blockLen > 2097151) acx::Fail("%s: blockLen=%u B not in [1, 2097151]", api, p.blockLen);
    if (p.blockLen % sz) acx::Fail("%s: blockLen=%u B is not a multiple of sizeof(%s)=%u", api, p.blockLen, acx::DT<T>::name, sz);
    uint64_t sstep = acx::Align32(p.blockLen) + (uint64_t)p.srcStride * 32;  // UB stride unit: 32 B blocks
    uint64_t dstep = (uint64_t)p.blockLen + p.dstStride;                     // GM stride unit: bytes
    uint64_t sext = (uint64_t)(p.blockCount - 1) * sstep + p.blockLen;
    uint64_t dext = (uint64_t)(p.blockCount - 1) * dstep + p.blockLen;
    acx::Operand(api, "src", src, sext);
    uint64_t off = acx::CheckGm(dst.gm_, dst.Addr(), dext, api);
    uint8_t at = acx::Cur().atomic;
    uint64_t payload = (uint64_t)p.blockCount * p.blockLen;
    acx::EmitGmMove(acx::P_MTE3, acx::OP_DATA_COPY_PAD_UB2GM, acx::DT<T>::id, p.blockCount, payload, payload / sz, dst.gm_, off, dstep,
                    acx::GmAlignFlags2(off, dstep, p.blockCount) | (at ? acx::TF_ATOMIC : 0));
    if (acx::TraceOnly()) return;
    for (uint32_t i = 0; i < p.blockCount; i++)
        acx::GmStore((T*)((uint8_t*)dst.ptr_ + i * dstep), (const T*)((const uint8_t*)src.ptr() + i * sstep), p.blockLen / sz, at);
}
template <class T>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p, const DataCopyPadParams& pad) {
    DataCopyPad(dst, src, DataCopyExtParams(p.blockCount, p.blockLen, p.srcStride, p.dstStride, 0),
                DataCopyPadExtParams<T>(pad.isPad, pad.leftPadding, pad.rightPadding, (T)pad.paddingValue));
}
template <class T>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p) {
    DataCopyPad(dst, src, DataCopyExtParams(p.blockCount, p.blockLen, p.srcStride, p.dstStride, 0));
}

template <class T, class S>
inline void InitGlobalMemory(const GlobalTensor<T>& gm, uint64_t size, const S& value) {
    const char* api = "InitGlobalMemory";
    uint64_t bytes = size * sizeof(T);
    uint64_t off = acx::CheckGm(gm.gm_, gm.Addr(), bytes, api);
    acx::EmitGmMove(acx::P_MTE3, acx::OP_INIT_GLOBAL_MEMORY, acx::DT<T>::id, 1, bytes, size, gm.gm_, off, 0, acx::GmAlignFlags(off));
    if (acx::TraceOnly()) return;
    T v = (T)value;
    for (uint64_t i = 0; i < size; i++) gm.ptr_[i] = v;
}

// ---------------------------------------------------------------- vector instructions
enum class RoundMode : uint8_t { CAST_NONE = 0, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD };
enum class CMPMODE : uint8_t { LT = 0, GT, EQ, LE, GE, NE };
enum class SELMODE : uint8_t { VSEL_CMPMASK_SPR = 0, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE };
enum class ReduceOrder : uint8_t { ORDER_VALUE_INDEX = 0, ORDER_INDEX_VALUE, ORDER_ONLY_VALUE, ORDER_ONLY_INDEX };

}  // namespace AscendC

namespace acx {
using namespace AscendC;

template <class T, class F>
inline void VBinary(const char* api, uint16_t op, uint32_t allowed, const LocalTensor<T>& d, const LocalTensor<T>& a,
                    const LocalTensor<T>& b, int64_t count, F f) {
    CheckDtype<T>(api, allowed);
    CheckCount(api, count);
    uint64_t bytes = (uint64_t)count * sizeof(T);
    Operand(api, "dst", d, bytes);
    Operand(api, "src0", a, bytes);
    Operand(api, "src1", b, bytes);
    EmitInstr(P_V, op, DT<T>::id, 0, Repeats(bytes), 0, bytes, count);
    if (TraceOnly()) return;
    T* pd = d.ptr();
    const T* pa = a.ptr();
    const T* pb = b.ptr();
    for (int64_t i = 0; i < count; i++) pd[i] = St<T>(f(Ld(pa[i]), Ld(pb[i])));
}
template <class T, class F>
inline void VUnary(const char* api, uint16_t op, uint32_t allowed, const LocalTensor<T>& d, const LocalTensor<T>& a, int64_t count, F f) {
    CheckDtype<T>(api, allowed);
    CheckCount(api, count);
    uint64_t bytes = (uint64_t)count * sizeof(T);
    Operand(api, "dst", d, bytes);
    Operand(api, "src", a, bytes);
    EmitInstr(P_V, op, DT<T>::id, 0, Repeats(bytes), 0, bytes, count);
    if (TraceOnly()) return;
    T* pd = d.ptr();
    const T* pa = a.ptr();
    for (int64_t i = 0; i < count; i++) pd[i] = St<T>(f(Ld(pa[i])));
}
template <class T> using CTT = typename CT<T>::type;
}  // namespace acx

namespace AscendC {
#define ACX_BIN(NAME, OP, ALLOWED, EXPR)                                                                          \
    template <class T>                                                                                            \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, int32_t count) { \
        acx::VBinary(#NAME, acx::OP, ALLOWED, dst, src0, src1, count, [](auto x, auto y) { return EXPR; });          \
    }
// The arithmetic binaries, once for their count forms and once for their repeat forms (below).
#define ACX_ARITH2(X)                                                   \
    X(Add, OP_ADD, acx::M_FP | acx::M_I16 | acx::M_I32, x + y)          \
    X(Sub, OP_SUB, acx::M_FP | acx::M_I16 | acx::M_I32, x - y)          \
    X(Mul, OP_MUL, acx::M_FP | acx::M_I16 | acx::M_I32, x * y)          \
    X(Div, OP_DIV, acx::M_FP, x / y)                                    \
    X(Max, OP_MAX, acx::M_FP | acx::M_I16 | acx::M_I32, (x > y ? x : y)) \
    X(Min, OP_MIN, acx::M_FP | acx::M_I16 | acx::M_I32, (x < y ? x : y))
ACX_ARITH2(ACX_BIN)
ACX_BIN(And, OP_AND, acx::M_I16 | acx::M_U16, (x & y))
ACX_BIN(Or, OP_OR, acx::M_I16 | acx::M_U16, (x | y))
#undef ACX_BIN

#define ACX_SCL(NAME, OP, ALLOWED, EXPR)                                                                      \
    template <class T, class S>                                                                               \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const S& scalarValue, int32_t count) { \
        auto s = acx::Ld((T)scalarValue);                                                                     \
        acx::VUnary(#NAME, acx::OP, ALLOWED, dst, src, count, [s](auto x) { return EXPR; });                  \
    }
ACX_SCL(Adds, OP_ADDS, acx::M_FP | acx::M_I16 | acx::M_I32, x + s)
ACX_SCL(Muls, OP_MULS, acx::M_FP | acx::M_I16 | acx::M_I32, x * s)
ACX_SCL(Maxs, OP_MAXS, acx::M_FP | acx::M_I16 | acx::M_I32, (x > s ? x : s))
ACX_SCL(Mins, OP_MINS, acx::M_FP | acx::M_I16 | acx::M_I32, (x < s ? x : s))
ACX_SCL(LeakyRelu, OP_LEAKY_RELU, acx::M_FP, (x >= 0 ? x : x * s))
#undef ACX_SCL

#define ACX_UN(NAME, OP, ALLOWED, EXPR)                                                               \
    template <class T>                                                                                \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, int32_t count) {           \
        acx::VUnary(#NAME, acx::OP, ALLOWED, dst, src, count, [](auto x) { return EXPR; });          \
    }
ACX_UN(Exp, OP_EXP, acx::M_FP, std::exp(x))
ACX_UN(Ln, OP_LN, acx::M_FP, std::log(x))
ACX_UN(Abs, OP_ABS, acx::M_FP, std::abs(x))
ACX_UN(Sqrt, OP_SQRT, acx::M_FP, std::sqrt(x))
ACX_UN(Rsqrt, OP_RSQRT, acx::M_FP, (decltype(x))1 / std::sqrt(x))
ACX_UN(Reciprocal, OP_RECIPROCAL, acx::M_FP, (decltype(x))1 / x)
ACX_UN(Relu, OP_RELU, acx::M_FP | acx::M_I32, (x > 0 ? x : (decltype(x))0))
ACX_UN(Not, OP_NOT, acx::M_I16 | acx::M_U16, (~x))
#undef ACX_UN

template <class T>
inline void MulAddDst(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, int32_t count) {
    const char* api = "MulAddDst";
    acx::CheckDtype<T>(api, acx::M_FP);
    acx::CheckCount(api, count);
    uint64_t bytes = (uint64_t)count * sizeof(T);
    acx::Operand(api, "dst", dst, bytes);
    acx::Operand(api, "src0", src0, bytes);
    acx::Operand(api, "src1", src1, bytes);
    acx::EmitInstr(acx::P_V, acx::OP_MUL_ADD_DST, acx::DT<T>::id, 0, acx::Repeats(bytes), 0, bytes, count);
    if (acx::TraceOnly()) return;
    for (int32_t i = 0; i < count; i++)
        dst.ptr()[i] = (T)((float)src0.ptr()[i] * (float)src1.ptr()[i] + (float)dst.ptr()[i]);
}
template <class T, class S>
inline void Axpy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const S& scalarValue, int32_t count) {
    const char* api = "Axpy";
    acx::CheckDtype<T>(api, acx::M_FP);
    acx::CheckCount(api, count);
    uint64_t bytes = (uint64_t)count * sizeof(T);
    acx::Operand(api, "dst", dst, bytes);
    acx::Operand(api, "src", src, bytes);
    acx::EmitInstr(acx::P_V, acx::OP_AXPY, acx::DT<T>::id, 0, acx::Repeats(bytes), 0, bytes, count);
    if (acx::TraceOnly()) return;
    float s = (float)(T)scalarValue;
    for (int32_t i = 0; i < count; i++) dst.ptr()[i] = (T)((float)src.ptr()[i] * s + (float)dst.ptr()[i]);
}

template <class T, class S>
inline void Duplicate(const LocalTensor<T>& dst, const S& scalarValue, int32_t count) {
    const char* api = "Duplicate";
    acx::CheckDtype<T>(api, acx::M_FP | acx::M_BF16 | acx::M_I16 | acx::M_U16 | acx::M_I32 | acx::M_U32);
    acx::CheckCount(api, count);
    uint64_t bytes = (uint64_t)count * sizeof(T);
    acx::Operand(api, "dst", dst, bytes);
    acx::EmitInstr(acx::P_V, acx::OP_DUPLICATE, acx::DT<T>::id, 0, acx::Repeats(bytes), 0, bytes, count);
    if (acx::TraceOnly()) return;
    T v = (T)scalarValue;
    T* p = dst.ptr();
    for (int32_t i = 0; i < count; i++) p[i] = v;
}
}  // namespace AscendC

// ---------------------------------------------------------------- Cast
namespace acx {
inline int MagMode(AscendC::RoundMode m, bool neg) {
    using AscendC::RoundMode;
    switch (m) {
        case RoundMode::CAST_ROUND: return MR_NEAREST_AWAY;
        case RoundMode::CAST_TRUNC: return MR_TOWARD_ZERO;
        case RoundMode::CAST_FLOOR: return neg ? MR_AWAY : MR_TOWARD_ZERO;
        case RoundMode::CAST_CEIL: return neg ? MR_TOWARD_ZERO : MR_AWAY;
        case RoundMode::CAST_ODD: return MR_ODD;
        default: return MR_NEAREST_EVEN;
    }
}
// double (holding an integer or a float exactly) -> float with a rounding mode
inline float F64ToF32Mode(double d, int mode) {
    if (d == 0 || !std::isfinite(d)) return (float)d;
    uint64_t u;
    std::memcpy(&u, &d, 8);
    uint64_t sign = u >> 63;
    int e = (int)((u >> 52) & 0x7ff) - 1023;
    uint64_t m = (u & ((1ull << 52) - 1)) | (1ull << 52);
    uint64_t q = RoundBits(m, 29, mode);
    if (q >= (1ull << 24)) { q >>= 1; e++; }
    uint32_t r = (uint32_t)(sign << 31) | ((uint32_t)(e + 127) << 23) | (uint32_t)(q & 0x7fffff);
    return BitsF32(r);
}
inline double RoundInt(double x, AscendC::RoundMode m) {
    using AscendC::RoundMode;
    switch (m) {
        case RoundMode::CAST_FLOOR: return std::floor(x);
        case RoundMode::CAST_CEIL: return std::ceil(x);
        case RoundMode::CAST_TRUNC: return std::trunc(x);
        case RoundMode::CAST_ROUND: return std::round(x);
        default: return std::nearbyint(x);
    }
}
template <class D, class S>
inline D ConvertOne(S v, AscendC::RoundMode m) {
    double x = (double)(typename CT<S>::type)v;
    if constexpr (std::is_integral<D>::value) {
        if (std::isnan(x)) return 0;
        double r = RoundInt(x, m);
        double lo = (double)std::numeric_limits<D>::min(), hi = (double)std::numeric_limits<D>::max();
        if (r <= lo) return std::numeric_limits<D>::min();
        if (r >= hi) return std::numeric_limits<D>::max();
        return (D)r;
    } else if constexpr (std::is_same<D, float>::value) {
        if constexpr (std::is_same<S, float>::value) return m == AscendC::RoundMode::CAST_NONE ? v : (float)RoundInt(x, m);
        else if constexpr (std::is_integral<S>::value) return F64ToF32Mode(x, MagMode(m, x < 0));
        else return (float)x;
    } else if constexpr (std::is_same<D, half>::value) {
        float f = std::is_integral<S>::value ? F64ToF32Mode(x, MR_TOWARD_ZERO) : (float)x;
        if (std::is_integral<S>::value && (double)f != x) f = (float)x;  // ints beyond 2^24 overflow fp16 anyway
        return half::FromBits(F32ToF16Mode(f, MagMode(m, f < 0)));
    } else if constexpr (std::is_same<D, bfloat16_t>::value) {
        float f = (float)x;
        return bfloat16_t::FromBits(F32ToBF16Mode(f, MagMode(m, f < 0)));
    } else {
        return (D)x;
    }
}
// Cast pairs and their round modes on Atlas A2 (910B), from the API reference's table.
// Bit i of the mask allows RoundMode value i (CAST_NONE=0 .. CAST_ODD=6); 0xff: mode ignored.
enum : uint8_t { RM_NONE = 1, RM_RFCRT = 0x3e, RM_ODD = 0x40, RM_ANY = 0xff };
inline uint8_t CastModes(uint8_t s, uint8_t d) {
    static const uint8_t t[][3] = {
        {DT_I8, DT_F16, RM_NONE}, {DT_U8, DT_F16, RM_NONE},
        {DT_I16, DT_F16, RM_RFCRT | RM_NONE}, {DT_I16, DT_F32, RM_NONE},
        {DT_F16, DT_I8, RM_RFCRT | RM_NONE}, {DT_F16, DT_U8, RM_RFCRT | RM_NONE},
        {DT_F16, DT_I16, RM_RFCRT}, {DT_F16, DT_I32, RM_RFCRT}, {DT_F16, DT_F32, RM_NONE},
        {DT_BF16, DT_I32, RM_RFCRT}, {DT_BF16, DT_F32, RM_NONE},
        {DT_I32, DT_I16, RM_NONE}, {DT_I32, DT_F16, RM_ANY}, {DT_I32, DT_F32, RM_RFCRT | RM_NONE},
        {DT_I32, DT_I64, RM_NONE},
        {DT_F32, DT_I16, RM_RFCRT}, {DT_F32, DT_F16, RM_RFCRT | RM_ODD | RM_NONE}, {DT_F32, DT_BF16, RM_RFCRT},
        {DT_F32, DT_I32, RM_RFCRT}, {DT_F32, DT_F32, RM_RFCRT}, {DT_F32, DT_I64, RM_RFCRT},
        {DT_I64, DT_I32, RM_NONE}, {DT_I64, DT_F32, RM_RFCRT}};
    for (auto& p : t)
        if (p[0] == s && p[1] == d) return p[2];
    return 0;
}
inline bool CastSupported(uint8_t s, uint8_t d) { return CastModes(s, d) != 0; }
inline const char* RoundModeName(int m) {
    static const char* n[] = {"CAST_NONE", "CAST_RINT", "CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC", "CAST_ODD"};
    return m >= 0 && m < 7 ? n[m] : "?";
}
inline std::string RoundModeList(uint8_t mask) {
    std::string r;
    for (int i = 0; i < 7; i++)
        if (mask & (1u << i)) r += (r.empty() ? "" : "/") + std::string(RoundModeName(i));
    return r;
}
}  // namespace acx

namespace AscendC {
template <class D, class S>
inline void Cast(const LocalTensor<D>& dst, const LocalTensor<S>& src, const RoundMode& mode, uint32_t count) {
    const char* api = "Cast";
    if (!acx::CastSupported(acx::DT<S>::id, acx::DT<D>::id))
        acx::Fail("Cast: %s -> %s is not supported on the target SoC", acx::DT<S>::name, acx::DT<D>::name);
    uint8_t modes = acx::CastModes(acx::DT<S>::id, acx::DT<D>::id);
    if (mode == RoundMode::CAST_ODD && !(acx::DT<S>::id == acx::DT_F32 && acx::DT<D>::id == acx::DT_F16))
        acx::Fail("Cast: CAST_ODD is only supported for fp32 -> fp16 (got %s -> %s)", acx::DT<S>::name, acx::DT<D>::name);
    if (!(modes & (1u << (unsigned)mode)))
        acx::Fail("Cast: RoundMode::%s is not supported for %s -> %s on the target SoC (supported: %s)",
                  acx::RoundModeName((int)mode), acx::DT<S>::name, acx::DT<D>::name, acx::RoundModeList(modes).c_str());
    acx::Operand(api, "dst", dst, (uint64_t)count * sizeof(D));
    acx::Operand(api, "src", src, (uint64_t)count * sizeof(S));
    uint64_t wide = sizeof(D) > sizeof(S) ? sizeof(D) : sizeof(S);
    acx::EmitInstr(acx::P_V, acx::OP_CAST, acx::DT<S>::id, acx::DT<D>::id, acx::Repeats(count * wide), 0, (uint64_t)count * sizeof(D), count);
    if (acx::TraceOnly()) return;
    // source may overlap destination: convert front-to-back when dst is not wider, else back-to-front
    D* pd = dst.ptr();
    const S* ps = src.ptr();
    if (sizeof(D) <= sizeof(S))
        for (uint32_t i = 0; i < count; i++) pd[i] = acx::ConvertOne<D, S>(ps[i], mode);
    else
        for (uint32_t i = count; i-- > 0;) pd[i] = acx::ConvertOne<D, S>(ps[i], mode);
}

// ---------------------------------------------------------------- Compare / Select
template <class T>
inline bool CmpOne(T a, T b, CMPMODE m) {
    auto x = acx::Ld(a), y = acx::Ld(b);
    switch (m) {
        case CMPMODE::LT: return x < y;
        case CMPMODE::GT: return x > y;
        case CMPMODE::EQ: return x == y;
        case CMPMODE::LE: return x <= y;
        case CMPMODE::GE: return x >= y;
        default: return x != y;
    }
}
template <class U, class T>
inline void CompareImpl(const char* api, uint16_t op, const LocalTensor<U>& dst, const LocalTensor<T>& src0,
                        const LocalTensor<T>* src1, T scalar, CMPMODE mode, uint32_t count) {
    acx::CheckDtype<T>(api, acx::M_FP | acx::M_I32);
    uint64_t bytes = (uint64_t)count * sizeof(T);
    if (bytes % 256)
        acx::Fail("%s: count=%u (%llu B of %s) must fill whole 256 B repeats (a multiple of %u elements)", api, count,
                  (unsigned long long)bytes, acx::DT<T>::name, (unsigned)(256 / sizeof(T)));
    uint64_t mbytes = (count + 7) / 8;
    acx::Operand(api, "dst", dst, mbytes);
    acx::Operand(api, "src0", src0, bytes);
    if (src1) acx::Operand(api, "src1", *src1, bytes);
    acx::EmitInstr(acx::P_V, op, acx::DT<T>::id, acx::DT<U>::id, acx::Repeats(bytes), 0, mbytes, count);
    if (acx::TraceOnly()) return;
    uint8_t* m = (uint8_t*)dst.ptr();
    const T* a = src0.ptr();
    const T* b = src1 ? src1->ptr() : nullptr;
    for (uint64_t j = 0; j < mbytes; j++) {
        uint8_t byte = 0;
        for (uint32_t k = 0; k < 8 && j * 8 + k < count; k++)
            if (CmpOne<T>(a[j * 8 + k], b ? b[j * 8 + k] : scalar, mode)) byte |= (uint8_t)(1u << k);
        m[j] = byte;
    }
}
template <class U, class T>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE mode, uint32_t count) {
    CompareImpl<U, T>("Compare", acx::OP_COMPARE, dst, src0, &src1, T(0), mode, count);
}
template <class U, class T, class S>
inline void CompareScalar(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const S& scalar, CMPMODE mode, uint32_t count) {
    CompareImpl<U, T>("CompareScalar", acx::OP_COMPARE_SCALAR, dst, src0, nullptr, (T)scalar, mode, count);
}
template <class T, class U>
inline void SelectImpl(const char* api, const LocalTensor<T>& dst, const LocalTensor<U>& mask, const LocalTensor<T>& src0,
                       const LocalTensor<T>* src1, T scalar, uint32_t count) {
    acx::CheckDtype<T>(api, acx::M_FP);
    uint64_t bytes = (uint64_t)count * sizeof(T);
    acx::Operand(api, "dst", dst, bytes);
    acx::Operand(api, "selMask", mask, (count + 7) / 8);
    acx::Operand(api, "src0", src0, bytes);
    if (src1) acx::Operand(api, "src1", *src1, bytes);
    acx::EmitInstr(acx::P_V, acx::OP_SELECT, acx::DT<T>::id, 0, acx::Repeats(bytes), 0, bytes, count);
    if (acx::TraceOnly()) return;
    const uint8_t* m = (const uint8_t*)mask.ptr();
    T* d = dst.ptr();
    const T* a = src0.ptr();
    const T* b = src1 ? src1->ptr() : nullptr;
    for (uint32_t i = 0; i < count; i++) d[i] = ((m[i / 8] >> (i % 8)) & 1) ? a[i] : (b ? b[i] : scalar);
}
template <class T, class U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                   SELMODE mode, uint32_t count) {
    if (mode == SELMODE::VSEL_TENSOR_SCALAR_MODE)
        acx::Fail("Select: VSEL_TENSOR_SCALAR_MODE needs a scalar src1; got a tensor (use VSEL_TENSOR_TENSOR_MODE)");
    SelectImpl<T, U>("Select", dst, selMask, src0, &src1, T(0), count);
}
template <class T, class U, class S, class = std::enable_if_t<std::is_arithmetic<S>::value || std::is_same<S, half>::value || std::is_same<S, bfloat16_t>::value>>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0, S src1, SELMODE mode, uint32_t count) {
    if (mode != SELMODE::VSEL_TENSOR_SCALAR_MODE)
        acx::Fail("Select: a scalar src1 needs SELMODE::VSEL_TENSOR_SCALAR_MODE");
    SelectImpl<T, U>("Select", dst, selMask, src0, nullptr, (T)src1, count);
}

// ---------------------------------------------------------------- reductions
namespace detail {
template <class T>
inline void StoreIndex(T* p, uint32_t idx) {
    if (sizeof(T) == 2) { uint16_t v = (uint16_t)idx; std::memcpy((void*)p, &v, 2); }
    else { uint32_t v = idx; std::memcpy((void*)p, &v, 4); }
}
inline uint64_t RoundUpTo(uint64_t a, uint64_t b) { return (a + b - 1) / b * b; }
}  // namespace detail

// kind: 0 sum, 1 max, 2 min
template <class T>
inline void ReduceImpl(const char* api, uint16_t op, int kind, const LocalTensor<T>& dst, const LocalTensor<T>& src,
                       const LocalTensor<T>& work, int32_t count, bool calIndex) {
    acx::CheckDtype<T>(api, acx::M_FP);
    if (count < 1) acx::Fail("%s: count=%d must be >= 1", api, count);
    const uint64_t epr = 256 / sizeof(T), epb = 32 / sizeof(T);
    uint64_t bytes = (uint64_t)count * sizeof(T);
    acx::Operand(api, "src", src, bytes);
    acx::Operand(api, "dst", dst, (kind && calIndex ? 2 : 1) * sizeof(T), sizeof(T));
    uint64_t r1 = acx::CeilDivU(count, epr), need;
    if (kind == 0) need = detail::RoundUpTo(r1, epb);
    else if (!calIndex) need = detail::RoundUpTo(r1 * 2, epb);
    else {
        uint64_t o1 = r1 * 2, s2 = detail::RoundUpTo(o1, epb), o2 = acx::CeilDivU(o1, epr) * 2;
        uint64_t s3 = detail::RoundUpTo(o2, epb), o3 = acx::CeilDivU(o2, epr) * 2;
        need = s2 + s3 + detail::RoundUpTo(o3, epb);
    }
    if (!work.valid_) acx::Fail("%s: work LocalTensor is not initialised", api);
    if ((uint64_t)work.len_ < need * sizeof(T))
        acx::Fail("%s: work buffer has %u %s elements but %llu are needed for count=%d (see the API's sharedTmpBuffer size rule)", api,
                  work.GetSize(), acx::DT<T>::name, (unsigned long long)need, count);
    acx::Operand(api, "work", work, need * sizeof(T));
    uint64_t reps = 0;
    for (uint64_t n = count; ; n = acx::CeilDivU(n, epr) * (kind ? 2 : 1)) {
        reps += acx::CeilDivU(n, epr);
        if (n <= epr) break;
    }
    acx::EmitInstr(acx::P_V, op, acx::DT<T>::id, 0, reps, 0, (kind && calIndex ? 2 : 1) * sizeof(T), count);
    if (acx::TraceOnly()) return;
    const T* s = src.ptr();
    if (kind == 0) {
        double acc = 0;
        for (int32_t i = 0; i < count; i++) acc += (double)acx::Ld(s[i]);
        dst.ptr()[0] = (T)(float)acc;
        return;
    }
    uint32_t best = 0;
    for (int32_t i = 1; i < count; i++) {
        auto v = acx::Ld(s[i]), b = acx::Ld(s[best]);
        if (kind == 1 ? v > b : v < b) best = i;
    }
    T bv = s[best];
    dst.ptr()[0] = bv;
    if (calIndex) detail::StoreIndex(dst.ptr() + 1, best);
}
template <class T>
inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work, int32_t count) {
    ReduceImpl("ReduceSum", acx::OP_REDUCE_SUM, 0, dst, src, work, count, false);
}
template <class T>
inline void ReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work, int32_t count, bool calIndex = false) {
    ReduceImpl("ReduceMax", acx::OP_REDUCE_MAX, 1, dst, src, work, count, calIndex);
}
template <class T>
inline void ReduceMin(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work, int32_t count, bool calIndex = false) {
    ReduceImpl("ReduceMin", acx::OP_REDUCE_MIN, 2, dst, src, work, count, calIndex);
}

// Repeat-form reductions. Lane l of repeat r lives at src + r*srcRepStride*32 + (l/epb)*srcBlkStride*32 + (l%epb)*sizeof(T).
template <class T>
struct Lanes {
    uint64_t bits[2] = {0, 0};
    int32_t maxLane = -1, active = 0;
    Lanes(const char* api, int32_t mask) {
        const int32_t epr = 256 / sizeof(T);
        if (mask < 1 || mask > epr) acx::Fail("%s: mask=%d not in [1, %d] for %s", api, mask, epr, acx::DT<T>::name);
        for (int32_t l = 0; l < mask; l++) bits[l / 64] |= 1ull << (l % 64);
        maxLane = mask - 1;
        active = mask;
    }
    Lanes(const char* api, const uint64_t mask[]) {
        const int32_t epr = 256 / sizeof(T);
        bits[0] = mask[0];
        bits[1] = epr > 64 ? mask[1] : 0;
        for (int32_t l = 0; l < epr; l++)
            if (On(l)) { maxLane = l; active++; }
        if (!active) acx::Fail("%s: mask selects no elements", api);
    }
    bool On(int32_t l) const { return (bits[l / 64] >> (l % 64)) & 1; }
};
template <class T>
inline void CheckRepeatArgs(const char* api, int32_t repeat, int32_t a, int32_t b, int32_t c) {
    if (repeat < 0 || repeat > 255) acx::Fail("%s: repeatTimes=%d not in [0, 255]", api, repeat);
    if (a < 0 || b < 0 || c < 0) acx::Fail("%s: negative stride (%d, %d, %d)", api, a, b, c);
}
template <class T>
inline void WholeReduceImpl(const char* api, uint16_t op, int kind, const LocalTensor<T>& dst, const LocalTensor<T>& src, const Lanes<T>& ln,
                            int32_t repeat, int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride, ReduceOrder order) {
    acx::CheckDtype<T>(api, acx::M_FP);
    CheckRepeatArgs<T>(api, repeat, dstRepStride, srcBlkStride, srcRepStride);
    const int32_t epb = 32 / sizeof(T);
    if (repeat == 0) return;
    int32_t nb = ln.maxLane / epb + 1;
    uint64_t sext = ((uint64_t)(repeat - 1) * srcRepStride + (uint64_t)(nb - 1) * srcBlkStride) * 32 + 32;
    acx::Operand(api, "src", src, sext);
    bool pair = kind != 0 && (order == ReduceOrder::ORDER_VALUE_INDEX || order == ReduceOrder::ORDER_INDEX_VALUE);
    uint64_t unit = pair ? 2 * sizeof(T) : (kind != 0 && order == ReduceOrder::ORDER_ONLY_INDEX ? 4 : sizeof(T));
    uint64_t dext = (uint64_t)(repeat - 1) * dstRepStride * unit + unit;
    acx::Operand(api, "dst", dst, dext, (uint32_t)(pair ? 2 * sizeof(T) : sizeof(T)));
    acx::EmitInstr(acx::P_V, op, acx::DT<T>::id, 0, repeat, 0, dext, (uint64_t)repeat * ln.active);
    if (acx::TraceOnly()) return;
    uint8_t* sb = (uint8_t*)src.ptr();
    uint8_t* db = (uint8_t*)dst.ptr();
    for (int32_t r = 0; r < repeat; r++) {
        double acc = 0;
        float best = 0;
        int32_t bi = -1;
        for (int32_t l = 0; l <= ln.maxLane; l++) {
            if (!ln.On(l)) continue;
            T v;
            std::memcpy((void*)&v, sb + ((uint64_t)r * srcRepStride + (uint64_t)(l / epb) * srcBlkStride) * 32 + (l % epb) * sizeof(T), sizeof(T));
            float f = (float)acx::Ld(v);
            if (kind == 0) acc += f;
            else if (bi < 0 || (kind == 1 ? f > best : f < best)) { best = f; bi = l; }
        }
        uint8_t* o = db + (uint64_t)r * dstRepStride * unit;
        if (kind == 0) { T t = (T)(float)acc; std::memcpy((void*)o, &t, sizeof(T)); continue; }
        T t = (T)best;
        switch (order) {
            case ReduceOrder::ORDER_VALUE_INDEX: std::memcpy((void*)o, &t, sizeof(T)); detail::StoreIndex((T*)(o + sizeof(T)), bi); break;
            case ReduceOrder::ORDER_INDEX_VALUE: detail::StoreIndex((T*)o, bi); std::memcpy((void*)(o + sizeof(T)), &t, sizeof(T)); break;
            case ReduceOrder::ORDER_ONLY_VALUE: std::memcpy((void*)o, &t, sizeof(T)); break;
            default: { uint32_t u = bi; std::memcpy((void*)o, &u, 4); }
        }
    }
}
#define ACX_WR(NAME, OP, KIND)                                                                                              \
    template <class T, bool isSetMask = true>                                                                               \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask, const int32_t repeatTimes,   \
                     const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride,                   \
                     ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX) {                                                  \
        WholeReduceImpl(#NAME, acx::OP, KIND, dst, src, Lanes<T>(#NAME, mask), repeatTimes, dstRepStride, srcBlkStride,    \
                        srcRepStride, order);                                                                               \
    }                                                                                                                       \
    template <class T, bool isSetMask = true>                                                                               \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[], const int32_t repeatTimes, \
                     const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride,                   \
                     ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX) {                                                  \
        WholeReduceImpl(#NAME, acx::OP, KIND, dst, src, Lanes<T>(#NAME, mask), repeatTimes, dstRepStride, srcBlkStride,    \
                        srcRepStride, order);                                                                               \
    }
ACX_WR(WholeReduceSum, OP_WHOLE_REDUCE_SUM, 0)
ACX_WR(WholeReduceMax, OP_WHOLE_REDUCE_MAX, 1)
ACX_WR(WholeReduceMin, OP_WHOLE_REDUCE_MIN, 2)
#undef ACX_WR

// BlockReduce*: one result per 32 B block (8 per repeat); dstRepStride in units of one repeat's output (8 elements).
template <class T>
inline void BlockReduceImpl(const char* api, uint16_t op, int kind, const LocalTensor<T>& dst, const LocalTensor<T>& src, int32_t repeat,
                            const Lanes<T>& ln, int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride) {
    acx::CheckDtype<T>(api, acx::M_FP);
    CheckRepeatArgs<T>(api, repeat, dstRepStride, srcBlkStride, srcRepStride);
    const int32_t epb = 32 / sizeof(T);
    if (repeat == 0) return;
    int32_t nb = ln.maxLane / epb + 1;
    uint64_t sext = ((uint64_t)(repeat - 1) * srcRepStride + (uint64_t)(nb - 1) * srcBlkStride) * 32 + 32;
    acx::Operand(api, "src", src, sext);
    uint64_t dext = ((uint64_t)(repeat - 1) * dstRepStride * 8 + nb) * sizeof(T);
    acx::Operand(api, "dst", dst, dext, sizeof(T));
    acx::EmitInstr(acx::P_V, op, acx::DT<T>::id, 0, repeat, 0, dext, (uint64_t)repeat * ln.active);
    if (acx::TraceOnly()) return;
    const uint8_t* sb = (const uint8_t*)src.ptr();
    T* d = dst.ptr();
    for (int32_t r = 0; r < repeat; r++)
        for (int32_t b = 0; b < nb; b++) {
            bool any = false;
            float acc = 0;
            for (int32_t k = 0; k < epb; k++) {
                int32_t l = b * epb + k;
                if (!ln.On(l)) continue;
                T v;
                std::memcpy((void*)&v, sb + ((uint64_t)r * srcRepStride + (uint64_t)b * srcBlkStride) * 32 + k * sizeof(T), sizeof(T));
                float f = (float)acx::Ld(v);
                if (!any) acc = f;
                else if (kind == 0) acc += f;
                else if (kind == 1 ? f > acc : f < acc) acc = f;
                any = true;
            }
            if (any) d[(uint64_t)r * dstRepStride * 8 + b] = (T)acc;
        }
}
#define ACX_BR(NAME, OP, KIND)                                                                                               \
    template <class T, bool isSetMask = true>                                                                                \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTimes, const int32_t mask,    \
                     const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride) {                  \
        BlockReduceImpl(#NAME, acx::OP, KIND, dst, src, repeatTimes, Lanes<T>(#NAME, mask), dstRepStride, srcBlkStride,     \
                        srcRepStride);                                                                                       \
    }                                                                                                                        \
    template <class T, bool isSetMask = true>                                                                                \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTimes, const uint64_t mask[], \
                     const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride) {                  \
        BlockReduceImpl(#NAME, acx::OP, KIND, dst, src, repeatTimes, Lanes<T>(#NAME, mask), dstRepStride, srcBlkStride,     \
                        srcRepStride);                                                                                       \
    }
ACX_BR(BlockReduceSum, OP_BLOCK_REDUCE_SUM, 0)
ACX_BR(BlockReduceMax, OP_BLOCK_REDUCE_MAX, 1)
ACX_BR(BlockReduceMin, OP_BLOCK_REDUCE_MIN, 2)
#undef ACX_BR

}  // namespace AscendC

// ---------------------------------------------------------------- gather / index generation
namespace AscendC {
// Gather (count form): dst[i] = element of src at byte address srcBaseAddr + srcOffset[i]
// (relative to the start of src).
template <class T>
inline void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& srcOffset,
                   const uint32_t srcBaseAddr, const uint32_t count) {
    const char* api = "Gather";
    acx::CheckDtype<T>(api, acx::M_FP | acx::M_BF16 | acx::M_I16 | acx::M_U16 | acx::M_I32 | acx::M_U32);
    if (count == 0) return;  // documented NOP on 910B
    const uint64_t sz = sizeof(T), bytes = (uint64_t)count * sz;
    acx::Operand(api, "dst", dst, bytes);
    acx::Operand(api, "src", src, 0);
    acx::Operand(api, "srcOffset", srcOffset, (uint64_t)count * 4);
    if (dst.base_ == src.base_ && MemOf(dst.pos_) == MemOf(src.pos_) && dst.off_ < src.off_ + src.len_ &&
        src.off_ < dst.off_ + bytes)
        acx::Fail("Gather: dst (UB [%u, %llu)) and src (UB [%u, %u)) overlap; the API forbids the same memory", dst.off_,
                  (unsigned long long)(dst.off_ + bytes), src.off_, src.off_ + src.len_);
    acx::EmitInstr(acx::P_V, acx::OP_GATHER, acx::DT<T>::id, 0, acx::Repeats(bytes), 0, bytes, count);
    if (acx::TraceOnly()) return;
    const uint32_t* o = srcOffset.ptr();
    const uint8_t* sb = (const uint8_t*)src.ptr();
    T* d = dst.ptr();
    for (uint32_t i = 0; i < count; i++) {
        uint64_t a = (uint64_t)srcBaseAddr + o[i];
        if (a % sz)
            acx::Fail("Gather: srcBaseAddr + srcOffset[%u] = %llu B is not a multiple of sizeof(%s) = %u", i,
                      (unsigned long long)a, acx::DT<T>::name, (unsigned)sz);
        if (a + sz > src.len_)
            acx::Fail("Gather: srcBaseAddr + srcOffset[%u] = %llu B is outside src (%u B); offsets are in bytes", i,
                      (unsigned long long)a, src.len_);
        std::memcpy((void*)(d + i), sb + a, sz);
    }
}

// ArithProgression: dst[i] = firstValue + i * diffValue, produced the documented way (up to 8
// scalar SetValue, then Adds by 8 up to 64 elements, then Adds by 64), in the element type.
template <class T>
inline void ArithProgression(const LocalTensor<T>& dst, const T firstValue, const T diffValue, const int32_t count) {
    const char* api = "ArithProgression";
    acx::CheckDtype<T>(api, acx::M_FP | acx::M_I16 | acx::M_I32);
    if (count <= 0) acx::Fail("%s: count=%d must be > 0", api, count);
    if (acx::Ld(diffValue) < 0) acx::Fail("%s: diffValue=%g must be >= 0", api, (double)acx::Ld(diffValue));
    acx::Operand(api, "dst", dst, (uint64_t)count * sizeof(T));
    const uint8_t dt = acx::DT<T>::id;
    int32_t first = count < 8 ? count : 8;
    for (int32_t i = 0; i < first; i++) acx::EmitInstr(acx::P_S, acx::OP_SET_VALUE, dt, 0, 0, 0, sizeof(T), 1);
    for (int32_t b = 8; b < count && b < 64; b += 8) {
        int32_t n = count - b < 8 ? count - b : 8;
        acx::EmitInstr(acx::P_V, acx::OP_ADDS, dt, 0, 1, 0, (uint64_t)n * sizeof(T), n);
    }
    for (int32_t b = 64; b < count; b += 64) {
        int32_t n = count - b < 64 ? count - b : 64;
        acx::EmitInstr(acx::P_V, acx::OP_ADDS, dt, 0, acx::Repeats((uint64_t)n * sizeof(T)), 0, (uint64_t)n * sizeof(T), n);
    }
    if (acx::TraceOnly()) return;
    T* d = dst.ptr();
    auto f = acx::Ld(firstValue), df = acx::Ld(diffValue);
    for (int32_t i = 0; i < first; i++) d[i] = acx::St<T>(f + (decltype(f))i * df);
    if (count > 8) {
        T s8 = acx::St<T>(df * (decltype(df))8);
        for (int32_t i = 8; i < count && i < 64; i++) d[i] = acx::St<T>(acx::Ld(d[i - 8]) + acx::Ld(s8));
    }
    if (count > 64) {
        T s64 = acx::St<T>(df * (decltype(df))64);
        for (int32_t i = 64; i < count; i++) d[i] = acx::St<T>(acx::Ld(d[i - 64]) + acx::Ld(s64));
    }
}

// CreateVecIndex (count form): dst[i] = firstValue + i.
template <class T>
inline void CreateVecIndex(LocalTensor<T> dst, const T& firstValue, uint32_t count) {
    const char* api = "CreateVecIndex";
    acx::CheckDtype<T>(api, acx::M_FP | acx::M_I16 | acx::M_I32);
    if (count == 0) return;  // documented NOP on 910B
    uint64_t bytes = (uint64_t)count * sizeof(T);
    acx::Operand(api, "dst", dst, bytes);
    acx::EmitInstr(acx::P_V, acx::OP_CREATE_VEC_INDEX, acx::DT<T>::id, 0, acx::Repeats(bytes), 0, bytes, count);
    if (acx::TraceOnly()) return;
    T* d = dst.ptr();
    auto f = acx::Ld(firstValue);
    for (uint32_t i = 0; i < count; i++) d[i] = acx::St<T>(f + (decltype(f))i);
}
}  // namespace AscendC

// ---------------------------------------------------------------- repeat forms: per-row values on the vector side
// A repeat covers up to 256 B in 8 blocks of 32 B; lane l of repeat r of an operand lives at
// base + (r * repStride + (l / epb) * blkStride) * 32 + (l % epb) * sizeof(T) (strides in 32 B
// blocks, as in the API reference's BinaryRepeatParams / BrcbRepeatParams). A block stride of 0
// reads one 32 B block for the whole repeat: a per-row value broadcast over a row.
namespace AscendC {
struct BinaryRepeatParams {
    BinaryRepeatParams() = default;
    BinaryRepeatParams(uint8_t dB, uint8_t s0B, uint8_t s1B, uint8_t dR, uint8_t s0R, uint8_t s1R)
        : dstBlkStride(dB), src0BlkStride(s0B), src1BlkStride(s1B), dstRepStride(dR), src0RepStride(s0R), src1RepStride(s1R) {}
    uint32_t blockNumber = 8;
    uint8_t dstBlkStride = 1, src0BlkStride = 1, src1BlkStride = 1;
    uint8_t dstRepStride = 8, src0RepStride = 8, src1RepStride = 8;
    bool repeatStrideMode = false, strideSizeMode = false;
};
struct BrcbRepeatParams {
    BrcbRepeatParams() = default;
    BrcbRepeatParams(uint16_t dB, uint16_t dR) : dstBlkStride(dB), dstRepStride(dR) {}
    uint32_t blockNumber = 8;
    uint16_t dstRepStride = 8, dstBlkStride = 1;
};
}  // namespace AscendC

namespace acx {
// Bytes from an operand's start to the end of the last 32 B block a repeat-form call touches.
inline uint64_t StridedExtent(int32_t repeat, uint32_t repStride, uint32_t blkStride, int32_t nb) {
    return ((uint64_t)(repeat - 1) * repStride + (uint64_t)(nb - 1) * blkStride) * 32 + 32;
}
inline uint64_t LaneAt(int32_t r, int32_t l, uint32_t repStride, uint32_t blkStride, int32_t epb, uint32_t sz) {
    return ((uint64_t)r * repStride + (uint64_t)(l / epb) * blkStride) * 32 + (uint64_t)(l % epb) * sz;
}
// Binary op, repeat form: each repeat reads its lanes of src0 and src1, then writes dst.
template <class T, class F>
inline void VBinaryRepeat(const char* api, uint16_t op, uint32_t allowed, const LocalTensor<T>& d, const LocalTensor<T>& a,
                          const LocalTensor<T>& b, const AscendC::Lanes<T>& ln, int32_t repeat,
                          const AscendC::BinaryRepeatParams& p, F f) {
    CheckDtype<T>(api, allowed);
    if (repeat < 0 || repeat > 255) Fail("%s: repeatTimes=%d not in [0, 255]", api, repeat);
    if (repeat == 0) return;
    const int32_t epb = 32 / sizeof(T), nb = ln.maxLane / epb + 1;
    Operand(api, "dst", d, StridedExtent(repeat, p.dstRepStride, p.dstBlkStride, nb));
    Operand(api, "src0", a, StridedExtent(repeat, p.src0RepStride, p.src0BlkStride, nb));
    Operand(api, "src1", b, StridedExtent(repeat, p.src1RepStride, p.src1BlkStride, nb));
    EmitInstr(P_V, op, DT<T>::id, 0, repeat, 0, (uint64_t)repeat * ln.active * sizeof(T), (uint64_t)repeat * ln.active);
    if (TraceOnly()) return;
    uint8_t* pd = (uint8_t*)d.ptr();
    const uint8_t* pa = (const uint8_t*)a.ptr();
    const uint8_t* pb = (const uint8_t*)b.ptr();
    const uint32_t sz = sizeof(T);
    T out[128];
    for (int32_t r = 0; r < repeat; r++) {
        for (int32_t l = 0; l <= ln.maxLane; l++) {
            if (!ln.On(l)) continue;
            T x, y;
            std::memcpy((void*)&x, pa + LaneAt(r, l, p.src0RepStride, p.src0BlkStride, epb, sz), sz);
            std::memcpy((void*)&y, pb + LaneAt(r, l, p.src1RepStride, p.src1BlkStride, epb, sz), sz);
            out[l] = St<T>(f(Ld(x), Ld(y)));
        }
        for (int32_t l = 0; l <= ln.maxLane; l++)
            if (ln.On(l)) std::memcpy(pd + LaneAt(r, l, p.dstRepStride, p.dstBlkStride, epb, sz), (const void*)&out[l], sz);
    }
}
}  // namespace acx

namespace AscendC {
#define ACX_BIN_REP(NAME, OP, ALLOWED, EXPR)                                                                         \
    template <class T, bool isSetMask = true>                                                                        \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, uint64_t mask, \
                     const uint8_t repeatTimes, const BinaryRepeatParams& repeatParams) {                           \
        acx::VBinaryRepeat(#NAME, acx::OP, ALLOWED, dst, src0, src1, Lanes<T>(#NAME, (int32_t)mask), repeatTimes,    \
                           repeatParams, [](auto x, auto y) { return EXPR; });                                       \
    }                                                                                                                \
    template <class T, bool isSetMask = true>                                                                        \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,              \
                     const uint64_t mask[], const uint8_t repeatTimes, const BinaryRepeatParams& repeatParams) {     \
        acx::VBinaryRepeat(#NAME, acx::OP, ALLOWED, dst, src0, src1, Lanes<T>(#NAME, mask), repeatTimes,             \
                           repeatParams, [](auto x, auto y) { return EXPR; });                                       \
    }
ACX_ARITH2(ACX_BIN_REP)
#undef ACX_BIN_REP
#undef ACX_ARITH2

// Brcb: each repeat takes 8 consecutive elements of src0 and fills one 32 B block of dst with
// each (block b of repeat r at dst + (r * dstRepStride + b * dstBlkStride) * 32). b16/b32 types;
// src0 and dst must not overlap.
template <class T>
inline void Brcb(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const uint8_t repeatTime, const BrcbRepeatParams& p) {
    const char* api = "Brcb";
    acx::CheckDtype<T>(api, acx::M_FP | acx::M_BF16 | acx::M_I16 | acx::M_U16 | acx::M_I32 | acx::M_U32);
    if (repeatTime == 0) return;
    const uint64_t sz = sizeof(T), epb = 32 / sz;
    const uint64_t sbytes = (uint64_t)repeatTime * 8 * sz;
    const uint64_t dext = ((uint64_t)(repeatTime - 1) * p.dstRepStride + 7ull * p.dstBlkStride) * 32 + 32;
    acx::Operand(api, "src0", src0, sbytes);
    acx::Operand(api, "dst", dst, dext);
    if (dst.base_ == src0.base_ && MemOf(dst.pos_) == MemOf(src0.pos_) && dst.off_ < src0.off_ + sbytes &&
        src0.off_ < dst.off_ + dext)
        acx::Fail("Brcb: dst (UB [%u, %llu)) and src0 (UB [%u, %llu)) overlap; the API forbids the same memory", dst.off_,
                  (unsigned long long)(dst.off_ + dext), src0.off_, (unsigned long long)(src0.off_ + sbytes));
    acx::EmitInstr(acx::P_V, acx::OP_BRCB, acx::DT<T>::id, 0, repeatTime, 0, (uint64_t)repeatTime * 256, (uint64_t)repeatTime * 8);
    if (acx::TraceOnly()) return;
    const T* s = src0.ptr();
    uint8_t* d = (uint8_t*)dst.ptr();
    for (uint64_t r = 0; r < repeatTime; r++)
        for (uint64_t b = 0; b < 8; b++) {
            const T v = s[r * 8 + b];
            uint8_t* blk = d + (r * p.dstRepStride + b * p.dstBlkStride) * 32;
            for (uint64_t k = 0; k < epb; k++) std::memcpy(blk + k * sz, (const void*)&v, sz);
        }
}
}  // namespace AscendC
