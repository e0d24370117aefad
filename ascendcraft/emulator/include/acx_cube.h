// acx_cube.h - the cube unit of the emulator (included by kernel_operator.h): GM->L1 copies with
// ND->Nz conversion, LoadData L1->L0A/L0B, Mmad, Fixpipe L0C->GM. Layouts and rules follow the
// documented Atlas A2 (910B) behaviour; see ascendcraft/emulator/CUBE_API.md for the contract.
#pragma once

namespace acx {
inline void EmitCube(uint8_t pipe, uint16_t op, uint8_t dtype, uint8_t dtype2, uint64_t blocks, uint64_t bytes,
                     uint64_t elems, uint32_t m, uint32_t n, uint32_t k) {
    TraceRecord r;
    std::memset(&r, 0, sizeof r);
    r.pipe = pipe;
    r.kind = RK_INSTR;
    r.op = op;
    r.dtype = dtype;
    r.dtype2 = dtype2;
    r.blocks = (uint32_t)blocks;
    r.bytes = bytes;
    r.elems = elems;
    r.m = m;
    r.n = n;
    r.k = k;
    Emit(r);
}
constexpr uint32_t M_CUBE_IO = M_F16 | M_BF16 | M_F32 | M_I8 | M_U8 | M_I16 | M_U16 | M_I32 | M_U32;
template <class T>
inline void CubeOperand(const char* api, const char* role, const LocalTensor<T>& t, int mem, uint32_t align,
                        uint64_t bytes) {
    if (!t.valid_) Fail("%s: %s LocalTensor is not initialised (use AllocTensor/DeQue/TBuf::Get first)", api, role);
    if (AscendC::MemOf(t.pos_) != mem)
        Fail("%s: %s is at position %s (%s); this operand must be in %s", api, role, AscendC::PosName(t.pos_),
             MemName(AscendC::MemOf(t.pos_)), MemName(mem));
    if (t.off_ % align)
        Fail("%s: %s %s address %u is not %u B aligned", api, role, MemName(mem), t.off_, align);
    if (bytes > t.len_)
        Fail("%s: out-of-bounds local access: %s needs %llu B but the tensor has %u B (%u %s elements)", api, role,
             (unsigned long long)bytes, t.len_, t.len_ / (uint32_t)sizeof(T), DT<T>::name);
}
inline uint64_t CeilTo(uint64_t a, uint64_t b) { return (a + b - 1) / b * b; }
}  // namespace acx

