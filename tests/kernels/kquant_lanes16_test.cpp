// The K-quants' and IQ4_XS's 16-row lane layouts (kernels/cpu/q3k_lanes16.h,
// q4k_lanes16.h, q5k_lanes16.h, q6k_lanes16.h, iq4xs_lanes16.h; packed by
// kquant_lanes16.h): packing keeps
// every byte in the documented places; matmul over a packed matrix gives the same bits as over its rows
// for every variant (those that do not read the layouts unpack them), token
// count (1 token, a few, the unpack-once small batches, GEMM order), thread
// count, partial chunk and tile remainder, including each kernel's int16
// worst case; every part of a tile is read; and the results match a float64
// reference on fresh random data.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/kquant_lanes16.h"
#include "kernels/cpu/lanes16.h"
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
using tc::test::superblock_reference;
using tc::test::Weights;

constexpr DType kTypes[] = {DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_XS};

// A matrix packed: the file's bytes, rearranged.
PackedLanes16 pack(const Weights& w, ThreadPool* pool = nullptr) {
  CHECK(lanes16_bytes(w.dtype, w.n_cols, w.n_rows) == w.n_rows * row_bytes(w.dtype, w.n_cols));
  return PackedLanes16(w, pool);
}

// Where the layouts put a super-block's parts, written out here as the
// headers describe them (row j's 4 bytes of a step at 4 j of its line).
int64_t q3k_qs(int64_t n, int64_t k) { return n == 0 ? 224 + 128 * k : 1248 + 64 * k; }
int64_t q3k_hmask(int64_t k) { return 224 + 128 * k + 64; }
int64_t q4k_qs(int64_t p, int64_t k) { return 256 + 64 * (8 * p + k); }
int64_t q5k_qs(int64_t p, int64_t k) { return p == 0 ? 256 + 128 * k : 1280 + 512 * (p - 1) + 64 * k; }
int64_t q5k_qh(int64_t k) { return 256 + 128 * k + 64; }
int64_t q6k_ql(int64_t n, int64_t g, int64_t k) { return 288 + 1536 * n + (g == 0 ? 128 * k : 1024 + 64 * k); }
int64_t q6k_qh(int64_t n, int64_t k) { return 288 + 1536 * n + 128 * k + 64; }
int64_t iq4xs_qs(int64_t i, int64_t k) { return 128 + 64 * (4 * i + k); }

// Each type's levels at their largest (against activations of one sign at
// +-127, the largest int16 pair sums its kernel forms: Q3_K 4 x 2 x 7 x 127
// = 7112, Q4_K 8 x 2 x 15 x 127 = 30480, Q5_K 4 x 2 x 31 x 127 = 31496,
// Q6_K 2 x 2 x 63 x 127 = 32004, IQ4_XS 2 x 127 x 127 = 32258), and its
// scales at their extremes in every other block.
void saturate(DType dtype, void* block, bool extreme_scales) {
  if (dtype == DType::IQ4_XS) {
    auto* b = static_cast<BlockIQ4_XS*>(block);
    std::memset(b->qs, 0x00, sizeof b->qs);  // nibble 0: level -127
    // Scales 63 - 32 = 31 (all bits set) or -32 (none).
    std::memset(b->scales_l, extreme_scales ? 0xff : 0x00, sizeof b->scales_l);
    b->scales_h = extreme_scales ? 0xffff : 0x0000;
    return;
  }
  if (dtype == DType::Q3_K) {
    auto* b = static_cast<BlockQ3_K*>(block);
    std::memset(b->qs, 0xff, sizeof b->qs);
    std::memset(b->hmask, 0xff, sizeof b->hmask);
    // Scales 31 (all bits set) or -32 (none).
    std::memset(b->scales, extreme_scales ? 0xff : 0x00, sizeof b->scales);
    return;
  }
  if (dtype == DType::Q6_K) {
    auto* b = static_cast<BlockQ6_K*>(block);
    std::memset(b->ql, 0xff, sizeof b->ql);
    std::memset(b->qh, 0xff, sizeof b->qh);
    for (int i = 0; i < 16; ++i) b->scales[i] = static_cast<int8_t>(extreme_scales == (i % 2 == 0) ? 127 : -128);
    return;
  }
  uint8_t* qs = dtype == DType::Q4_K ? static_cast<BlockQ4_K*>(block)->qs : static_cast<BlockQ5_K*>(block)->qs;
  uint8_t* scales =
      dtype == DType::Q4_K ? static_cast<BlockQ4_K*>(block)->scales : static_cast<BlockQ5_K*>(block)->scales;
  std::memset(qs, 0xff, kQK_K / 2);
  if (dtype == DType::Q5_K) std::memset(static_cast<BlockQ5_K*>(block)->qh, 0xff, kQK_K / 8);
  if (extreme_scales) std::memset(scales, 0xff, 12);  // scales and mins 63
}

