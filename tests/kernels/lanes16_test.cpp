// Q4_0, Q4_1, Q8_0, IQ4_NL, Q5_0 and Q5_1 in their 16-row lane layouts
// (kernels/cpu/q4_lanes16.h, q5_lanes16.h, q8_lanes16.h): packing and unpacking give back the file's bytes; matmul
// over a packed matrix gives the same bits as over its rows for every
// variant (those that do not read a layout unpack it), token count (1
// token, small batches, GEMM order, AMX's groups of 16), thread count and
// tile remainder, and matches a float64 reference on fresh random data;
// the dtype-keyed entry points (lanes16.h) reach each layout's functions.
#include "kernels/cpu/lanes16.h"
#include "kernels/cpu/q4_lanes16.h"
#include "kernels/cpu/q5_lanes16.h"
#include "kernels/cpu/q8_lanes16.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/quantize.h"
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

// The layouts' functions, by the dtype they hold.
struct Layout {
  DType dtype;
  WeightLayout layout;
  int64_t tile_block_bytes;  // a block of 16 rows: qs and f16 scales
  void (*unpack)(const Tensor& packed, int64_t r0, int64_t n, std::byte* out);
  const char* name;
};
const Layout kLayouts[] = {
    {DType::Q4_0, WeightLayout::Q4_0Lanes16, 288, unpack_q4_lanes16_rows, "q4_0"},
    {DType::Q4_1, WeightLayout::Q4_1Lanes16, 320, unpack_q4_lanes16_rows, "q4_1"},
    {DType::Q8_0, WeightLayout::Q8_0Lanes16, 544, unpack_q8_lanes16_rows, "q8_0"},
    {DType::IQ4_NL, WeightLayout::IQ4_NLLanes16, 288, unpack_q4_lanes16_rows, "iq4_nl"},
    {DType::Q5_0, WeightLayout::Q5_0Lanes16, 352, unpack_q5_lanes16_rows, "q5_0"},
    {DType::Q5_1, WeightLayout::Q5_1Lanes16, 384, unpack_q5_lanes16_rows, "q5_1"},
};

// w (rows of one of kLayouts' dtypes) packed, its size checked against the
// layout's tiles.
PackedLanes16 pack_checked(const Layout& l, const Weights& w, ThreadPool* pool = nullptr) {
  CHECK(lanes16_bytes(l.dtype, w.n_cols, w.n_rows) ==
        (w.n_rows / 16 * ((w.n_cols / 32 * l.tile_block_bytes + 63) / 64 * 64)) + w.n_rows % 16 * w.row_bytes);
  return PackedLanes16(w, pool);
}

}  // namespace

TEST_CASE("lanes16: packing keeps every byte (unpack gives back the rows)", "[kernels][lanes16]") {
  ThreadPool pool(2);
  uint64_t seed = 900;
  for (const Layout& l : kLayouts) {
    for (int64_t n_rows : {16, 37, 5, 48}) {
      for (int64_t n_cols : {32, 96, 43 * 32, 4096}) {
        INFO(l.name << " n_rows " << n_rows << " n_cols " << n_cols);
        const Weights w = make_weights(l.dtype, n_cols, n_rows, seed++);
        const auto p = pack_checked(l, w, &pool);
        REQUIRE(p.tensor.layout == l.layout);
        REQUIRE(p.tensor.row_bytes == w.row_bytes);
        std::vector<std::byte> rows(w.bytes.size(), std::byte{0});
        l.unpack(p.tensor, 0, n_rows, rows.data());
        REQUIRE(rows == w.bytes);
        // A few rows on their own, tiled and not.
        for (int64_t r : {int64_t{0}, n_rows / 2, n_rows - 1}) {
          std::vector<std::byte> one(static_cast<size_t>(w.row_bytes));
          l.unpack(p.tensor, r, 1, one.data());
          REQUIRE(std::memcmp(one.data(), w.bytes.data() + r * w.row_bytes, one.size()) == 0);
        }
      }
    }
  }
}

