// acx_fp16.h - 16-bit floating point storage types for the emulator.
// half: IEEE binary16; bfloat16_t: bfloat16. Arithmetic goes through float;
// float -> 16 bit conversion rounds to nearest even (other modes via acx::RoundF16/RoundBF16).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace acx {

inline uint32_t F32Bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float BitsF32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

inline float F16ToF32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
    if (exp == 0) {
        if (man == 0) return BitsF32(sign);
        float f = std::ldexp((float)man, -24);  // subnormal: exact
        return sign ? -f : f;
    }
    if (exp == 31) return BitsF32(sign | 0x7f800000u | (man << 13));
    return BitsF32(sign | ((exp + 112) << 23) | (man << 13));
}

// Magnitude rounding modes used by the converters.
enum MagRound : int { MR_NEAREST_EVEN = 0, MR_TOWARD_ZERO = 1, MR_AWAY = 2, MR_NEAREST_AWAY = 3, MR_ODD = 4 };

// Round mantissa `m` (with `drop` low bits to discard) according to mode; returns rounded value
// (may carry into the next power of two).
inline uint64_t RoundBits(uint64_t m, int drop, int mode) {
    if (drop <= 0) return m << (-drop);
    if (drop >= 63) { uint64_t nz = m != 0; return (mode == MR_AWAY || (mode == MR_ODD && nz)) ? nz : 0; }
    uint64_t q = m >> drop, rem = m & ((1ull << drop) - 1), half = 1ull << (drop - 1);
    switch (mode) {
        case MR_NEAREST_EVEN: if (rem > half || (rem == half && (q & 1))) q++; break;
        case MR_NEAREST_AWAY: if (rem >= half) q++; break;
        case MR_TOWARD_ZERO: break;
        case MR_AWAY: if (rem) q++; break;
        case MR_ODD: if (rem) q |= 1; break;
    }
    return q;
}

// float -> binary16 bits with a magnitude rounding mode (sign handled by caller via MagRound).
inline uint16_t F32ToF16Mode(float f, int mode) {
    uint32_t u = F32Bits(f);
    uint16_t sign = (u >> 16) & 0x8000u;
    uint32_t exp = (u >> 23) & 0xff, man = u & 0x7fffffu;
    if (exp == 255) return sign | 0x7c00u | (man ? 0x200u : 0);  // inf / nan
    if (exp == 0 && man == 0) return sign;
    // value = (1.man) * 2^(exp-127) (normal) or 0.man * 2^-126
    uint64_t m = exp ? (man | 0x800000u) : man;
    int e = exp ? (int)exp - 127 : -126;  // value = m * 2^(e-23)
    // target: half normal has 10 mantissa bits, exponent >= -14; subnormal quantum 2^-24
    int he = e < -14 ? -14 : e;
    int drop = 23 - 10 + (he - e);  // bits to drop so the quantum is 2^(he-10)
    uint64_t q = RoundBits(m, drop, mode);
    // q is mantissa with implicit bit at position 10 (if normal)
    if (q >= (1u << 11)) { q >>= 1; he++; }  // carry (exact: low bit is 0 except for ODD)
    uint16_t res;
    if (q < (1u << 10)) {
        res = (uint16_t)q;  // subnormal (he == -14)
    } else {
        if (he > 15) {
            bool to_inf = mode == MR_NEAREST_EVEN || mode == MR_NEAREST_AWAY || mode == MR_AWAY;
            return sign | (to_inf ? 0x7c00u : 0x7bffu);
        }
        res = (uint16_t)(((he + 15) << 10) | (q & 0x3ffu));
    }
    return sign | res;
}

inline uint16_t F32ToBF16Mode(float f, int mode) {
    uint32_t u = F32Bits(f);
    if ((u & 0x7f800000u) == 0x7f800000u) return (u >> 16) | ((u & 0x7fffffu) ? 0x40u : 0);
    uint32_t sign = u & 0x80000000u, mag = u & 0x7fffffffu;
    uint64_t q = RoundBits(mag, 16, mode);  // exponent carry propagates naturally
    if (q >= 0x7f80u) {
        bool to_inf = mode == MR_NEAREST_EVEN || mode == MR_NEAREST_AWAY || mode == MR_AWAY;
        q = to_inf ? 0x7f80u : 0x7f7fu;
    }
    return (uint16_t)((sign >> 16) | q);
}

inline uint16_t F32ToF16(float f) { return F32ToF16Mode(f, MR_NEAREST_EVEN); }
inline uint16_t F32ToBF16(float f) { return F32ToBF16Mode(f, MR_NEAREST_EVEN); }
inline float BF16ToF32(uint16_t b) { return BitsF32((uint32_t)b << 16); }

}  // namespace acx

struct half {
    uint16_t bits = 0;
    half() = default;
    template <class U, class = std::enable_if_t<std::is_arithmetic<U>::value>>
    half(U v) : bits(acx::F32ToF16((float)v)) {}
    static half FromBits(uint16_t b) { half h; h.bits = b; return h; }
    operator float() const { return acx::F16ToF32(bits); }
    half& operator+=(float o) { *this = half(float(*this) + o); return *this; }
    half& operator-=(float o) { *this = half(float(*this) - o); return *this; }
    half& operator*=(float o) { *this = half(float(*this) * o); return *this; }
    half& operator/=(float o) { *this = half(float(*this) / o); return *this; }
    half operator-() const { return FromBits(bits ^ 0x8000u); }
};

struct bfloat16_t {
    uint16_t bits = 0;
    bfloat16_t() = default;
    template <class U, class = std::enable_if_t<std::is_arithmetic<U>::value>>
    bfloat16_t(U v) : bits(acx::F32ToBF16((float)v)) {}
    static bfloat16_t FromBits(uint16_t b) { bfloat16_t h; h.bits = b; return h; }
    operator float() const { return acx::BF16ToF32(bits); }
    bfloat16_t& operator+=(float o) { *this = bfloat16_t(float(*this) + o); return *this; }
    bfloat16_t& operator-=(float o) { *this = bfloat16_t(float(*this) - o); return *this; }
    bfloat16_t& operator*=(float o) { *this = bfloat16_t(float(*this) * o); return *this; }
    bfloat16_t& operator/=(float o) { *this = bfloat16_t(float(*this) / o); return *this; }
    bfloat16_t operator-() const { return FromBits(bits ^ 0x8000u); }
};
static_assert(sizeof(half) == 2 && sizeof(bfloat16_t) == 2, "16-bit types");
