// Neuron bundles (kernels/cpu/neuron_bundles.h) for every weight dtype: the
// packed bytes; the bundle FFN against a float64 reference built from the
// gathered GEMV's gates; dead neurons' up and down rows never read; the same
// bits for any thread count and alone or batched; the portable reference.
#include "kernels/cpu/neuron_bundles.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cpu/sparse_ffn.h"
#include "kernels/dtype.h"
#include "tests/kernels/weight_fixtures.h"
#include "tests/test_util.h"

namespace {

using namespace tc::kernels;
using tc::test::make_weights;
using tc::test::Weights;

constexpr int64_t kEmbd = 256;
constexpr int64_t kNeurons = 1300;  // three slot ranges of kBundleChunk, the last one short

// A layer's gate, up and down_t (fresh random values) and its bundles in
// neuron order, 64-byte aligned.
struct Layer {
  Weights gate, up, down_t;
  BundleLayout layout;
  std::vector<std::byte> storage;
  std::byte* gate_rows = nullptr;  // the gate matrix in bundle order
  std::byte* up_down = nullptr;    // the up/down bundles, 64-byte aligned

  Layer(DType dtype, uint64_t seed)
      : gate(make_weights(dtype, kEmbd, kNeurons, seed)),
        up(make_weights(dtype, kEmbd, kNeurons, seed + 1)),
        down_t(make_weights(dtype, kEmbd, kNeurons, seed + 2)),
        layout(bundle_layout(dtype, kEmbd)) {
    const int64_t gate_bytes = bundle_gate_bytes(layout, kNeurons);
    storage.assign(static_cast<size_t>(gate_bytes + bundle_up_down_bytes(layout, kNeurons) + 128), std::byte{0xab});
    gate_rows = storage.data();
    up_down = storage.data() + gate_bytes;
    up_down += (64 - reinterpret_cast<uintptr_t>(up_down) % 64) % 64;
    std::vector<int32_t> order(kNeurons);
    std::iota(order.begin(), order.end(), 0);
    ThreadPool pool(2);
    pack_bundles(gate.tensor(), up.tensor(), down_t.tensor(), order, layout, gate_rows, up_down, pool);
  }
  BundleSet set() const { return BundleSet{layout, gate_rows, up_down, kNeurons}; }
};

std::vector<int32_t> random_slots(int64_t n, double fraction, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> s;
  for (int64_t i = 0; i < n; ++i) {
    if (static_cast<double>(rng() % 1000) < fraction * 1000) s.push_back(static_cast<int32_t>(i));
  }
  return s;
}

std::vector<uint8_t> random_keep(int64_t n_tokens, int64_t n_slots, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> keep(static_cast<size_t>(n_tokens * n_slots));
  for (auto& k : keep) k = static_cast<uint8_t>(rng() % 3 != 0);
  return keep;
}

// y per the header's definition in float64, from the gathered GEMV's gates
// and ups (the same bits bundle_ffn's dot products have by contract) and the
// dequantized down rows. Returns the live count; `bound` gets sum |a| |w|
// per output (the scale of f32 rounding in the sum).
// `pool`: the gates of the chosen matmul variant (as bundle_ffn); nullptr:
// the portable one's (as bundle_ffn_reference).
int64_t reference(const Layer& L, const float* x, int64_t T, const std::vector<int32_t>& slots, const uint8_t* keep,
                  Activation act, ThreadPool* pool, std::vector<double>& y, std::vector<double>& bound) {
  const auto n = static_cast<int64_t>(slots.size());
  std::vector<float> g(static_cast<size_t>(T * n)), u(static_cast<size_t>(T * n));
  if (pool != nullptr) {
    matmul_rows(L.gate.tensor(), x, T, slots.data(), n, g.data(), *pool);
    matmul_rows(L.up.tensor(), x, T, slots.data(), n, u.data(), *pool);
  } else {
    matmul_rows_reference(L.gate.tensor(), x, T, slots.data(), n, g.data());
    matmul_rows_reference(L.up.tensor(), x, T, slots.data(), n, u.data());
  }
  y.assign(static_cast<size_t>(T * kEmbd), 0.0);
  bound.assign(static_cast<size_t>(T * kEmbd), 0.0);
  int64_t n_live = 0;
  for (int64_t k = 0; k < n; ++k) {
    bool live = false;
    for (int64_t t = 0; t < T; ++t) {
      const bool kept = keep == nullptr || keep[t * n + k] != 0;
      const double gate = kept ? g[static_cast<size_t>(t * n + k)] : 0.0;
      live |= gate > 0;
      if (gate <= 0) continue;
      double up = u[static_cast<size_t>(t * n + k)];
      if (act == Activation::DReLU) up = std::max(up, 0.0);
      const double a = gate * up;
      for (int64_t j = 0; j < kEmbd; ++j) {
        y[static_cast<size_t>(t * kEmbd + j)] += a * L.down_t.at(slots[static_cast<size_t>(k)], j);
        bound[static_cast<size_t>(t * kEmbd + j)] += std::fabs(a * L.down_t.at(slots[static_cast<size_t>(k)], j));
      }
    }
    n_live += live;
  }
  return n_live;
}

}  // namespace