// Bytes of one row's part of a tile: a low and a high nibble of the
// quants, fifth or high bits, scales, d (and dmin), in super-blocks 0 and 1.
std::vector<int64_t> one_row_offsets(DType dtype, int64_t row) {
  const int64_t sb = dtype == DType::Q3_K     ? 1760
                     : dtype == DType::Q4_K   ? 2304
                     : dtype == DType::Q5_K   ? 2816
                     : dtype == DType::IQ4_XS ? 2176
                                              : 3360;
  const int64_t r = 4 * row;
  switch (dtype) {
    case DType::Q3_K:
      return {q3k_qs(0, 2) + r,    sb + q3k_qs(1, 7) + r + 3, q3k_hmask(5) + r + 1, sb + q3k_hmask(0) + r + 2,
              16 * 3 + row,        sb + 16 * 11 + row,        192 + 2 * row + 1};
    case DType::Q4_K:
      return {q4k_qs(1, 1) + r, sb + q4k_qs(3, 7) + r + 3, 16 * 3 + row, sb + 16 * 11 + row, 192 + 2 * row + 1,
              sb + 224 + 2 * row + 1};
    case DType::IQ4_XS:
      return {iq4xs_qs(2, 1) + r, sb + iq4xs_qs(7, 3) + r + 3, 16 * 2 + row,         sb + 16 * 3 + row,
              64 + 2 * row,       sb + 64 + 2 * row + 1,       96 + 2 * row + 1};
    case DType::Q5_K:
      return {q5k_qs(0, 3) + r,     sb + q5k_qs(3, 7) + r + 3, q5k_qh(5) + r + 1, sb + q5k_qh(0) + r + 2,
              16 * 3 + row,         sb + 16 * 11 + row,        192 + 2 * row + 1, sb + 224 + 2 * row + 1};
    default:
      return {q6k_ql(0, 0, 3) + r,  sb + q6k_ql(1, 1, 7) + r + 3, q6k_qh(0, 6) + r + 1, sb + q6k_qh(1, 2) + r + 2,
              16 * 3 + row,         sb + 16 * 15 + row,           256 + 2 * row + 1};
  }
}

}  // namespace

TEST_CASE("K-quant lanes16: packing keeps every byte (unpack gives back the rows)", "[kernels][lanes16]") {
  ThreadPool pool(2);
  uint64_t seed = 2000;
  for (DType dtype : kTypes) {
    for (int64_t n_rows : {16, 37, 5, 48}) {
      for (int64_t n_cols : {256, 5 * 256, 4096}) {
        INFO(dtype_name(dtype) << " n_rows " << n_rows << " n_cols " << n_cols);
        const Weights w = make_weights(dtype, n_cols, n_rows, seed++);
        const auto p = pack(w, &pool);
        REQUIRE(p.tensor.layout == lanes16_layout(dtype));
        REQUIRE(p.tensor.row_bytes == w.row_bytes);
        std::vector<std::byte> rows(w.bytes.size(), std::byte{0});
        unpack_lanes16_rows(p.tensor, 0, n_rows, rows.data());
        REQUIRE(rows == w.bytes);
        for (int64_t r : {int64_t{0}, n_rows / 2, n_rows - 1}) {
          std::vector<std::byte> one(static_cast<size_t>(w.row_bytes));
          unpack_lanes16_rows(p.tensor, r, 1, one.data());
          REQUIRE(std::memcmp(one.data(), w.bytes.data() + r * w.row_bytes, one.size()) == 0);
        }
      }
    }
  }
}