namespace AscendC {

// ------------------------------------------------------------------------------ parameter structs
struct Nd2NzParams {
    uint16_t ndNum = 1;
    uint16_t nValue = 0;
    uint16_t dValue = 0;
    uint16_t srcNdMatrixStride = 0;
    uint16_t srcDValue = 0;
    uint16_t dstNzC0Stride = 0;
    uint16_t dstNzNStride = 0;
    uint16_t dstNzMatrixStride = 0;
    Nd2NzParams() = default;
    Nd2NzParams(uint16_t nd, uint16_t n, uint16_t d, uint16_t srcMat, uint16_t srcD, uint16_t c0Stride,
                uint16_t nStride, uint16_t dstMat)
        : ndNum(nd), nValue(n), dValue(d), srcNdMatrixStride(srcMat), srcDValue(srcD), dstNzC0Stride(c0Stride),
          dstNzNStride(nStride), dstNzMatrixStride(dstMat) {}
};

struct LoadData2DParams {
    uint16_t startIndex = 0;
    uint8_t repeatTimes = 0;
    uint16_t srcStride = 0;
    uint8_t sid = 0;
    uint16_t dstGap = 0;
    bool ifTranspose = false;
    uint8_t addrMode = 0;
    LoadData2DParams() = default;
    LoadData2DParams(uint16_t start, uint8_t repeat, uint16_t sStride, uint8_t sidv, uint16_t gap, bool trans,
                     uint8_t mode)
        : startIndex(start), repeatTimes(repeat), srcStride(sStride), sid(sidv), dstGap(gap), ifTranspose(trans),
          addrMode(mode) {}
};

struct LoadData2dTransposeParams {
    uint16_t startIndex = 0;
    uint8_t repeatTimes = 0;
    uint16_t srcStride = 0;
    uint16_t dstGap = 0;
    uint16_t dstFracGap = 0;
    uint8_t addrMode = 0;
    LoadData2dTransposeParams() = default;
    LoadData2dTransposeParams(uint16_t start, uint8_t repeat, uint16_t sStride, uint16_t gap, uint16_t fracGap,
                              uint8_t mode = 0)
        : startIndex(start), repeatTimes(repeat), srcStride(sStride), dstGap(gap), dstFracGap(fracGap),
          addrMode(mode) {}
};

struct MmadParams {
    uint16_t m = 0;
    uint16_t n = 0;
    uint16_t k = 0;
    bool isBias = false;
    int32_t fmOffset = 0;
    bool enSsparse = false;
    bool enWinogradA = false;
    bool enWinogradB = false;
    uint8_t unitFlag = 0;
    bool kDirectionAlign = false;
    bool cmatrixSource = false;
    bool cmatrixInitVal = true;
    MmadParams() = default;
    MmadParams(uint16_t mIn, uint16_t nIn, uint16_t kIn, bool isBiasIn, int32_t fmOffsetIn, bool enSsparseIn,
               bool enWinogradAIn, bool enWinogradBIn)
        : m(mIn), n(nIn), k(kIn), isBias(isBiasIn), fmOffset(fmOffsetIn), enSsparse(enSsparseIn),
          enWinogradA(enWinogradAIn), enWinogradB(enWinogradBIn) {}
    MmadParams(uint16_t mIn, uint16_t nIn, uint16_t kIn, uint8_t unitFlagIn, bool cmatrixSourceIn, bool cmatrixInitValIn)
        : m(mIn), n(nIn), k(kIn), unitFlag(unitFlagIn), cmatrixSource(cmatrixSourceIn), cmatrixInitVal(cmatrixInitValIn) {}
};

enum QuantMode_t { NoQuant, F322F16, F322BF16, DEQF16, VDEQF16, QF322B8_PRE, VQF322B8_PRE, REQ8, VREQ8 };

struct FixpipeParamsV220 {
    uint16_t nSize = 0;
    uint16_t mSize = 0;
    uint16_t srcStride = 0;
    uint32_t dstStride = 0;
    QuantMode_t quantPre = QuantMode_t::NoQuant;
    uint64_t deqScalar = 0;
    uint16_t ndNum = 1;
    uint16_t srcNdStride = 0;
    uint16_t dstNdStride = 0;
    bool reluEn = false;
    uint8_t unitFlag = 0;
    bool isChannelSplit = false;
    FixpipeParamsV220() = default;
};

enum class CO2Layout : uint8_t { NZ = 0, ROW_MAJOR };
struct FixpipeConfig {
    CO2Layout format;
    bool isToUB;
};
inline constexpr FixpipeConfig CFG_NZ = {CO2Layout::NZ, false};
inline constexpr FixpipeConfig CFG_ROW_MAJOR = {CO2Layout::ROW_MAJOR, false};

// ------------------------------------------------------------------------------ GM -> L1 (ND -> Nz)
template <class T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Nd2NzParams& p) {
    const char* api = "DataCopy(GM->L1, Nd2NzParams)";
    acx::CheckDtype<T>(api, acx::M_CUBE_IO);
    const uint64_t sz = sizeof(T), c0 = 32 / sizeof(T);
    struct { const char* n; uint32_t v, lo, hi; } rng[] = {
        {"ndNum", p.ndNum, 0, 4095}, {"nValue", p.nValue, 0, 16384}, {"dValue", p.dValue, 0, 65535},
        {"srcNdMatrixStride", p.srcNdMatrixStride, 0, 65535}, {"srcDValue", p.srcDValue, 1, 65535},
        {"dstNzC0Stride", p.dstNzC0Stride, 1, 16384}, {"dstNzNStride", p.dstNzNStride, 1, 16384},
        {"dstNzMatrixStride", p.dstNzMatrixStride, 0, 16384}};
    if (p.ndNum == 0 || p.nValue == 0 || p.dValue == 0) return;  // documented NOP
    for (auto& r : rng)
        if (r.v < r.lo || r.v > r.hi) acx::Fail("%s: %s=%u not in [%u, %u]", api, r.n, r.v, r.lo, r.hi);
    if (p.dValue > p.srcDValue)
        acx::Fail("%s: dValue=%u exceeds srcDValue=%u (the source row length in elements)", api, p.dValue, p.srcDValue);
    const uint64_t cblocks = (p.dValue + c0 - 1) / c0;
    const uint64_t dext = ((uint64_t)(p.ndNum - 1) * p.dstNzMatrixStride + (cblocks - 1) * p.dstNzC0Stride * c0 +
                           (uint64_t)(p.nValue - 1) * p.dstNzNStride * c0 + c0) * sz;
    acx::CubeOperand(api, "dst", dst, acx::MEM_L1, 32, dext);
    const uint64_t sext = ((uint64_t)(p.ndNum - 1) * p.srcNdMatrixStride + (uint64_t)(p.nValue - 1) * p.srcDValue + p.dValue) * sz;
    uint64_t off = acx::CheckGm(src.gm_, src.Addr(), sext, api);
    const uint64_t rows = (uint64_t)p.ndNum * p.nValue, stride = (uint64_t)p.srcDValue * sz;
    acx::EmitGmMove(acx::P_MTE2, acx::OP_DATA_COPY_GM2L1, acx::DT<T>::id, rows, rows * p.dValue * sz, rows * p.dValue,
                    src.gm_, off, stride, acx::GmAlignFlags2(off, stride, rows));
    if (acx::TraceOnly()) return;
    const T* s = src.ptr_;
    T* d = dst.ptr();
    const T zero = T(0);
    for (uint64_t t = 0; t < p.ndNum; t++)
        for (uint64_t r = 0; r < p.nValue; r++) {
            const T* srow = s + t * p.srcNdMatrixStride + r * p.srcDValue;
            for (uint64_t cb = 0; cb < cblocks; cb++) {
                T* drow = d + t * p.dstNzMatrixStride + cb * p.dstNzC0Stride * c0 + r * p.dstNzNStride * c0;
                for (uint64_t c = 0; c < c0; c++) {
                    uint64_t col = cb * c0 + c;
                    drow[c] = col < p.dValue ? srow[col] : zero;  // column tail zero-filled to 32 B
                }
            }
        }
}

