// acx_runtime.h - run-time state of the ascendcraft AscendC CPU emulator:
// errors, GM registry, per-core state, cooperative fibers (SyncAll), trace writer, acx::Run.
#pragma once
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "acx_summary.h"
#include "acx_trace.h"

extern "C" {
// Per-run options (C layout; mirrored with ctypes in ascendcraft/emulator/runner.py).
struct AcxRunStats {
    uint64_t records_written;  // trace records written to trace_path (summary: records traced)
    uint64_t records_dropped;  // always 0: a run whose trace reaches max_trace_records stops
    uint64_t api_calls;        // records produced (written or not) over all cores
    uint64_t ub_bytes_used;    // max UB bytes allocated by InitBuffer over all cores
};
struct AcxRunOptions {
    uint32_t block_dim;
    int32_t trace_only;          // 1: skip arithmetic and memory traffic
    const char* trace_path;      // NULL: no trace
    uint64_t max_trace_records;  // 0: unlimited; reaching it stops the run (acx_run returns 3)
    uint64_t ub_bytes, l1_bytes, l0a_bytes, l0b_bytes, l0c_bytes;
    const uint32_t* block_ids;   // optional subset of cores to run
    int32_t n_block_ids;         // 0: all
    uint32_t stack_kib;          // fiber stack per core (0: 1024 KiB)
    AcxRunStats* stats;          // optional, filled on return
    int32_t core_type;           // 0 auto (vector unless the kernel declares AIC), 1 AIV, 2 AIC,
                                 // 3 MIX: each block is one AI Core = 1 AIC + 2 AIV (910B ratio 1:2)
    int32_t trace_summary;       // 1: build the trace summary in memory (acx_summary.h), no file
    uint64_t bt_bytes;           // bias table (C2) of a cube core
};
}