TEST_CASE("bundle_layout and pack_bundles: gate rows in bundle order, up and down back to back on cache lines",
          "[kernels][bundles]") {
  for (DType dtype : tc::test::kWeightDTypes) {
    CAPTURE(dtype_name(dtype));
    const Layer L(dtype, 11);
    REQUIRE(L.layout.row_bytes == row_bytes(dtype, kEmbd));
    REQUIRE(L.layout.stride % 64 == 0);
    REQUIRE(L.layout.stride >= 2 * L.layout.row_bytes);
    REQUIRE(L.layout.stride < 2 * L.layout.row_bytes + 64);
    const auto rb = static_cast<size_t>(L.layout.row_bytes);
    for (int64_t i : {int64_t{0}, int64_t{1}, int64_t{777}, kNeurons - 1}) {
      const std::byte* b = L.up_down + i * L.layout.stride;
      REQUIRE(std::memcmp(L.gate_rows + i * L.layout.row_bytes, L.gate.tensor().row(i), rb) == 0);
      REQUIRE(std::memcmp(b, L.up.tensor().row(i), rb) == 0);
      REQUIRE(std::memcmp(b + rb, L.down_t.tensor().row(i), rb) == 0);
      for (int64_t p = 2 * L.layout.row_bytes; p < L.layout.stride; ++p) REQUIRE(b[p] == std::byte{0});
      // The views read the same rows.
      REQUIRE(std::memcmp(L.set().gate_rows().row(i), L.gate.tensor().row(i), rb) == 0);
      REQUIRE(std::memcmp(L.set().up_rows().row(i), L.up.tensor().row(i), rb) == 0);
      REQUIRE(std::memcmp(L.set().down_t_rows().row(i), L.down_t.tensor().row(i), rb) == 0);
    }
  }
}

TEST_CASE("bundle_ffn: against float64, every dtype, one and several tokens, both activations",
          "[kernels][bundles]") {
  ThreadPool pool(3);
  for (DType dtype : tc::test::kWeightDTypes) {
    const Layer L(dtype, 21 + static_cast<uint64_t>(dtype));
    for (int64_t T : {int64_t{1}, int64_t{3}}) {
      for (Activation act : {Activation::ReGLU, Activation::DReLU}) {
        CAPTURE(dtype_name(dtype), T, act == Activation::ReGLU ? "reglu" : "drelu");
        const auto x = tc::test::random_floats(static_cast<size_t>(T * kEmbd), 5 + static_cast<uint64_t>(T));
        const auto slots = random_slots(kNeurons, 0.2, 7 + static_cast<uint64_t>(T));
        const auto n = static_cast<int64_t>(slots.size());
        const auto keep = random_keep(T, n, 9);
        const uint8_t* keep_ptr = T > 1 ? keep.data() : nullptr;
        for (int variant = 0; variant < 2; ++variant) {
          CAPTURE(variant == 0 ? "fast" : "portable reference");
          std::vector<double> want, bound;
          const int64_t want_live =
              reference(L, x.data(), T, slots, keep_ptr, act, variant == 0 ? &pool : nullptr, want, bound);
          REQUIRE(want_live > 0);
          REQUIRE(want_live < n);  // some dead neurons, some live
          std::vector<float> y(static_cast<size_t>(T * kEmbd), std::nanf(""));
          BundleFfnScratch s;
          const int64_t live =
              variant == 0 ? bundle_ffn(L.set(), x.data(), T, slots.data(), n, keep_ptr, act, y.data(), s, pool)
                           : bundle_ffn_reference(L.set(), x.data(), T, slots.data(), n, keep_ptr, act, y.data(), s);
          REQUIRE(live == want_live);
          double worst = 0;
          for (size_t i = 0; i < y.size(); ++i) {
            REQUIRE(std::isfinite(y[i]));
            // f32 sums of a few hundred terms: well under 1e-5 of sum |terms|.
            worst = std::max(worst, std::fabs(y[i] - want[i]) / (bound[i] + 1e-30));
          }
          REQUIRE(worst < 1e-5);
        }
      }
    }
  }
}