// ------------------------------------------------------------------------------ L1 -> L0A / L0B
template <class T>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParams& p) {
    int dmem = MemOf(dst.pos_);
    const char* api = dmem == acx::MEM_L0B ? "LoadData(L1->L0B)" : "LoadData(L1->L0A)";
    acx::CheckDtype<T>(api, acx::M_CUBE_IO);
    if (!dst.valid_) acx::Fail("%s: dst LocalTensor is not initialised", api);
    if (dmem != acx::MEM_L0A && dmem != acx::MEM_L0B)
        acx::Fail("%s: dst is at position %s (%s); LoadData2D writes L0A (A2) or L0B (B2)", api, PosName(dst.pos_),
                  acx::MemName(dmem));
    if (p.addrMode != 0) acx::Fail("%s: addrMode=%u; only 0 (increasing) is supported on the L1->L0 path", api, p.addrMode);
    if (p.ifTranspose && sizeof(T) != 2)
        acx::Fail("%s: ifTranspose needs a 16-bit type (half/bfloat16_t/int16_t/uint16_t); got %s", api, acx::DT<T>::name);
    if (p.repeatTimes == 0) return;  // documented NOP
    const uint64_t rep = p.repeatTimes;
    acx::CubeOperand(api, "dst", dst, dmem, 512, ((rep - 1) * (1 + (uint64_t)p.dstGap) + 1) * 512);
    acx::CubeOperand(api, "src", src, acx::MEM_L1, 32, ((uint64_t)p.startIndex + (rep - 1) * p.srcStride + 1) * 512);
    acx::EmitCube(acx::P_MTE1, dmem == acx::MEM_L0B ? acx::OP_LOAD_DATA_L1_L0B : acx::OP_LOAD_DATA_L1_L0A,
                  acx::DT<T>::id, 0, rep, rep * 512, rep * 512 / sizeof(T), 0, 0, 0);
    if (acx::TraceOnly()) return;
    const uint8_t* s = (const uint8_t*)src.ptr();
    uint8_t* d = (uint8_t*)dst.ptr();
    for (uint64_t r = 0; r < rep; r++) {
        const uint8_t* sf = s + ((uint64_t)p.startIndex + r * p.srcStride) * 512;
        uint8_t* df = d + r * (1 + (uint64_t)p.dstGap) * 512;
        if (!p.ifTranspose) {
            std::memmove(df, sf, 512);
            continue;
        }
        uint16_t tmp[256];
        std::memcpy(tmp, sf, 512);
        uint16_t* o = (uint16_t*)df;
        for (int i = 0; i < 16; i++)
            for (int j = 0; j < 16; j++) o[i * 16 + j] = tmp[j * 16 + i];
    }
}

// ------------------------------------------------------------------------------ L1 -> L0A / L0B, transposing
// Iteration r takes the square matrix `startIndex + r*srcStride` of src (unit: one square of
// 16 x 16 elements = 512 B for b16, 1024 B for b32), transposes it and writes its fractals to dst:
// b16: one 16x16 fractal at dst fractal r*(1 + dstGap); b32: the square is two consecutive 16x8
// fractals side by side (columns 0-7, 8-15); after the transpose its columns 0-7 go to dst fractal
// r*(1 + dstGap) and its columns 8-15 to that plus 1 + dstFracGap (units of 512 B).
template <class T>
inline void LoadDataWithTranspose(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                  const LoadData2dTransposeParams& p) {
    int dmem = MemOf(dst.pos_);
    const char* api = dmem == acx::MEM_L0B ? "LoadDataWithTranspose(L1->L0B)" : "LoadDataWithTranspose(L1->L0A)";
    acx::CheckDtype<T>(api, acx::M_CUBE_IO);
    if (sizeof(T) != 2 && sizeof(T) != 4)
        acx::Fail("%s: %s is not emulated (b16 and b32 types: half/bfloat16_t/int16_t/uint16_t/float/int32_t/"
                  "uint32_t)", api, acx::DT<T>::name);
    if (!dst.valid_) acx::Fail("%s: dst LocalTensor is not initialised", api);
    if (dmem != acx::MEM_L0A && dmem != acx::MEM_L0B)
        acx::Fail("%s: dst is at position %s (%s); LoadDataWithTranspose writes L0A (A2) or L0B (B2)", api,
                  PosName(dst.pos_), acx::MemName(dmem));
    if (p.addrMode != 0) acx::Fail("%s: addrMode=%u; only 0 (increasing) is emulated", api, p.addrMode);
    if (p.repeatTimes == 0) return;  // documented NOP
    const uint64_t rep = p.repeatTimes, nf = sizeof(T) / 2;  // fractals per square
    const uint64_t sq = nf * 512, step = 1 + (uint64_t)p.dstGap, frac = 1 + (uint64_t)p.dstFracGap;
    const uint64_t dlast = (rep - 1) * step + (nf - 1) * frac + 1;
    acx::CubeOperand(api, "dst", dst, dmem, 512, dlast * 512);
    acx::CubeOperand(api, "src", src, acx::MEM_L1, 32, ((uint64_t)p.startIndex + (rep - 1) * p.srcStride + 1) * sq);
    if (nf == 2) {  // documented: the transposed fractals must not overlap
        for (uint64_t a = 0; a < rep; a++)
            for (uint64_t b = 0; b < rep; b++)
                if (a * step + frac == b * step)
                    acx::Fail("%s: dstGap=%u dstFracGap=%u make iteration %llu overwrite iteration %llu's second "
                              "fractal (dst fractals must not overlap)", api, p.dstGap, p.dstFracGap,
                              (unsigned long long)b, (unsigned long long)a);
    }
    acx::EmitCube(acx::P_MTE1, dmem == acx::MEM_L0B ? acx::OP_LOAD_DATA_L1_L0B : acx::OP_LOAD_DATA_L1_L0A,
                  acx::DT<T>::id, 0, rep * nf, rep * sq, rep * sq / sizeof(T), 0, 0, 0);
    if (acx::TraceOnly()) return;
    const T* s = src.ptr();
    T* d = dst.ptr();
    constexpr uint64_t c0 = 32 / sizeof(T);  // 16 (b16) or 8 (b32) columns per fractal
    T tmp[256];
    for (uint64_t r = 0; r < rep; r++) {
        const T* sf = s + ((uint64_t)p.startIndex + r * p.srcStride) * (sq / sizeof(T));
        // square element (i, j), i, j < 16, sits in fractal j / c0 at row i, column j % c0
        for (uint64_t i = 0; i < 16; i++)
            for (uint64_t j = 0; j < 16; j++) tmp[j * 16 + i] = sf[(j / c0) * 16 * c0 + i * c0 + j % c0];
        // transposed square (rows i, columns j) split into fractals of c0 columns
        for (uint64_t f = 0; f < nf; f++) {
            T* df = d + (r * step + f * frac) * (512 / sizeof(T));
            for (uint64_t i = 0; i < 16; i++)
                for (uint64_t j = 0; j < c0; j++) df[i * c0 + j] = tmp[i * 16 + f * c0 + j];
        }
    }
}

