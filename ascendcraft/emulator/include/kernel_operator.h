// kernel_operator.h - ascendcraft CPU emulator of the AscendC kernel API (vector subset).
// Header-only C++17. Executes kernels on the CPU, checks them the way CANN's CPU debug mode
// does (alignment, capacities, bounds, queue protocol, dtypes) and records a per-call trace.
// Written from the documented behaviour of the AscendC API; no CANN code.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "acx_fp16.h"
#include "acx_runtime.h"
#include "acx_trace.h"

#define __global__
#define __aicore__
#define __gm__
#define __ubuf__
#define __cbuf__
#define __ca__
#define __cb__
#define __cc__
#define __inout_pipe__(x)
#define __in_pipe__(x)
#define __out_pipe__(x)
#ifndef GM_ADDR
#define GM_ADDR __gm__ uint8_t*
#endif

// Kernel (core) types, as in AscendC's KernelMetaType.
enum KernelMetaType {
    KERNEL_TYPE_AIV_ONLY, KERNEL_TYPE_AIC_ONLY, KERNEL_TYPE_MIX_AIV_1_0, KERNEL_TYPE_MIX_AIC_1_0,
    KERNEL_TYPE_MIX_AIC_1_1, KERNEL_TYPE_MIX_AIC_1_2, KERNEL_TYPE_AICORE, KERNEL_TYPE_VECTORCORE,
    KERNEL_TYPE_MIX_AICORE, KERNEL_TYPE_MIX_VECTOR_CORE, KERNEL_TYPE_MAX
};
namespace acx {
void DeclareKernelType(int t);  // defined below
inline bool IsAic() { return g_cur && g_cur->kind == CORE_AIC; }
}  // namespace acx
#ifndef KERNEL_TASK_TYPE_DEFAULT
#define KERNEL_TASK_TYPE_DEFAULT(x) acx::DeclareKernelType(x)
#endif
#ifndef KERNEL_TASK_TYPE
#define KERNEL_TASK_TYPE(key, x) acx::DeclareKernelType(x)
#endif
#define ASCEND_IS_AIC (acx::IsAic())
#define ASCEND_IS_AIV (!acx::IsAic())

// Pipes and events live in the global namespace in AscendC.
enum pipe_t : uint8_t { PIPE_S = 0, PIPE_V = 1, PIPE_M = 2, PIPE_MTE1 = 3, PIPE_MTE2 = 4, PIPE_MTE3 = 5, PIPE_ALL = 6, PIPE_FIX = 7 };
enum event_t : int32_t { EVENT_ID0 = 0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 };

