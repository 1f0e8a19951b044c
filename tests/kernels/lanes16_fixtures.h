// Fixtures of the lane-layout tests (lanes16_test, kquant_lanes16_test):
// a 64-byte aligned packed copy of a weight matrix, one matmul call, and the
// float64 reference of a super-block type's output.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu/lanes16.h"
#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/kernels/weight_fixtures.h"

namespace tc::test {

// w (a dtype with a lane layout) packed by pack_lanes16 into poisoned,
// 64-byte aligned storage.
struct PackedLanes16 {
  std::vector<std::byte> storage;
  kernels::Tensor tensor;

  explicit PackedLanes16(const Weights& w, kernels::ThreadPool* pool = nullptr) {
    const int64_t bytes = kernels::lanes16_bytes(w.dtype, w.n_cols, w.n_rows);
    storage.assign(static_cast<size_t>(bytes + 64), std::byte{0xa5});
    auto* dst = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64;
    tensor = kernels::pack_lanes16(w.tensor(), dst, pool);
  }
};

// y = w x by one matmul variant (y poisoned with NaN first).
inline std::vector<float> run_matmul(const kernels::detail::MatmulIsa& isa, const kernels::Tensor& w,
                                     const std::vector<float>& x, int64_t n_tokens, kernels::ThreadPool* pool) {
  std::vector<float> y(static_cast<size_t>(n_tokens * w.n_rows()), std::nanf(""));
  kernels::detail::matmul_with(isa, w, x.data(), n_tokens, y.data(), pool);
  return y;
}

// The matmul of `packed` against its rows `w` for n_tokens fresh tokens, by
// every variant and on each pool: the same bits.
inline void require_rows_bits(const Weights& w, const PackedLanes16& packed, int64_t n_tokens, uint64_t seed,
                              kernels::ThreadPool (&pools)[2]) {
  const auto x = random_floats(static_cast<size_t>(n_tokens * w.n_cols), seed);
  for (const auto* isa : matmul_variants("lanes16")) {
    for (kernels::ThreadPool& pool : pools) {
      INFO(isa->name << " n_in " << w.n_cols << " n_out " << w.n_rows << " n_tokens " << n_tokens << " threads "
                     << pool.n_threads());
      REQUIRE(run_matmul(*isa, packed.tensor, x, n_tokens, &pool) == run_matmul(*isa, w.tensor(), x, n_tokens, &pool));
    }
  }
}

// The float64 reference of output (token t, row r) of a matmul of w (a
// 256-block type) by x, and a bound on what the int8 activations (half a
// step of each 256-block's scale) and the f32 sums may cost.
inline void superblock_reference(const Weights& w, const std::vector<float>& x, int64_t t, int64_t r, double& want,
                                 double& bound) {
  const int64_t n_in = w.n_cols, block = 256;
  want = 0;
  bound = 0;
  for (int64_t b = 0; b < n_in / block; ++b) {
    double amax = 0, wsum = 0;
    for (int64_t i = block * b; i < block * (b + 1); ++i) {
      const double xi = x[static_cast<size_t>(t * n_in + i)];
      want += w.at(r, i) * xi;
      amax = std::fmax(amax, std::fabs(xi));
      wsum += std::fabs(w.at(r, i));
    }
    bound += wsum * amax / 127 / 2 + wsum * amax * 1e-5;
  }
}

}  // namespace tc::test