TEST_CASE("Q8_0 lanes16: a tile holds the weights as unsigned bytes w + 128, step by step", "[kernels][lanes16]") {
  // The layout the kernels read (q8_lanes16.h), checked byte by byte: block
  // b, step s, row j at 512 b + 64 s + 4 j; the scales after all blocks.
  const int64_t n_cols = 96, nb = 3;
  const Weights w = make_weights(DType::Q8_0, n_cols, 16, 950);
  const auto p = pack_checked(kLayouts[2], w);
  const auto* tile = static_cast<const uint8_t*>(p.tensor.data);
  for (int64_t j = 0; j < 16; ++j) {
    const auto* blocks = reinterpret_cast<const BlockQ8_0*>(w.bytes.data() + j * w.row_bytes);
    for (int64_t b = 0; b < nb; ++b) {
      uint16_t d;
      std::memcpy(&d, tile + 512 * nb + 32 * b + 2 * j, 2);
      REQUIRE(d == blocks[b].d);
      for (int64_t e = 0; e < 32; ++e) {
        INFO("row " << j << " block " << b << " element " << e);
        REQUIRE(tile[512 * b + 64 * (e / 4) + 4 * j + e % 4] == static_cast<uint8_t>(blocks[b].qs[e] + 128));
      }
    }
  }
}

TEST_CASE("Q5_0 and Q5_1 lanes16: a tile holds each step's nibbles and its fifth bits a shift away",
          "[kernels][lanes16]") {
  // The layout the AVX2 kernel reads (q5_lanes16.h), checked element by
  // element: block b at 320 b, step s's nibbles of row j at 64 (s % 4) + 4 j
  // (low nibbles for s < 4), the fifth bits of row j's step s in bit s of
  // the 4 bytes at 256 + 4 j; then the scales (and Q5_1's minimums).
  for (const Layout& l : kLayouts) {
    if (l.dtype != DType::Q5_0 && l.dtype != DType::Q5_1) continue;
    const int64_t n_cols = 96, nb = 3;
    const Weights w = make_weights(l.dtype, n_cols, 16, 960);
    const auto p = pack_checked(l, w);
    const auto* tile = static_cast<const uint8_t*>(p.tensor.data);
    const bool q5_1 = l.dtype == DType::Q5_1;
    for (int64_t j = 0; j < 16; ++j) {
      const std::byte* row = w.bytes.data() + j * w.row_bytes;
      for (int64_t b = 0; b < nb; ++b) {
        const std::byte* blk = row + b * (q5_1 ? 24 : 22);
        uint16_t d, d_tile;
        std::memcpy(&d, blk, 2);
        std::memcpy(&d_tile, tile + 320 * nb + 32 * b + 2 * j, 2);
        REQUIRE(d_tile == d);
        if (q5_1) {
          uint16_t m, m_tile;
          std::memcpy(&m, blk + 2, 2);
          std::memcpy(&m_tile, tile + 352 * nb + 32 * b + 2 * j, 2);
          REQUIRE(m_tile == m);
        }
        uint32_t qh;
        std::memcpy(&qh, blk + (q5_1 ? 4 : 2), 4);
        const auto* qs = reinterpret_cast<const uint8_t*>(blk + (q5_1 ? 8 : 6));
        for (int64_t e = 0; e < 32; ++e) {
          INFO(l.name << " row " << j << " block " << b << " element " << e);
          const int64_t s = e / 4, k = e % 4;  // the step and byte that hold element e
          const uint8_t line = tile[320 * b + 64 * (s % 4) + 4 * j + k];
          const int nibble = s < 4 ? line & 0x0f : line >> 4;
          const int fifth = (tile[320 * b + 256 + 4 * j + k] >> s) & 1;
          const int want_nibble = e < 16 ? qs[e] & 0x0f : qs[e - 16] >> 4;
          REQUIRE(nibble == want_nibble);
          REQUIRE(fifth == static_cast<int>((qh >> e) & 1));
        }
      }
    }
  }
  for (uint32_t qh : {0u, 1u, 0x80000000u, 0xdeadbeefu, 0x12345678u}) {
    REQUIRE(q5_lanes16_gather_qh(q5_lanes16_spread_qh(qh)) == qh);
  }
}

