// Activation predictors (profile --train-predictors): the recorder against
// profile's fire counts; the gate-SVD baseline on planted low-rank gates;
// trained predictors reaching the target recall on held-out tokens, their
// figures against a float64 recount from the written file; the stats-file
// round trip; the report; clear errors for bad options.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/model/loaded_model.h"
#include "engine/sparse/activation_stats.h"
#include "engine/sparse/predictors.h"
#include "kernels/backend.h"
#include "kernels/cpu/quantize.h"
#include "kernels/cpu/thread_pool.h"
#include "profiler/make_model.h"
#include "profiler/predictor_report.h"
#include "profiler/predictor_samples.h"
#include "profiler/predictor_svd.h"
#include "profiler/predictor_training.h"
#include "profiler/profile.h"
#include "tests/test_util.h"

using tc::model::FfnForm;
using tc::profiler::PredictorKind;
using tc::profiler::PredictorOptions;
using tc::profiler::PredictorSamples;
using tc::text::TokenId;

using tc::test::random_tokens;

namespace {

constexpr int64_t kPlantedRank = 32;  // predictor_rank of the planted models: the gate has rank 16

std::unique_ptr<tc::model::LoadedModel> planted_model(const std::string& name, FfnForm form, const std::string& type) {
  tc::profiler::MakeModelOptions o;
  o.output = tc::test::scratch_dir("predictor_" + name) / "m.gguf";
  o.n_vocab = 512;
  o.n_embd = 64;
  o.n_layer = 2;
  o.n_ff = 256;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.n_ctx = 128;
  o.weight_type = type;
  o.ffn_form = form;
  o.seed = 11;
  o.n_threads = 2;
  o.sparse.enabled = true;
  o.sparse.active = 0.10;
  o.sparse.alpha = 1.0;
  o.sparse.predictor_rank = kPlantedRank;
  tc::profiler::make_model(o);
  return tc::model::load_model(o.output);
}

PredictorSamples record(const tc::model::LoadedModel& m, size_t n_tokens, int64_t max_samples, uint64_t seed = 3) {
  auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  tc::profiler::RecordOptions o;
  o.n_ctx = 64;
  o.n_batch = 64;
  o.max_samples = max_samples;
  o.n_tokens = static_cast<int64_t>(n_tokens);
  return tc::profiler::record_predictor_samples(m, *backend, random_tokens(n_tokens, seed, m.spec.n_vocab), -1, o);
}

PredictorOptions options(PredictorKind kind, int64_t max_rank) {
  PredictorOptions o;
  o.kind = kind;
  o.max_rank = max_rank;
  o.target_recall = 0.99;
  o.compare_svd = false;
  o.n_threads = 2;
  return o;
}

std::vector<double> dequantized(const tc::gguf::GgufFile& f, const tc::gguf::TensorInfo& info) {
  const auto data = f.tensor_data(info);
  const int64_t n_cols = info.ne[0];
  const int64_t row_bytes = tc::kernels::row_bytes(info.dtype, n_cols);
  std::vector<float> row(static_cast<size_t>(n_cols));
  std::vector<double> out;
  for (int64_t r = 0; r < info.n_rows(); ++r) {
    tc::kernels::dequantize_row(info.dtype, data.data() + r * row_bytes, row.data(), n_cols);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

// Writes a stats file (profile of the first tokens) carrying the predictors.
std::filesystem::path write_stats(const tc::model::LoadedModel& m, const tc::profiler::PredictorBuild& build,
                                  const std::string& name) {
  auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  tc::profiler::ProfileOptions po;
  po.n_ctx = 64;
  po.n_batch = 64;
  const auto stats =
      tc::profiler::profile_activations(m, *backend, random_tokens(128, 9, m.spec.n_vocab), -1, po);
  const auto path = tc::test::scratch_dir("predictor_stats_" + name) / "m.stats.gguf";
  tc::sparse::write_activation_stats(stats, path, tc::profiler::predictor_sections(build));
  return path;
}

}  // namespace

TEST_CASE("predictor recorder keeps what profile counts", "[profiler][predictor]") {
  // dReLU: fired = gate > 0 && up > 0. With room for every token, the bits
  // summed per neuron are profile's fire counts over the same chunks.
  const auto m = planted_model("recorder", FfnForm::DReLU, "f32");
  const auto tokens = random_tokens(256, 3, m->spec.n_vocab);
  const PredictorSamples all = record(*m, 256, 1024);
  REQUIRE(all.n_seen == 256);
  REQUIRE(all.n_samples == 256);
  auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  tc::profiler::ProfileOptions po;
  po.n_ctx = 64;
  po.n_batch = 64;
  const auto stats = tc::profiler::profile_activations(*m, *backend, tokens, -1, po);
  for (int64_t l = 0; l < m->spec.n_layer; ++l) {
    for (int64_t i = 0; i < m->spec.n_ff; ++i) {
      int64_t n = 0;
      for (int64_t s = 0; s < all.n_samples; ++s) n += all.fires(l, s, i) ? 1 : 0;
      REQUIRE(n == stats.fire_counts[static_cast<size_t>(l)][static_cast<size_t>(i)]);
    }
  }
  // Reservoir: bounded, deterministic, and the same tokens in every layer.
  const PredictorSamples a = record(*m, 256, 100);
  const PredictorSamples b = record(*m, 256, 100);
  CHECK(a.n_samples == 100);
  CHECK(a.n_seen == 256);
  CHECK(a.x == b.x);
  CHECK(a.fired == b.fired);
  CHECK(a.x[0].size() == 100u * 64u);
  CHECK(tc::profiler::predictor_samples_bytes(2, 64, 256, 100) == 2u * 100u * (256u + 32u));
  int64_t found = 0;  // kept rows of layer 0 are rows of the full recording
  for (int64_t s = 0; s < a.n_samples; ++s) {
    for (int64_t t = 0; t < all.n_samples; ++t) {
      if (std::equal(a.x_row(1, s), a.x_row(1, s) + 64, all.x_row(1, t)) &&
          std::equal(a.x_row(0, s), a.x_row(0, s) + 64, all.x_row(0, t))) {
        ++found;
        break;
      }
    }
  }
  CHECK(found == a.n_samples);
}

TEST_CASE("predictor SVD baseline reaches the target recall at the planted rank", "[profiler][predictor]") {
  const auto m = planted_model("svd", FfnForm::ReGLU, "f32");
  const PredictorSamples samples = record(*m, 1024, 1024);
  // The gate is exactly rank 16 (kPlantedRank / 2) after diag(ffn_norm).
  tc::kernels::ThreadPool pool(2);
  const auto f = tc::profiler::factor_gate(m->file, m->spec, 1, 24, 7, pool);
  CHECK(f.sigma[15] > 1e-3 * f.sigma[0]);
  CHECK(f.sigma[16] < 1e-5 * f.sigma[0]);

  auto o = options(PredictorKind::Svd, kPlantedRank);
  const auto build = tc::profiler::build_predictors(m->file, m->spec, samples, o);
  REQUIRE(build.layers.size() == 2);
  for (const auto& p : build.layers) {
    INFO("layer " << p.layer);
    CHECK(p.rank <= kPlantedRank);
    CHECK(p.target_reached);
    CHECK(p.trials.back().calib.recall() >= 0.99);
    CHECK(p.eval.recall() >= 0.99);
    CHECK(p.eval.precision() >= 0.95);
    CHECK(p.eval.true_fraction() == Approx(0.10).margin(0.04));
  }
}

TEST_CASE("trained predictors reach the target recall and match a float64 recount", "[profiler][predictor]") {
  const auto m = planted_model("trained", FfnForm::ReGLU, "f16");
  const PredictorSamples samples = record(*m, 3072, 3072);
  auto o = options(PredictorKind::Trained, 64);
  o.compare_svd = true;
  int64_t progress_calls = 0;
  const auto build = tc::profiler::build_predictors(m->file, m->spec, samples, o,
                                                    [&](int64_t done, int64_t total) {
                                                      ++progress_calls;
                                                      CHECK(done <= total);
                                                    });
  CHECK(progress_calls > 0);
  REQUIRE(build.layers.size() == 2);
  REQUIRE(build.baseline.size() == 2);
  for (const auto& p : build.layers) {
    INFO("layer " << p.layer << " rank " << p.rank << " recall " << p.eval.recall() << " precision "
                  << p.eval.precision());
    CHECK(p.kind == PredictorKind::Trained);
    CHECK(p.eval.recall() >= 0.99);
    CHECK(p.eval.precision() > 0.5);
    CHECK(p.cost.flops == 2 * p.rank * (64 + 256));
    CHECK(p.cost.ffn_bytes == 3 * 256 * 64 * 2);
    CHECK(p.cost.bytes == 2 * p.rank * (64 + 256));
  }
  CHECK(build.baseline[0].kind == PredictorKind::Svd);

  // Recount from the file: float64 scores from the stored f16 values, the
  // stored thresholds; decisions within 1e-4 of the threshold may differ
  // from float32's.
  const auto path = write_stats(*m, build, "trained");
  const auto f = tc::gguf::GgufFile::open(path);
  const auto thresholds = f.get_f32_array(tc::sparse::kLayerThresholdsKey);
  REQUIRE(thresholds.size() == 2);
  for (int64_t l = 0; l < 2; ++l) {
    const auto& p = build.layers[static_cast<size_t>(l)];
    const auto fc1 = dequantized(f, f.tensor(tc::model::layer_tensor_name(l, "fc1"), {64, p.rank}));
    const auto fc2 = dequantized(f, f.tensor(tc::model::layer_tensor_name(l, "fc2"), {p.rank, 256}));
    const double t = thresholds[static_cast<size_t>(l)];
    CHECK(t == p.threshold);
    int64_t tp = 0, fp = 0, fn = 0, near = 0;
    std::vector<double> h(static_cast<size_t>(p.rank));
    for (const int64_t s : build.split.eval) {
      const float* x = samples.x_row(l, s);
      for (int64_t k = 0; k < p.rank; ++k) {
        double v = 0;
        for (int64_t j = 0; j < 64; ++j) v += fc1[static_cast<size_t>(k * 64 + j)] * x[j];
        h[static_cast<size_t>(k)] = std::max(v, 0.0);
      }
      for (int64_t i = 0; i < 256; ++i) {
        double score = 0;
        for (int64_t k = 0; k < p.rank; ++k) score += fc2[static_cast<size_t>(i * p.rank + k)] * h[static_cast<size_t>(k)];
        const bool fires = samples.fires(l, s, i);
        const bool predicted = score > t;
        near += std::fabs(score - t) < 1e-4 * (1.0 + std::fabs(t)) ? 1 : 0;
        tp += fires && predicted;
        fp += !fires && predicted;
        fn += fires && !predicted;
      }
    }
    INFO("layer " << l << " near-threshold decisions " << near);
    CHECK(std::abs(tp - p.eval.true_pos) <= near);
    CHECK(std::abs(fp - p.eval.false_pos) <= near);
    CHECK(std::abs(fn - p.eval.false_neg) <= near);
    CHECK(near < 20);
    const double recall = static_cast<double>(tp) / static_cast<double>(tp + fn);
    const double precision = static_cast<double>(tp) / static_cast<double>(tp + fp);
    CHECK(recall == Approx(p.eval.recall()).margin(1e-3));
    CHECK(precision == Approx(p.eval.precision()).margin(1e-3));
  }

  const std::string md = tc::profiler::predictor_report_markdown(build);
  CHECK(md.find("| 1 | trained | " + std::to_string(build.layers[1].rank)) != std::string::npos);
  CHECK(md.find("| 1 | svd | ") != std::string::npos);
  CHECK(tc::profiler::predictor_summary(build).find("held-out recall") != std::string::npos);
}

TEST_CASE("predictor stats file round-trips", "[profiler][predictor]") {
  const auto m = planted_model("roundtrip", FfnForm::ReGLU, "f16");
  const PredictorSamples samples = record(*m, 512, 512);
  auto o = options(PredictorKind::Svd, 64);
  o.dtype = tc::kernels::DType::Q8_0;
  o.target_recall = 0.999;  // the largest rank, so layers may differ in rank only through the target
  const auto build = tc::profiler::build_predictors(m->file, m->spec, samples, o);
  const auto path = write_stats(*m, build, "roundtrip");

  const auto stats = tc::sparse::read_activation_stats(path);  // the stats part still reads
  CHECK(stats.n_layer() == 2);
  const auto f = tc::gguf::GgufFile::open(path);
  const auto thresholds = f.get_f32_array(tc::sparse::kLayerThresholdsKey);
  REQUIRE(thresholds.size() == 2);
  CHECK(f.get_f64(tc::sparse::kSparseThresholdKey) == std::min(thresholds[0], thresholds[1]));
  CHECK(f.get_string(tc::profiler::kPredictorKindKey) == "svd");
  CHECK(f.get_f64(tc::profiler::kPredictorTargetRecallKey) == Approx(0.999));
  for (int64_t l = 0; l < 2; ++l) {
    const auto& p = build.layers[static_cast<size_t>(l)];
    CHECK(thresholds[static_cast<size_t>(l)] == p.threshold);
    const auto& fc1 = f.tensor(tc::model::layer_tensor_name(l, "fc1"), {64, p.rank});
    const auto& fc2 = f.tensor(tc::model::layer_tensor_name(l, "fc2"), {p.rank, 256});
    CHECK(fc1.dtype == tc::kernels::DType::Q8_0);
    CHECK(fc2.dtype == tc::kernels::DType::Q8_0);
    const auto b1 = f.tensor_data(fc1);
    const auto b2 = f.tensor_data(fc2);
    CHECK(std::equal(b1.begin(), b1.end(), p.fc1.begin(), p.fc1.end()));
    CHECK(std::equal(b2.begin(), b2.end(), p.fc2.begin(), p.fc2.end()));
    // What was evaluated is what the file holds.
    const auto v1 = dequantized(f, fc1);
    REQUIRE(v1.size() == p.weights.fc1.size());
    for (size_t i = 0; i < v1.size(); ++i) REQUIRE(v1[i] == p.weights.fc1[i]);
    CHECK(p.cost.bytes == static_cast<int64_t>(fc1.n_bytes + fc2.n_bytes));
  }
  // The engine's reader takes them back with the same ranks and thresholds.
  CHECK(tc::sparse::has_predictors(f));
  const auto set = tc::sparse::map_predictors(f, m->spec);
  REQUIRE(set.layers.size() == 2);
  for (size_t l = 0; l < 2; ++l) {
    CHECK(set.layers[l].rank() == build.layers[l].rank);
    CHECK(set.layers[l].threshold == build.layers[l].threshold);
  }
}

TEST_CASE("predictor options give clear errors", "[profiler][predictor]") {
  tc::model::ModelSpec spec;
  spec.name = "m";
  spec.n_layer = 2;
  spec.n_embd = 64;
  spec.n_ff = 256;
  spec.ffn_form = FfnForm::SwiGLU;
  PredictorOptions o;
  CHECK_THROWS_WITH(tc::profiler::check_predictor_options(o, spec), Catch::Contains("reglu, drelu or relu") &&
                                                                        Catch::Contains("swiglu"));
  CHECK_THROWS_WITH(tc::profiler::PredictorRecorder(spec, 16, 1), Catch::Contains("reglu, drelu or relu"));
  spec.ffn_form = FfnForm::DReLU;
  CHECK_NOTHROW(tc::profiler::check_predictor_options(o, spec));
  for (double bad : {0.0, -0.5, 1.5}) {
    o.target_recall = bad;
    CHECK_THROWS_WITH(tc::profiler::check_predictor_options(o, spec), Catch::Contains("target recall"));
  }
  o.target_recall = 1.0;
  CHECK_NOTHROW(tc::profiler::check_predictor_options(o, spec));
  o.max_rank = 0;
  CHECK_THROWS_WITH(tc::profiler::check_predictor_options(o, spec), Catch::Contains("max rank 0"));
  o.max_rank = 128;
  o.dtype = tc::kernels::DType::Q4_K;  // 256-element blocks: n_embd 64 is no multiple
  CHECK_THROWS_WITH(tc::profiler::check_predictor_options(o, spec), Catch::Contains("multiple of 256"));
  spec.n_embd = 256;
  CHECK_THROWS_WITH(tc::profiler::check_predictor_options(o, spec), Catch::Contains("no candidate rank"));
  o.dtype = tc::kernels::DType::I32;
  CHECK_THROWS_WITH(tc::profiler::check_predictor_options(o, spec), Catch::Contains("not a weight format"));
  PredictorKind kind;
  CHECK_FALSE(tc::profiler::parse_predictor_kind("mlp", kind));
  CHECK(tc::profiler::parse_predictor_kind("svd", kind));
  CHECK(kind == PredictorKind::Svd);
  CHECK(tc::profiler::auto_max_rank(spec) == 64);  // 64 * 512 * 4 <= 3 * 256 * 256 < 128 * 512 * 4
}