namespace acx {
inline uint8_t PipeOf(pipe_t p) {
    switch (p) {
        case PIPE_S: return P_S;
        case PIPE_V: return P_V;
        case PIPE_M: return P_M;
        case PIPE_MTE1: return P_MTE1;
        case PIPE_MTE2: return P_MTE2;
        case PIPE_MTE3: return P_MTE3;
        case PIPE_FIX: return P_FIX;
        default: return P_ALL;
    }
}

template <class T> struct DT { static constexpr uint8_t id = DT_NONE; static constexpr const char* name = "unknown"; };
#define ACX_DT(T, ID, NAME) template <> struct DT<T> { static constexpr uint8_t id = ID; static constexpr const char* name = NAME; };
ACX_DT(float, DT_F32, "fp32")
ACX_DT(half, DT_F16, "fp16")
ACX_DT(bfloat16_t, DT_BF16, "bf16")
ACX_DT(int32_t, DT_I32, "int32")
ACX_DT(int8_t, DT_I8, "int8")
ACX_DT(uint8_t, DT_U8, "uint8")
ACX_DT(int16_t, DT_I16, "int16")
ACX_DT(uint16_t, DT_U16, "uint16")
ACX_DT(int64_t, DT_I64, "int64")
ACX_DT(uint32_t, DT_U32, "uint32")
ACX_DT(uint64_t, DT_U64, "uint64")
ACX_DT(double, DT_F64, "fp64")
ACX_DT(bool, DT_BOOL, "bool")
#undef ACX_DT

constexpr uint32_t DM(uint8_t id) { return 1u << id; }
constexpr uint32_t M_F32 = DM(DT_F32), M_F16 = DM(DT_F16), M_BF16 = DM(DT_BF16), M_I32 = DM(DT_I32),
                   M_I16 = DM(DT_I16), M_U16 = DM(DT_U16), M_U32 = DM(DT_U32), M_I8 = DM(DT_I8), M_U8 = DM(DT_U8);
constexpr uint32_t M_FP = M_F32 | M_F16;

inline const char* DtName(uint8_t id) {
    static const char* n[] = {"none", "fp32", "fp16", "bf16", "int32", "int8", "uint8", "int16", "uint16", "int64", "bool", "uint32", "uint64", "fp64"};
    return id < sizeof(n) / sizeof(n[0]) ? n[id] : "?";
}
inline std::string DtList(uint32_t mask) {
    std::string s;
    for (uint8_t i = 1; i < 14; i++)
        if (mask & DM(i)) s += (s.empty() ? "" : "/") + std::string(DtName(i));
    return s;
}
template <class T> inline void CheckDtype(const char* api, uint32_t allowed) {
    if (!(allowed & DM(DT<T>::id)))
        Fail("%s: dtype %s is not supported by this API on the target SoC (supported: %s)", api, DT<T>::name, DtList(allowed).c_str());
}

// compute type: 16-bit floats compute in float; integers in int64
template <class T> struct CT { using type = std::conditional_t<std::is_floating_point<T>::value, T, int64_t>; };
template <> struct CT<half> { using type = float; };
template <> struct CT<bfloat16_t> { using type = float; };
template <class T> inline typename CT<T>::type Ld(const T& v) { return (typename CT<T>::type)v; }
template <class T, class V> inline T St(V v) { return (T)v; }

inline uint64_t CeilDivU(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
inline uint64_t Align32(uint64_t a) { return (a + 31) / 32 * 32; }
}  // namespace acx

namespace AscendC {

enum class TPosition : uint8_t { GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC, LCM, SPM, SHM, TSCM, MAX };
using QuePosition = TPosition;

constexpr int32_t ONE_BLK_SIZE = 32;
constexpr int32_t ONE_REPEAT_BYTE_SIZE = 256;
constexpr int32_t DEFAULT_REPEAT_STRIDE = 8;
constexpr int32_t DEFAULT_BLK_NUM = 8;
constexpr int32_t MAX_REPEAT_TIMES = 255;
constexpr int32_t BLOCK_CUBE = 16;
constexpr int32_t ONE_BLOCK_SIZE = 32;

inline const char* PosName(TPosition p) {
    switch (p) {
        case TPosition::GM: return "GM";
        case TPosition::A1: return "A1";
        case TPosition::A2: return "A2";
        case TPosition::B1: return "B1";
        case TPosition::B2: return "B2";
        case TPosition::C1: return "C1";
        case TPosition::C2: return "C2";
        case TPosition::CO1: return "CO1";
        case TPosition::CO2: return "CO2";
        case TPosition::VECIN: return "VECIN";
        case TPosition::VECOUT: return "VECOUT";
        case TPosition::VECCALC: return "VECCALC";
        case TPosition::TSCM: return "TSCM";
        default: return "?";
    }
}
inline int MemOf(TPosition p) {
    switch (p) {
        case TPosition::A1: case TPosition::B1: case TPosition::C1: case TPosition::TSCM: return acx::MEM_L1;
        case TPosition::A2: return acx::MEM_L0A;
        case TPosition::B2: return acx::MEM_L0B;
        case TPosition::CO1: return acx::MEM_L0C;
        case TPosition::C2: return acx::MEM_BT;  // BT Buffer on Atlas A2 (TPosition table of the Ascend C API reference)
        default: return acx::MEM_UB;
    }
}
// producer / consumer pipes of a queue at this position
inline void QueuePipes(TPosition p, uint8_t& prod, uint8_t& cons) {
    switch (p) {
        case TPosition::VECIN: prod = acx::P_MTE2; cons = acx::P_V; break;
        case TPosition::VECOUT: prod = acx::P_V; cons = acx::P_MTE3; break;
        case TPosition::A1: case TPosition::B1: case TPosition::C1: prod = acx::P_MTE2; cons = acx::P_MTE1; break;
        case TPosition::A2: case TPosition::B2: prod = acx::P_MTE1; cons = acx::P_M; break;
        case TPosition::CO1: prod = acx::P_M; cons = acx::P_FIX; break;
        case TPosition::C2: prod = acx::P_MTE1; cons = acx::P_M; break;  // L1 -> bias table, read by Mmad
        default: prod = cons = acx::P_V; break;
    }
}

enum class HardEvent : uint8_t {
    MTE2_V, V_MTE2, V_MTE3, MTE3_V, V_S, S_V, MTE2_S, S_MTE2, MTE3_S, S_MTE3, MTE2_MTE3, MTE3_MTE2,
    MTE1_M, M_MTE1, M_FIX, FIX_M, MTE2_MTE1, MTE1_MTE2, M_V, V_M, FIX_S, S_FIX, MTE1_V, V_MTE1,
    FIX_MTE2, MTE2_FIX, MTE2_M, M_MTE2, M_S, S_M, MTE1_S, S_MTE1, FIX_MTE1, MTE1_FIX, MAX
};
inline void EventPipes(HardEvent e, uint8_t& src, uint8_t& dst, const char*& name) {
    using namespace acx;
    static const struct { uint8_t s, d; const char* n; } t[] = {
        {P_MTE2, P_V, "MTE2_V"}, {P_V, P_MTE2, "V_MTE2"}, {P_V, P_MTE3, "V_MTE3"}, {P_MTE3, P_V, "MTE3_V"},
        {P_V, P_S, "V_S"}, {P_S, P_V, "S_V"}, {P_MTE2, P_S, "MTE2_S"}, {P_S, P_MTE2, "S_MTE2"},
        {P_MTE3, P_S, "MTE3_S"}, {P_S, P_MTE3, "S_MTE3"}, {P_MTE2, P_MTE3, "MTE2_MTE3"}, {P_MTE3, P_MTE2, "MTE3_MTE2"},
        {P_MTE1, P_M, "MTE1_M"}, {P_M, P_MTE1, "M_MTE1"}, {P_M, P_FIX, "M_FIX"}, {P_FIX, P_M, "FIX_M"},
        {P_MTE2, P_MTE1, "MTE2_MTE1"}, {P_MTE1, P_MTE2, "MTE1_MTE2"}, {P_M, P_V, "M_V"}, {P_V, P_M, "V_M"},
        {P_FIX, P_S, "FIX_S"}, {P_S, P_FIX, "S_FIX"}, {P_MTE1, P_V, "MTE1_V"}, {P_V, P_MTE1, "V_MTE1"},
        {P_FIX, P_MTE2, "FIX_MTE2"}, {P_MTE2, P_FIX, "MTE2_FIX"}, {P_MTE2, P_M, "MTE2_M"}, {P_M, P_MTE2, "M_MTE2"},
        {P_M, P_S, "M_S"}, {P_S, P_M, "S_M"}, {P_MTE1, P_S, "MTE1_S"}, {P_S, P_MTE1, "S_MTE1"},
        {P_FIX, P_MTE1, "FIX_MTE1"}, {P_MTE1, P_FIX, "MTE1_FIX"}};
    size_t i = (size_t)e;
    if (i >= sizeof(t) / sizeof(t[0])) acx::Fail("SetFlag/WaitFlag: invalid HardEvent %d", (int)e);
    src = t[i].s; dst = t[i].d; name = t[i].n;
}

using TEventID = int8_t;

// ------------------------------------------------------------------------------------------
// Tensors
// ------------------------------------------------------------------------------------------
template <class T>
class LocalTensor {
public:
    using PrimType = T;
    uint8_t* base_ = nullptr;  // core arena (nullptr in trace-only mode)
    uint32_t off_ = 0;         // byte offset of this view inside the arena
    uint32_t len_ = 0;         // bytes visible through this view
    TPosition pos_ = TPosition::VECCALC;
    bool valid_ = false;

