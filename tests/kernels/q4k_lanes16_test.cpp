// Q4_K in its 16-row lane layout (kernels/cpu/q4k_lanes16.h): packing keeps
// every byte in the documented places; matmul over a packed matrix gives the
// same bits as over its rows for every variant (those that do not read the
// layout unpack it), token count (1 token, small batches, GEMM order),
// thread count, partial chunk and tile remainder, including the kernel's
// int16 worst case; and matches a float64 reference on fresh random data.
#include "kernels/cpu/q4k_lanes16.h"
#include "kernels/cpu/lanes16.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/kernels/lanes16_fixtures.h"
#include "tests/kernels/weight_fixtures.h"
#include "tests/test_util.h"

namespace {

using namespace tc::kernels;
namespace detail = tc::kernels::detail;
using tc::test::make_weights;
using tc::test::PackedLanes16;
using tc::test::run_matmul;
using tc::test::Weights;

// A Q4_K matrix packed: the file's bytes, rearranged.
PackedLanes16 pack_q4k(const Weights& w, ThreadPool* pool = nullptr) {
  CHECK(lanes16_bytes(DType::Q4_K, w.n_cols, w.n_rows) == w.n_rows * row_bytes(DType::Q4_K, w.n_cols));
  return PackedLanes16(w, pool);
}

// The float64 reference of a Q4_K matmul output, and a bound on what the
// int8 activations (half a step of each 256-block's scale) and the f32 sums
// may cost.
void reference(const Weights& w, const std::vector<float>& x, int64_t t, int64_t r, double& want, double& bound) {
  const int64_t n_in = w.n_cols;
  want = 0;
  bound = 0;
  for (int64_t b = 0; b < n_in / kQK_K; ++b) {
    double amax = 0, wsum = 0;
    for (int64_t i = kQK_K * b; i < kQK_K * (b + 1); ++i) {
      const double xi = x[static_cast<size_t>(t * n_in + i)];
      want += w.at(r, i) * xi;
      amax = std::fmax(amax, std::fabs(xi));
      wsum += std::fabs(w.at(r, i));
    }
    bound += wsum * amax / 127 / 2 + wsum * amax * 1e-5;
  }
}

}  // namespace

TEST_CASE("Q4_K lanes16: packing keeps every byte (unpack gives back the rows)", "[kernels][lanes16]") {
  ThreadPool pool(2);
  uint64_t seed = 2000;
  for (int64_t n_rows : {16, 37, 5, 48}) {
    for (int64_t n_cols : {256, 5 * 256, 4096}) {
      INFO("n_rows " << n_rows << " n_cols " << n_cols);
      const Weights w = make_weights(DType::Q4_K, n_cols, n_rows, seed++);
      const auto p = pack_q4k(w, &pool);
      REQUIRE(p.tensor.layout == WeightLayout::Q4_KLanes16);
      REQUIRE(p.tensor.row_bytes == w.row_bytes);
      std::vector<std::byte> rows(w.bytes.size(), std::byte{0});
      unpack_q4k_lanes16_rows(p.tensor, 0, n_rows, rows.data());
      REQUIRE(rows == w.bytes);
      for (int64_t r : {int64_t{0}, n_rows / 2, n_rows - 1}) {
        std::vector<std::byte> one(static_cast<size_t>(w.row_bytes));
        unpack_q4k_lanes16_rows(p.tensor, r, 1, one.data());
        REQUIRE(std::memcmp(one.data(), w.bytes.data() + r * w.row_bytes, one.size()) == 0);
      }
    }
  }
}

TEST_CASE("Q4_K lanes16: a tile's bytes lie where q4k_lanes16.h says", "[kernels][lanes16]") {
  // Super-block s at 2304 s: pair p, step k, row j at 64 (8 p + k) + 4 j;
  // scale byte i of row j at 2048 + 16 i + j; d and dmin at 2240 / 2272 + 2 j.
  const int64_t n_cols = 2 * kQK_K;
  const Weights w = make_weights(DType::Q4_K, n_cols, 16, 2100);
  const auto p = pack_q4k(w);
  const auto* tile = static_cast<const uint8_t*>(p.tensor.data);
  for (int64_t j = 0; j < 16; ++j) {
    const auto* blocks = reinterpret_cast<const BlockQ4_K*>(w.bytes.data() + j * w.row_bytes);
    for (int64_t s = 0; s < 2; ++s) {
      INFO("row " << j << " super-block " << s);
      const uint8_t* sb = tile + 2304 * s;
      uint16_t d, dmin;
      std::memcpy(&d, sb + 2240 + 2 * j, 2);
      std::memcpy(&dmin, sb + 2272 + 2 * j, 2);
      REQUIRE(d == blocks[s].d);
      REQUIRE(dmin == blocks[s].dmin);
      for (int64_t i = 0; i < 12; ++i) REQUIRE(sb[2048 + 16 * i + j] == blocks[s].scales[i]);
      for (int64_t q = 0; q < 128; ++q) {
        const int64_t pair = q / 32, k = q % 32 / 4;
        REQUIRE(sb[64 * (8 * pair + k) + 4 * j + q % 4] == blocks[s].qs[q]);
      }
    }
  }
}