// ------------------------------------------------------------------------------ Mmad
template <class T, class U, class S>
inline void Mmad(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<S>& filter, const MmadParams& p) {
    const char* api = "Mmad";
    constexpr uint8_t dt = acx::DT<T>::id, du = acx::DT<U>::id, ds = acx::DT<S>::id;
    bool ok = du == ds && ((dt == acx::DT_F32 && (du == acx::DT_F16 || du == acx::DT_BF16 || du == acx::DT_F32)) ||
                           (dt == acx::DT_I32 && du == acx::DT_I8));
    if (!ok)
        acx::Fail("%s: type combination fm=%s filter=%s dst=%s is not supported on the target SoC (half/bfloat16_t/float "
                  "inputs with float dst, int8_t with int32_t dst)", api, acx::DT<U>::name, acx::DT<S>::name, acx::DT<T>::name);
    if (p.m > 4095 || p.n > 4095 || p.k > 4095)
        acx::Fail("%s: m=%u n=%u k=%u: each must be in [0, 4095]", api, p.m, p.n, p.k);
    if (p.cmatrixSource) acx::Fail("%s: cmatrixSource=true (C initialised from the bias table C2) is not emulated", api);
    if (p.kDirectionAlign && du == acx::DT_F32) acx::Fail("%s: kDirectionAlign=true is not emulated", api);
    if (!dst.valid_ || !fm.valid_ || !filter.valid_) acx::Fail("%s: an operand LocalTensor is not initialised", api);
    if (p.m == 0 || p.n == 0 || p.k == 0) return;  // documented NOP
    const uint64_t m = p.m, n = p.n, k = p.k, k0 = 32 / sizeof(U);
    const uint64_t m16 = acx::CeilTo(m, 16), n1 = (n + 15) / 16, k1 = (k + k0 - 1) / k0;
    const bool gemv = m == 1;
    acx::CubeOperand(api, "dst", dst, acx::MEM_L0C, 1024, m16 * n1 * 16 * sizeof(T));
    acx::CubeOperand(api, "fm", fm, acx::MEM_L0A, 512, gemv ? k * sizeof(U) : m16 * k1 * k0 * sizeof(U));
    acx::CubeOperand(api, "filter", filter, acx::MEM_L0B, 512, k1 * k0 * n1 * 16 * sizeof(S));
    acx::EmitCube(acx::P_M, acx::OP_MMAD, du, dt, 0, m16 * n1 * 16 * sizeof(T), m * n, p.m, p.n, p.k);
    if (acx::TraceOnly()) return;
    const bool acc = p.isBias || !p.cmatrixInitVal;
    const U* a = fm.ptr();
    const S* b = filter.ptr();
    T* c = dst.ptr();
    std::vector<double> av(m * k), bv(k * n);
    for (uint64_t i = 0; i < m; i++)
        for (uint64_t l = 0; l < k; l++)
            av[i * k + l] = (double)acx::Ld(gemv ? a[l] : a[((i / 16) * k1 + l / k0) * 16 * k0 + (i % 16) * k0 + l % k0]);
    for (uint64_t l = 0; l < k; l++)
        for (uint64_t j = 0; j < n; j++)
            bv[l * n + j] = (double)acx::Ld(b[((l / k0) * n1 + j / 16) * 16 * k0 + (j % 16) * k0 + l % k0]);
    std::vector<double> row(n);
    for (uint64_t i = 0; i < m16; i++) {
        if (i < m) {
            std::fill(row.begin(), row.end(), 0.0);
            const double* ai = &av[i * k];
            for (uint64_t l = 0; l < k; l++) {
                const double x = ai[l];
                const double* bl = &bv[l * n];
                for (uint64_t j = 0; j < n; j++) row[j] += x * bl[j];
            }
        }
        for (uint64_t j = 0; j < n1 * 16; j++) {
            T& out = c[((j / 16) * m16 + i) * 16 + j % 16];
            if (i >= m || j >= n) {
                if (!acc) out = T(0);
                continue;
            }
            if constexpr (std::is_same<T, int32_t>::value)
                out = (int32_t)((acc ? (int64_t)out : 0) + (int64_t)row[j]);
            else
                out = (float)((acc ? (double)out : 0.0) + row[j]);
        }
    }
}