    LocalTensor() = default;
    T* ptr() const { return reinterpret_cast<T*>(base_ + off_); }
    uint32_t GetSize() const { return len_ / sizeof(T); }
    uint32_t GetLength() const { return len_; }
    void SetSize(uint32_t n) {
        if ((uint64_t)n * sizeof(T) > len_) acx::Fail("LocalTensor::SetSize(%u): larger than the buffer (%u elements)", n, GetSize());
        len_ = n * sizeof(T);
    }
    TPosition GetPosition() const { return pos_; }
    LocalTensor operator[](uint32_t i) const {
        Check("LocalTensor::operator[]");
        if ((uint64_t)i * sizeof(T) > len_)
            acx::Fail("LocalTensor::operator[](%u): offset beyond the tensor (%u %s elements)", i, GetSize(), acx::DT<T>::name);
        LocalTensor r = *this;
        r.off_ += i * sizeof(T);
        r.len_ -= i * sizeof(T);
        return r;
    }
    template <class U>
    LocalTensor<U> ReinterpretCast() const {
        LocalTensor<U> r;
        r.base_ = base_; r.off_ = off_; r.len_ = len_ / sizeof(U) * sizeof(U); r.pos_ = pos_; r.valid_ = valid_;
        return r;
    }
    T GetValue(uint32_t i) const {
        Check("LocalTensor::GetValue");
        if ((uint64_t)(i + 1) * sizeof(T) > len_)
            acx::Fail("LocalTensor::GetValue(%u): out-of-bounds local access (tensor has %u %s elements)", i, GetSize(), acx::DT<T>::name);
        acx::EmitInstr(acx::P_S, acx::OP_GET_VALUE, acx::DT<T>::id, 0, 0, 0, sizeof(T), 1);
        if (!base_) return T(0);
        T v;
        std::memcpy(&v, base_ + off_ + (size_t)i * sizeof(T), sizeof(T));
        return v;
    }
    template <class S>
    void SetValue(uint32_t i, const S& v) const {
        Check("LocalTensor::SetValue");
        if ((uint64_t)(i + 1) * sizeof(T) > len_)
            acx::Fail("LocalTensor::SetValue(%u): out-of-bounds local access (tensor has %u %s elements)", i, GetSize(), acx::DT<T>::name);
        acx::EmitInstr(acx::P_S, acx::OP_SET_VALUE, acx::DT<T>::id, 0, 0, 0, sizeof(T), 1);
        if (!base_) return;
        T t = (T)v;
        std::memcpy(base_ + off_ + (size_t)i * sizeof(T), &t, sizeof(T));
    }
    T* GetPhyAddr() const { return base_ ? ptr() : nullptr; }
    T* GetPhyAddr(uint32_t i) const { return base_ ? ptr() + i : nullptr; }
    void Check(const char* api) const {
        if (!valid_) acx::Fail("%s: LocalTensor is not initialised (use AllocTensor/DeQue/TBuf::Get first)", api);
    }
};

template <class T>
class GlobalTensor {
public:
    using PrimType = T;
    T* ptr_ = nullptr;
    uint64_t size_ = 0;
    int gm_ = -1;