TEST_CASE("lanes16: matmul gives the row layout's bits for every variant, batch and thread count",
          "[kernels][lanes16][matmul]") {
  ThreadPool pools[] = {ThreadPool(1), ThreadPool(3)};
  uint64_t seed = 1000;
  // n_out: tiles only (two pairs of tiles from 4 tokens on), a pair + a
  // tail, a pair + a lone tile + a tail, a tail only; n_in: one block, a
  // partial chunk, 20 blocks (two whole units and a partial one in one
  // chunk), 43 blocks (a lone last block), several chunks; 17 tokens: a
  // group of 16 on AMX tiles and one left over.
  for (const Layout& l : kLayouts) {
    for (int64_t n_out : {64, 37, 53, 5}) {
      for (int64_t n_in : {32, 96, 20 * 32, 43 * 32, 2048}) {
        const Weights w = make_weights(l.dtype, n_in, n_out, seed++);
        const auto packed = pack_checked(l, w);
        for (int64_t n_tokens : {1, 2, 3, 5, 8, 9, 17}) {
          const auto x = tc::test::random_floats(static_cast<size_t>(n_tokens * n_in), seed++);
          for (const auto* isa : tc::test::matmul_variants("lanes16")) {
            for (ThreadPool& pool : pools) {
              INFO(l.name << " " << isa->name << " n_in " << n_in << " n_out " << n_out << " n_tokens " << n_tokens
                          << " threads " << pool.n_threads());
              REQUIRE(run_matmul(*isa, packed.tensor, x, n_tokens, &pool) ==
                      run_matmul(*isa, w.tensor(), x, n_tokens, &pool));
            }
          }
        }
      }
    }
  }
}

TEST_CASE("lanes16: GEMM order (many tokens) gives the row layout's bits and the reference's values",
          "[kernels][lanes16][matmul]") {
  ThreadPool pool(2);
  for (const Layout& l : kLayouts) {
    INFO(l.name);
    // 160 tokens x 4096 inputs: GEMM order, in two blocks of tokens (the last
    // one shorter).
    const int64_t n_in = 4096, n_out = 40, n_tokens = 160;
    const Weights w = make_weights(l.dtype, n_in, n_out, 1100);
    const auto packed = pack_checked(l, w, &pool);
    const auto x = tc::test::random_floats(static_cast<size_t>(n_tokens * n_in), 1101);
    const auto rows = run_matmul(detail::chosen_isa(), w.tensor(), x, n_tokens, &pool);
    const auto lanes = run_matmul(detail::chosen_isa(), packed.tensor, x, n_tokens, &pool);
    REQUIRE(lanes == rows);
    // Every variant's tiles (amx: AMX tiles for each 16 tokens), AVX2's rows'
    // bits: with a partial last chunk of an odd count (a lone last block),
    // 40 rows (two tiles and a row-layout tail), 160, 125 and 40 tokens
    // (groups of 16 and 13 or 8 left over; 40 in GEMV order).
    if (detail::isa_supported("avx2")) {
      for (int64_t n_in_v : {n_in, int64_t{43 * 32}}) {
        const Weights wv = make_weights(l.dtype, n_in_v, n_out, 1102 + n_in_v);
        const auto packed_v = pack_checked(l, wv, &pool);
        for (int64_t n_tok : {n_tokens, int64_t{125}, int64_t{40}}) {
          const auto xv = tc::test::random_floats(static_cast<size_t>(n_tok * n_in_v), 1103 + n_tok);
          const auto want = run_matmul(*detail::isa_avx2(), wv.tensor(), xv, n_tok, &pool);
          for (const auto* isa : tc::test::matmul_variants("lanes16")) {
            if (isa == &detail::isa_portable()) continue;
            INFO(isa->name << " n_in " << n_in_v << " n_tokens " << n_tok);
            REQUIRE(run_matmul(*isa, packed_v.tensor, xv, n_tok, &pool) == want);
          }
        }
      }
    }
    // Against float64 over the dequantized weights: the int8 activations
    // cost at most half a step of each block's scale per input.
    for (int64_t t = 0; t < n_tokens; ++t) {
      for (int64_t r = 0; r < n_out; ++r) {
        double want = 0, bound = 0;
        for (int64_t i = 0; i < n_in; ++i) {
          const double xi = x[static_cast<size_t>(t * n_in + i)];
          want += w.at(r, i) * xi;
          bound += std::fabs(w.at(r, i)) * (std::fabs(xi) * 1e-5);
        }
        for (int64_t b = 0; b < n_in / 32; ++b) {
          double amax = 0, wsum = 0;
          for (int64_t i = 32 * b; i < 32 * b + 32; ++i) {
            amax = std::fmax(amax, std::fabs(x[static_cast<size_t>(t * n_in + i)]));
            wsum += std::fabs(w.at(r, i));
          }
          bound += wsum * amax / 127 / 2;
        }
        INFO("token " << t << " row " << r);
        REQUIRE(std::fabs(lanes[static_cast<size_t>(t * n_out + r)] - want) <= bound * 1.01 + 1e-6);
      }
    }
  }
}

