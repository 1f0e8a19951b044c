// make-model --sparse --sparse-overlap: the positional head's weights (a
// window of the last few tokens, at any context length and head size), and
// the planted temporal locality measured independently by the float64
// reference pass on fresh tokens, four times further into the context than
// the calibration reached, beside a model of independent tokens; and what
// `thermocline profile` reports for it on the same tokens.
#include <catch2/catch.hpp>

#include <cstdint>
#include <numeric>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/loaded_model.h"
#include "engine/model/model_spec.h"
#include "kernels/backend.h"
#include "profiler/profile.h"
#include "profiler/make_model.h"
#include "profiler/sparse_planting.h"
#include "profiler/sparse_recency.h"
#include "tests/engine/model/reference_forward.h"
#include "tests/profiler/sparse_test_options.h"
#include "tests/test_util.h"

using tc::gguf::GgufFile;
using tc::profiler::MakeModelOptions;

namespace {

// The profiler tests' sparse model, with context for 256-token sequences.
MakeModelOptions overlap_options(const std::filesystem::path& out, double overlap) {
  MakeModelOptions o = tc::test::sparse_options(out);
  o.n_ctx = 512;
  o.seed = 17;
  o.sparse.overlap = overlap;
  return o;
}

struct Locality {
  std::vector<double> overlap;  // [layer]: consecutive_overlap over the sequences
  std::vector<double> active;   // [layer]: fraction of gate > 0
};

// The reference pass over n_seq fresh sequences of seq_len random tokens.
Locality measure_locality(const std::filesystem::path& path, int n_seq, int64_t seq_len, uint64_t seed) {
  const auto f = GgufFile::open(path);
  const auto spec = tc::model::read_model_spec(f);
  const auto n_layer = static_cast<size_t>(spec.n_layer);
  std::vector<std::vector<uint8_t>> fires(n_layer);
  for (int s = 0; s < n_seq; ++s) {
    const auto tokens = tc::test::random_tokens(static_cast<size_t>(seq_len), seed + static_cast<uint64_t>(s), spec.n_vocab);
    tc::test::reference_logits(f, spec, tokens, [&](const tc::test::FfnObservation& obs) {
      auto& layer = fires[static_cast<size_t>(obs.layer)];
      for (double g : obs.gate) layer.push_back(g > 0.0 ? 1 : 0);
    });
  }
  Locality out;
  const int64_t n_tok = n_seq * seq_len;
  for (const auto& layer : fires) {
    REQUIRE(static_cast<int64_t>(layer.size()) == n_tok * spec.n_ff);
    out.overlap.push_back(tc::profiler::consecutive_overlap(layer, n_tok, spec.n_ff, seq_len));
    const double n_active = std::accumulate(layer.begin(), layer.end(), 0.0);
    out.active.push_back(n_active / static_cast<double>(layer.size()));
  }
  return out;
}

// What `thermocline profile` measures on the same sequences, through the
// engine: profile_activations' consecutive overlap, chunks of seq_len, no BOS.
std::vector<double> profiled_overlap(const std::filesystem::path& path, int n_seq, int64_t seq_len, uint64_t seed) {
  const auto loaded = tc::model::load_model(path);
  std::vector<tc::text::TokenId> tokens;
  for (int s = 0; s < n_seq; ++s) {
    const auto seq = tc::test::random_tokens(static_cast<size_t>(seq_len), seed + static_cast<uint64_t>(s),
                                             loaded->spec.n_vocab);
    tokens.insert(tokens.end(), seq.begin(), seq.end());
  }
  auto cpu = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  std::vector<double> overlap;
  tc::profiler::ProfileOptions options;
  options.n_ctx = seq_len;
  options.n_batch = 64;
  options.consecutive_overlap = &overlap;
  tc::profiler::profile_activations(*loaded, *cpu, tokens, -1, options);
  return overlap;
}

}  // namespace