// ------------------------------------------------------------------------------ L1 -> bias table (C2)
// DataCopy C1 -> C2: the bias of a cube Mmad into the bias table, converting half / bfloat16_t to float
// on the way ("convControl: the L1 data is read as FP16 and converted to FP32 before it is written to the
// bias table", CCE intrinsic copy_cbuf_to_bt, cceapi_0097; MTE1). blockLen counts 64 B units of the
// bias table (16 float elements: 32 B of the half source), srcStride 32 B units, dstStride 64 B units.
template <class T, class U>
inline void CopyL1ToBiasTable(const LocalTensor<T>& dst, const LocalTensor<U>& src, const DataCopyParams& p) {
    const char* api = "DataCopy(C1->C2)";
    constexpr uint8_t dt = acx::DT<T>::id, du = acx::DT<U>::id;
    if (dt != acx::DT_F32 || (du != acx::DT_F16 && du != acx::DT_BF16 && du != acx::DT_F32))
        acx::Fail("%s: %s -> %s is not supported (the bias table holds float; the L1 source is half, bfloat16_t or "
                  "float)", api, acx::DT<U>::name, acx::DT<T>::name);
    if (MemOf(src.pos_) != acx::MEM_L1 || MemOf(dst.pos_) != acx::MEM_BT)
        acx::Fail("%s: src must be in L1 (C1) and dst in the bias table (C2); got %s -> %s", api, PosName(src.pos_),
                  PosName(dst.pos_));
    if (p.blockCount < 1 || p.blockCount > 4095) acx::Fail("%s: blockCount=%u not in [1, 4095]", api, p.blockCount);
    if (p.blockLen < 1) acx::Fail("%s: blockLen=0 (unit: 64 B of the bias table)", api);
    const uint64_t per = 16;  // elements per blockLen unit
    const uint64_t sU = sizeof(U) * per, dU = 64;
    const uint64_t sext = (uint64_t)(p.blockCount - 1) * (p.blockLen * sU + p.srcStride * 32) + p.blockLen * sU;
    const uint64_t dext = (uint64_t)(p.blockCount - 1) * (p.blockLen + p.dstStride) * dU + p.blockLen * dU;
    acx::CubeOperand(api, "src", src, acx::MEM_L1, 32, sext);
    acx::CubeOperand(api, "dst", dst, acx::MEM_BT, 64, dext);
    const uint64_t elems = (uint64_t)p.blockCount * p.blockLen * per;
    acx::EmitCube(acx::P_MTE1, acx::OP_DATA_COPY_L1_BT, du, dt, p.blockCount, elems * sizeof(T), elems, 0, 0, 0);
    if (acx::TraceOnly()) return;
    for (uint64_t b = 0; b < p.blockCount; b++) {
        const U* s = (const U*)((const uint8_t*)src.ptr() + b * (p.blockLen * sU + p.srcStride * 32));
        T* d = (T*)((uint8_t*)dst.ptr() + b * (p.blockLen + p.dstStride) * dU);
        for (uint64_t i = 0; i < p.blockLen * per; i++) d[i] = (T)acx::Ld(s[i]);
    }
}
// ------------------------------------------------------------------------------ L1 -> L0C (CO1)
// The burst form of the L1 -> L0C and L1 -> GM copies (the documents' n_burst in [1, 4095], len_burst
// in 32 B units, src_gap / dst_gap 32 B-unit gaps): checks them and the L1 source; the burst bytes and
// the destination extent out.
template <class T>
inline void CheckL1Bursts(const char* api, const LocalTensor<T>& src, const DataCopyParams& p, uint64_t& burst,
                          uint64_t& dext) {
    if (p.blockCount < 1 || p.blockCount > 4095) acx::Fail("%s: blockCount=%u not in [1, 4095]", api, p.blockCount);
    if (p.blockLen < 1) acx::Fail("%s: blockLen=0 (unit: 32 B)", api);
    burst = (uint64_t)p.blockLen * 32;
    const uint64_t sext = (uint64_t)(p.blockCount - 1) * (p.blockLen + p.srcStride) * 32 + burst;
    dext = (uint64_t)(p.blockCount - 1) * (p.blockLen + p.dstStride) * 32 + burst;
    acx::CubeOperand(api, "src", src, acx::MEM_L1, 32, sext);
}

