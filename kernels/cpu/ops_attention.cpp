// CPU attention over an f16 or q8_0 KV cache (see ops.h; the design in
// docs/engine.md "CPU attention"): the context in fixed chunks whose
// partial softmaxes fold in order, the work items and their scheduling.
// Plain loops and GCC vector extensions (attention_lanes.h), built for
// x86-64-v3 and baseline (target_clones); decode without grouped KV heads
// reads the cache through attention_f16_avx2.cpp, and AVX-512 CPUs take
// the zmm loops of attention_avx512.cpp (the same bits). Every output row (token,
// head) is computed with the same arithmetic whatever the split, so results
// are bit-identical for any thread count and batch, prefill or decode.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/check.h"
#include "kernels/cpu/attention_avx512.h"
#include "kernels/cpu/attention_f16_avx2.h"
#include "kernels/cpu/attention_lanes.h"
#include "kernels/cpu/attention_tiles_avx2.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/prefetch_lines.h"
#include "kernels/cpu/quantize.h"

namespace tc::kernels {
namespace {

// f32 value of every f16 bit pattern, built once from the exact
// f16_to_f32: a lookup is far cheaper than a call per K/V element.
const float* f16_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(1u << 16);
    for (uint32_t h = 0; h < (1u << 16); ++h) t[h] = f16_to_f32(static_cast<uint16_t>(h));
    return t;
  }();
  return table.data();
}

void f16_row_to_f32_portable(const float* table, const void* src_bytes, int64_t n, float* dst) {
  const auto* src = static_cast<const uint16_t*>(src_bytes);
  for (int64_t i = 0; i < n; ++i) dst[i] = table[src[i]];
}

// q8_0 blocks (n a multiple of 32): each value q * d, exact in f32 (an
// 8-bit integer times an 11-bit significand), so every path gives the same
// bits.
void q8_0_row_to_f32_portable(const float* table, const void* src, int64_t n, float* dst) {
  const auto* blocks = static_cast<const BlockQ8_0*>(src);
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    const float d = table[blocks[b].d];
    for (int64_t i = 0; i < kQK8_0; ++i) dst[b * kQK8_0 + i] = static_cast<float>(blocks[b].qs[i]) * d;
  }
}

#if defined(__x86_64__)
// F16C converts 8 values per instruction, exactly as the table (NaNs come out
// quiet with their payload in both), so the two paths give the same bits.
__attribute__((target("avx,f16c"))) void f16_row_to_f32_f16c(const float* table, const void* src_bytes, int64_t n,
                                                               float* dst) {
  const auto* src = static_cast<const uint16_t*>(src_bytes);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) dst[i] = table[src[i]];
}

void q8_0_row_to_f32_simd(const float*, const void* src, int64_t n, float* dst) {
  detail::q8_0_row_to_f32_avx2(src, n, dst);
}
#endif

// n values of a cache row (from src, whole blocks) as f32 into dst.
using RowToF32 = void (*)(const float* table, const void* src, int64_t n, float* dst);

// Picked once per dtype by CPUID.
RowToF32 row_to_f32(DType type) {
#if defined(__x86_64__)
  static const RowToF32 f16 = detail::cpu_has_f16c() ? f16_row_to_f32_f16c : f16_row_to_f32_portable;
  static const RowToF32 q8_0 = detail::f16_kv_direct_available() ? q8_0_row_to_f32_simd : q8_0_row_to_f32_portable;
  return type == DType::Q8_0 ? q8_0 : f16;
#else
  return type == DType::Q8_0 ? q8_0_row_to_f32_portable : f16_row_to_f32_portable;
#endif
}

// Rows of one KV head lie n_head_kv * head_dim f16 values apart (8 KiB in a
// 7B-shape cache), a stride the hardware prefetchers do not follow across
// pages: each row would wait on memory by itself. So the run asks for the
// row kPrefetchRows positions ahead while it works on this one.
constexpr int64_t kPrefetchRows = 8;

inline void prefetch_row(const char* row, int64_t n_bytes) {
  for (int64_t b = 0; b < n_bytes; b += 64) __builtin_prefetch(row + b);
}

// Per-thread scratch, grown on demand and kept: no allocation once the
// largest context has been seen.
struct Scratch {
  std::vector<float> scores;  // f32 [n_run, kChunk]: a chunk's scores, then their exps
  std::vector<float> kblock;  // f32 [kKBlock, n_kv_heads of the run, head_dim]: K rows of a block of positions
  std::vector<float> vblock;  // f32 [<= kVBlock, n_kv_heads of the run, head_dim]: V rows of a block of positions
  std::vector<float> chunk_max;   // f32 [n_run]: a prefill run's partials of one chunk (see attend_chunk)
  std::vector<double> chunk_sum;  // f64 [n_run]
  std::vector<float> chunk_out;   // f32 [n_run, head_dim]
  std::vector<float> run_max;     // f32 [n_run]: a prefill run's folded state
  std::vector<double> run_sum;    // f64 [n_run]
  std::vector<int64_t> kv_offsets;  // [n_heads of the run]: where head r's K/V row starts in a converted run
  std::vector<int64_t> block_tokens;  // [n tokens of the run]: those that see a block (offsets from the first)
  std::vector<int64_t> block_seen;    // [n tokens of the run]: how many of the block's positions each sees
};

// Positions per block of the weighted V sum, and output values per register
// tile (8 AVX2 vectors).
constexpr int64_t kVBlock = 32;             // at most
constexpr int64_t kVBlockBytes = 16 << 10;  // the f32 rows of a V block fit here (L1), down to 8 positions
constexpr int64_t kKBlock = 8;  // positions per block of scores (dot8)
constexpr int64_t kOutChunk = 64;

