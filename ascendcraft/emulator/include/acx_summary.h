// acx_summary.h - the trace as the performance model needs it, built in memory in the child:
// what differs is kept, what repeats is counted.
//
// * symbols: every distinct record with seq, core, padding and GM address zeroed (the fields
//   that do not change a record's cost), each stored once;
// * footprints: every GM data move in full (core, seq, GM address): the L2 model's input;
// * programs: per core, its sequence of symbol ids compressed losslessly into loops
//   (LOOP_BEGIN count body LOOP_END, nested), so a tile loop of 10^5 iterations is a few
//   tokens. Two cores run the same program exactly when their token streams are equal.
// Expanding a core's program and putting back seq, core and the footprints' addresses gives
// back every record the full trace would hold (ascendcraft/emulator/trace_summary.py).
#pragma once
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <vector>

#include "acx_trace.h"

namespace acx {

// program tokens: a symbol id, or LOOP_BEGIN followed by the repeat count, or LOOP_END
static constexpr uint32_t TOK_LOOP_BEGIN = 0xFFFFFFFEu;
static constexpr uint32_t TOK_LOOP_END = 0xFFFFFFFFu;
static constexpr uint32_t TOK_MAX_SYMBOL = 0x7FFFFFFFu;

struct CoreProgram {
    uint32_t block_idx;
    uint64_t offset, length;  // into Summary::tokens
    uint64_t records;         // records the program expands to
};

class SymbolTable {
   public:
    // id of the masked record (inserted if new)
    uint32_t Id(const TraceRecord& r) {
        uint64_t h = Hash(r);
        if (slots_.empty() || (used_ + 1) * 4 > slots_.size() * 3) Grow();
        size_t mask = slots_.size() - 1;
        for (size_t i = h & mask;; i = (i + 1) & mask) {
            uint32_t s = slots_[i];
            if (s == 0) {
                uint32_t id = (uint32_t)records.size();
                records.push_back(r);
                hashes_.push_back(h);
                slots_[i] = id + 1;
                used_++;
                return id;
            }
            if (hashes_[s - 1] == h && std::memcmp(&records[s - 1], &r, sizeof r) == 0) return s - 1;
        }
    }
    std::vector<TraceRecord> records;

   private:
    static uint64_t Hash(const TraceRecord& r) {  // words 0-6 (word 7, the address, is 0)
        uint64_t w[8];
        std::memcpy(w, &r, sizeof w);
        uint64_t h = (w[0] * 0x9E3779B97F4A7C15ull) ^ (w[1] * 0xC2B2AE3D27D4EB4Full) ^
                     (w[2] * 0x165667B19E3779F9ull) ^ (w[3] * 0xD6E8FEB86659FD93ull) ^
                     (w[4] * 0xFF51AFD7ED558CCDull) ^ (w[5] * 0xC4CEB9FE1A85EC53ull) ^
                     (w[6] * 0x94D049BB133111EBull);
        h ^= h >> 32;
        h *= 0xBF58476D1CE4E5B9ull;
        return h ^ (h >> 29);
    }
    void Grow() {
        std::vector<uint32_t> s(slots_.empty() ? 1024 : slots_.size() * 2, 0);
        size_t mask = s.size() - 1;
        for (uint32_t id = 0; id < records.size(); id++) {
            size_t i = hashes_[id] & mask;
            while (s[i]) i = (i + 1) & mask;
            s[i] = id + 1;
        }
        slots_.swap(s);
    }
    std::vector<uint32_t> slots_;  // 0 empty, else id + 1
    std::vector<uint64_t> hashes_;
    size_t used_ = 0;
};

// Lossless loop compression of one core's symbol sequence. At each position the periods
// tried are the distances to the next few occurrences of the same symbol (and to the first
// few occurrences after the best run, for an outer loop around an inner one); the period
// that covers the most records with >= 2 repeats wins, its body is compressed recursively.
// A period that failed at position i with a run of l symbols fails at every position up to
// i + l too (same mismatch), so it is not tried there again: the work stays about linear.
class LoopCompressor {
   public:
    static constexpr int kTries = 6;
    static constexpr int kDepth = 8;
    static constexpr uint64_t kMaxPeriod = 1u << 20;