// DataCopy A1/B1 -> CO1: a matrix back into the accumulator, byte for byte (its Nz layout is the
// caller's), float -> float (asc_copy_l12l0c, "moves a matrix from L1 Buffer to L0C Buffer", PIPE_MTE1,
// Atlas A2 supported; asc-devkit docs/zh/api/SIMD-API/C-API/cube_datamove/asc_copy_l12l0c.md).
// blockCount bursts of blockLen 32 B units, srcStride / dstStride the 32 B-unit gaps between bursts
// (the document's n_burst, len_burst, src_gap, dst_gap; n_burst in [1, 4095], len_burst in [1, 65535]).
template <class T>
inline void CopyL1ToL0C(const LocalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p) {
    const char* api = "DataCopy(A1->CO1)";
    if (acx::DT<T>::id != acx::DT_F32)
        acx::Fail("%s: %s; only float -> float is emulated", api, acx::DT<T>::name);
    uint64_t burst, dext;
    CheckL1Bursts(api, src, p, burst, dext);
    acx::CubeOperand(api, "dst", dst, acx::MEM_L0C, 64, dext);
    constexpr uint8_t dt = acx::DT<T>::id;
    acx::EmitCube(acx::P_MTE1, acx::OP_DATA_COPY_L1_L0C, dt, dt, p.blockCount, burst * p.blockCount,
                  burst * p.blockCount / sizeof(T), 0, 0, 0);
    if (acx::TraceOnly()) return;
    for (uint64_t b = 0; b < p.blockCount; b++)
        std::memcpy((uint8_t*)dst.ptr() + b * (p.blockLen + p.dstStride) * 32,
                    (const uint8_t*)src.ptr() + b * (p.blockLen + p.srcStride) * 32, burst);
}

// ------------------------------------------------------------------------------ L1 -> GM
// DataCopy A1/B1 -> GM (asc_copy_l12gm: "moves data from L1 Buffer to Global Memory", PIPE_MTE1, Atlas
// A2 supported; asc-devkit docs/zh/api/SIMD-API/C-API/cube_datamove/asc_copy_l12gm.md). blockCount
// bursts in [1, 4095] of blockLen 32 B units, srcStride / dstStride the 32 B-unit gaps. SetAtomicAdd
// applies (its documented A2 paths: VECOUT, L0C and L1 -> GM; SetAtomicAdd, Ascend C API reference).
template <class T>
inline void CopyL1ToGm(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p) {
    const char* api = "DataCopy(L1->GM)";
    uint64_t burst, dext;
    CheckL1Bursts(api, src, p, burst, dext);
    uint64_t off = acx::CheckGm(dst.gm_, dst.Addr(), dext, api);
    uint8_t at = acx::Cur().atomic;
    const uint64_t pitch = (uint64_t)(p.blockLen + p.dstStride) * 32;
    acx::EmitGmMove(acx::P_MTE1, acx::OP_DATA_COPY_L12GM, acx::DT<T>::id, p.blockCount, burst * p.blockCount,
                    burst * p.blockCount / sizeof(T), dst.gm_, off, pitch,
                    acx::GmAlignFlags2(off, pitch, p.blockCount) | (at ? acx::TF_ATOMIC : 0));
    if (acx::TraceOnly()) return;
    for (uint32_t i = 0; i < p.blockCount; i++)
        acx::GmStore((T*)((uint8_t*)dst.ptr_ + (uint64_t)i * pitch),
                     (const T*)((const uint8_t*)src.ptr() + (uint64_t)i * (p.blockLen + p.srcStride) * 32),
                     burst / sizeof(T), at);
}

template <class T, class U, typename std::enable_if<!std::is_same<T, U>::value, int>::type = 0>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const DataCopyParams& p) {
    CopyL1ToBiasTable(dst, src, p);  // the converting form exists only on the C1 -> C2 path
}

// Mmad with a bias operand: with the bias in the bias table (C2) the product starts from it,
// C = A * B + bias (one bias value per column, for every row); cmatrixInitVal / cmatrixSource are ignored
// ("with a bias operand the source of C's initial value is decided by where the bias is", Mmad, Ascend C API
// reference, docs/api/context/Mmad.md). Only the bias-table form is emulated.
template <class T, class U, class S, class V>
inline void Mmad(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<S>& filter,
                 const LocalTensor<V>& bias, const MmadParams& p) {
    const char* api = "Mmad(bias)";
    if (MemOf(bias.pos_) != acx::MEM_BT)
        acx::Fail("%s: bias is at position %s; only a bias-table (C2) bias is emulated", api, PosName(bias.pos_));
    if (acx::DT<V>::id != acx::DT<T>::id) acx::Fail("%s: bias dtype %s must match dst %s", api, acx::DT<V>::name, acx::DT<T>::name);
    const uint64_t n1 = ((uint64_t)p.n + 15) / 16;
    acx::CubeOperand(api, "bias", bias, acx::MEM_BT, 128, n1 * 16 * sizeof(V));
    MmadParams q = p;
    q.cmatrixSource = false;
    q.cmatrixInitVal = true;
    q.isBias = false;
    Mmad(dst, fm, filter, q);  // C = A * B (checks, trace record: the bias init is part of the instruction)
    if (acx::TraceOnly() || p.m == 0 || p.n == 0 || p.k == 0) return;
    const uint64_t m16 = acx::CeilTo(p.m, 16);
    T* c = dst.ptr();
    const V* bv = bias.ptr();
    for (uint64_t i = 0; i < m16; i++)
        for (uint64_t j = 0; j < p.n; j++) c[((j / 16) * m16 + i) * 16 + j % 16] += (T)bv[j];
}