TEST_CASE("Q4_K lanes16: matmul gives the row layout's bits for every variant, batch and thread count",
          "[kernels][lanes16][matmul]") {
  ThreadPool pools[] = {ThreadPool(1), ThreadPool(3)};
  uint64_t seed = 2200;
  // n_out: tiles only, a tile + a tail, tiles + a tail, a tail only; n_in:
  // one super-block, 5 (a partial second chunk), 9, 16.
  for (int64_t n_out : {64, 37, 53, 5}) {
    for (int64_t n_in : {kQK_K, 5 * kQK_K, 9 * kQK_K, 16 * kQK_K}) {
      const Weights w = make_weights(DType::Q4_K, n_in, n_out, seed++);
      const auto packed = pack_q4k(w);
      for (int64_t n_tokens : {1, 2, 3, 4, 5, 8, 9, 17}) {
        const auto x = tc::test::random_floats(static_cast<size_t>(n_tokens * n_in), seed++);
        for (const auto* isa : tc::test::matmul_variants("lanes16")) {
          for (ThreadPool& pool : pools) {
            INFO(isa->name << " n_in " << n_in << " n_out " << n_out << " n_tokens " << n_tokens << " threads "
                           << pool.n_threads());
            REQUIRE(run_matmul(*isa, packed.tensor, x, n_tokens, &pool) ==
                    run_matmul(*isa, w.tensor(), x, n_tokens, &pool));
          }
        }
      }
    }
  }
}

TEST_CASE("Q4_K lanes16: GEMM order gives the rows' bits and the reference's values", "[kernels][lanes16][matmul]") {
  // 160 tokens x 4096 inputs: GEMM order, in two blocks of tokens (the last
  // one shorter); 9 super-blocks: a partial last chunk.
  ThreadPool pool(2);
  const int64_t n_out = 40;
  for (int64_t n_in : {int64_t{4096}, 9 * kQK_K}) {
    for (int64_t n_tokens : {160, 125}) {
      INFO("n_in " << n_in << " n_tokens " << n_tokens);
      const Weights w = make_weights(DType::Q4_K, n_in, n_out, 2300 + n_in);
      const auto packed = pack_q4k(w, &pool);
      const auto x = tc::test::random_floats(static_cast<size_t>(n_tokens * n_in), 2301 + n_tokens);
      const auto lanes = run_matmul(detail::chosen_isa(), packed.tensor, x, n_tokens, &pool);
      REQUIRE(lanes == run_matmul(detail::chosen_isa(), w.tensor(), x, n_tokens, &pool));
      for (int64_t t = 0; t < n_tokens; ++t) {
        for (int64_t r = 0; r < n_out; ++r) {
          double want, bound;
          reference(w, x, t, r, want, bound);
          INFO("token " << t << " row " << r);
          REQUIRE(std::fabs(lanes[static_cast<size_t>(t * n_out + r)] - want) <= bound * 1.01 + 1e-6);
        }
      }
    }
  }
}