    GlobalTensor() = default;
    void SetGlobalBuffer(__gm__ T* p, uint64_t size) { ptr_ = p; size_ = size; gm_ = acx::FindGm((uint64_t)p); }
    void SetGlobalBuffer(__gm__ T* p) { SetGlobalBuffer(p, 0); }
    GlobalTensor operator[](uint64_t i) const {
        GlobalTensor r = *this;
        r.ptr_ = ptr_ + i;
        r.size_ = size_ > i ? size_ - i : 0;
        return r;
    }
    uint64_t GetSize() const { return size_; }
    __gm__ T* GetPhyAddr() const { return ptr_; }
    __gm__ T* GetPhyAddr(uint64_t i) const { return ptr_ + i; }
    uint64_t Addr(uint64_t i = 0) const { return (uint64_t)(ptr_ + i); }
    T GetValue(uint64_t i) const {
        uint64_t off = acx::CheckGm(gm_, Addr(i), sizeof(T), "GlobalTensor::GetValue");
        acx::EmitInstr(acx::P_S, acx::OP_GET_VALUE, acx::DT<T>::id, 0, 0, 0, sizeof(T), 1, off, acx::GmAlignFlags(off));
        if (acx::TraceOnly()) return T(0);
        T v;
        std::memcpy(&v, ptr_ + i, sizeof(T));
        return v;
    }
    template <class S>
    void SetValue(uint64_t i, const S& v) const {
        uint64_t off = acx::CheckGm(gm_, Addr(i), sizeof(T), "GlobalTensor::SetValue");
        acx::EmitInstr(acx::P_S, acx::OP_SET_VALUE, acx::DT<T>::id, 0, 0, 0, sizeof(T), 1, off, acx::GmAlignFlags(off));
        if (acx::TraceOnly()) return;
        T t = (T)v;
        std::memcpy(ptr_ + i, &t, sizeof(T));
    }
};

// ------------------------------------------------------------------------------------------
// TPipe / TQue / TBuf
// ------------------------------------------------------------------------------------------
struct TBufBase {
    TPosition pos_ = TPosition::VECCALC;
    uint32_t start_ = 0, len_ = 0;
    bool init_ = false;
};

template <TPosition pos = TPosition::VECCALC>
class TBuf : public TBufBase {
public:
    TBuf() { pos_ = pos; }
    template <class T>
    LocalTensor<T> Get(uint32_t count) const {
        if (!init_) acx::Fail("TBuf<%s>::Get: buffer not initialised (call TPipe::InitBuffer first)", PosName(pos));
        if ((uint64_t)count * sizeof(T) > len_)
            acx::Fail("TBuf<%s>::Get<%s>(%u): %llu B exceeds the buffer's %u B", PosName(pos), acx::DT<T>::name, count,
                      (unsigned long long)count * sizeof(T), len_);
        LocalTensor<T> t;
        t.base_ = acx::Arena(acx::Cur(), MemOf(pos));
        t.off_ = start_;
        t.len_ = count * sizeof(T);
        t.pos_ = pos;
        t.valid_ = true;
        return t;
    }
    template <class T>
    LocalTensor<T> Get() const { return Get<T>(len_ / sizeof(T)); }
    template <class T>
    LocalTensor<T> GetWithOffset(uint32_t count, uint32_t offsetBytes) const {
        if (offsetBytes % 32) acx::Fail("TBuf::GetWithOffset: offset %u B is not 32 B aligned", offsetBytes);
        if ((uint64_t)offsetBytes + (uint64_t)count * sizeof(T) > len_)
            acx::Fail("TBuf::GetWithOffset(%u, %u): beyond the buffer's %u B", count, offsetBytes, len_);
        LocalTensor<T> t = Get<T>(0);
        t.off_ += offsetBytes;
        t.len_ = count * sizeof(T);
        return t;
    }
};

}  // namespace AscendC

namespace acx {
struct QueueBase {
    enum SlotState : uint8_t { FREE = 0, ALLOCATED = 1, ENQUEUED = 2, DEQUEUED = 3 };
    AscendC::TPosition pos_ = AscendC::TPosition::VECIN;
    int depth_ = 1;
    uint32_t num_ = 0, len_ = 0, start_ = 0;
    uint16_t qid_ = 0;
    uint8_t prod_ = 0, cons_ = 0;
    uint8_t state_[64] = {};
    bool wait_[64] = {};
    uint8_t fifo_[64] = {};
    uint32_t head_ = 0, count_ = 0, next_ = 0;
    CoreState* core_ = nullptr;
    uint64_t run_ = 0;