TEST_CASE("K-quant lanes16: a tile's bytes lie where the headers say", "[kernels][lanes16]") {
  // Super-block s of a tile at s times 16 blocks' bytes; its scale byte i of
  // row j at 16 i + j (Q3_K, Q4_K, Q5_K: 12 packed bytes; Q6_K: 16 int8;
  // IQ4_XS: 4 bytes of scales_l, then scales_h at 64 + 2 j), d at 192 + 2 j
  // (Q6_K: 256 + 2 j; IQ4_XS: 96 + 2 j), dmin at 224 + 2 j; the quants'
  // lines above.
  const int64_t n_cols = 2 * kQK_K;
  for (DType dtype : kTypes) {
    const Weights w = make_weights(dtype, n_cols, 16, 2100);
    const auto p = pack(w);
    const auto* tile = static_cast<const uint8_t*>(p.tensor.data);
    const int64_t block = row_bytes(dtype, kQK_K);
    for (int64_t j = 0; j < 16; ++j) {
      for (int64_t s = 0; s < 2; ++s) {
        INFO(dtype_name(dtype) << " row " << j << " super-block " << s);
        const uint8_t* sb = tile + 16 * block * s;
        const auto* row = reinterpret_cast<const uint8_t*>(w.bytes.data() + j * w.row_bytes + s * block);
        auto d_at = [&](int64_t at) {
          uint16_t d;
          std::memcpy(&d, sb + at, 2);
          return d;
        };
        if (dtype == DType::Q3_K) {
          const auto* b = reinterpret_cast<const BlockQ3_K*>(row);
          REQUIRE(d_at(192 + 2 * j) == b->d);
          for (int64_t i = 0; i < 12; ++i) REQUIRE(sb[16 * i + j] == b->scales[i]);
          for (int64_t l = 0; l < 32; ++l) {
            const int64_t k = l / 4, at = 4 * j + l % 4;
            REQUIRE(sb[q3k_qs(0, k) + at] == b->qs[l]);
            REQUIRE(sb[q3k_qs(1, k) + at] == b->qs[32 + l]);
            REQUIRE(sb[q3k_hmask(k) + at] == b->hmask[l]);
          }
          continue;
        }
        if (dtype == DType::IQ4_XS) {
          const auto* b = reinterpret_cast<const BlockIQ4_XS*>(row);
          REQUIRE(d_at(96 + 2 * j) == b->d);
          REQUIRE(d_at(64 + 2 * j) == b->scales_h);
          for (int64_t i = 0; i < 4; ++i) REQUIRE(sb[16 * i + j] == b->scales_l[i]);
          for (int64_t q = 0; q < 128; ++q) REQUIRE(sb[iq4xs_qs(q / 16, q % 16 / 4) + 4 * j + q % 4] == b->qs[q]);
          continue;
        }
        if (dtype == DType::Q6_K) {
          const auto* b = reinterpret_cast<const BlockQ6_K*>(row);
          REQUIRE(d_at(256 + 2 * j) == b->d);
          for (int64_t i = 0; i < 16; ++i) REQUIRE(static_cast<int8_t>(sb[16 * i + j]) == b->scales[i]);
          for (int64_t n = 0; n < 2; ++n) {
            for (int64_t l = 0; l < 32; ++l) {
              const int64_t k = l / 4, at = 4 * j + l % 4;
              REQUIRE(sb[q6k_ql(n, 0, k) + at] == b->ql[64 * n + l]);
              REQUIRE(sb[q6k_ql(n, 1, k) + at] == b->ql[64 * n + 32 + l]);
              REQUIRE(sb[q6k_qh(n, k) + at] == b->qh[32 * n + l]);
            }
          }
          continue;
        }
        // Q4_K and Q5_K share d, dmin and scales at their blocks' starts.
        const auto* b = reinterpret_cast<const BlockQ4_K*>(row);
        REQUIRE(d_at(192 + 2 * j) == b->d);
        REQUIRE(d_at(224 + 2 * j) == b->dmin);
        for (int64_t i = 0; i < 12; ++i) REQUIRE(sb[16 * i + j] == b->scales[i]);
        const uint8_t* qs = dtype == DType::Q4_K ? b->qs : reinterpret_cast<const BlockQ5_K*>(row)->qs;
        for (int64_t q = 0; q < 128; ++q) {
          const int64_t line = dtype == DType::Q4_K ? q4k_qs(q / 32, q % 32 / 4) : q5k_qs(q / 32, q % 32 / 4);
          REQUIRE(sb[line + 4 * j + q % 4] == qs[q]);
        }
        if (dtype == DType::Q5_K) {
          const auto* b5 = reinterpret_cast<const BlockQ5_K*>(row);
          for (int64_t l = 0; l < 32; ++l) REQUIRE(sb[q5k_qh(l / 4) + 4 * j + l % 4] == b5->qh[l]);
        }
      }
    }
  }
}

