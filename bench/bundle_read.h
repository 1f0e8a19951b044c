// bundle_read: the bytes bundle_ffn reads for one token, read and nothing
// else computed: the ceiling the cold path's memory traffic sets on a
// machine. Per fixed range of kBundleChunk bundle slots (bundle_ffn's
// ranges, on the pool's threads as it runs them): the gate rows of the
// predicted slots, then the up/down bundles of the live ones, each row
// fetched into L2 kAheadRows rows ahead, one line per line read (as the
// gathered GEMV and the axpy prefetch). What the cold path loses against
// this is compute not hidden behind memory; what this loses against the
// streaming probe is the cost of the gather itself (row jumps, DRAM pages).
#pragma once

#include <emmintrin.h>
#include <xmmintrin.h>

#include <atomic>
#include <cstdio>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu/neuron_bundles.h"
#include "kernels/cpu/thread_pool.h"

namespace tc::bench {

namespace detail {

constexpr int64_t kAheadRows = 8;

// XORs n bytes at p (whole 32-byte words; a shorter tail is not read) into acc, prefetching the same offsets of `next` into L2.
inline __m128i read_row(const std::byte* p, int64_t n, const std::byte* next, __m128i acc) {
  for (int64_t b = 0; b + 32 <= n; b += 32) {
    if (next != nullptr && b % 64 == 0) _mm_prefetch(reinterpret_cast<const char*>(next + b), _MM_HINT_T1);
    acc = _mm_xor_si128(acc, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + b)));
    acc = _mm_xor_si128(acc, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + b + 16)));
  }
  return acc;
}

// Reads rows rows[0..n) (row i at base + rows[i] * stride, row_bytes each).
inline __m128i read_rows(const std::byte* base, int64_t stride, int64_t row_bytes, const int32_t* rows, int64_t n,
                         __m128i acc) {
  for (int64_t k = 0; k < n; ++k) {
    const std::byte* next = k + kAheadRows < n ? base + rows[k + kAheadRows] * stride : nullptr;
    acc = read_row(base + rows[k] * stride, row_bytes, next, acc);
  }
  return acc;
}

}  // namespace detail

// Reads, for one token, the gate rows of `predicted` (ascending bundle
// slots) and the up/down bundles of `live` (ascending, a subset of
// predicted) of `bundles`. Returns the bytes read.
inline int64_t read_bundles(const kernels::BundleSet& bundles, const std::vector<int32_t>& predicted,
                            const std::vector<int32_t>& live, kernels::ThreadPool& pool) {
  const kernels::BundleLayout& l = bundles.layout;
  const int64_t n_chunks = (bundles.n_bundles + kernels::kBundleChunk - 1) / kernels::kBundleChunk;
  // Each chunk's range of both lists.
  std::vector<int64_t> pred_begin(static_cast<size_t>(n_chunks) + 1), live_begin(static_cast<size_t>(n_chunks) + 1);
  size_t p = 0, q = 0;
  for (int64_t c = 0; c <= n_chunks; ++c) {
    while (p < predicted.size() && predicted[p] < c * kernels::kBundleChunk) ++p;
    while (q < live.size() && live[q] < c * kernels::kBundleChunk) ++q;
    pred_begin[static_cast<size_t>(c)] = static_cast<int64_t>(p);
    live_begin[static_cast<size_t>(c)] = static_cast<int64_t>(q);
  }
  std::atomic<int64_t> next_chunk{0};
  std::vector<uint64_t> sink(static_cast<size_t>(pool.n_threads()));
  pool.run([&](int t, int) {
    __m128i acc = _mm_setzero_si128();
    for (;;) {
      const int64_t c = next_chunk.fetch_add(1, std::memory_order_relaxed);
      if (c >= n_chunks) break;
      const int64_t p0 = pred_begin[static_cast<size_t>(c)], p1 = pred_begin[static_cast<size_t>(c) + 1];
      const int64_t q0 = live_begin[static_cast<size_t>(c)], q1 = live_begin[static_cast<size_t>(c) + 1];
      acc = detail::read_rows(bundles.gate, l.row_bytes, l.row_bytes, predicted.data() + p0, p1 - p0, acc);
      acc = detail::read_rows(bundles.up_down, l.stride, 2 * l.row_bytes, live.data() + q0, q1 - q0, acc);
    }
    sink[static_cast<size_t>(t)] = static_cast<uint64_t>(_mm_cvtsi128_si64(acc));
  });
  if (sink[0] == 42) std::printf(" ");  // keep the reads alive
  return l.row_bytes * static_cast<int64_t>(predicted.size() + 2 * live.size());
}

}  // namespace tc::bench