TEST_CASE("Q8_0 lanes16: int8 extremes give the rows' bits and exact sums", "[kernels][lanes16][matmul]") {
  // -128 and 127 against activations at +-127 (every block's largest input
  // is its scale, so x quantizes to +-127 throughout): AVX2 multiplies |w|
  // by x with w's sign in int16 pairs, up to 2 x 128 x 127, and the tiles
  // store w + 128, 0 for -128. Every variant against its rows, the x86 ones
  // against each other (the same bits), and float64.
  const int64_t n_in = 20 * 32, n_out = 37, n_tokens = 5;
  Weights w = make_weights(DType::Q8_0, n_in, n_out, 1300);
  for (int64_t r = 0; r < n_out; ++r) {
    auto* blocks = reinterpret_cast<BlockQ8_0*>(w.bytes.data() + r * w.row_bytes);
    for (int64_t b = 0; b < n_in / 32; ++b) {
      for (int64_t e = 0; e < 32; ++e) {
        const int8_t q = (r + b + e / 2) % 3 == 0 ? int8_t{-128} : (r + e) % 3 == 1 ? int8_t{127} : blocks[b].qs[e];
        blocks[b].qs[e] = q;
        w.values[static_cast<size_t>(r * n_in + 32 * b + e)] = double(f16_to_f32(blocks[b].d)) * q;
      }
    }
  }
  const auto packed = pack_checked(kLayouts[2], w);
  std::vector<float> x(static_cast<size_t>(n_tokens * n_in));
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i / 2 + i / 64) % 2 == 0 ? 1.0f : -1.0f;
  ThreadPool pool(2);
  const auto want = run_matmul(detail::chosen_isa(), w.tensor(), x, n_tokens, &pool);
  for (const auto* isa : tc::test::matmul_variants("lanes16")) {
    for (int64_t tokens : {int64_t{1}, int64_t{2}, n_tokens}) {
      INFO(isa->name << " n_tokens " << tokens);
      const std::vector<float> xt(x.begin(), x.begin() + tokens * n_in);
      const auto rows = run_matmul(*isa, w.tensor(), xt, tokens, &pool);
      REQUIRE(run_matmul(*isa, packed.tensor, xt, tokens, &pool) == rows);
      if (isa != &detail::isa_portable()) REQUIRE(std::equal(rows.begin(), rows.end(), want.begin()));
    }
  }
  // x is exactly +-1 (d = 1/127, q = +-127), so each block sum is exact and
  // only the float steps round.
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t r = 0; r < n_out; ++r) {
      double ref = 0, mag = 0;
      for (int64_t i = 0; i < n_in; ++i) {
        ref += w.at(r, i) * x[static_cast<size_t>(t * n_in + i)];
        mag += std::fabs(w.at(r, i));
      }
      INFO("token " << t << " row " << r);
      REQUIRE(std::fabs(want[static_cast<size_t>(t * n_out + r)] - ref) <= mag * 1e-5);
    }
  }
}