// The converted K and V blocks start on a cache line: the vector's own
// 16-byte alignment put every other 32-byte load of a row across two lines.
constexpr int64_t kScratchAlignFloats = 16;
inline float* align_scratch(float* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<float*>((a + 63) & ~uintptr_t{63});
}

Scratch& thread_scratch() {
  thread_local Scratch scratch;
  return scratch;
}

template <typename T>
void grow(std::vector<T>& v, int64_t n) {
  if (v.size() < static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
}

struct AttentionArgs {
  const float* q;
  const void* k;
  const void* v;
  int64_t n_head;
  int64_t n_head_kv;
  int64_t head_dim;
  const int32_t* positions;
  float* out;
  float scale;
  float softcap;   // > 0: scores soft-capped (AttentionParams)
  int64_t window;  // > 0: sliding window (AttentionParams)
  const float* sinks;  // f32 [n_head] or null (AttentionParams)
  DType k_type, v_type;  // F16 or Q8_0 (AttentionParams)
  int64_t n_kv;          // the cache's positions
  bool bidirectional;    // (AttentionParams)
  float alibi_max_bias;  // > 0: ALiBi (AttentionParams)

  // The first position token t sees.
  int64_t first_seen(int64_t t) const {
    const int64_t p = positions[t];
    if (bidirectional) return window > 0 ? std::max<int64_t>(0, p - window / 2) : 0;
    return window > 0 ? std::max<int64_t>(0, p + 1 - window) : 0;
  }
  // One past the last position token t sees.
  int64_t end_seen(int64_t t) const {
    const int64_t p = positions[t];
    if (bidirectional) return window > 0 ? std::min<int64_t>(n_kv, p + window / 2 + 1) : n_kv;
    return p + 1;
  }
};

// The context is cut into chunks of kChunk positions at fixed places (0,
// kChunk, 2 kChunk, ...). For each (token, head) and chunk, attend_chunk
// gives a partial: m, the chunk's largest score; s = sum of exp(score_j - m)
// (double); o = sum of exp(score_j - m) v_j (f32, j ascending). fold_partial
// merges the partials in chunk order into a running (M, S, o), and the
// output is o / S. A prefill run folds its chunks as it goes; a decode
// token's chunks are separate work items (so one sequence's long context
// spreads over the threads, each reading whole KV rows that follow each
// other in memory), folded once all are done. The chunks sit where they sit
// whatever the split, batch or thread count, so every way gives the same
// bits.
constexpr int64_t kChunk = 256;  // a multiple of kKBlock and kVBlock

// The partials of (token, head) rows i of one chunk: max[i], sum[i], out[i * head_dim ...].
struct Partials {
  float* max;
  double* sum;
  float* out;
};

// Tokens [t_begin, t_end) x query heads [h_begin, h_end), which read the KV
// heads [h_begin / n_group, (h_end - 1) / n_group] (several whole groups, or
// a slice of one), over the positions [j_begin, j_begin + kChunk) each token
// sees. Row i = (t - t_begin) * (h_end - h_begin) + (h - h_begin) of `part`
// gets its partial; a token that sees none of the chunk gets max -inf, sum 0
// and out 0. Positions before a token's sliding window score -inf (exp 0),
// as llama.cpp's mask. The run's K and V rows of one position lie next to each other
// in the cache, so each is converted once, in one piece, and used by every
// (token, head) of the run that sees it; the arithmetic of one (token, head)
// is the same for any run it is part of.
// Cloned for x86-64-v3 (AVX2, FMA) next to the baseline build, picked at
// load time by CPUID: the dot products and the weighted sum of V rows
// vectorize 8 wide with FMA there (4 wide, no FMA, in the baseline code).
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
void attend_chunk(const AttentionArgs& a, int64_t t_begin, int64_t t_end, int64_t h_begin, int64_t h_end,
                  int64_t j_begin, const Partials& part) {
  const float* table = f16_table();
  const RowToF32 k_to_f32 = row_to_f32(a.k_type), v_to_f32 = row_to_f32(a.v_type);
  Scratch& s = thread_scratch();
  const int64_t n_heads = h_end - h_begin;
  const int64_t n_group = a.n_head / a.n_head_kv;
  const int64_t kv_begin = h_begin / n_group;
  const int64_t n_kv_run = (h_end - 1) / n_group + 1 - kv_begin;
  const int64_t kv_stride = a.n_head_kv * a.head_dim;
  const int64_t head_dim = a.head_dim;
  const int64_t run_width = n_kv_run * head_dim;  // the run's K (or V) values of one position
  // A position's whole K (V) row in the cache, one head's part of it
  // (heads are whole blocks), and where the run's part starts.
  const int64_t k_head_bytes = row_bytes(a.k_type, head_dim), v_head_bytes = row_bytes(a.v_type, head_dim);
  const int64_t k_row_bytes = a.n_head_kv * k_head_bytes, v_row_bytes = a.n_head_kv * v_head_bytes;
  const int64_t k_run_offset = kv_begin * k_head_bytes, v_run_offset = kv_begin * v_head_bytes;
  auto k_row = [&](int64_t j) { return static_cast<const char*>(a.k) + j * k_row_bytes; };
  auto v_row = [&](int64_t j) { return static_cast<const char*>(a.v) + j * v_row_bytes; };
  auto k_run = [&](int64_t j) { return k_row(j) + k_run_offset; };
  auto v_run = [&](int64_t j) { return v_row(j) + v_run_offset; };
  auto n_ctx_of = [&](int64_t t) { return a.end_seen(t); };
  auto chunk_end_of = [&](int64_t t) { return std::min(j_begin + kChunk, n_ctx_of(t)); };
  // Whether token t sees none of the chunk (its window starts past it).
  auto masked_out = [&](int64_t t) { return a.first_seen(t) >= chunk_end_of(t); };
  int64_t j_end = j_begin;  // the end of the positions any token of the run sees in this chunk
  for (int64_t t = t_begin; t < t_end; ++t) {
    if (!masked_out(t)) j_end = std::max(j_end, chunk_end_of(t));
  }
  // The first position any token of the run sees in this chunk: K and V
  // rows before it are never read (the scores before a token's window are
  // -inf, and 0 times a row outside every window could be 0 * NaN).
  int64_t j_lo = j_end;
  for (int64_t t = t_begin; t < t_end; ++t) {
    if (!masked_out(t)) j_lo = std::min(j_lo, std::max(j_begin, a.first_seen(t)));
  }
  const int64_t n_rows = (t_end - t_begin) * n_heads;  // (token, head) pairs, token-major
  grow(s.scores, n_rows * kChunk);
  // Wide runs (a decode token's whole KV rows) take fewer positions per V
  // block, so that the block each head reads again stays in L1 (7B shape,
  // 2 Zen 5 threads: 2048 positions x 8 sequences 12.3-12.9 -> 11.5 ms).
  const int64_t v_block = std::clamp<int64_t>(kVBlockBytes / (run_width * 4) / 8 * 8, 8, kVBlock);
  grow(s.vblock, v_block * run_width + kScratchAlignFloats);
  grow(s.kblock, kKBlock * run_width + kScratchAlignFloats);
  float* kblock = align_scratch(s.kblock.data());
  float* vblock = align_scratch(s.vblock.data());
  float* scores = s.scores.data();
  // This token's positions of the chunk, from j0 on (<= 0: none); those
  // before its window are counted (their scores are set to -inf below).
  auto n_from = [&](int64_t t, int64_t j0) { return masked_out(t) ? 0 : chunk_end_of(t) - j0; };
  auto q_of = [&](int64_t t, int64_t r) { return a.q + (t * a.n_head + h_begin + r) * head_dim; };
  auto row_of = [&](int64_t t, int64_t r) { return (t - t_begin) * n_heads + r; };
  auto scores_of = [&](int64_t t, int64_t r) { return scores + row_of(t, r) * kChunk; };
  auto out_of = [&](int64_t t, int64_t r) { return part.out + row_of(t, r) * head_dim; };
  // The run's K or V rows [j, j + n) (none past j_end), asked for ahead.
  auto prefetch_rows = [&](auto run_of, int64_t head_bytes, int64_t j, int64_t n) {
    for (const int64_t end = std::min(j + n, j_end); j < end; ++j) prefetch_row(run_of(j), n_kv_run * head_bytes);
  };
  // Where head r's K/V row starts within a position's converted run, for
  // the 8-lane and the zmm loops alike. (Computed once, not by a division
  // per head and block: the 8-lane path 3-10% faster.)
  grow(s.kv_offsets, n_heads);
  for (int64_t r = 0; r < n_heads; ++r) {
    s.kv_offsets[static_cast<size_t>(r)] = ((h_begin + r) / n_group - kv_begin) * head_dim;
  }
  const int64_t* kv_offsets = s.kv_offsets.data();
  // The tokens of the run that see some of the positions [j0, j0 + nj),
  // and how many each sees, into block_tokens / block_seen; returns their count.
  grow(s.block_tokens, t_end - t_begin), grow(s.block_seen, t_end - t_begin);
  auto tokens_seeing = [&](int64_t j0, int64_t nj) {
    int64_t n = 0;
    for (int64_t t = t_begin; t < t_end; ++t) {
      const int64_t n_j = std::min(nj, n_from(t, j0));
      if (n_j > 0) s.block_tokens[static_cast<size_t>(n)] = t - t_begin, s.block_seen[static_cast<size_t>(n++)] = n_j;
    }
    return n;
  };

  // Scores. Head sizes that are a multiple of 8 take kKBlock positions at a
  // time: their K rows are converted into the scratch (rows past j_end
  // zero-filled, never read), and dot8 computes their 8 dot products with
  // the same operations as dot(), reducing them together.
  const bool by_blocks = head_dim % 8 == 0;
  // One token and one query head per KV head (a decode step of a model
  // without grouped KV heads) use each K and V value once: the F16C (or
  // q8_0) loops read them from the cache directly, with the same bits as
  // through the scratch (whose round trip cost more than the arithmetic).
  // Whole blocks only: a block's 8 rows are all read.
  const bool direct = t_end - t_begin == 1 && n_group == 1 && head_dim % kOutChunk == 0 &&
                      detail::f16_kv_direct_available();
  // Otherwise, on AVX-512 CPUs, the scores and V sums of a block take the
  // zmm loops (attention_avx512.h: the same bits), all heads of a token in
  // one call; K blocks are converted into their pair layout.
  const bool zmm = by_blocks && !direct && detail::attention_zmm_enabled();
  // A prefill run's zmm loops take several tokens of one head at a time
  // (each K and V value loaded once for them all); a decode token's take
  // two heads at a time (those of one KV group share their loads).
  const bool zmm_tokens = zmm && t_end - t_begin > 1;
  // The same on the 8-lane path, two tokens at a time (attention_tiles_avx2.h).
  const bool ymm_tokens = !zmm && by_blocks && t_end - t_begin > 1 && detail::f16_kv_direct_available();
  // A decode token's run covering whole KV rows reads K, then V, as
  // contiguous streams: the head loops ask for the next block's rows (after
  // the last K block, the first V block's) a piece per head or pair of
  // heads, which keeps fewer requests waiting at a time than asking for
  // them all at once (attention_bench 32x4x64 at 4096 positions, 2 threads:
  // about 10-20% faster).
  const bool spread = by_blocks && !direct && t_end - t_begin == 1 && run_width == kv_stride;
  // Bytes of rows [j, j + n) within the run's positions (none past j_end).
  auto rows_bytes = [&](int64_t j, int64_t n, int64_t row_bytes) {
    return spread ? std::max<int64_t>(0, std::min(j + n, j_end) - j) * row_bytes : 0;
  };
  for (int64_t j0 = j_lo; j0 < j_end; j0 += by_blocks ? kKBlock : 1) {
    const int64_t nj = by_blocks ? std::min(kKBlock, j_end - j0) : 1;
    // Rows kPrefetchRows ahead (the next block of 8); the last block asks for
    // the first V block instead.
    const bool last = j0 + nj >= j_end;
    if (!spread && !last) prefetch_rows(k_run, k_head_bytes, j0 + kPrefetchRows, nj);
    if (!spread && last) prefetch_rows(v_run, v_head_bytes, j_lo, v_block);
    const int64_t k_ahead_bytes =
        last ? rows_bytes(j_lo, v_block, v_row_bytes) : rows_bytes(j0 + nj, kKBlock, k_row_bytes);
    const char* k_ahead = k_ahead_bytes == 0 ? nullptr : last ? v_row(j_lo) : k_row(j0 + nj);
    if (direct && nj == kKBlock) {
      for (int64_t r = 0; r < n_heads; ++r) {
        float d8[kKBlock];
        const char* k = k_row(j0) + (h_begin + r) * k_head_bytes;
        if (a.k_type == DType::Q8_0) {
          detail::dot8_q8_0(q_of(t_begin, r), k, k_row_bytes, head_dim, d8);
        } else {
          detail::dot8_f16(q_of(t_begin, r), reinterpret_cast<const uint16_t*>(k), kv_stride, head_dim, d8);
        }
        float* sc = scores_of(t_begin, r) + (j0 - j_begin);
        for (int64_t i = 0; i < nj; ++i) sc[i] = d8[i] * a.scale;
      }
      continue;
    }
    if (zmm) {
      if (a.k_type == DType::Q8_0) {
        detail::q8_0_block_to_pairs(k_run(j0), k_row_bytes, nj, run_width, kblock);
      } else {
        detail::f16_block_to_pairs(reinterpret_cast<const uint16_t*>(k_run(j0)), kv_stride, nj, run_width, kblock);
      }
      if (zmm_tokens) {
        const int64_t n_seeing = tokens_seeing(j0, nj);
        for (int64_t r = 0; r < n_heads; ++r) {
          detail::score_tokens_pairs(q_of(t_begin, r), a.n_head * head_dim, scores_of(t_begin, r) + (j0 - j_begin),
                                     n_heads * kChunk, s.block_tokens.data(), s.block_seen.data(), n_seeing,
                                     kblock + 2 * kv_offsets[r], run_width, head_dim, a.scale);
        }
        continue;
      }
      for (int64_t t = t_begin; t < t_end; ++t) {
        const int64_t n_j = std::min(nj, n_from(t, j0));
        if (n_j <= 0) continue;
        detail::score_heads_pairs(q_of(t, 0), n_heads, kv_offsets, kblock, run_width, head_dim, a.scale, n_j,
                                  scores_of(t, 0) + (j0 - j_begin), kChunk, k_ahead, k_ahead_bytes);
      }
      continue;
    }
    for (int64_t i = 0; i < nj; ++i) k_to_f32(table, k_run(j0 + i), run_width, kblock + i * run_width);
    if (by_blocks && nj < kKBlock) std::fill(kblock + nj * run_width, kblock + kKBlock * run_width, 0.0f);
    if (ymm_tokens) {
      const int64_t n_seeing = tokens_seeing(j0, nj);
      for (int64_t r = 0; r < n_heads; ++r) {
        detail::score_tokens_rows8(q_of(t_begin, r), a.n_head * head_dim, scores_of(t_begin, r) + (j0 - j_begin),
                                   n_heads * kChunk, s.block_tokens.data(), s.block_seen.data(), n_seeing,
                                   kblock + kv_offsets[r], run_width, head_dim, a.scale);
      }
      continue;
    }
    for (int64_t t = t_begin; t < t_end; ++t) {
      const int64_t n_j = std::min(nj, n_from(t, j0));  // this token's positions in the block
      if (n_j <= 0) continue;
      for (int64_t r = 0; r < n_heads; ++r) {
        prefetch_part(k_ahead, k_ahead_bytes, r, n_heads);
        const float* k = kblock + kv_offsets[r];
        float* sc = scores_of(t, r) + (j0 - j_begin);
        if (by_blocks) {
          float d8[kKBlock];
          dot8(q_of(t, r), k, run_width, head_dim, d8);
          for (int64_t i = 0; i < n_j; ++i) sc[i] = d8[i] * a.scale;
        } else {
          sc[0] = dot(q_of(t, r), k, head_dim) * a.scale;
        }
      }
    }
  }

  // Soft-cap, ALiBi (ggml's x + slope * mask, mask -|p - j|), then the window: a token that sees any
  // position of the chunk keeps a finite max, so the masked positions' exps are exactly 0.
  if (a.softcap > 0.0f || a.window > 0 || a.alibi_max_bias > 0.0f) {
    const float inv_cap = a.softcap > 0.0f ? 1.0f / a.softcap : 0.0f;
    for (int64_t t = t_begin; t < t_end; ++t) {
      const int64_t n = n_from(t, j_begin);
      const int64_t n_masked = std::clamp<int64_t>(a.first_seen(t) - j_begin, 0, std::max<int64_t>(n, 0));
      for (int64_t r = 0; r < n_heads && n > 0; ++r) {
        float* sc = scores_of(t, r);
        if (a.softcap > 0.0f) {
          for (int64_t j = 0; j < n; ++j) sc[j] = std::tanh(sc[j] * inv_cap) * a.softcap;
        }
        const float slope = a.alibi_max_bias > 0.0f ? alibi_slope(a.alibi_max_bias, a.n_head, h_begin + r) : 0.0f;
        for (int64_t j = 0; j < n && slope != 0.0f; ++j) {
          sc[j] += slope * -static_cast<float>(std::abs(a.positions[t] - (j_begin + j)));
        }
        std::fill(sc, sc + n_masked, -std::numeric_limits<float>::infinity());
      }
    }
  }

  for (int64_t t = t_begin; t < t_end; ++t) {
    const int64_t n = n_from(t, j_begin);
    for (int64_t r = 0; r < n_heads; ++r) {
      const int64_t i = row_of(t, r);
      part.sum[i] = 0.0;
      part.max[i] = n <= 0 ? -std::numeric_limits<float>::infinity()
                    : zmm  ? detail::exp_scores(scores_of(t, r), n, part.sum[i])
                           : chunk_exp(scores_of(t, r), n, part.sum[i]);
      std::fill(out_of(t, r), out_of(t, r) + head_dim, 0.0f);
    }
  }

  // The weighted sum of V rows, a block of positions at a time: the block's
  // rows are converted once into the scratch, then each (token, head) adds
  // them to its output kOutChunk values at a time, held in registers across
  // the block (a load and a store of the output per position cost as much
  // as the FMAs). Each output value still gets its terms in ascending j.
  for (int64_t j0 = j_lo; j0 < j_end; j0 += v_block) {
    const int64_t nj = std::min(v_block, j_end - j0);
    if (!spread) prefetch_rows(v_run, v_head_bytes, j0 + nj, v_block);  // the next block
    if (direct) {
      for (int64_t r = 0; r < n_heads; ++r) {
        const float* p = scores_of(t_begin, r) + (j0 - j_begin);
        const char* v = v_row(j0) + (h_begin + r) * v_head_bytes;
        float* o = out_of(t_begin, r);
        for (int64_t d = 0; d < head_dim; d += kOutChunk) {
          if (a.v_type == DType::Q8_0) {
            detail::add_rows64_q8_0(p, v + row_bytes(DType::Q8_0, d), v_row_bytes, nj, o + d);
          } else {
            detail::add_rows64_f16(p, reinterpret_cast<const uint16_t*>(v) + d, kv_stride, nj, o + d);
          }
        }
      }
      continue;
    }
    if (zmm && a.v_type == DType::Q8_0) {
      for (int64_t i = 0; i < nj; ++i) detail::q8_0_row_to_f32(v_run(j0 + i), run_width, vblock + i * run_width);
    } else if (zmm) {  // by_blocks: run_width is a multiple of 8
      for (int64_t i = 0; i < nj; ++i) {
        detail::f16_row_to_f32(reinterpret_cast<const uint16_t*>(v_run(j0 + i)), run_width, vblock + i * run_width);
      }
    } else {
      for (int64_t i = 0; i < nj; ++i) v_to_f32(table, v_run(j0 + i), run_width, vblock + i * run_width);
    }
    if (zmm_tokens || ymm_tokens) {
      const int64_t n_seeing = tokens_seeing(j0, nj);
      for (int64_t r = 0; r < n_heads; ++r) {
        const auto add = zmm_tokens ? detail::add_tokens_rows : detail::add_tokens_rows8;
        add(scores_of(t_begin, r) + (j0 - j_begin), n_heads * kChunk, out_of(t_begin, r), n_heads * head_dim,
            s.block_tokens.data(), s.block_seen.data(), n_seeing, vblock + kv_offsets[r], run_width, head_dim);
      }
      continue;
    }
    for (int64_t t = t_begin; t < t_end; ++t) {
      const int64_t n_j = std::min(nj, n_from(t, j0));  // this token's positions in the block
      if (n_j <= 0) continue;
      const int64_t v_ahead_bytes = rows_bytes(j0 + nj, v_block, v_row_bytes);
      const char* v_ahead = v_ahead_bytes == 0 ? nullptr : v_row(j0 + nj);
      // (The zmm loops take each head's first head_dim / 64 * 64 values.)
      if (zmm) {
        detail::add_heads_rows(scores_of(t, 0) + (j0 - j_begin), kChunk, n_heads, kv_offsets, vblock,
                               run_width, head_dim, n_j, out_of(t, 0), v_ahead, v_ahead_bytes);
      }
      for (int64_t r = 0; r < n_heads && (!zmm || head_dim % kOutChunk != 0); ++r) {
        if (!zmm) prefetch_part(v_ahead, v_ahead_bytes, r, n_heads);
        const float* p = scores_of(t, r) + (j0 - j_begin);
        const float* v = vblock + kv_offsets[r];
        float* o = out_of(t, r);
        int64_t d = zmm ? head_dim / kOutChunk * kOutChunk : 0;
        for (; d + kOutChunk <= head_dim; d += kOutChunk) add_rows64(p, v + d, run_width, n_j, o + d);
        for (; d + 8 <= head_dim; d += 8) add_rows8(p, v + d, run_width, n_j, o + d);
        for (; d < head_dim; ++d) add_rows1(p, v + d, run_width, n_j, o + d);
      }
    }
  }
}

// One (token, head)'s running state (max, sum, out [head_dim]) merged with
// the partial of its next chunk (chunk_max, chunk_sum, chunk_out); a chunk
// the token does not see (max -inf) changes nothing. One function, not
// inlined, for prefill runs and decode folds alike: the same bits.
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
// (clang refuses noinline beside target_clones; it never inlines a multiversioned function)
#if !defined(__clang__) || !defined(__x86_64__) || defined(__SANITIZE_ADDRESS__)
__attribute__((noinline))
#endif
void fold_partial(float& max, double& sum, float* __restrict out, float chunk_max,
                                            double chunk_sum, const float* __restrict chunk_out, int64_t head_dim) {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  if (!(chunk_max > neg_inf)) return;
  if (max == neg_inf) {  // the first chunk: what the general step gives (keep 0, take 1), without two exps
    max = chunk_max;
    sum = chunk_sum;
    std::copy(chunk_out, chunk_out + head_dim, out);
    return;
  }
  const float new_max = std::max(max, chunk_max);
  const float keep = std::exp(max - new_max);
  const float take = std::exp(chunk_max - new_max);
  sum = sum * static_cast<double>(keep) + chunk_sum * static_cast<double>(take);
  for (int64_t d = 0; d < head_dim; ++d) out[d] = out[d] * keep + chunk_out[d] * take;
  max = new_max;
}

// out / sum: normalized as llama.cpp's soft_max, once all chunks are folded.
// A head's attention sink (sinks non-null) is folded in first as one more
// score whose value row is zero: it takes its share of the denominator.
__attribute__((noinline)) void finish_row(float* out, float max, double sum, const float* sinks, int64_t head,
                                          int64_t head_dim) {
  if (sinks != nullptr) {
    const float sink = sinks[head];
    const float new_max = std::max(max, sink);
    const float keep = std::exp(max - new_max);
    sum = sum * static_cast<double>(keep) + static_cast<double>(std::exp(sink - new_max));
    for (int64_t d = 0; d < head_dim; ++d) out[d] *= keep;
  }
  const float inv_sum = static_cast<float>(1.0 / sum);
  for (int64_t d = 0; d < head_dim; ++d) out[d] *= inv_sum;
}

// A prefill run: tokens [t_begin, t_end) x heads [h_begin, h_end) over
// every chunk their contexts reach, folded into the output as they come.
void attend_run(const AttentionArgs& a, int64_t t_begin, int64_t t_end, int64_t h_begin, int64_t h_end) {
  Scratch& s = thread_scratch();
  const int64_t n_heads = h_end - h_begin;
  const int64_t n_rows = (t_end - t_begin) * n_heads;
  const int64_t head_dim = a.head_dim;
  grow(s.chunk_max, n_rows), grow(s.chunk_sum, n_rows), grow(s.chunk_out, n_rows * head_dim);
  grow(s.run_max, n_rows), grow(s.run_sum, n_rows);
  int64_t max_ctx = 0;  // the longest context of the run's tokens
  int64_t min_seen = std::numeric_limits<int64_t>::max();  // the first position any of them sees
  for (int64_t t = t_begin; t < t_end; ++t) {
    max_ctx = std::max<int64_t>(max_ctx, a.end_seen(t));
    min_seen = std::min(min_seen, a.first_seen(t));
  }
  auto out_of = [&](int64_t t, int64_t r) { return a.out + (t * a.n_head + h_begin + r) * head_dim; };
  for (int64_t t = t_begin; t < t_end; ++t) {
    for (int64_t r = 0; r < n_heads; ++r) std::fill(out_of(t, r), out_of(t, r) + head_dim, 0.0f);
  }
  std::fill(s.run_max.begin(), s.run_max.begin() + n_rows, -std::numeric_limits<float>::infinity());
  std::fill(s.run_sum.begin(), s.run_sum.begin() + n_rows, 0.0);
  const Partials chunk{s.chunk_max.data(), s.chunk_sum.data(), s.chunk_out.data()};
  // Chunks wholly before every token's window are skipped: their partials
  // would be empty.
  for (int64_t j0 = min_seen / kChunk * kChunk; j0 < max_ctx; j0 += kChunk) {
    // (attend_chunk may grow the scratch's other vectors, not these.)
    attend_chunk(a, t_begin, t_end, h_begin, h_end, j0, chunk);
    for (int64_t t = t_begin; t < t_end; ++t) {
      for (int64_t r = 0; r < n_heads; ++r) {
        const int64_t i = (t - t_begin) * n_heads + r;
        fold_partial(s.run_max[static_cast<size_t>(i)], s.run_sum[static_cast<size_t>(i)], out_of(t, r),
                     chunk.max[i], chunk.sum[i], chunk.out + i * head_dim, head_dim);
      }
    }
  }
  for (int64_t t = t_begin; t < t_end; ++t) {
    for (int64_t r = 0; r < n_heads; ++r) {
      const auto i = static_cast<size_t>((t - t_begin) * n_heads + r);
      finish_row(out_of(t, r), s.run_max[i], s.run_sum[i], a.sinks, h_begin + r, head_dim);
    }
  }
}

// Query heads [h_begin, h_end) of run r when a sequence's KV heads are cut
// into n_runs runs of groups_per_run whole groups (n_split 1), or each
// group into n_split slices of its query heads.
struct HeadRuns {
  int64_t n_runs = 1, groups_per_run = 1, n_split = 1;

  // About `want` runs, each at most max_heads query heads (at least one group).
  HeadRuns(int64_t n_head, int64_t n_head_kv, int64_t want, int64_t max_heads) {
    const int64_t n_group = n_head / n_head_kv;
    if (n_head_kv >= want) {
      groups_per_run = std::clamp<int64_t>(n_head_kv / want, 1, std::max<int64_t>(1, max_heads / n_group));
      n_runs = (n_head_kv + groups_per_run - 1) / groups_per_run;
    } else {
      n_split = std::clamp<int64_t>((want + n_head_kv - 1) / n_head_kv, 1, n_group);
      n_runs = n_head_kv * n_split;
    }
  }
  void heads(int64_t r, int64_t n_head, int64_t n_head_kv, int64_t& h_begin, int64_t& h_end) const {
    const int64_t n_group = n_head / n_head_kv;
    if (n_split == 1) {
      h_begin = r * groups_per_run * n_group;
      h_end = std::min(n_head_kv, (r + 1) * groups_per_run) * n_group;
    } else {
      const int64_t kv_idx = r / n_split, slice = r % n_split;
      h_begin = kv_idx * n_group + n_group * slice / n_split;
      h_end = kv_idx * n_group + n_group * (slice + 1) / n_split;
    }
  }
};

// How one sequence's attention is cut into work items. A prefill (several
// tokens): (block of kTokenBlock tokens, run of query heads), each folding
// all of its chunks. A block's tokens and a run's heads share each K/V
// conversion (in prefill that conversion cost as much as the dot products:
// 12% of a 7B-layer pp512 step). A run is a few whole KV groups, whose rows
// of a position are contiguous in the cache: one stream per run instead of
// one 8 KiB jump per head and position. When there are fewer groups than
// items wanted (few KV heads) a group is split into slices of its query
// heads instead. A decode token (one token): (chunk, run of heads), the
// runs as wide as kMaxDecodeRunHeads allows, so that an item reads whole
// KV rows one after the other (runs of a few heads jump 8 KiB per position
// and leave the memory system waiting: decode attention read its KV at
// 10-20% of the read probe that way on the Zen 5 guest), and its partials
// go to `partials` for the fold. The split never changes a result, only
// who computes it.
struct SequenceItems {
  // Tokens per prefill item: each K/V conversion serves them all. 32 against
  // 8: without grouped KV heads (32x32x128, prompts of 2048, 2 Zen 3
  // threads, `attention_bench --prefill`, 5 alternating rounds) medians
  // 34.8 -> 49.4 GFLOP/s (16: 46.0); with groups of 4 (32x8x64) 61.7 either way.
  // 64 of 4 heads against 32 of 8, once the zmm loops took several tokens at
  // a time: 1.05-1.15x on the Xeon (docs/engine.md "CPU attention").
  static constexpr int64_t kTokenBlock = 64;
  static constexpr int64_t kMaxRunHeads = 4;  // a run's scores (64 tokens x 4 heads x chunk: 256 KiB) stay in L2
  static constexpr int64_t kMaxDecodeRunHeads = 64;  // one token's: 64 heads x chunk

  AttentionArgs args;
  int64_t n_tokens, n_pieces;  // pieces: token blocks (prefill) or chunks (decode)
  HeadRuns runs;
  Partials partials{};  // decode: [chunk][head] rows, head_dim values each

  // want: items wanted from this sequence, about.
  SequenceItems(const AttentionArgs& a, int64_t n_tokens_, int64_t want)
      : args(a),
        n_tokens(n_tokens_),
        n_pieces(n_tokens_ == 1 ? (a.end_seen(0) + kChunk - 1) / kChunk : (n_tokens_ + kTokenBlock - 1) / kTokenBlock),
        runs(a.n_head, a.n_head_kv, std::max<int64_t>(1, (want + n_pieces - 1) / n_pieces),
             n_tokens_ == 1 ? kMaxDecodeRunHeads : kMaxRunHeads) {}
  bool decode() const { return n_tokens == 1; }
  int64_t n_items() const { return n_pieces * runs.n_runs; }
  // f32 values / f64 values of this sequence's partials (decode only).
  int64_t partial_floats() const { return decode() ? n_pieces * args.n_head * (args.head_dim + 1) : 0; }
  int64_t partial_doubles() const { return decode() ? n_pieces * args.n_head : 0; }

  // Item i: prefill last block first (the longest contexts first balances it).
  void run(int64_t item) const {
    const int64_t rev = n_items() - 1 - item;
    const int64_t piece = rev / runs.n_runs;
    int64_t h_begin, h_end;
    runs.heads(rev % runs.n_runs, args.n_head, args.n_head_kv, h_begin, h_end);
    if (h_begin >= h_end) return;
    if (decode()) {
      const int64_t row = piece * args.n_head + h_begin;
      attend_chunk(args, 0, 1, h_begin, h_end, piece * kChunk,
                   {partials.max + row, partials.sum + row, partials.out + row * args.head_dim});
    } else {
      const int64_t t_begin = piece * kTokenBlock;
      attend_run(args, t_begin, std::min(n_tokens, t_begin + kTokenBlock), h_begin, h_end);
    }
  }

  // Decode: head h's chunks folded in order into its output.
  void fold(int64_t h) const {
    const int64_t head_dim = args.head_dim;
    float* out = args.out + h * head_dim;
    std::fill(out, out + head_dim, 0.0f);
    float max = -std::numeric_limits<float>::infinity();
    double sum = 0.0;
    for (int64_t c = 0; c < n_pieces; ++c) {
      const int64_t row = c * args.n_head + h;
      fold_partial(max, sum, out, partials.max[row], partials.sum[row], partials.out + row * head_dim, head_dim);
    }
    finish_row(out, max, sum, args.sinks, h, head_dim);
  }
};

}  // namespace