    LoopCompressor(const uint32_t* x, size_t n, size_t n_symbols)
        : x_(x), n_(n), nxt_(n), fail_until_(std::min<size_t>(n, kMaxPeriod) + 1, 0) {
        std::vector<uint32_t> last(n_symbols, (uint32_t)n);
        for (size_t i = n; i-- > 0;) {
            nxt_[i] = last[x[i]];
            last[x[i]] = (uint32_t)i;
        }
        budget_ = 64 * (uint64_t)n + (1u << 20);  // comparisons; beyond it: literals (still lossless)
    }

    void Compress(size_t a, size_t b, std::vector<uint32_t>& out, int depth = 0) {
        size_t i = a;
        while (i < b) {
            size_t best_p = 0, best_reps = 0;
            if (depth < kDepth && budget_ > 0) {
                size_t j = nxt_[i];
                for (int t = 0; t < kTries && j < b && j - i <= kMaxPeriod; t++) {
                    Try(i, b, j - i, best_p, best_reps);
                    j = nxt_[j];
                }
                if (best_reps >= 2) {  // an outer loop around this run (first occurrences after it)?
                    size_t end = i + best_p * best_reps, k = i + best_p * (best_reps - 1);
                    while (k < b && k < end) k = nxt_[k];
                    for (int t = 0; t < kTries && k < b && k - i <= kMaxPeriod; t++) {
                        Try(i, b, k - i, best_p, best_reps);
                        k = nxt_[k];
                    }
                }
            }
            if (best_reps >= 2) {
                out.push_back(TOK_LOOP_BEGIN);
                out.push_back((uint32_t)best_reps);
                Compress(i, i + best_p, out, depth + 1);
                out.push_back(TOK_LOOP_END);
                i += best_p * best_reps;
            } else {
                out.push_back(x_[i]);
                i++;
            }
        }
    }

   private:
    void Try(size_t i, size_t b, size_t p, size_t& best_p, size_t& best_reps) {
        if (fail_until_[p] > i) return;
        size_t l = 0;
        while (i + p + l < b && x_[i + l] == x_[i + p + l]) l++;
        budget_ -= (int64_t)l + 1;
        size_t reps = 1 + l / p;
        if (reps < 2) fail_until_[p] = (uint32_t)(i + l + 1);
        if (reps >= 2 && reps * p > best_p * best_reps && reps <= 0xFFFFFFF0u) {
            best_p = p;
            best_reps = reps;
        }
    }
    const uint32_t* x_;
    size_t n_;
    std::vector<uint32_t> nxt_;
    std::vector<uint32_t> fail_until_;  // per period: first position where it may succeed again
    int64_t budget_;
};

struct Summary {
    SymbolTable symbols;
    std::vector<TraceRecord> footprints;
    std::vector<uint32_t> tokens;
    std::vector<CoreProgram> programs;
    bool active = false;

    // a finished core: compress its symbol sequence, release the sequence
    void EndCore(uint32_t block_idx, std::vector<uint32_t>& seq) {
        CoreProgram p{block_idx, tokens.size(), 0, seq.size()};
        LoopCompressor lc(seq.data(), seq.size(), symbols.records.size());
        lc.Compress(0, seq.size(), tokens);
        p.length = tokens.size() - p.offset;
        programs.push_back(p);
        std::vector<uint32_t>().swap(seq);
    }
};

inline Summary* g_summary = nullptr;  // of the last run in this process (read by acx_summary)

}  // namespace acx

// The last run's summary (valid until the next acx_run in this process). Weak: a kernel
// library made of several translation units defines it once.
extern "C" __attribute__((weak, visibility("default"))) int acx_summary(
    const void** symbols, uint64_t* n_symbols, const void** footprints, uint64_t* n_footprints,
    const void** tokens, uint64_t* n_tokens, const void** programs, uint64_t* n_programs) {
    acx::Summary* s = acx::g_summary;
    if (!s) return -1;
    *symbols = s->symbols.records.data();
    *n_symbols = s->symbols.records.size();
    *footprints = s->footprints.data();
    *n_footprints = s->footprints.size();
    *tokens = s->tokens.data();
    *n_tokens = s->tokens.size();
    *programs = s->programs.data();
    *n_programs = s->programs.size();
    return 0;
}