TEST_CASE("K-quant lanes16: matmul gives the row layout's bits for every variant, batch and thread count",
          "[kernels][lanes16][matmul]") {
  ThreadPool pools[] = {ThreadPool(1), ThreadPool(3)};
  uint64_t seed = 2200;
  // n_out: tiles only, a tile + a tail, tiles + a tail, a tail only; n_in:
  // one super-block, 5 (a partial second chunk), 9, 16. Tokens: one (both
  // halves per pass), 2-4 (one pass per half), 5-17 (several passes; Q3_K,
  // Q5_K, Q6_K and IQ4_XS unpack each half's chunk once from 5 tokens on,
  // Q4_K from 16); 40: amx unpacks the tiles for 32 tokens on its AMX tiles
  // and reads them for the last 8.
  for (DType dtype : kTypes) {
    for (int64_t n_out : {64, 37, 53, 5}) {
      for (int64_t n_in : {kQK_K, 5 * kQK_K, 9 * kQK_K, 16 * kQK_K}) {
        const Weights w = make_weights(dtype, n_in, n_out, seed++);
        const auto packed = pack(w);
        for (int64_t n_tokens : {1, 2, 3, 4, 5, 8, 9, 17, 40}) {
          INFO(dtype_name(dtype));
          tc::test::require_rows_bits(w, packed, n_tokens, seed++, pools);
        }
      }
    }
  }
}

TEST_CASE("K-quant lanes16: GEMM order gives the rows' bits and the reference's values",
          "[kernels][lanes16][matmul]") {
  // 160 tokens x 4096 inputs: GEMM order, in two blocks of tokens (the last
  // one shorter); 9 super-blocks: a partial last chunk.
  ThreadPool pool(2);
  const int64_t n_out = 40;
  for (DType dtype : kTypes) {
    for (int64_t n_in : {int64_t{4096}, 9 * kQK_K}) {
      for (int64_t n_tokens : {160, 125}) {
        INFO(dtype_name(dtype) << " n_in " << n_in << " n_tokens " << n_tokens);
        const Weights w = make_weights(dtype, n_in, n_out, 2300 + n_in);
        const auto packed = pack(w, &pool);
        const auto x = tc::test::random_floats(static_cast<size_t>(n_tokens * n_in), 2301 + n_tokens);
        const auto lanes = run_matmul(detail::chosen_isa(), packed.tensor, x, n_tokens, &pool);
        REQUIRE(lanes == run_matmul(detail::chosen_isa(), w.tensor(), x, n_tokens, &pool));
        for (int64_t t = 0; t < n_tokens; ++t) {
          for (int64_t r = 0; r < n_out; ++r) {
            double want, bound;
            superblock_reference(w, x, t, r, want, bound);
            INFO("token " << t << " row " << r);
            REQUIRE(std::fabs(lanes[static_cast<size_t>(t * n_out + r)] - want) <= bound * 1.01 + 1e-6);
          }
        }
      }
    }
  }
}