namespace acx {

struct Error : std::exception {
    std::string msg;
    explicit Error(std::string m) : msg(std::move(m)) {}
    const char* what() const noexcept override { return msg.c_str(); }
};

[[noreturn]] inline void Fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
[[noreturn]] inline void Fail(const char* fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    throw Error(buf);
}

// MEM_BT (appended): the bias table (TPosition C2 on Atlas A2), read by Mmad with a bias operand
enum Mem : uint8_t { MEM_UB = 0, MEM_L1 = 1, MEM_L0A = 2, MEM_L0B = 3, MEM_L0C = 4, MEM_BT = 5, MEM_N = 6 };
inline const char* MemName(int m) {
    static const char* n[] = {"UB", "L1", "L0A", "L0B", "L0C", "BT"};
    return m >= 0 && m < MEM_N ? n[m] : "?";
}

struct GmBuffer {
    uint64_t base, bytes;
    int index;
};

enum AtomicMode : uint8_t { ATOMIC_NONE = 0, ATOMIC_ADD = 1, ATOMIC_MAX = 2, ATOMIC_MIN = 3 };

struct QueueBase;
class TPipeBase;

struct CoreState {
    uint32_t block_idx = 0;
    uint32_t seq = 0;
    uint8_t* arena[MEM_N] = {};
    uint64_t cap[MEM_N] = {};
    uint8_t atomic = ATOMIC_NONE;
    // fiber
    ucontext_t ctx;
    uint8_t* stack = nullptr;
    size_t stack_bytes = 0, map_bytes = 0;
    int state = 0;  // 0 runnable, 1 waiting in SyncAll, 2 finished
    uint32_t sync_count = 0;
    // bookkeeping
    std::vector<QueueBase*> queues;
    std::string pending_error;
    std::unordered_map<uint32_t, int32_t> flags;  // explicit SetFlag/WaitFlag balance
    uint16_t next_queue_id = 1;
    TPipeBase* pipe = nullptr;
    uint64_t mem_used[MEM_N] = {};
    uint8_t kind = 0;  // CoreKind: 0 unknown (coupled, vector semantics), 1 AIV, 2 AIC
    std::vector<uint32_t> symbols;  // trace summary: this core's symbol ids so far
    // mixed launches (core_type 3): the AI Core this core belongs to and the cross-core flags
    uint32_t trace_id = 0;   // core id in the trace: block_idx, or (MIX) AIC g -> g, AIV s of g -> n + 2g + s
    int32_t slot = 0;        // index into Runtime::cores
    int32_t aic_slot = -1;   // MIX: index of this AI Core's AIC (its AIVs follow it)
    uint32_t group = 0;      // MIX: the AI Core (block) index
    uint32_t xin[2][16] = {};  // CrossCoreSetFlag counts received per flag id, per source (AIC: from AIV0/AIV1)
    uint32_t xused[16] = {};   // CrossCoreWaitFlag counts consumed per flag id
    int32_t xwait = -1;        // flag id this core is blocked on (state 3)
};

enum CoreKind : uint8_t { CORE_UNKNOWN = 0, CORE_AIV = 1, CORE_AIC = 2 };
inline const char* CoreKindName(uint8_t k) { return k == CORE_AIC ? "cube core (AIC)" : k == CORE_AIV ? "vector core (AIV)" : "core"; }

struct Runtime {
    AcxRunOptions opt{};
    bool trace_only = false;
    std::vector<GmBuffer> gm;
    // trace
    FILE* trace = nullptr;
    std::vector<TraceRecord> tbuf;
    size_t tfill = 0;
    uint64_t written = 0, dropped = 0, cap = 0;
    bool tracing = false;
    Summary* summary = nullptr;  // trace summary mode (no file)
    uint64_t buffered = 0;       // symbol ids held in the cores' sequences
    bool trace_full = false;  // the cap was reached: the run stops, acx_run returns 3
    int trace_errno = 0;      // a failed trace write (e.g. EFBIG at RLIMIT_FSIZE, ENOSPC)
    // cores
    std::vector<CoreState> cores;
    std::function<void()> kernel;
    ucontext_t sched;
    std::string error;
    int running = -1;
    char* err_out = nullptr;
    int err_len = 0;
    bool mixed = false;  // core_type 3: cores are [AIC, AIV0, AIV1] per block
};

inline Runtime* g_rt = nullptr;
inline uint64_t g_run_serial = 0;  // distinguishes runs for objects outliving a run
inline CoreState* g_cur = nullptr;

inline bool TraceOnly() { return g_rt->trace_only; }
inline CoreState& Cur() {
    if (!g_cur) Fail("AscendC API called outside a kernel run (acx::Run)");
    return *g_cur;
}

// Write the buffered records; a failed write is remembered (never thrown: also called
// outside the kernel's fibers).
inline void FlushTrace() {
    Runtime& rt = *g_rt;
    if (rt.trace && rt.tfill && !rt.trace_errno) {
        errno = 0;
        size_t n = fwrite(rt.tbuf.data(), sizeof(TraceRecord), rt.tfill, rt.trace);
        if (n == rt.tfill && fflush(rt.trace) != 0) n = 0;
        rt.written += n;
        if (n != rt.tfill) rt.trace_errno = errno ? errno : EIO;
        rt.tfill = 0;
    }
}

inline std::string TraceWriteError() {
    return std::string("trace write failed after ") + std::to_string(g_rt->written) + " records: " +
           std::strerror(g_rt->trace_errno);
}

// Records held by the trace: written and buffered ones, or what the summary keeps.
inline uint64_t TraceHeld(const Runtime& rt) {
    if (!rt.summary) return rt.written + rt.tfill;
    const Summary& s = *rt.summary;  // in 64 B record equivalents (ids and tokens are 4 B)
    return s.footprints.size() + s.symbols.records.size() + (rt.buffered + s.tokens.size()) / 16;
}

// Append one record (seq/core are filled here). Cheap when tracing is off. Reaching the
// cap stops the run: a partial trace must not be modeled as if it were the whole kernel.
// In summary mode the record becomes a symbol id of the core's sequence (and, for a GM
// move, a footprint kept whole).
inline void Emit(TraceRecord& r, bool gm_move = false) {
    CoreState& c = *g_cur;
    r.seq = c.seq++;
    Runtime& rt = *g_rt;
    if (!rt.tracing) return;
    if (rt.cap && TraceHeld(rt) >= rt.cap) {
        rt.trace_full = true;
        Fail("trace limit: the trace exceeded %llu records (%llu B); the run was stopped. Raise "
             "max_trace_records (ASCENDCRAFT_MAX_TRACE_RECORDS / _BYTES) or time a smaller shape",
             (unsigned long long)rt.cap, (unsigned long long)(rt.cap * sizeof(TraceRecord)));
    }
    r.core = (uint16_t)c.trace_id;
    if (rt.summary) {
        if (gm_move) rt.summary->footprints.push_back(r);
        TraceRecord m = r;
        m.seq = 0;
        m.core = 0;
        m.addr = 0;
        m._pad = gm_move ? 1 : 0;  // marks a GM move (its footprint is kept)
        c.symbols.push_back(rt.summary->symbols.Id(m));
        rt.buffered++;
        return;
    }
    rt.tbuf[rt.tfill++] = r;
    if (rt.tfill == rt.tbuf.size()) {
        FlushTrace();
        if (rt.trace_errno) Fail("%s", TraceWriteError().c_str());
    }
}

inline void EmitInstr(uint8_t pipe, uint16_t op, uint8_t dtype, uint8_t dtype2, uint64_t repeats,
                      uint64_t blocks, uint64_t bytes, uint64_t elems, uint64_t addr = 0,
                      uint8_t flags = 0) {
    TraceRecord r;
    std::memset(&r, 0, sizeof r);
    r.pipe = pipe;
    r.kind = RK_INSTR;
    r.op = op;
    r.dtype = dtype;
    r.dtype2 = dtype2;
    r.flags = flags;
    r.repeats = (uint32_t)repeats;
    r.blocks = (uint32_t)blocks;
    r.bytes = bytes;
    r.elems = elems;
    r.addr = addr;
    Emit(r);
}

// A GM <-> on-chip data move: also records the GM argument (pipe2 = 1 + argument index) and
// the GM distance between burst starts in bytes (k; 0 = contiguous), used by the L2 model.
inline void EmitGmMove(uint8_t pipe, uint16_t op, uint8_t dtype, uint64_t blocks, uint64_t bytes,
                       uint64_t elems, int gi, uint64_t off, uint64_t stride, uint8_t flags,
                       uint32_t m = 0, uint32_t n = 0) {
    TraceRecord r;
    std::memset(&r, 0, sizeof r);
    r.pipe = pipe;
    r.kind = RK_INSTR;
    r.op = op;
    r.dtype = dtype;
    r.flags = flags;
    r.blocks = (uint32_t)blocks;
    r.bytes = bytes;
    r.elems = elems;
    r.addr = off;
    r.m = m;
    r.n = n;
    r.k = blocks > 1 ? (uint32_t)(stride > 0xffffffffull ? 0xffffffffull : stride) : 0;
    int arg = (g_rt && gi >= 0 && gi < (int)g_rt->gm.size()) ? g_rt->gm[gi].index : -1;
    r.pipe2 = (arg >= 0 && arg < 255) ? (uint8_t)(arg + 1) : 0;
    Emit(r, true);
}

inline void EmitSync(uint8_t kind, uint8_t pipe, uint8_t pipe2, uint32_t event) {
    TraceRecord r;
    std::memset(&r, 0, sizeof r);
    r.kind = kind;
    r.pipe = pipe;
    r.pipe2 = pipe2;
    r.event = event;
    Emit(r);
}

// ---- GM registry ----
inline int FindGm(uint64_t p) {
    if (!g_rt) return -1;
    const auto& v = g_rt->gm;
    for (size_t i = 0; i < v.size(); i++)
        if (p >= v[i].base && p < v[i].base + v[i].bytes) return (int)i;
    for (size_t i = 0; i < v.size(); i++)  // one-past-the-end (empty view)
        if (p == v[i].base + v[i].bytes) return (int)i;
    return -1;
}

// Check that [p, p+bytes) lies inside registered GM buffer `gi`; returns the byte offset of p.
inline uint64_t CheckGm(int gi, uint64_t p, uint64_t bytes, const char* api) {
    if (gi < 0 || gi >= (int)g_rt->gm.size())
        Fail("%s: GM address 0x%llx is not inside any kernel argument buffer (%llu B access)", api,
             (unsigned long long)p, (unsigned long long)bytes);
    const GmBuffer& b = g_rt->gm[gi];
    if (p < b.base || p + bytes > b.base + b.bytes)
        Fail("%s: out-of-bounds GM access: bytes [%lld, %lld) of argument #%d whose buffer is %llu B",
             api, (long long)(p - b.base), (long long)(p - b.base + bytes), b.index,
             (unsigned long long)b.bytes);
    return p - b.base;
}

inline uint8_t GmAlignFlags(uint64_t off) {
    uint8_t f = 0;
    if (off % 512 == 0) f |= TF_GM_ALIGN512;
    if (off % 32 == 0) f |= TF_GM_ALIGN32;
    return f;
}
// Alignment flags of a multi-burst GM access (the vector and the cube path alike): every
// burst start shares the alignment of both the start offset and the stride, so a copy of
// rows whose pitch is not 512 B aligned is charged as unaligned even when its first row is.
inline uint8_t GmAlignFlags2(uint64_t off, uint64_t stride, uint64_t bursts) {
    return bursts > 1 ? (uint8_t)(GmAlignFlags(off) & GmAlignFlags(stride)) : GmAlignFlags(off);
}

// Arena of a memory kind for the current core (allocated on first use; none in trace-only mode).
inline uint8_t* Arena(CoreState& c, int mem) {
    if (g_rt->trace_only) return nullptr;
    if (!c.arena[mem]) {
        c.arena[mem] = (uint8_t*)std::calloc(c.cap[mem] ? c.cap[mem] : 1, 1);
        if (!c.arena[mem]) Fail("emulator: cannot allocate %llu B for %s", (unsigned long long)c.cap[mem], MemName(mem));
    }
    return c.arena[mem];
}

// ---- the fixed runtime: crash reporting, fibers, the run loop ----
// Header-only by default (ACX_RT is `inline`). build.py compiles these functions once into a
// prebuilt object (ACX_RUNTIME_IMPL) and builds kernels with ACX_RUNTIME_PREBUILT, which sees
// only RunKernel's declaration: the kernel's own compile then skips this code. Hidden: each
// kernel library binds to its own copy, whatever else the process has loaded.
#if defined(ACX_RUNTIME_IMPL) || defined(ACX_RUNTIME_PREBUILT)
#define ACX_RT __attribute__((visibility("hidden")))
#else
#define ACX_RT inline
#endif

inline struct sigaction g_old_sa[4];
inline const int g_sigs[4] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
inline stack_t g_old_altstack;
inline char* g_altstack = nullptr;

void EndOfKernelChecks(CoreState& c);  // defined in kernel_operator.h

ACX_RT int RunKernel(void** gm, const uint64_t* gm_bytes, int n_gm, const AcxRunOptions* opt, char* err, int errlen,
                     std::function<void()> kernel);

#ifndef ACX_RUNTIME_PREBUILT
// (crash reporting: the signal handler writes into the caller's err buffer)
ACX_RT void SigAppend(char*& p, char* end, const char* s) {
    while (*s && p < end) *p++ = *s++;
}
ACX_RT void SigAppendNum(char*& p, char* end, unsigned long long v, int base) {
    char tmp[32];
    int n = 0;
    do { tmp[n++] = "0123456789abcdef"[v % base]; v /= base; } while (v && n < 32);
    while (n && p < end) *p++ = tmp[--n];
}

ACX_RT void CrashHandler(int sig, siginfo_t* si, void*) {
    Runtime* rt = g_rt;
    if (rt && rt->err_out && rt->err_len > 1) {
        char* p = rt->err_out;
        char* end = rt->err_out + rt->err_len - 1;
        uint64_t a = (uint64_t)si->si_addr;
        bool overflow = false;
        int core = rt->running;
        for (auto& c : rt->cores)
            if (c.stack && a >= (uint64_t)c.stack - 4096 && a < (uint64_t)c.stack) overflow = true;
        if (overflow) {
            SigAppend(p, end, "stack overflow in kernel code (fiber stack ");
            SigAppendNum(p, end, rt->opt.stack_kib ? rt->opt.stack_kib : 1024, 10);
            SigAppend(p, end, " KiB; large local arrays or deep recursion)");
        } else {
            SigAppend(p, end, sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGFPE ? "SIGFPE" : "SIGILL");
            SigAppend(p, end, sig == SIGFPE ? " (arithmetic fault, e.g. integer division by zero)" : " in kernel code at address 0x");
            if (sig != SIGFPE) SigAppendNum(p, end, a, 16);
            if (sig == SIGSEGV) SigAppend(p, end, " (raw pointer access outside the AscendC API?)");
        }
        if (core >= 0 && core < (int)rt->cores.size()) {
            SigAppend(p, end, " [block ");
            SigAppendNum(p, end, rt->cores[core].block_idx, 10);
            SigAppend(p, end, "]");
        }
        *p = 0;
    }
    signal(sig, SIG_DFL);  // returning re-executes the fault under the default action
}

ACX_RT void InstallCrashHandler() {
    const size_t alt = 64 * 1024;
    g_altstack = (char*)std::malloc(alt);
    stack_t ss;
    ss.ss_sp = g_altstack;
    ss.ss_size = alt;
    ss.ss_flags = 0;
    sigaltstack(&ss, &g_old_altstack);
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = CrashHandler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 4; i++) sigaction(g_sigs[i], &sa, &g_old_sa[i]);
}