void attention_batch(std::span<const AttentionSequence> sequences, int64_t n_head, int64_t n_head_kv,
                     int64_t head_dim, const AttentionParams& params, ThreadPool& pool) {
  TC_CHECK(n_head > 0 && n_head_kv > 0 && n_head % n_head_kv == 0,
           "attention: n_head must be a positive multiple of n_head_kv");
  TC_CHECK(head_dim > 0, "attention: head_dim must be positive");
  TC_CHECK(is_kv_dtype(params.k_type) && is_kv_dtype(params.v_type), "attention: the KV cache is f16 or q8_0");
  TC_CHECK((params.k_type != DType::Q8_0 && params.v_type != DType::Q8_0) || head_dim % kQK8_0 == 0,
           "attention: a q8_0 KV cache needs head_dim to be a multiple of 32");
  TC_CHECK(params.scale >= 0.0f && params.softcap >= 0.0f && params.window >= 0 && params.alibi_max_bias >= 0.0f,
           "attention: scale, softcap, window and alibi_max_bias must not be negative");
  int64_t n_nonempty = 0;
  for (const AttentionSequence& s : sequences) {
    for (int64_t t = 0; t < s.n_tokens; ++t) {
      TC_CHECK(s.positions[t] >= 0 && s.positions[t] < s.n_kv, "attention: position outside the KV cache [0, n_kv)");
    }
    n_nonempty += s.n_tokens > 0 ? 1 : 0;
  }
  if (n_nonempty == 0) return;
  f16_table();  // built here, not by the first worker that needs it
  row_to_f32(DType::F16);

  // About 4 items per thread over the whole call: several sequences of a
  // decode step share one job for the pool (one wake-up, and the threads
  // balance over all of their items).
  const int64_t n_threads = pool.n_threads();
  const int64_t want = n_threads == 1 ? 1 : std::max<int64_t>(1, (4 * n_threads + n_nonempty - 1) / n_nonempty);
  const float scale =
      params.scale > 0.0f ? params.scale : static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
  // A decode step's sequences fit here without allocating.
  constexpr size_t kInline = 32;
  std::array<std::optional<SequenceItems>, kInline> inline_items;
  std::vector<std::optional<SequenceItems>> heap_items(sequences.size() > kInline ? sequences.size() : 0);
  std::optional<SequenceItems>* items = sequences.size() > kInline ? heap_items.data() : inline_items.data();
  std::array<int64_t, kInline + 1> inline_first{};
  std::vector<int64_t> heap_first(sequences.size() > kInline ? sequences.size() + 1 : 0);
  int64_t* first = sequences.size() > kInline ? heap_first.data() : inline_first.data();  // first item of sequence i
  first[0] = 0;
  int64_t n_floats = 0, n_doubles = 0, n_decode = 0;
  for (size_t i = 0; i < sequences.size(); ++i) {
    const AttentionSequence& s = sequences[i];
    const AttentionArgs args{s.q,           s.k,           s.v,           n_head,       n_head_kv,
                             head_dim,      s.positions,   s.out,         scale,        params.softcap,
                             params.window, params.sinks,  params.k_type, params.v_type, s.n_kv,
                             params.bidirectional, params.alibi_max_bias};
    if (s.n_tokens > 0) {
      items[i].emplace(args, s.n_tokens, want);
      n_floats += items[i]->partial_floats();
      n_doubles += items[i]->partial_doubles();
      n_decode += items[i]->decode() ? 1 : 0;
    }
    first[i + 1] = first[i] + (s.n_tokens > 0 ? items[i]->n_items() : 0);
  }
  // The decode tokens' partials, in buffers the calling thread keeps.
  thread_local std::vector<float> partial_floats;
  thread_local std::vector<double> partial_doubles;
  grow(partial_floats, n_floats);
  grow(partial_doubles, n_doubles);
  float* next_floats = partial_floats.data();
  double* next_doubles = partial_doubles.data();
  for (size_t i = 0; i < sequences.size(); ++i) {
    if (!items[i] || !items[i]->decode()) continue;
    SequenceItems& it = *items[i];
    const int64_t rows = it.partial_doubles();
    it.partials = {next_floats, next_doubles, next_floats + rows};
    next_floats += it.partial_floats();
    next_doubles += rows;
  }
  const int64_t n_items = first[sequences.size()];
  // Threads take items from a shared counter. Which thread takes an item
  // does not change its result.
  std::atomic<int64_t> next{0};
  pool.run([&](int, int) {
    size_t seq = 0;
    for (int64_t item = next.fetch_add(1); item < n_items; item = next.fetch_add(1)) {
      while (first[seq + 1] <= item) ++seq;  // items are claimed in ascending order
      items[seq]->run(item - first[seq]);
    }
  });
  if (n_decode == 0) return;
  // The decode tokens' folds, one item per (sequence, head).
  std::atomic<int64_t> next_fold{0};
  const int64_t n_folds = static_cast<int64_t>(sequences.size()) * n_head;
  pool.run([&](int, int) {
    for (int64_t f = next_fold.fetch_add(1); f < n_folds; f = next_fold.fetch_add(1)) {
      const auto& it = items[static_cast<size_t>(f / n_head)];
      if (it && it->decode()) it->fold(f % n_head);
    }
  });
}

void attention(const float* q, const void* k, const void* v, int64_t n_tokens, int64_t n_kv,
               int64_t n_head, int64_t n_head_kv, int64_t head_dim, const int32_t* positions, float* out,
               const AttentionParams& params, ThreadPool& pool) {
  const AttentionSequence one{q, k, v, n_tokens, n_kv, positions, out};
  attention_batch({&one, 1}, n_head, n_head_kv, head_dim, params, pool);
}

}  // namespace tc::kernels
