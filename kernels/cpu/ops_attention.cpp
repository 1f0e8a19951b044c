// CPU attention over an f16 KV cache (see ops.h): scalar loops written so GCC
// vectorizes them. Every output row (token, head) is computed by one thread
// with the same arithmetic whatever the split, so results are bit-identical
// for any thread count.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/check.h"
#include "kernels/cpu/ops.h"
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

void f16_row_to_f32_portable(const float* table, const uint16_t* src, int64_t n, float* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = table[src[i]];
}

#if defined(__x86_64__)
// F16C converts 8 values per instruction, exactly as the table (NaNs come out
// quiet with their payload in both), so the two paths give the same bits.
__attribute__((target("avx,f16c"))) void f16_row_to_f32_f16c(const float* table, const uint16_t* src, int64_t n,
                                                               float* dst) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) dst[i] = table[src[i]];
}
#endif

using F16RowToF32 = void (*)(const float*, const uint16_t*, int64_t, float*);

// Picked once by CPUID.
F16RowToF32 f16_row_to_f32() {
#if defined(__x86_64__)
  static const F16RowToF32 fn = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c")
                                    ? f16_row_to_f32_f16c
                                    : f16_row_to_f32_portable;
  return fn;
#else
  return f16_row_to_f32_portable;
#endif
}

// Dot product with 8 independent partial sums combined in a fixed tree:
// the order does not depend on anything but n, and the lanes vectorize.
// Inlined into attend_run's clones, so it vectorizes for each of them.
inline __attribute__((always_inline)) float dot(const float* __restrict a, const float* __restrict b, int64_t n) {
  constexpr int kLanes = 8;
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += a[i + l] * b[i + l];
  }
  for (int l = 0; i < n; ++i, ++l) acc[l] += a[i] * b[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

// Rows of one KV head lie n_head_kv * head_dim f16 values apart (8 KiB in a
// 7B-shape cache), a stride the hardware prefetchers do not follow across
// pages: each row would wait on memory by itself. So the run asks for the
// row kPrefetchRows positions ahead while it works on this one.
constexpr int64_t kPrefetchRows = 8;

inline void prefetch_row(const uint16_t* row, int64_t n) {
  const auto* bytes = reinterpret_cast<const char*>(row);
  for (int64_t b = 0; b < n * 2; b += 64) __builtin_prefetch(bytes + b);
}

// Per-thread scratch, grown on demand and kept: no allocation once the
// largest context has been seen.
struct Scratch {
  std::vector<float> scores;  // f32 [n_run, n_ctx]: scores, then probabilities
  std::vector<float> row;     // f32 [head_dim]: one K or V row converted from f16
};

Scratch& thread_scratch() {
  thread_local Scratch scratch;
  return scratch;
}

void grow(std::vector<float>& v, int64_t n) {
  if (v.size() < static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
}

struct AttentionArgs {
  const float* q;
  const uint16_t* k;
  const uint16_t* v;
  int64_t n_head;
  int64_t n_head_kv;
  int64_t head_dim;
  const int32_t* positions;
  float* out;
  float scale;
};

// Tokens [t_begin, t_end) x heads [h_begin, h_end), all reading KV head
// kv_idx. Each K and V row is converted once and used by every (token, head)
// of the run that sees it; the arithmetic of one (token, head) is the same
// for any run it is part of, so prefill and decode give the same bits.
// Cloned for x86-64-v3 (AVX2, FMA) next to the baseline build, picked at
// load time by CPUID: the dot products and the weighted sum of V rows
// vectorize 8 wide with FMA there (4 wide, no FMA, in the baseline code).
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
void attend_run(const AttentionArgs& a, int64_t t_begin, int64_t t_end, int64_t kv_idx, int64_t h_begin,
                int64_t h_end) {
  const float* table = f16_table();
  const F16RowToF32 to_f32 = f16_row_to_f32();
  Scratch& s = thread_scratch();
  const int64_t n_heads = h_end - h_begin;
  const int64_t kv_stride = a.n_head_kv * a.head_dim;
  const int64_t head_dim = a.head_dim;
  int64_t max_ctx = 0;  // the longest context of the run's tokens
  for (int64_t t = t_begin; t < t_end; ++t) max_ctx = std::max<int64_t>(max_ctx, a.positions[t] + 1);
  const int64_t n_rows = (t_end - t_begin) * n_heads;  // (token, head) pairs, token-major
  grow(s.scores, n_rows * max_ctx);
  grow(s.row, head_dim);
  float* row = s.row.data();
  float* scores = s.scores.data();
  auto n_ctx_of = [&](int64_t t) { return static_cast<int64_t>(a.positions[t]) + 1; };
  auto q_of = [&](int64_t t, int64_t r) { return a.q + (t * a.n_head + h_begin + r) * head_dim; };
  auto out_of = [&](int64_t t, int64_t r) { return a.out + (t * a.n_head + h_begin + r) * head_dim; };
  auto scores_of = [&](int64_t t, int64_t r) { return scores + ((t - t_begin) * n_heads + r) * max_ctx; };

  for (int64_t j = 0; j < max_ctx; ++j) {
    if (j + kPrefetchRows < max_ctx) prefetch_row(a.k + (j + kPrefetchRows) * kv_stride + kv_idx * head_dim, head_dim);
    to_f32(table, a.k + j * kv_stride + kv_idx * head_dim, head_dim, row);
    for (int64_t t = t_begin; t < t_end; ++t) {
      if (j >= n_ctx_of(t)) continue;
      for (int64_t r = 0; r < n_heads; ++r) scores_of(t, r)[j] = dot(q_of(t, r), row, head_dim) * a.scale;
    }
  }

  for (int64_t t = t_begin; t < t_end; ++t) {
    const int64_t n_ctx = n_ctx_of(t);
    for (int64_t r = 0; r < n_heads; ++r) {
      float* p = scores_of(t, r);
      float max = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < n_ctx; ++j) max = std::max(max, p[j]);
      // exp in f32; the sum in double, as ggml_vec_soft_max_f32, so long
      // contexts lose nothing to the accumulation.
      double sum = 0.0;
      for (int64_t j = 0; j < n_ctx; ++j) {
        p[j] = std::exp(p[j] - max);
        sum += p[j];
      }
      // Normalized before the weighted sum, as llama.cpp's soft_max followed
      // by the kq @ v product.
      const float inv_sum = static_cast<float>(1.0 / sum);
      for (int64_t j = 0; j < n_ctx; ++j) p[j] *= inv_sum;
      std::fill(out_of(t, r), out_of(t, r) + head_dim, 0.0f);
    }
  }

  for (int64_t j = 0; j < max_ctx; ++j) {
    if (j + kPrefetchRows < max_ctx) prefetch_row(a.v + (j + kPrefetchRows) * kv_stride + kv_idx * head_dim, head_dim);
    to_f32(table, a.v + j * kv_stride + kv_idx * head_dim, head_dim, row);
    for (int64_t t = t_begin; t < t_end; ++t) {
      if (j >= n_ctx_of(t)) continue;
      for (int64_t r = 0; r < n_heads; ++r) {
        const float p = scores_of(t, r)[j];
        float* __restrict o = out_of(t, r);
        for (int64_t d = 0; d < head_dim; ++d) o[d] += p * row[d];
      }
    }
  }
}

}  // namespace