// ------------------------------------------------------------------------------ Fixpipe L0C -> GM
template <class T, class U, const FixpipeConfig& config = CFG_ROW_MAJOR>
inline void Fixpipe(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsV220& p) {
    const bool nz = config.format == CO2Layout::NZ;
    const char* api = nz ? "Fixpipe(L0C->GM, CFG_NZ)" : "Fixpipe(L0C->GM, CFG_ROW_MAJOR)";
    constexpr uint8_t dt = acx::DT<T>::id, du = acx::DT<U>::id;
    if (config.isToUB) acx::Fail("%s: isToUB is not supported on the split 910B (no L0C->UB path)", api);
    if (du != acx::DT_F32 && du != acx::DT_I32)
        acx::Fail("%s: src (L0C) dtype %s; must be float or int32_t", api, acx::DT<U>::name);
    int q = (int)p.quantPre;
    bool ok = (du == acx::DT_F32 && ((dt == acx::DT_F32 && q == NoQuant) || (dt == acx::DT_F16 && q == F322F16) ||
                                     (dt == acx::DT_BF16 && q == F322BF16))) ||
              (du == acx::DT_I32 && dt == acx::DT_I32 && q == NoQuant);
    if (!ok)
        acx::Fail("%s: %s -> %s with quantPre=%d is not supported (emulated: float->float NoQuant, float->half F322F16, "
                  "float->bfloat16_t F322BF16, int32_t->int32_t NoQuant)", api, acx::DT<U>::name, acx::DT<T>::name, q);
    if (p.isChannelSplit) acx::Fail("%s: isChannelSplit is not emulated", api);
    if (p.ndNum == 0 || p.mSize == 0 || p.nSize == 0) return;  // documented NOP
    if (p.nSize > 4095) acx::Fail("%s: nSize=%u not in [0, 4095]", api, p.nSize);
    if (!nz && p.mSize > 8192) acx::Fail("%s: mSize=%u not in [0, 8192] with NZ2ND", api, p.mSize);
    if (nz && p.nSize % 16) acx::Fail("%s: nSize=%u must be a multiple of 16", api, p.nSize);
    if (nz && p.ndNum != 1) acx::Fail("%s: ndNum=%u; only 1 is supported with CFG_NZ", api, p.ndNum);
    if (p.srcNdStride > 512) acx::Fail("%s: srcNdStride=%u not in [0, 512]", api, p.srcNdStride);
    const uint64_t m = p.mSize, n = p.nSize, n1 = (n + 15) / 16, nd = p.ndNum;
    if (p.srcStride < acx::CeilTo(m, 16))
        acx::Fail("%s: srcStride=%u is below ceil(mSize, 16)=%llu (unit: 16-element rows of the L0C Nz matrix)", api,
                  p.srcStride, (unsigned long long)acx::CeilTo(m, 16));
    const uint64_t c0o = 32 / sizeof(T);
    if (p.dstStride == 0) acx::Fail("%s: dstStride=0", api);
    if (!nz && p.dstStride < n)
        acx::Fail("%s: dstStride=%u is below nSize=%u (ND rows would overlap; unit: elements)", api, p.dstStride, p.nSize);
    if (nz && (uint64_t)p.dstStride * c0o < m * 16)
        acx::Fail("%s: dstStride=%u (32 B units) is below mSize*16 elements=%llu (Nz column blocks would overlap)", api,
                  p.dstStride, (unsigned long long)(m * 16));
    if (nd > 1 && !nz && p.dstNdStride < (m - 1) * p.dstStride + n)
        acx::Fail("%s: dstNdStride=%u elements makes the %u ND matrices overlap", api, p.dstNdStride, p.ndNum);
    const uint64_t sext = ((nd - 1) * p.srcNdStride * 256 + ((n1 - 1) * p.srcStride + m - 1) * 16 + 16) * sizeof(U);
    acx::CubeOperand(api, "src", src, acx::MEM_L0C, 64, sext);
    const uint64_t dext = nz ? (n1 - 1) * p.dstStride * c0o + m * 16 : (nd - 1) * p.dstNdStride + (m - 1) * p.dstStride + n;
    uint64_t off = acx::CheckGm(dst.gm_, dst.Addr(), dext * sizeof(T), api);
    uint8_t at = acx::Cur().atomic;
    const uint64_t bursts = nz ? n1 : nd * m;
    const uint64_t stride = nz ? (uint64_t)p.dstStride * 32 : (uint64_t)p.dstStride * sizeof(T);
    acx::EmitGmMove(acx::P_FIX, acx::OP_FIXPIPE_L0C2GM, dt, bursts, nd * m * n * sizeof(T), nd * m * n, dst.gm_, off, stride,
                    acx::GmAlignFlags2(off, stride, bursts) | (at ? acx::TF_ATOMIC : 0), p.mSize, p.nSize);
    if (acx::TraceOnly()) return;
    const U* s = src.ptr();
    for (uint64_t t = 0; t < nd; t++)
        for (uint64_t i = 0; i < m; i++)
            for (uint64_t j = 0; j < n; j++) {
                U v = s[t * p.srcNdStride * 256 + ((j / 16) * p.srcStride + i) * 16 + j % 16];
                if (p.reluEn && v < U(0)) v = U(0);
                T o = (T)v;  // float->half / bfloat16 conversions round to nearest even
                uint64_t e = nz ? (j / 16) * p.dstStride * c0o + i * 16 + j % 16 : t * p.dstNdStride + i * p.dstStride + j;
                acx::GmStore(dst.ptr_ + e, &o, 1, at);
            }
}