TEST_CASE("bundle_ffn: dead neurons' up and down rows are never read", "[kernels][bundles]") {
  ThreadPool pool(2);
  for (DType dtype : {DType::F16, DType::Q4_0, DType::Q8_0}) {
    CAPTURE(dtype_name(dtype));
    Layer L(dtype, 31);
    const auto x = tc::test::random_floats(static_cast<size_t>(kEmbd), 3);
    const auto slots = random_slots(kNeurons, 0.3, 4);
    const auto n = static_cast<int64_t>(slots.size());
    std::vector<float> g(static_cast<size_t>(n));
    matmul_rows(L.gate.tensor(), x.data(), 1, slots.data(), n, g.data(), pool);
    std::vector<float> before(static_cast<size_t>(kEmbd)), after(static_cast<size_t>(kEmbd));
    BundleFfnScratch s;
    const int64_t live = bundle_ffn(L.set(), x.data(), 1, slots.data(), n, nullptr, Activation::ReGLU, before.data(),
                                    s, pool);
    // Poison the up and down rows of every dead slot (0xff bytes: NaN in a
    // float row, NaN scales in a quantized one).
    int64_t dead = 0;
    for (int64_t k = 0; k < n; ++k) {
      if (g[static_cast<size_t>(k)] > 0) continue;
      std::byte* b = L.up_down + slots[static_cast<size_t>(k)] * L.layout.stride;
      std::memset(b, 0xff, static_cast<size_t>(2 * L.layout.row_bytes));
      ++dead;
    }
    REQUIRE(dead > 0);
    REQUIRE(live == n - dead);
    REQUIRE(bundle_ffn(L.set(), x.data(), 1, slots.data(), n, nullptr, Activation::ReGLU, after.data(), s, pool) ==
            live);
    REQUIRE(std::memcmp(before.data(), after.data(), before.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("bundle_ffn: the same bits for any thread count, and alone or batched", "[kernels][bundles]") {
  for (DType dtype : {DType::F32, DType::F16, DType::Q4_0, DType::Q6_K}) {
    CAPTURE(dtype_name(dtype));
    const Layer L(dtype, 41);
    constexpr int64_t T = 4;
    const auto x = tc::test::random_floats(static_cast<size_t>(T * kEmbd), 8);
    const auto slots = random_slots(kNeurons, 0.25, 12);
    const auto n = static_cast<int64_t>(slots.size());
    const auto keep = random_keep(T, n, 13);
    std::vector<float> first;
    for (int threads : {1, 2, 3, 5}) {
      CAPTURE(threads);
      ThreadPool pool(threads);
      std::vector<float> y(static_cast<size_t>(T * kEmbd), std::nanf(""));
      BundleFfnScratch s;
      bundle_ffn(L.set(), x.data(), T, slots.data(), n, keep.data(), Activation::ReGLU, y.data(), s, pool);
      if (first.empty()) first = y;
      REQUIRE(std::memcmp(first.data(), y.data(), y.size() * sizeof(float)) == 0);
    }
    // Each token alone, over only the slots it keeps: its row of the batch.
    ThreadPool pool(2);
    for (int64_t t = 0; t < T; ++t) {
      CAPTURE(t);
      std::vector<int32_t> own;
      for (int64_t k = 0; k < n; ++k) {
        if (keep[static_cast<size_t>(t * n + k)] != 0) own.push_back(slots[static_cast<size_t>(k)]);
      }
      std::vector<float> y(static_cast<size_t>(kEmbd), std::nanf(""));
      BundleFfnScratch s;
      bundle_ffn(L.set(), x.data() + t * kEmbd, 1, own.data(), static_cast<int64_t>(own.size()), nullptr,
                 Activation::ReGLU, y.data(), s, pool);
      REQUIRE(std::memcmp(first.data() + t * kEmbd, y.data(), y.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("bundle_ffn: an empty slot list gives zeros, bad slot lists are refused", "[kernels][bundles]") {
  ThreadPool pool(2);
  const Layer L(DType::Q8_0, 51);
  const auto x = tc::test::random_floats(static_cast<size_t>(kEmbd), 1);
  std::vector<float> y(static_cast<size_t>(kEmbd), std::nanf(""));
  BundleFfnScratch s;
  REQUIRE(bundle_ffn(L.set(), x.data(), 1, nullptr, 0, nullptr, Activation::ReGLU, y.data(), s, pool) == 0);
  for (float v : y) REQUIRE(v == 0.0f);
  const std::vector<int32_t> unsorted = {5, 3};
  REQUIRE_THROWS(bundle_ffn(L.set(), x.data(), 1, unsorted.data(), 2, nullptr, Activation::ReGLU, y.data(), s, pool));
  const std::vector<int32_t> outside = {3, kNeurons};
  REQUIRE_THROWS(bundle_ffn(L.set(), x.data(), 1, outside.data(), 2, nullptr, Activation::ReGLU, y.data(), s, pool));
  const std::vector<int32_t> ok = {3, 5};
  REQUIRE_THROWS(bundle_ffn(L.set(), x.data(), 1, ok.data(), 2, nullptr, Activation::SwiGLU, y.data(), s, pool));
}
