// Fixtures of the lane-layout tests (lanes16_test, q4k_lanes16_test): a
// 64-byte aligned packed copy of a weight matrix, and one matmul call.
#pragma once

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

}  // namespace tc::test