TEST_CASE("Q4_K lanes16: the largest nibbles, scales and mins give the rows' bits", "[kernels][lanes16][matmul]") {
  // Every nibble 15 against activations of one sign at +-127 (each 256-block's
  // largest input is its scale): a sub-block's int16 pair sums reach 8 x 2 x
  // 15 x 127 = 30480 in the lane kernel; scales and mins at 63 (every 6-bit
  // field set).
  const int64_t n_in = 5 * kQK_K, n_out = 37;
  Weights w = make_weights(DType::Q4_K, n_in, n_out, 2400);
  for (int64_t r = 0; r < n_out; ++r) {
    auto* blocks = reinterpret_cast<BlockQ4_K*>(w.bytes.data() + r * w.row_bytes);
    for (int64_t b = 0; b < n_in / kQK_K; ++b) {
      std::memset(blocks[b].qs, 0xff, sizeof blocks[b].qs);
      if ((r + b) % 2 == 0) std::memset(blocks[b].scales, 0xff, sizeof blocks[b].scales);
      std::vector<float> deq(kQK_K);
      dequantize_row(DType::Q4_K, &blocks[b], deq.data(), kQK_K);
      for (int64_t i = 0; i < kQK_K; ++i) w.values[static_cast<size_t>(r * n_in + kQK_K * b + i)] = deq[i];
    }
  }
  const auto packed = pack_q4k(w);
  ThreadPool pool(2);
  for (float sign : {1.0f, -1.0f}) {
    for (int64_t n_tokens : {1, 2, 3, 4}) {
      const std::vector<float> x(static_cast<size_t>(n_tokens * n_in), sign);
      for (const auto* isa : tc::test::matmul_variants("lanes16")) {
        INFO(isa->name << " sign " << sign << " n_tokens " << n_tokens);
        const auto lanes = run_matmul(*isa, packed.tensor, x, n_tokens, &pool);
        REQUIRE(lanes == run_matmul(*isa, w.tensor(), x, n_tokens, &pool));
        for (int64_t t = 0; t < n_tokens; ++t) {
          for (int64_t r = 0; r < n_out; ++r) {
            double want, bound;
            reference(w, x, t, r, want, bound);
            REQUIRE(std::fabs(lanes[static_cast<size_t>(t * n_out + r)] - want) <= bound * 1.01 + 1e-6);
          }
        }
      }
    }
  }
}

TEST_CASE("Q4_K lanes16: the kernels read every part of a tile", "[kernels][lanes16][matmul]") {
  // Changing a nibble, a scale byte, d or dmin of one row in the packed copy
  // changes that row's output and no other.
  const int64_t n_in = 2 * kQK_K, n_out = 16, row = 5;
  const Weights w = make_weights(DType::Q4_K, n_in, n_out, 2500);
  const auto x = tc::test::random_floats(static_cast<size_t>(n_in), 2501);
  const int64_t offsets[] = {64 * 9 + 4 * row, 2304 + 64 * 31 + 4 * row + 3, 2048 + 16 * 3 + row,
                             2304 + 2048 + 16 * 11 + row, 2240 + 2 * row + 1, 2304 + 2272 + 2 * row + 1};
  for (int64_t offset : offsets) {
    auto packed = pack_q4k(w);
    const auto before = run_matmul(detail::chosen_isa(), packed.tensor, x, 1, nullptr);
    static_cast<uint8_t*>(packed.tensor.data)[offset] ^= 0x21;
    const auto after = run_matmul(detail::chosen_isa(), packed.tensor, x, 1, nullptr);
    INFO("byte " << offset);
    for (int64_t r = 0; r < n_out; ++r) {
      if (r == row) {
        REQUIRE(after[static_cast<size_t>(r)] != before[static_cast<size_t>(r)]);
      } else {
        REQUIRE(after[static_cast<size_t>(r)] == before[static_cast<size_t>(r)]);
      }
    }
  }
}

TEST_CASE("Q4_K lanes16: bad input is refused with a message", "[kernels][lanes16]") {
  std::vector<std::byte> dst(static_cast<size_t>(lanes16_bytes(DType::Q4_K, 256, 16)) + 64);
  auto* aligned = dst.data() + (64 - reinterpret_cast<uintptr_t>(dst.data()) % 64) % 64;
  REQUIRE_THROWS_WITH(pack_q4k_lanes16(make_weights(DType::Q8_0, 256, 16, 2600).tensor(), aligned, nullptr),
                      Catch::Contains("not a Q4_K matrix"));
  REQUIRE_THROWS_WITH(pack_q4k_lanes16(make_weights(DType::Q4_K, 256, 16, 2601).tensor(), aligned + 1, nullptr),
                      Catch::Contains("64-byte aligned"));
  const Weights w = make_weights(DType::Q4_K, 256, 16, 2602);
  const auto packed = pack_q4k(w);
  std::vector<std::byte> out(static_cast<size_t>(w.row_bytes));
  REQUIRE_THROWS_WITH(unpack_q4k_lanes16_rows(packed.tensor, 16, 1, out.data()), Catch::Contains("outside"));
}