TEST_CASE("lanes16: bad input is refused with a message", "[kernels][lanes16]") {
  const Weights q8 = make_weights(DType::Q8_0, 64, 16, 1200);
  std::vector<std::byte> dst(static_cast<size_t>(lanes16_bytes(DType::Q4_0, 64, 16)) + 64);
  REQUIRE_THROWS_WITH(pack_q4_lanes16(q8.tensor(), dst.data(), nullptr),
                      Catch::Contains("not a Q4_0, Q4_1 or IQ4_NL matrix"));
  std::vector<std::byte> dst8(static_cast<size_t>(lanes16_bytes(DType::Q8_0, 64, 16)) + 64);
  REQUIRE_THROWS_WITH(pack_q8_lanes16(make_weights(DType::Q4_0, 64, 16, 1202).tensor(), dst8.data(), nullptr),
                      Catch::Contains("not a Q8_0 matrix"));
  const Weights w = make_weights(DType::Q4_0, 64, 16, 1201);
  const auto packed = pack_checked(kLayouts[0], w);
  std::vector<float> y(16);
  const int32_t rows[1] = {0};
  REQUIRE_THROWS_WITH(detail::matmul_rows_with(detail::chosen_isa(), packed.tensor, y.data(), 1, rows, 1, y.data(),
                                               nullptr),
                      Catch::Contains("row layout"));
}

TEST_CASE("lanes16: the dtype-keyed entry points reach each layout's own functions", "[kernels][lanes16]") {
  const std::pair<DType, WeightLayout> layouts[] = {{DType::Q4_0, WeightLayout::Q4_0Lanes16},
                                                    {DType::Q4_1, WeightLayout::Q4_1Lanes16},
                                                    {DType::Q8_0, WeightLayout::Q8_0Lanes16},
                                                    {DType::Q3_K, WeightLayout::Q3_KLanes16},
                                                    {DType::Q4_K, WeightLayout::Q4_KLanes16},
                                                    {DType::Q5_K, WeightLayout::Q5_KLanes16},
                                                    {DType::Q6_K, WeightLayout::Q6_KLanes16},
                                                    {DType::IQ4_XS, WeightLayout::IQ4_XSLanes16},
                                                    {DType::IQ4_NL, WeightLayout::IQ4_NLLanes16},
                                                    {DType::Q5_0, WeightLayout::Q5_0Lanes16},
                                                    {DType::Q5_1, WeightLayout::Q5_1Lanes16}};
  for (const auto& [dtype, layout] : layouts) {
    INFO(dtype_name(dtype));
    const int64_t n_cols = 512, n_rows = 37;
    REQUIRE(has_lanes16(dtype));
    REQUIRE(lanes16_layout(dtype) == layout);
    const Weights w = make_weights(dtype, n_cols, n_rows, 1400);
    std::vector<std::byte> storage(static_cast<size_t>(lanes16_bytes(dtype, n_cols, n_rows)) + 64);
    auto* dst = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64;
    const Tensor packed = pack_lanes16(w.tensor(), dst, nullptr);
    REQUIRE(packed.layout == layout);
    REQUIRE(lanes16_tile_bytes(dtype, n_cols) * 2 + 5 * w.row_bytes == lanes16_bytes(dtype, n_cols, n_rows));
    std::vector<std::byte> rows(w.bytes.size());
    unpack_lanes16_rows(packed, 0, n_rows, rows.data());
    REQUIRE(rows == w.bytes);
  }
  REQUIRE_FALSE(has_lanes16(DType::F16));
  REQUIRE_FALSE(lanes16_wanted(DType::F16, CpuRepack::Auto));
  REQUIRE_FALSE(lanes16_wanted(DType::Q4_K, CpuRepack::Off));
  REQUIRE_THROWS_WITH(lanes16_layout(DType::Q2_K), Catch::Contains("no lane layout"));
  REQUIRE_THROWS_WITH(lanes16_bytes(DType::F16, 64, 16), Catch::Contains("no lane layout"));
  std::vector<std::byte> dst(4096 + 64);
  REQUIRE_THROWS(pack_lanes16(make_weights(DType::F16, 64, 16, 1401).tensor(), dst.data(), nullptr));
}