    static const char* StateName(uint8_t s) {
        static const char* n[] = {"free", "allocated", "enqueued", "dequeued"};
        return n[s & 3];
    }
    std::string Name() const {
        char b[64];
        snprintf(b, sizeof b, "TQue<%s>#%u", AscendC::PosName(pos_), qid_);
        return b;
    }
    void Need(const char* api) const {
        if (!core_) acx::Fail("%s: queue not initialised (call TPipe::InitBuffer first)", api);
    }
    uint32_t Key(uint32_t slot) const { return ((uint32_t)qid_ << 8) | slot; }
    int SlotOf(uint32_t off, AscendC::TPosition p) const {
        if (MemOfPos(p) != MemOfPos(pos_) || off < start_) return -1;
        uint32_t stride = (uint32_t)Align32(len_);
        uint32_t rel = off - start_;
        if (rel % stride) return -1;
        uint32_t s = rel / stride;
        return s < num_ ? (int)s : -1;
    }
    static int MemOfPos(AscendC::TPosition p) { return AscendC::MemOf(p); }
    std::string Leftovers() const {
        std::string s;
        for (uint32_t i = 0; i < num_; i++)
            if (state_[i] != FREE) s += (s.empty() ? "" : ", ") + Name() + " buffer " + std::to_string(i) + " " + StateName(state_[i]);
        return s;
    }
    ~QueueBase() {
        if (!core_ || run_ != g_run_serial || !g_rt) return;
        auto& v = core_->queues;
        v.erase(std::remove(v.begin(), v.end(), this), v.end());
        std::string l = Leftovers();
        if (!l.empty() && core_->pending_error.empty())
            core_->pending_error = "tensors still allocated at kernel end: " + l + " (every AllocTensor needs a FreeTensor)";
    }
};

inline void EndOfKernelChecks(CoreState& c) {
    for (QueueBase* q : c.queues) {
        std::string l = q->Leftovers();
        if (!l.empty() && c.pending_error.empty())
            c.pending_error = "tensors still allocated at kernel end: " + l + " (every AllocTensor needs a FreeTensor)";
    }
    if (!c.pending_error.empty()) throw Error(c.pending_error);
}
}  // namespace acx

namespace AscendC {

template <TPosition pos, int32_t depth = 1>
class TQue : public acx::QueueBase {
public:
    TQue() { pos_ = pos; depth_ = depth; QueuePipes(pos, prod_, cons_); }
    TQue(const TQue&) = delete;
    TQue& operator=(const TQue&) = delete;

    template <class T>
    LocalTensor<T> AllocTensor() {
        Need("TQue::AllocTensor");
        uint32_t s = num_;
        for (uint32_t k = 0; k < num_; k++) {
            uint32_t i = (next_ + k) % num_;
            if (state_[i] == FREE) { s = i; break; }
        }
        if (s == num_)
            acx::Fail("%s::AllocTensor: all %u buffers of the queue are in use (%s); InitBuffer gave it %u buffer(s) - FreeTensor first or raise the buffer count",
                      Name().c_str(), num_, Leftovers().c_str(), num_);
        next_ = (s + 1) % num_;
        state_[s] = ALLOCATED;
        if (wait_[s] && prod_ != cons_) acx::EmitSync(acx::RK_WAIT_FLAG, prod_, cons_, Key(s));
        wait_[s] = false;
        return Tensor<T>(s);
    }
    template <class T>
    bool EnQue(const LocalTensor<T>& t) {
        Need("TQue::EnQue");
        int s = SlotOf(t.off_, t.pos_);
        if (!t.valid_ || s < 0)
            acx::Fail("%s::EnQue: tensor (%s offset %u) is not a buffer of this queue (unknown tensor)", Name().c_str(),
                      acx::MemName(MemOf(t.pos_)), t.off_);
        if (state_[s] != ALLOCATED)
            acx::Fail("%s::EnQue: buffer %d is %s, expected allocated (EnQue twice, or after FreeTensor?)", Name().c_str(), s, StateName(state_[s]));
        uint32_t limit = num_ > (uint32_t)depth_ ? num_ : (uint32_t)depth_;
        if (count_ >= limit) acx::Fail("%s::EnQue: queue is full (%u entries)", Name().c_str(), count_);
        state_[s] = ENQUEUED;
        fifo_[(head_ + count_) % 64] = (uint8_t)s;
        count_++;
        if (prod_ != cons_) acx::EmitSync(acx::RK_SET_FLAG, prod_, cons_, Key(s));
        return true;
    }
    template <class T>
    LocalTensor<T> DeQue() {
        Need("TQue::DeQue");
        if (count_ == 0)
            acx::Fail("%s::DeQue on an empty queue (no EnQue before this DeQue; would hang on the device)", Name().c_str());
        uint32_t s = fifo_[head_];
        head_ = (head_ + 1) % 64;
        count_--;
        state_[s] = DEQUEUED;
        if (prod_ != cons_) acx::EmitSync(acx::RK_WAIT_FLAG, cons_, prod_, Key(s));
        return Tensor<T>(s);
    }
    template <class T>
    void FreeTensor(const LocalTensor<T>& t) {
        Need("TQue::FreeTensor");
        int s = SlotOf(t.off_, t.pos_);
        if (!t.valid_ || s < 0)
            acx::Fail("%s::FreeTensor: tensor (%s offset %u) is not owned by this queue", Name().c_str(), acx::MemName(MemOf(t.pos_)), t.off_);
        if (state_[s] == FREE) acx::Fail("%s::FreeTensor: buffer %d is already free (double FreeTensor)", Name().c_str(), s);
        if (state_[s] == ENQUEUED) acx::Fail("%s::FreeTensor: buffer %d is still enqueued (DeQue it first)", Name().c_str(), s);
        if (state_[s] == DEQUEUED && prod_ != cons_) {
            acx::EmitSync(acx::RK_SET_FLAG, cons_, prod_, Key(s));
            wait_[s] = true;
        }
        state_[s] = FREE;
    }
    bool VacantInQue() const { return count_ < (uint32_t)depth_; }
    bool HasTensorInQue() const { return count_ > 0; }
    int32_t GetTensorCountInQue() const { return (int32_t)count_; }

private:
    template <class T>
    LocalTensor<T> Tensor(uint32_t s) {
        LocalTensor<T> t;
        t.base_ = acx::Arena(*core_, MemOf(pos_));
        t.off_ = start_ + s * (uint32_t)acx::Align32(len_);
        t.len_ = len_ / sizeof(T) * sizeof(T);
        t.pos_ = pos_;
        t.valid_ = true;
        return t;
    }
};

// TQueBind<src, dst, depth>: one buffer per slot bound from a source to a destination position
// (documented paths include VECIN -> VECOUT: data copied in and out of the same buffer). Its
// EnQue/DeQue/FreeTensor sync the source's producer with the destination's consumer (VECIN ->
// VECOUT: MTE2 -> MTE3, and MTE3 -> MTE2 before a slot is refilled); vector work on the buffer
// in between is synced by the kernel itself (SetFlag/WaitFlag MTE2_V and V_MTE3).
template <TPosition src, TPosition dst, int32_t depth = 1>
class TQueBind : public TQue<src, depth> {
public:
    TQueBind() {
        uint8_t p, c;
        QueuePipes(src, this->prod_, c);
        QueuePipes(dst, p, this->cons_);
    }
};

}  // namespace AscendC

namespace acx {
class TPipeBase {
public:
    struct Alloc { std::string what; int mem; uint64_t bytes; };
    uint64_t cursor_[MEM_N] = {};
    std::vector<Alloc> allocs_;