// ------------------------------------------------------------------------------ Fixpipe L0C -> L1
// The accumulator into L1 (A1/B1) as Nz (asc_copy_l0c2l1: "after the matrix computation, quantises the
// result and moves it to L1 Buffer", PIPE_FIX, Atlas A2 supported; asc-devkit docs/zh/api/SIMD-API/
// C-API/cube_datamove/asc_copy_l0c2l1/asc_copy_l0c2l1_arch_2201.md): float -> float NoQuant (channel
// split is documented for float to float only, so that pair exists), float -> half F322F16,
// float -> bfloat16_t F322BF16. Emulated: CFG_NZ only (the Nz2ND form into L1 is refused), ndNum 1;
// dstStride in 32 B units between the Nz column blocks, as for the GM Nz form. A later L1 -> L0C copy
// of the image needs a FIX -> MTE1 flag (HardEvent::FIX_MTE1).
template <class T, class U, const FixpipeConfig& config = CFG_NZ>
inline void Fixpipe(const LocalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsV220& p) {
    const char* api = "Fixpipe(L0C->L1)";
    constexpr uint8_t dt = acx::DT<T>::id, du = acx::DT<U>::id;
    if (config.format != CO2Layout::NZ) acx::Fail("%s: only CFG_NZ is emulated into L1 (Nz, as the cube reads it)", api);
    if (config.isToUB) acx::Fail("%s: isToUB is not supported on the split 910B (no L0C->UB path)", api);
    int q = (int)p.quantPre;
    bool ok = du == acx::DT_F32 && ((dt == acx::DT_F32 && q == NoQuant) || (dt == acx::DT_F16 && q == F322F16) ||
                                    (dt == acx::DT_BF16 && q == F322BF16));
    if (!ok)
        acx::Fail("%s: %s -> %s with quantPre=%d is not supported (emulated: float->float NoQuant, float->half F322F16, "
                  "float->bfloat16_t F322BF16)", api, acx::DT<U>::name, acx::DT<T>::name, q);
    if (p.isChannelSplit) acx::Fail("%s: isChannelSplit is not emulated", api);
    if (p.ndNum != 1) acx::Fail("%s: ndNum=%u; only 1 is supported with CFG_NZ", api, p.ndNum);
    if (p.mSize == 0 || p.nSize == 0) return;  // documented NOP
    if (p.nSize > 4095) acx::Fail("%s: nSize=%u not in [1, 4095]", api, p.nSize);
    if (p.nSize % 16) acx::Fail("%s: nSize=%u must be a multiple of 16", api, p.nSize);
    const uint64_t m = p.mSize, n = p.nSize, n1 = n / 16, c0o = 32 / sizeof(T);
    if (p.srcStride < acx::CeilTo(m, 16))
        acx::Fail("%s: srcStride=%u is below ceil(mSize, 16)=%llu (unit: 16-element rows of the L0C Nz matrix)", api,
                  p.srcStride, (unsigned long long)acx::CeilTo(m, 16));
    if (p.dstStride == 0 || (uint64_t)p.dstStride * c0o < m * 16)
        acx::Fail("%s: dstStride=%u (32 B units) is below mSize*16 elements=%llu (Nz column blocks would overlap)", api,
                  p.dstStride, (unsigned long long)(m * 16));
    acx::CubeOperand(api, "src", src, acx::MEM_L0C, 64, (((n1 - 1) * p.srcStride + m - 1) * 16 + 16) * sizeof(U));
    const uint64_t dext = (n1 - 1) * p.dstStride * c0o + m * 16;
    acx::CubeOperand(api, "dst", dst, acx::MEM_L1, 32, dext * sizeof(T));
    acx::EmitCube(acx::P_FIX, acx::OP_FIXPIPE_L0C2L1, dt, du, n1, m * n * sizeof(T), m * n, p.mSize, p.nSize, 0);
    if (acx::TraceOnly()) return;
    const U* s = src.ptr();
    T* d = dst.ptr();
    for (uint64_t j = 0; j < n; j++)
        for (uint64_t i = 0; i < m; i++) {
            U v = s[((j / 16) * p.srcStride + i) * 16 + j % 16];
            if (p.reluEn && v < U(0)) v = U(0);
            d[(j / 16) * p.dstStride * c0o + i * 16 + j % 16] = (T)v;
        }
}

}  // namespace AscendC