TEST_CASE("the positional head attends to the last few tokens at any context length", "[profiler][make_model][sparse]") {
  for (const int64_t head_dim : {32, 64, 128}) {
    for (const double base : {10000.0, 500000.0}) {
      const auto pairs = tc::profiler::recency_pairs(head_dim, base);
      REQUIRE_FALSE(pairs.pairs.empty());
      for (const int64_t context : {64, 640, 4096}) {
        INFO("head_dim " << head_dim << ", rope base " << base << ", context " << context);
        const auto w = tc::profiler::recency_weights(pairs, head_dim, base, context);
        const double last8 = std::accumulate(w.begin(), w.begin() + 9, 0.0);
        CHECK(last8 >= 0.95);          // a window, not an average over the context
        CHECK(w[0] >= w[1]);
        CHECK(w[1] >= w[4]);
        CHECK(w[0] <= 0.6);            // more than the token itself
        // Neighbouring tokens see nearly the same mixture: the lag-1
        // autocorrelation of the weights.
        double same = 0.0, self = 0.0;
        for (size_t d = 0; d + 1 < w.size(); ++d) same += w[d] * w[d + 1];
        for (double x : w) self += x * x;
        CHECK(same / self >= 0.6);
      }
    }
  }
}

TEST_CASE("consecutive_overlap counts the active neurons shared with the previous token of the sequence",
          "[profiler][make_model][sparse]") {
  // Two sequences of 3 tokens, 4 neurons.
  const std::vector<uint8_t> active = {1, 1, 0, 0,  // seq 0, t0
                                       1, 0, 1, 0,  // t1: 1 of 2 shared
                                       1, 0, 1, 1,  // t2: 2 of 3 shared
                                       0, 1, 1, 1,  // seq 1, t0: not compared with seq 0's last
                                       0, 1, 1, 1,  // t1: 3 of 3
                                       0, 0, 0, 0};
  CHECK(tc::profiler::consecutive_overlap(active, 6, 4, 3) == Approx(6.0 / 8.0));
}

TEST_CASE("sparse make-model plants the chosen overlap, and it holds on fresh tokens far into the context",
          "[profiler][make_model][sparse]") {
  const auto dir = tc::test::scratch_dir("make_model_overlap");
  const auto independent = overlap_options(dir / "independent.gguf", 0.0);
  const auto local = overlap_options(dir / "local.gguf", 0.6);
  tc::profiler::make_model(independent);
  tc::profiler::make_model(local);

  const auto f0 = GgufFile::open(independent.output);
  const auto f1 = GgufFile::open(local.output);
  CHECK(f0.get_f64(tc::profiler::kSparseOverlapKey) == 0.0);
  CHECK(f1.get_f64(tc::profiler::kSparseOverlapKey) == Approx(0.6));
  const auto calib0 = f0.get_f32_array(tc::profiler::kLayerOverlapKey);
  const auto calib1 = f1.get_f32_array(tc::profiler::kLayerOverlapKey);
  REQUIRE(calib0.size() == 3);
  REQUIRE(calib1.size() == 3);

  // Sequences of 256 tokens: the calibration saw 64.
  const Locality m0 = measure_locality(independent.output, 2, 256, 900);
  const Locality m1 = measure_locality(local.output, 2, 256, 900);
  // `profile` counts the same on the same sequences (the engine's f32 pass:
  // a gate within rounding of 0 may fire on one side only).
  const auto p0 = profiled_overlap(independent.output, 2, 256, 900);
  const auto p1 = profiled_overlap(local.output, 2, 256, 900);
  REQUIRE(p0.size() == 3);
  REQUIRE(p1.size() == 3);
  for (size_t l = 0; l < 3; ++l) {
    INFO("layer " << l << ": independent " << m0.overlap[l] << " (calibration " << calib0[l] << "), local "
                  << m1.overlap[l] << " (calibration " << calib1[l] << ")");
    CHECK(calib1[l] == Approx(0.6).margin(0.01));  // the bisection met the target on its tokens
    CHECK(m1.overlap[l] == Approx(0.6).margin(0.06));
    CHECK(m0.overlap[l] == Approx(calib0[l]).margin(0.05));
    CHECK(m0.overlap[l] < 0.5);  // without the head, only the hot neurons repeat
    CHECK(m0.active[l] == Approx(0.10).margin(0.03));
    CHECK(m1.active[l] == Approx(0.10).margin(0.03));  // the planted sparsity is kept
    CHECK(p0[l] == Approx(m0.overlap[l]).margin(0.005));
    CHECK(p1[l] == Approx(m1.overlap[l]).margin(0.005));
  }
}
