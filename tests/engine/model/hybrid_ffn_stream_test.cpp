// HybridFfnStream (hybrid mode's streamed dense prompt steps) on the fake
// GPU, whose copy queue lands copies only when the stream waits on an event
// recorded after them: a layer's FFN in many double-buffered tiles against
// a float64 reference on random inputs, every row copied exactly once per
// run, and each stage refilled only after the copy queue waited for its
// last reader.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "engine/model/hybrid_ffn_stream.h"
#include "engine/model/llama_weights.h"
#include "tests/engine/model/host_device_backend.h"
#include "tests/engine/model/hybrid_fixtures.h"
#include "tests/test_util.h"

namespace {

// FFN of one token in float64: sum_k relu(gate_k . x) (up_k . x) down_t[k].
std::vector<double> reference_ffn(const tc::model::LayerWeights& w, const float* x, int64_t n_embd, int64_t n_ff) {
  std::vector<double> y(static_cast<size_t>(n_embd), 0.0);
  for (int64_t k = 0; k < n_ff; ++k) {
    const auto* g = w.ffn_gate.row_as<const float>(k);
    const auto* u = w.ffn_up.row_as<const float>(k);
    const auto* d = w.ffn_down_t.row_as<const float>(k);
    double gate = 0, up = 0;
    for (int64_t c = 0; c < n_embd; ++c) {
      gate += static_cast<double>(g[c]) * x[c];
      up += static_cast<double>(u[c]) * x[c];
    }
    const double a = std::max(gate, 0.0) * up;
    for (int64_t c = 0; c < n_embd; ++c) y[static_cast<size_t>(c)] += a * d[c];
  }
  return y;
}

}  // namespace

TEST_CASE("the streamed FFN of a dense step equals a float64 reference, tile by tile", "[model][hybrid]") {
  const auto loaded = tc::test::planted_model("stream", true, "f32");
  const auto& spec = loaded->spec;
  const auto host = tc::model::map_llama_weights(loaded->file, spec);
  tc::test::HostDeviceBackend device(2);
  const auto split = tc::model::split_hybrid_weights(host.layers, tc::test::strided_hot(spec, 0, 2), device);
  // 64 rows of 512 bytes a tile: 8 tiles of n_ff 500, the last one short.
  tc::model::HybridFfnStream stream(spec, device, split, tc::kernels::Activation::ReGLU, 64 * 512);
  REQUIRE(stream.tile_rows() == 64);
  const int64_t n_tokens = 40;
  const auto n = static_cast<size_t>(n_tokens * spec.n_embd);
  std::vector<float> gate(static_cast<size_t>(n_tokens * 64)), up(gate.size()), partial(n);
  const size_t row_bytes = static_cast<size_t>(spec.n_embd) * sizeof(float);
  for (int64_t layer = 0; layer < spec.n_layer; ++layer) {
    INFO("layer " << layer);
    const auto cur = tc::test::random_floats(n, 300 + static_cast<uint64_t>(layer), 1.0f);
    std::vector<float> out(n, std::numeric_limits<float>::quiet_NaN());
    const size_t streamed_before = device.prefetch_bytes.load();
    const auto waits_before = device.queue_log().size();
    stream.run(layer, cur.data(), n_tokens, gate.data(), up.data(), partial.data(), out.data());
    device.synchronize();
    // Every row of gate, up and down_t crossed once.
    CHECK(device.prefetch_bytes.load() - streamed_before == 3 * static_cast<size_t>(spec.n_ff) * row_bytes);
    double worst = 0, scale = 0;
    for (int64_t t = 0; t < n_tokens; ++t) {
      const auto want = reference_ffn(host.layers[static_cast<size_t>(layer)], cur.data() + t * spec.n_embd,
                                       spec.n_embd, spec.n_ff);
      for (int64_t c = 0; c < spec.n_embd; ++c) {
        scale = std::max(scale, std::abs(want[static_cast<size_t>(c)]));
        worst = std::max(worst, std::abs(out[static_cast<size_t>(t * spec.n_embd + c)] - want[static_cast<size_t>(c)]));
      }
    }
    REQUIRE(scale > 0);
    CHECK(worst <= 1e-5 * scale);
    // Eight tiles over two stages: from the third on (and in the second
    // layer from the first), the copy queue waits for the stage's last
    // reader before its copies.
    int copy_waits = 0;
    const auto log = device.queue_log();
    for (size_t i = waits_before; i < log.size(); ++i) {
      const auto& e = log[i];
      if (e.queue == tc::test::QueueLogEntry::Queue::Copy && e.kind == tc::test::QueueLogEntry::Kind::Wait) {
        ++copy_waits;
      }
    }
    CHECK(copy_waits == (layer == 0 ? 6 : 8));
  }
  CHECK(stream.streamed_bytes() == static_cast<uint64_t>(spec.n_layer) * 3 * spec.n_ff * row_bytes);
}
