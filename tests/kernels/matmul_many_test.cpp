// matmul_many (several matrices sharing one input, as q/k/v and gate/up):
// every output has the bits of its own matmul call, for every variant,
// thread count, token count, activation layout change and lane-tiled Q4_0.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/lanes16.h"
#include "kernels/cpu/q4_lanes16.h"
#include "tests/kernels/weight_fixtures.h"
#include "tests/test_util.h"

namespace {

using namespace tc::kernels;
namespace detail = tc::kernels::detail;
using tc::test::make_weights;
using tc::test::Weights;

}  // namespace

TEST_CASE("matmul_many gives each matrix the bits of its own matmul call", "[kernels][matmul]") {
  // q/k/v-like neighbours sharing x: Q4_0 in rows and in lane tiles, then a
  // Q8_0 and an F16 (other activation layouts: new jobs), then more Q4_0
  // than one job takes (4); one output matrix empty of rows is allowed.
  const int64_t n_in = 256;
  uint64_t seed = 900;
  const std::vector<std::pair<DType, int64_t>> shapes = {{DType::Q4_0, 48}, {DType::Q4_0, 32}, {DType::Q8_0, 40},
                                                         {DType::F16, 24},  {DType::Q4_0, 16}, {DType::Q4_0, 20},
                                                         {DType::Q4_0, 64}, {DType::Q4_0, 33}, {DType::Q4_0, 17}};
  std::vector<Weights> weights;
  for (const auto& [dtype, rows] : shapes) weights.push_back(make_weights(dtype, n_in, rows, seed++));
  // The first one also in lane tiles (64-byte aligned), as the CPU backend repacks it.
  std::vector<std::byte> lane_bytes(static_cast<size_t>(lanes16_bytes(DType::Q4_0, n_in, 48)) + 64);
  auto* lane_dst = reinterpret_cast<std::byte*>((reinterpret_cast<uintptr_t>(lane_bytes.data()) + 63) / 64 * 64);
  const Tensor lanes = pack_q4_lanes16(weights[0].tensor(), lane_dst, nullptr);
  std::vector<Tensor> tensors;
  for (const Weights& w : weights) tensors.push_back(w.tensor());
  tensors[0] = lanes;
  ThreadPool pools[] = {ThreadPool(1), ThreadPool(2), ThreadPool(3)};
  for (int64_t n_tokens : {1, 3, 8, 13}) {
    const auto x = tc::test::random_floats(static_cast<size_t>(n_tokens * n_in), seed++);
    for (const auto* isa : tc::test::matmul_variants("matmul_many")) {
      for (ThreadPool& pool : pools) {
        INFO(isa->name << " tokens " << n_tokens << " threads " << pool.n_threads());
        std::vector<std::vector<float>> ys;
        std::vector<MatmulTarget> targets;
        for (const Tensor& t : tensors) ys.emplace_back(static_cast<size_t>(n_tokens * t.n_rows()), std::nanf(""));
        for (size_t i = 0; i < tensors.size(); ++i) targets.push_back({&tensors[i], ys[i].data()});
        detail::matmul_many_with(*isa, targets, x.data(), n_tokens, &pool);
        for (size_t i = 0; i < tensors.size(); ++i) {
          INFO("matrix " << i);
          std::vector<float> one(ys[i].size(), std::nanf(""));
          detail::matmul_with(*isa, tensors[i], x.data(), n_tokens, one.data(), nullptr);
          REQUIRE(std::memcmp(one.data(), ys[i].data(), one.size() * sizeof(float)) == 0);
        }
      }
    }
  }
}