void attention(const float* q, const uint16_t* k, const uint16_t* v, int64_t n_tokens, int64_t n_kv,
               int64_t n_head, int64_t n_head_kv, int64_t head_dim, const int32_t* positions, float* out,
               ThreadPool& pool) {
  TC_CHECK(n_head > 0 && n_head_kv > 0 && n_head % n_head_kv == 0,
           "attention: n_head must be a positive multiple of n_head_kv");
  TC_CHECK(head_dim > 0, "attention: head_dim must be positive");
  for (int64_t t = 0; t < n_tokens; ++t) {
    TC_CHECK(positions[t] >= 0 && positions[t] < n_kv, "attention: position outside the KV cache [0, n_kv)");
  }
  if (n_tokens <= 0) return;
  f16_table();  // built here, not by the first worker that needs it
  f16_row_to_f32();

  const AttentionArgs args{q, k, v, n_head, n_head_kv, head_dim, positions, out,
                           static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)))};
  const int64_t n_group = n_head / n_head_kv;
  // Work items are (block of kTokenBlock tokens, KV head, slice of its query
  // heads). A block's tokens and a group's heads share each K/V row's
  // conversion (in prefill that conversion cost as much as the dot products:
  // 12% of a 7B-layer pp512 step). When there are too few items to keep
  // every thread busy (decode with few KV heads) the groups are split,
  // aiming at about 4 items per thread.
  constexpr int64_t kTokenBlock = 8;
  const int64_t n_blocks = (n_tokens + kTokenBlock - 1) / kTokenBlock;
  const int64_t n_groups = n_blocks * n_head_kv;
  const int64_t n_threads = pool.n_threads();
  const int64_t n_split =
      n_threads == 1 ? 1 : std::clamp<int64_t>((4 * n_threads + n_groups - 1) / n_groups, 1, n_group);
  const int64_t n_items = n_groups * n_split;
  // Threads take items from a shared counter, last block first (the longest
  // contexts first balances prefill). Which thread takes an item does not
  // change its result.
  std::atomic<int64_t> next{0};
  pool.run([&](int, int) {
    for (int64_t item = next.fetch_add(1); item < n_items; item = next.fetch_add(1)) {
      const int64_t rev = n_items - 1 - item;
      const int64_t group_idx = rev / n_split;
      const int64_t slice = rev % n_split;
      const int64_t block = group_idx / n_head_kv;
      const int64_t kv_idx = group_idx % n_head_kv;
      const int64_t t_begin = block * kTokenBlock;
      const int64_t t_end = std::min(n_tokens, t_begin + kTokenBlock);
      const int64_t h_begin = kv_idx * n_group + n_group * slice / n_split;
      const int64_t h_end = kv_idx * n_group + n_group * (slice + 1) / n_split;
      if (h_begin < h_end) attend_run(args, t_begin, t_end, kv_idx, h_begin, h_end);
    }
  });
}

}  // namespace tc::kernels