    uint32_t Reserve(const std::string& what, int mem, uint32_t num, uint32_t len) {
        CoreState& c = Cur();
        if (len == 0) Fail("TPipe::InitBuffer(%s): buffer length is 0", what.c_str());
        if ((c.kind == CORE_AIC && mem == MEM_UB) || (c.kind == CORE_AIV && mem != MEM_UB))
            Fail("TPipe::InitBuffer(%s): %s is not available on a %s (on the split 910B the cube core has "
                 "L1/L0A/L0B/L0C, the vector core UB; exchange data through GM)",
                 what.c_str(), MemName(mem), CoreKindName(c.kind));
        uint64_t bytes = (uint64_t)num * Align32(len);
        uint64_t need = cursor_[mem] + bytes;
        allocs_.push_back({what, mem, bytes});
        if (need > c.cap[mem]) {
            std::string list;
            for (auto& a : allocs_)
                if (a.mem == mem) list += (list.empty() ? "" : ", ") + a.what;
            Fail("TPipe::InitBuffer: %s over-allocation: %llu B needed > %llu B available (%s)", MemName(mem),
                 (unsigned long long)need, (unsigned long long)c.cap[mem], list.c_str());
        }
        uint32_t start = (uint32_t)cursor_[mem];
        cursor_[mem] = need;
        if (need > c.mem_used[mem]) c.mem_used[mem] = need;
        c.pipe = this;
        return start;
    }
};
}  // namespace acx

namespace AscendC {
class TPipe : public acx::TPipeBase {
public:
    TPipe() { if (acx::g_cur) acx::g_cur->pipe = this; }
    template <TPosition pos, int32_t depth>
    void InitBuffer(TQue<pos, depth>& q, uint32_t num, uint32_t len) {
        acx::CoreState& c = acx::Cur();
        if (q.core_ && q.run_ == acx::g_run_serial)
            acx::Fail("TPipe::InitBuffer: %s initialised twice", q.Name().c_str());
        if (num == 0 || num > 64) acx::Fail("TPipe::InitBuffer(TQue<%s>): buffer count %u not in [1, 64]", PosName(pos), num);
        q.qid_ = c.next_queue_id++;
        char what[96];
        snprintf(what, sizeof what, "%s %u x %u B", q.Name().c_str(), num, len);
        q.start_ = Reserve(what, MemOf(pos), num, len);
        q.num_ = num;
        q.len_ = len;
        q.core_ = &c;
        q.run_ = acx::g_run_serial;
        c.queues.push_back(&q);
    }
    template <TPosition pos>
    void InitBuffer(TBuf<pos>& b, uint32_t len) {
        acx::CoreState& c = acx::Cur();
        char what[96];
        snprintf(what, sizeof what, "TBuf<%s>#%u %u B", PosName(pos), (unsigned)c.next_queue_id++, len);
        b.start_ = Reserve(what, MemOf(pos), 1, len);
        b.len_ = len;
        b.init_ = true;
    }
    void Reset() { std::memset(cursor_, 0, sizeof cursor_); allocs_.clear(); }
    void Destroy() {}
    TEventID FetchEventID(HardEvent) { return 0; }
    template <HardEvent e> TEventID FetchEventID() { return 0; }
    template <HardEvent e> TEventID AllocEventID() { return 0; }
    template <HardEvent e> void ReleaseEventID(TEventID) {}
};
inline TPipe* GetTPipePtr() {
    acx::CoreState& c = acx::Cur();
    if (!c.pipe) acx::Fail("GetTPipePtr: no TPipe constructed in this kernel");
    return static_cast<TPipe*>(c.pipe);
}

// ------------------------------------------------------------------------------------------
// Kernel environment, sync
// ------------------------------------------------------------------------------------------
inline int64_t GetBlockIdx() { return acx::Cur().block_idx; }
inline int64_t GetBlockNum() { return acx::g_rt ? acx::g_rt->opt.block_dim : 1; }
// MIX (1 AIC : 2 AIV): an AIV is sub-block 0 or 1 of its AI Core; GetBlockIdx on an AIV is 2 x block + sub-block.
inline bool InMixAiv() { return acx::g_rt && acx::g_rt->mixed && acx::Cur().kind == acx::CORE_AIV; }
inline int64_t GetSubBlockIdx() { return InMixAiv() ? acx::Cur().block_idx % 2 : 0; }
inline int64_t GetSubBlockNum() { return InMixAiv() ? 2 : 1; }
inline GM_ADDR GetUserWorkspace(GM_ADDR workspace) { return workspace; }
inline GM_ADDR GetSysWorkSpacePtr() { return nullptr; }
inline int64_t GetTaskRation() { return InMixAiv() ? 2 : 1; }
// Trap(): the kernel stops itself (documented: NPU mode interrupts the AI Core, CPU mode is an
// assert). A failed run with one line, never undefined behaviour: the lowering calls it when
// a data check fails (an index input's value outside the dim it indexes).
[[noreturn]] inline void Trap() {
    acx::Fail("Trap(): the kernel stopped itself on a failed data check (an index value outside "
              "the dim it indexes: a gather or scatter index out of range)");
}

template <pipe_t pipe>
inline void PipeBarrier() {
    acx::Cur();
    acx::EmitSync(acx::RK_BARRIER, acx::PipeOf(pipe), 0, 0);
}
inline void pipe_barrier(pipe_t p) { acx::Cur(); acx::EmitSync(acx::RK_BARRIER, acx::PipeOf(p), 0, 0); }

template <HardEvent e>
inline void SetFlag(int32_t id) {
    acx::CoreState& c = acx::Cur();
    uint8_t s, d; const char* n;
    EventPipes(e, s, d, n);
    c.flags[((uint32_t)e << 16) | (uint32_t)id]++;
    acx::EmitSync(acx::RK_SET_FLAG, s, d, acx::EXPLICIT_EVENT_BASE | (uint32_t)id);
}
template <HardEvent e>
inline void WaitFlag(int32_t id) {
    acx::CoreState& c = acx::Cur();
    uint8_t s, d; const char* n;
    EventPipes(e, s, d, n);
    int32_t& k = c.flags[((uint32_t)e << 16) | (uint32_t)id];
    if (k <= 0) acx::Fail("WaitFlag<HardEvent::%s>(%d) without a preceding SetFlag<HardEvent::%s>(%d) (would hang on the device)", n, id, n, id);
    k--;
    acx::EmitSync(acx::RK_WAIT_FLAG, d, s, acx::EXPLICIT_EVENT_BASE | (uint32_t)id);
}

// Cross-core flags of a mixed launch (Huawei's CrossCoreSetFlag / CrossCoreWaitFlag reference,
// "CrossCoreSetFlag(ISASI)", atlasascendc_api_07_0273): each flag id (0-10 on Atlas A2) is a
// counter; mode 2 = AIC <-> AIV inside one AI Core: the AIC's set adds 1 on both of its AIVs, the
// AIC's counter adds 1 once both AIVs have set; a wait blocks while the counter is 0, then takes 1;
// at most 15 sets may be pending on one id. Modes 0 (all cores) and 1 (AIV pair) are not emulated.
namespace xflag {
using namespace ::acx;
constexpr uint32_t XFLAG_IDS = 11, XFLAG_MAX_PENDING = 15;
inline uint32_t XAvailable(const CoreState& c, uint32_t f) {
    const uint32_t got = c.kind == CORE_AIC ? (c.xin[0][f] < c.xin[1][f] ? c.xin[0][f] : c.xin[1][f]) : c.xin[0][f];
    return got - c.xused[f];
}
inline void XCheckId(const char* api, int32_t id) {
    if (!g_rt->mixed)
        Fail("%s(%d): cross-core flags need a mixed launch (KERNEL_TYPE_MIX_AIC_1_2: 1 AIC + 2 AIV per AI Core); "
             "this kernel was launched on one core type, nothing could ever set the flag", api, id);
    if (id < 0 || (uint32_t)id >= XFLAG_IDS) Fail("%s: flag id %d outside 0-%u (Atlas A2)", api, id, XFLAG_IDS - 1);
}
inline void XDeliver(CoreState& to, uint32_t src, uint32_t f) {
    to.xin[src][f]++;
    if (XAvailable(to, f) > XFLAG_MAX_PENDING)
        Fail("CrossCoreSetFlag(%u): more than %u sets pending on one flag id (the documented limit; the "
             "consumer is not waiting often enough)", f, XFLAG_MAX_PENDING);
    if (to.state == 3 && to.xwait == (int32_t)f && XAvailable(to, f) > 0) to.state = 0;
}
}  // namespace xflag

template <uint8_t modeId, pipe_t pipe>
inline void CrossCoreSetFlag(uint16_t flagId) {
    acx::CoreState& c = acx::Cur();
    if (modeId != 2) acx::Fail("CrossCoreSetFlag<%d>: only mode 2 (AIC <-> AIV of one AI Core) is emulated", modeId);
    if (pipe == PIPE_S || pipe == PIPE_ALL) acx::Fail("CrossCoreSetFlag: pipe PIPE_S / PIPE_ALL is not allowed");
    xflag::XCheckId("CrossCoreSetFlag", flagId);
    acx::Runtime& rt = *acx::g_rt;
    if (c.kind == acx::CORE_AIC) {
        xflag::XDeliver(rt.cores[c.slot + 1], 0, flagId);
        xflag::XDeliver(rt.cores[c.slot + 2], 0, flagId);
    } else {
        xflag::XDeliver(rt.cores[c.aic_slot], (uint32_t)(c.slot - c.aic_slot - 1), flagId);
    }
    acx::EmitSync(acx::RK_CROSS_SET, acx::PipeOf(pipe), modeId, flagId);
}
template <uint8_t modeId = 2, pipe_t pipe = PIPE_S>
inline void CrossCoreWaitFlag(uint16_t flagId) {
    acx::CoreState& c = acx::Cur();
    xflag::XCheckId("CrossCoreWaitFlag", flagId);
    while (xflag::XAvailable(c, flagId) == 0) acx::YieldForFlag(flagId);
    c.xwait = -1;
    c.xused[flagId]++;
    acx::EmitSync(acx::RK_CROSS_WAIT, acx::P_S, modeId, flagId);
}

template <bool isAIVOnly = true>
inline void SyncAll() {
    acx::Cur();
    acx::EmitSync(acx::RK_SYNC_ALL, acx::P_ALL, 0, 0);
    acx::YieldToScheduler();
}
template <bool isAIVOnly = true>
inline void SyncAll(const GlobalTensor<int32_t>&, const LocalTensor<int32_t>&, int32_t = 0) { SyncAll<isAIVOnly>(); }

template <class T> inline void SetAtomicAdd() { acx::Cur().atomic = acx::ATOMIC_ADD; }
template <class T> inline void SetAtomicMax() { acx::Cur().atomic = acx::ATOMIC_MAX; }
template <class T> inline void SetAtomicMin() { acx::Cur().atomic = acx::ATOMIC_MIN; }
inline void SetAtomicNone() { acx::Cur().atomic = acx::ATOMIC_NONE; }

}  // namespace AscendC

#include "acx_ops.h"
#include "acx_cube.h"

namespace acx {
inline void DeclareKernelType(int t) {
    CoreState& c = Cur();
    uint8_t want;
    switch (t) {
        case KERNEL_TYPE_AIV_ONLY: case KERNEL_TYPE_MIX_AIV_1_0: want = CORE_AIV; break;
        case KERNEL_TYPE_AIC_ONLY: case KERNEL_TYPE_MIX_AIC_1_0: want = CORE_AIC; break;
        case KERNEL_TYPE_MIX_AIC_1_2:
            if (!g_rt || !g_rt->mixed)
                Fail("KERNEL_TASK_TYPE_DEFAULT: a mixed kernel (KERNEL_TYPE_MIX_AIC_1_2) must be launched with "
                     "core_type=mix (1 AIC + 2 AIV per block)");
            return;
        case KERNEL_TYPE_MIX_AIC_1_1:
            Fail("KERNEL_TASK_TYPE_DEFAULT: KERNEL_TYPE_MIX_AIC_1_1 is not emulated (a 910B AI Core has 2 AIV per "
                 "AIC: KERNEL_TYPE_MIX_AIC_1_2)");
        default:
            return;  // coupled-core types (310P): nothing to enforce
    }
    if (g_rt && g_rt->mixed)
        Fail("KERNEL_TASK_TYPE_DEFAULT: launched as a mixed kernel (core_type=mix) but declares a %s-only kernel",
             want == CORE_AIC ? "cube (AIC)" : "vector (AIV)");
    int32_t forced = g_rt ? g_rt->opt.core_type : 0;
    if (forced && forced != (want == CORE_AIC ? 2 : 1))
        Fail("KERNEL_TASK_TYPE_DEFAULT: the kernel declares a %s kernel but was launched with core_type=%s",
             want == CORE_AIC ? "cube (AIC)" : "vector (AIV)", forced == 2 ? "aic" : "aiv");
    for (int m = 0; m < MEM_N; m++)
        if (c.mem_used[m] && ((want == CORE_AIC) == (m == MEM_UB)))
            Fail("KERNEL_TASK_TYPE_DEFAULT: %s buffers were allocated before declaring a %s kernel", MemName(m),
                 want == CORE_AIC ? "cube (AIC)" : "vector (AIV)");
    c.kind = want;
}
}  // namespace acx

// Default tiling loader: GET_TILING_DATA(var, tiling) for a struct named TilingData.
namespace acx {
template <class T>
inline void LoadTiling(T* dst, const uint8_t* src) {
    if (!src) Fail("GET_TILING_DATA: tiling pointer is NULL");
    int gi = FindGm((uint64_t)src);
    if (gi >= 0) CheckGm(gi, (uint64_t)src, sizeof(T), "GET_TILING_DATA");
    std::memcpy((void*)dst, src, sizeof(T));
}
}  // namespace acx
#ifndef GET_TILING_DATA
#define GET_TILING_DATA(var, tiling) \
    TilingData var;                  \
    acx::LoadTiling(&var, (const uint8_t*)(tiling))
#endif