ACX_RT void RemoveCrashHandler() {
    for (int i = 0; i < 4; i++) sigaction(g_sigs[i], &g_old_sa[i], nullptr);
    sigaltstack(&g_old_altstack, nullptr);
    std::free(g_altstack);
    g_altstack = nullptr;
}

// " [block N]" of an error; in a mixed launch also which core of the AI Core.
ACX_RT std::string CoreLabel(const CoreState& c) {
    if (!g_rt || !g_rt->mixed) return " [block " + std::to_string(c.block_idx) + "]";
    if (c.kind == CORE_AIC) return " [block " + std::to_string(c.group) + " AIC]";
    return " [block " + std::to_string(c.group) + " AIV " + std::to_string(c.block_idx % 2) + "]";
}

ACX_RT void FiberEntry() {
    Runtime& rt = *g_rt;
    CoreState& c = *g_cur;
    try {
        rt.kernel();
        EndOfKernelChecks(c);
        if (rt.summary) {
            rt.buffered -= c.symbols.size();
            rt.summary->EndCore(c.trace_id, c.symbols);
        }
    } catch (const Error& e) {
        if (rt.error.empty()) rt.error = e.msg + CoreLabel(c);
    } catch (const std::exception& e) {
        if (rt.error.empty()) rt.error = std::string("C++ exception in kernel: ") + e.what() + CoreLabel(c);
    } catch (...) {
        if (rt.error.empty()) rt.error = "unknown C++ exception in kernel" + CoreLabel(c);
    }
    c.state = 2;
    swapcontext(&c.ctx, &rt.sched);
}
#endif  // ACX_RUNTIME_PREBUILT