TEST_CASE("K-quant lanes16: the largest levels and scales give the rows' bits", "[kernels][lanes16][matmul]") {
  const int64_t n_in = 5 * kQK_K, n_out = 37;
  ThreadPool pool(2);
  for (DType dtype : kTypes) {
    Weights w = make_weights(dtype, n_in, n_out, 2400);
    const int64_t block = row_bytes(dtype, kQK_K);
    for (int64_t r = 0; r < n_out; ++r) {
      for (int64_t b = 0; b < n_in / kQK_K; ++b) {
        std::byte* blk = w.bytes.data() + r * w.row_bytes + b * block;
        saturate(dtype, blk, (r + b) % 2 == 0);
        std::vector<float> deq(kQK_K);
        dequantize_row(dtype, blk, deq.data(), kQK_K);
        for (int64_t i = 0; i < kQK_K; ++i) w.values[static_cast<size_t>(r * n_in + kQK_K * b + i)] = deq[i];
      }
    }
    const auto packed = pack(w);
    for (float sign : {1.0f, -1.0f}) {
      for (int64_t n_tokens : {1, 2, 4, 5, 16}) {
        const std::vector<float> x(static_cast<size_t>(n_tokens * n_in), sign);
        for (const auto* isa : tc::test::matmul_variants("lanes16")) {
          INFO(dtype_name(dtype) << " " << isa->name << " sign " << sign << " n_tokens " << n_tokens);
          const auto lanes = run_matmul(*isa, packed.tensor, x, n_tokens, &pool);
          REQUIRE(lanes == run_matmul(*isa, w.tensor(), x, n_tokens, &pool));
          for (int64_t t = 0; t < n_tokens; ++t) {
            for (int64_t r = 0; r < n_out; ++r) {
              double want, bound;
              superblock_reference(w, x, t, r, want, bound);
              REQUIRE(std::fabs(lanes[static_cast<size_t>(t * n_out + r)] - want) <= bound * 1.01 + 1e-6);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("K-quant lanes16: the kernels read every part of a tile", "[kernels][lanes16][matmul]") {
  // Changing one byte of one row's part of the packed copy changes that
  // row's output and no other, for one token and for 6 and 16 (each half's
  // chunk unpacked once).
  const int64_t n_in = 2 * kQK_K, n_out = 16, row = 5;
  for (DType dtype : kTypes) {
    const Weights w = make_weights(dtype, n_in, n_out, 2500);
    for (int64_t n_tokens : {1, 6, 16}) {
      // No activation near 0 (its int8 form would be 0 and hide a level's change).
      std::vector<float> x(static_cast<size_t>(n_tokens * n_in));
      for (size_t i = 0; i < x.size(); ++i) {
        x[i] = (i % 3 == 0 ? -1.0f : 1.0f) * (1.0f + 0.1f * static_cast<float>(i * 7 % 5));
      }
      for (int64_t offset : one_row_offsets(dtype, row)) {
        auto packed = pack(w);
        const auto before = run_matmul(detail::chosen_isa(), packed.tensor, x, n_tokens, nullptr);
        static_cast<uint8_t*>(packed.tensor.data)[offset] ^= 0x21;
        const auto after = run_matmul(detail::chosen_isa(), packed.tensor, x, n_tokens, nullptr);
        INFO(dtype_name(dtype) << " byte " << offset << " n_tokens " << n_tokens);
        for (int64_t t = 0; t < n_tokens; ++t) {
          for (int64_t r = 0; r < n_out; ++r) {
            const auto i = static_cast<size_t>(t * n_out + r);
            if (r == row) {
              REQUIRE(after[i] != before[i]);
            } else {
              REQUIRE(after[i] == before[i]);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("K-quant lanes16: bad input is refused with a message", "[kernels][lanes16]") {
  for (DType dtype : kTypes) {
    INFO(dtype_name(dtype));
    std::vector<std::byte> dst(static_cast<size_t>(lanes16_bytes(dtype, 256, 16)) + 64);
    auto* aligned = dst.data() + (64 - reinterpret_cast<uintptr_t>(dst.data()) % 64) % 64;
    REQUIRE_THROWS_WITH(pack_kquant_lanes16(make_weights(DType::Q8_0, 256, 16, 2600).tensor(), aligned, nullptr),
                        Catch::Contains("not a") && Catch::Contains("matrix"));
    REQUIRE_THROWS_WITH(pack_kquant_lanes16(make_weights(dtype, 256, 16, 2601).tensor(), aligned + 1, nullptr),
                        Catch::Contains("64-byte aligned"));
    const Weights w = make_weights(dtype, 256, 16, 2602);
    const auto packed = pack(w);
    std::vector<std::byte> out(static_cast<size_t>(w.row_bytes));
    REQUIRE_THROWS_WITH(unpack_kquant_lanes16_rows(packed.tensor, 16, 1, out.data()), Catch::Contains("outside"));
    REQUIRE_THROWS_WITH(unpack_kquant_lanes16_rows(w.tensor(), 0, 1, out.data()), Catch::Contains("Lanes16 matrix"));
  }
}