// Called by SyncAll: park this core until every running core reaches the barrier.
inline void YieldToScheduler() {
    CoreState& c = *g_cur;
    c.state = 1;
    swapcontext(&c.ctx, &g_rt->sched);
    g_cur = &c;
}

// Called by CrossCoreWaitFlag: park this core until a CrossCoreSetFlag makes flag `id` available.
inline void YieldForFlag(int32_t id) {
    CoreState& c = *g_cur;
    c.state = 3;
    c.xwait = id;
    swapcontext(&c.ctx, &g_rt->sched);
    g_cur = &c;
}

#ifndef ACX_RUNTIME_PREBUILT
ACX_RT void Cleanup(Runtime& rt) {
    if (rt.trace) { FlushTrace(); fclose(rt.trace); rt.trace = nullptr; }
    for (auto& c : rt.cores) {
        for (int m = 0; m < MEM_N; m++) std::free(c.arena[m]);
        if (c.stack) munmap(c.stack - 4096, c.map_bytes);
    }
}

ACX_RT int RunKernel(void** gm, const uint64_t* gm_bytes, int n_gm, const AcxRunOptions* opt, char* err, int errlen,
                     std::function<void()> kernel) {
    Runtime rt;
    rt.err_out = err;
    rt.err_len = errlen;
    if (err && errlen > 0) err[0] = 0;
    int rc = 0;
    g_rt = &rt;
    g_run_serial++;
    InstallCrashHandler();
    try {
        if (!opt) Fail("acx_run: options are NULL");
        rt.opt = *opt;
        rt.trace_only = opt->trace_only != 0;
        if (opt->block_dim == 0) Fail("acx_run: block_dim is 0");
        for (int i = 0; i < n_gm; i++)
            if (gm[i]) rt.gm.push_back(GmBuffer{(uint64_t)gm[i], gm_bytes[i], i});
        delete g_summary;
        g_summary = nullptr;
        if (opt->trace_summary) {
            g_summary = rt.summary = new Summary();
            rt.tracing = true;
            rt.cap = opt->max_trace_records;
        } else if (opt->trace_path && opt->trace_path[0]) {
            rt.trace = fopen(opt->trace_path, "wb");
            if (!rt.trace) Fail("acx_run: cannot open trace file %s", opt->trace_path);
            rt.tracing = true;
            rt.tbuf.resize(1 << 15);
            rt.cap = opt->max_trace_records;
        }
        rt.kernel = std::move(kernel);
        std::vector<uint32_t> ids;
        if (opt->n_block_ids > 0 && opt->block_ids) {
            for (int i = 0; i < opt->n_block_ids; i++) {
                if (opt->block_ids[i] >= opt->block_dim)
                    Fail("acx_run: block id %u out of range (block_dim=%u)", opt->block_ids[i], opt->block_dim);
                ids.push_back(opt->block_ids[i]);
            }
        } else {
            for (uint32_t i = 0; i < opt->block_dim; i++) ids.push_back(i);
        }
        rt.mixed = opt->core_type == 3;
        const size_t per = rt.mixed ? 3 : 1;  // MIX: AIC, AIV0, AIV1 of each block (AI Core)
        rt.cores.resize(ids.size() * per);
        size_t stack_bytes = (size_t)(opt->stack_kib ? opt->stack_kib : 1024) * 1024;
        for (size_t i = 0; i < rt.cores.size(); i++) {
            CoreState& c = rt.cores[i];
            const uint32_t g = ids[i / per], sub = (uint32_t)(i % per);
            c.slot = (int32_t)i;
            c.group = g;
            c.block_idx = !rt.mixed ? g : sub == 0 ? g : 2 * g + (sub - 1);  // an AIV's GetBlockIdx: 2g + sub-block
            c.trace_id = !rt.mixed ? g : sub == 0 ? g : opt->block_dim + 2 * g + (sub - 1);
            c.aic_slot = rt.mixed ? (int32_t)(i - sub) : -1;
            c.cap[MEM_UB] = opt->ub_bytes;
            c.cap[MEM_L1] = opt->l1_bytes;
            c.cap[MEM_L0A] = opt->l0a_bytes;
            c.cap[MEM_L0B] = opt->l0b_bytes;
            c.cap[MEM_L0C] = opt->l0c_bytes;
            c.cap[MEM_BT] = opt->bt_bytes;
            c.kind = rt.mixed ? (sub == 0 ? CORE_AIC : CORE_AIV)
                     : opt->core_type == 2 ? CORE_AIC : opt->core_type == 1 ? CORE_AIV : CORE_UNKNOWN;
            c.map_bytes = stack_bytes + 4096;
            void* m = mmap(nullptr, c.map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (m == MAP_FAILED)
                Fail("acx_run: cannot map a fiber stack for core %zu of %zu (%zu KiB each)", i, ids.size(),
                     stack_bytes / 1024);
            mprotect(m, 4096, PROT_NONE);  // guard page
            c.stack = (uint8_t*)m + 4096;
            c.stack_bytes = stack_bytes;
            getcontext(&c.ctx);
            c.ctx.uc_stack.ss_sp = c.stack;
            c.ctx.uc_stack.ss_size = stack_bytes;
            c.ctx.uc_link = nullptr;
            makecontext(&c.ctx, (void (*)())FiberEntry, 0);
        }
        // cooperative scheduler: run cores in order; SyncAll parks a core until all arrive
        for (;;) {
            bool progressed = false;
            for (size_t i = 0; i < rt.cores.size() && rt.error.empty(); i++) {
                CoreState& c = rt.cores[i];
                if (c.state != 0) continue;
                g_cur = &c;
                rt.running = (int)i;
                swapcontext(&rt.sched, &c.ctx);
                g_cur = nullptr;
                rt.running = -1;
                progressed = true;
            }
            if (!rt.error.empty()) break;
            int waiting = 0, done = 0, flagged = 0;
            for (auto& c : rt.cores) { waiting += c.state == 1; done += c.state == 2; flagged += c.state == 3; }
            if (done == (int)rt.cores.size()) break;
            bool runnable = false;
            for (auto& c : rt.cores) runnable = runnable || c.state == 0;
            if (runnable) continue;  // a CrossCoreSetFlag woke a core
            if (flagged) {
                std::string w;
                for (auto& c : rt.cores)
                    if (c.state == 3 && w.size() < 200)
                        w += (w.empty() ? "" : ", ") + std::string("CrossCoreWaitFlag(") + std::to_string(c.xwait) + ")" +
                             CoreLabel(c).substr(1);
                Fail("deadlock: %s wait for a CrossCoreSetFlag that no core can still set (%d cores finished, %d at "
                     "a SyncAll); the kernel would hang on the device", w.c_str(), done, waiting);
            }
            if (waiting && done) {
                std::string w, d;
                for (auto& c : rt.cores) {
                    std::string& s = c.state == 1 ? w : d;
                    if (s.size() < 60) s += (s.empty() ? "" : ",") + std::to_string(c.block_idx);
                }
                Fail("SyncAll: blocks {%s} wait at a SyncAll that blocks {%s} never reach (they finished); "
                     "every block must call SyncAll the same number of times (would hang on the device)",
                     w.c_str(), d.c_str());
            }
            if (waiting) for (auto& c : rt.cores) c.state = 0;
            else if (!progressed) Fail("emulator: scheduler made no progress");
        }
        if (!rt.error.empty()) throw Error(rt.error);
    } catch (const Error& e) {
        rc = 1;
        if (err && errlen > 0) snprintf(err, errlen, "%s", e.msg.c_str());
    } catch (const std::exception& e) {
        rc = 2;
        if (err && errlen > 0) snprintf(err, errlen, "emulator internal error: %s", e.what());
    }
    FlushTrace();
    if (rc == 0 && rt.trace_errno) {
        rc = 1;
        if (err && errlen > 0) snprintf(err, errlen, "%s", TraceWriteError().c_str());
    }
    if (rt.trace_full) {  // also when kernel code swallowed the exception
        rc = 3;
        if (err && errlen > 0 && !err[0])
            snprintf(err, errlen, "trace limit: the trace exceeded %llu records; the run was stopped",
                     (unsigned long long)rt.cap);
    }
    if (opt && opt->stats) {
        uint64_t calls = 0, ub = 0;
        for (auto& c : rt.cores) { calls += c.seq; if (c.mem_used[MEM_UB] > ub) ub = c.mem_used[MEM_UB]; }
        opt->stats->records_written = rt.summary ? calls : rt.written;  // summary: records traced
        opt->stats->records_dropped = rt.dropped;
        opt->stats->api_calls = calls;
        opt->stats->ub_bytes_used = ub;
    }
    Cleanup(rt);
    RemoveCrashHandler();
    g_cur = nullptr;
    g_rt = nullptr;
    return rc;
}
#endif  // ACX_RUNTIME_PREBUILT

// Run kernel body `f` on every block of `opt` (the entry glue's call).
template <class F>
int Run(void** gm, const uint64_t* gm_bytes, int n_gm, const AcxRunOptions* opt, char* err, int errlen, F&& f) {
    return RunKernel(gm, gm_bytes, n_gm, opt, err, errlen, std::function<void()>(std::forward<F>(f)));
}

}  // namespace acx
