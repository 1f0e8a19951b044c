// build_predictors(): candidate ranks in increasing cost, rounding to the
// written dtype before any measurement, threshold calibration and held-out
// evaluation; predictor_sections() writes the result.
#include "profiler/predictor_training.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>

#include "engine/gguf/gguf_writer.h"
#include "engine/sparse/predictors.h"
#include "kernels/cpu/quantize.h"
#include "kernels/cpu/thread_pool.h"
#include "profiler/predictor_svd.h"

namespace tc::profiler {
namespace {

constexpr int64_t kMinRank = 16;

// Quantizes `values` (n_rows rows of n_cols) to dtype into `bytes` and
// replaces the values with what the bytes hold.
void round_rows(std::vector<float>& values, int64_t n_rows, int64_t n_cols, kernels::DType dtype,
                std::vector<std::byte>& bytes) {
  const int64_t row_bytes = kernels::row_bytes(dtype, n_cols);
  bytes.assign(static_cast<size_t>(row_bytes * n_rows), std::byte{0});
  for (int64_t r = 0; r < n_rows; ++r) {
    float* row = values.data() + r * n_cols;
    kernels::quantize_row(dtype, row, bytes.data() + r * row_bytes, n_cols);
    kernels::dequantize_row(dtype, bytes.data() + r * row_bytes, row, n_cols);
  }
}

PredictorCost layer_cost(const gguf::GgufFile& file, const model::ModelSpec& spec, int64_t layer, int64_t rank,
                         kernels::DType dtype) {
  PredictorCost c;
  c.bytes = kernels::row_bytes(dtype, spec.n_embd) * rank + kernels::row_bytes(dtype, rank) * spec.n_ff;
  c.flops = 2 * rank * (spec.n_embd + spec.n_ff);
  // Ungated FFNs (Falcon) have ffn_up only.
  const bool gated = model::is_gated(spec.ffn_form);
  for (const char* t : {"ffn_gate", "ffn_up", spec.sparse_layout ? "ffn_down_t" : "ffn_down"}) {
    if (!gated && std::string_view(t) == "ffn_gate") continue;
    c.ffn_bytes += static_cast<int64_t>(file.tensor(model::layer_tensor_name(layer, t)).n_bytes);
  }
  c.ffn_flops = 2 * (gated ? 3 : 2) * spec.n_ff * spec.n_embd;
  return c;
}

// Builds one layer's predictors (the written kind and the baseline), on
// the calling thread with its own single-thread pool.
class LayerBuilder {
 public:
  LayerBuilder(const gguf::GgufFile& file, const model::ModelSpec& spec, const PredictorSamples& samples,
               const PredictorOptions& o, const SampleSplit& split, std::function<void(int64_t)> advance)
      : file_(file), spec_(spec), samples_(samples), o_(o), split_(split), advance_(std::move(advance)) {}

  // Work units (tokens) of one candidate of `kind`.
  int64_t units(PredictorKind kind) const {
    if (kind == PredictorKind::Svd) return static_cast<int64_t>(split_.calib.size());
    const auto n_train = static_cast<int64_t>(split_.train.size());
    const int64_t batch = std::min(o_.train.batch, n_train);
    return n_train / batch * batch * o_.train.epochs + static_cast<int64_t>(split_.calib.size());
  }

  // Factors for the SVD kind and for trained initialisation, enough for predictors up to max_rank.
  GateFactors factors(int64_t layer, int64_t max_rank) const {
    const int64_t half = std::min(max_rank / 2, std::min(spec_.n_embd, spec_.n_ff));
    return factor_gate(file_, spec_, layer, half, o_.seed, pool_, o_.power_iterations);
  }

  LayerPredictor build(PredictorKind kind, int64_t layer, const std::vector<int64_t>& ranks,
                       const GateFactors* factors) {
    LayerPredictor p;
    p.kind = kind;
    p.layer = layer;
    const int64_t n_ff = spec_.n_ff, n_embd = spec_.n_embd;
    std::vector<float> scores(split_.calib.size() * static_cast<size_t>(n_ff));
    for (size_t c = 0; c < ranks.size(); ++c) {
      const int64_t rank = ranks[c];
      LowRankMlp mlp;
      if (kind == PredictorKind::Trained) {
        MlpTrainOptions t = o_.train;
        t.rank = rank;
        t.seed = o_.seed;
        LowRankMlp init;
        if (factors != nullptr) init = svd_predictor(*factors, std::min(rank / 2, factors->rank), n_embd, n_ff);
        const int64_t batch = std::min(t.batch, static_cast<int64_t>(split_.train.size()));
        mlp = train_low_rank_mlp(samples_, layer, split_.train, t, pool_,
                                 [&](int64_t, int64_t) { advance_(batch); }, factors ? &init : nullptr);
      } else {
        mlp = svd_predictor(*factors, rank / 2, n_embd, n_ff);
      }
      // Everything below sees the values the file will hold.
      round_rows(mlp.fc1, rank, n_embd, o_.dtype, p.fc1);
      round_rows(mlp.fc2, n_ff, rank, o_.dtype, p.fc2);
      predictor_scores(mlp, samples_, layer, split_.calib, scores.data(), pool_);
      advance_(static_cast<int64_t>(split_.calib.size()));
      p.trials.push_back({rank, evaluate_scores(scores.data(), samples_, layer, split_.calib, 0.0f)});
      p.rank = rank;
      p.weights = std::move(mlp);
      if (p.trials.back().calib.recall() >= o_.target_recall) {
        p.target_reached = true;
        advance_(static_cast<int64_t>(ranks.size() - 1 - c) * units(kind));
        break;
      }
    }
    p.threshold = calibrate_threshold(scores.data(), samples_, layer, split_.calib, o_.target_recall);
    std::vector<float> eval_scores(split_.eval.size() * static_cast<size_t>(n_ff));
    predictor_scores(p.weights, samples_, layer, split_.eval, eval_scores.data(), pool_);
    p.eval = evaluate_scores(eval_scores.data(), samples_, layer, split_.eval, p.threshold);
    p.cost = layer_cost(file_, spec_, layer, p.rank, o_.dtype);
    return p;
  }

 private:
  const gguf::GgufFile& file_;
  const model::ModelSpec& spec_;
  const PredictorSamples& samples_;
  const PredictorOptions& o_;
  const SampleSplit& split_;
  std::function<void(int64_t)> advance_;
  // One thread per layer: the many small products of training are not worth
  // a thread hand-off each, and a layer's result cannot depend on the thread count.
  mutable kernels::ThreadPool pool_{1};
};

}  // namespace

std::string_view predictor_kind_name(PredictorKind kind) {
  return kind == PredictorKind::Trained ? "trained" : "svd";
}

bool parse_predictor_kind(std::string_view name, PredictorKind& out) {
  if (name == "trained") {
    out = PredictorKind::Trained;
  } else if (name == "svd") {
    out = PredictorKind::Svd;
  } else {
    return false;
  }
  return true;
}

double PredictorEval::recall() const {
  const int64_t n = true_pos + false_neg;
  return n == 0 ? 1.0 : static_cast<double>(true_pos) / static_cast<double>(n);
}
double PredictorEval::precision() const {
  const int64_t n = true_pos + false_pos;
  return n == 0 ? 1.0 : static_cast<double>(true_pos) / static_cast<double>(n);
}
double PredictorEval::predicted_fraction() const {
  return n_decisions == 0 ? 0.0 : static_cast<double>(true_pos + false_pos) / static_cast<double>(n_decisions);
}
double PredictorEval::true_fraction() const {
  return n_decisions == 0 ? 0.0 : static_cast<double>(true_pos + false_neg) / static_cast<double>(n_decisions);
}

PredictorEval evaluate_scores(const float* scores, const PredictorSamples& samples, int64_t layer,
                              std::span<const int64_t> idx, float threshold) {
  PredictorEval e;
  const int64_t n_ff = samples.n_ff;
  e.n_tokens = static_cast<int64_t>(idx.size());
  e.n_decisions = e.n_tokens * n_ff;
  for (int64_t t = 0; t < e.n_tokens; ++t) {
    const float* s = scores + t * n_ff;
    const uint64_t* bits = samples.fired_row(layer, idx[static_cast<size_t>(t)]);
    for (int64_t i = 0; i < n_ff; ++i) {
      const bool fires = (bits[i / 64] >> (i % 64)) & 1u;
      const bool predicted = s[i] > threshold;
      e.true_pos += fires && predicted;
      e.false_pos += !fires && predicted;
      e.false_neg += fires && !predicted;
    }
  }
  return e;
}

float calibrate_threshold(const float* scores, const PredictorSamples& samples, int64_t layer,
                          std::span<const int64_t> idx, double target) {
  const int64_t n_ff = samples.n_ff;
  std::vector<float> positive;
  for (size_t t = 0; t < idx.size(); ++t) {
    const uint64_t* bits = samples.fired_row(layer, idx[t]);
    for (int64_t i = 0; i < n_ff; ++i) {
      if ((bits[i / 64] >> (i % 64)) & 1u) positive.push_back(scores[static_cast<int64_t>(t) * n_ff + i]);
    }
  }
  if (positive.empty()) return 0.0f;
  // At most `misses` firing neurons may score <= threshold: just below the
  // (misses + 1)-th smallest positive score.
  const auto n = static_cast<double>(positive.size());
  const double allowed = (1.0 - target) * n - 2.0 * std::sqrt(target * (1.0 - target) * n);
  const auto misses = std::min(positive.size() - 1, static_cast<size_t>(std::max(0.0, std::floor(allowed + 1e-9))));
  std::nth_element(positive.begin(), positive.begin() + static_cast<std::ptrdiff_t>(misses), positive.end());
  return std::nextafter(positive[misses], -std::numeric_limits<float>::infinity());
}

void check_predictor_options(const PredictorOptions& o, const model::ModelSpec& spec) {
  require_relu_ffn(spec);
  if (!(o.target_recall > 0.0 && o.target_recall <= 1.0)) {
    throw std::invalid_argument("target recall " + std::to_string(o.target_recall) + " must be in (0, 1]");
  }
  if (o.max_rank < kMinRank) {
    throw std::invalid_argument("max rank " + std::to_string(o.max_rank) + " must be at least " +
                                std::to_string(kMinRank) + " (the smallest candidate rank)");
  }
  if (!kernels::is_weight_dtype(o.dtype)) {
    throw std::invalid_argument("predictor type " + std::string(kernels::dtype_name(o.dtype)) +
                                " is not a weight format (f32, f16, bf16, q8_0, q4_0, q4_k, q6_k)");
  }
  const int64_t block = kernels::dtype_traits(o.dtype).block_size;
  if (spec.n_embd % block != 0) {
    throw std::invalid_argument("predictor type " + std::string(kernels::dtype_name(o.dtype)) + " needs n_embd a multiple of " +
                                std::to_string(block) + ", the model has " + std::to_string(spec.n_embd));
  }
  if (!(o.holdout > 0.0 && o.holdout < 1.0)) {
    throw std::invalid_argument("held-out fraction " + std::to_string(o.holdout) + " must be in (0, 1)");
  }
  if (candidate_ranks(o, spec).empty()) {
    throw std::invalid_argument("no candidate rank: ranks 16, 32, ... up to max rank " + std::to_string(o.max_rank) +
                                " that are multiples of " + std::to_string(block) + " (the block of predictor type " +
                                std::string(kernels::dtype_name(o.dtype)) + ")" +
                                (o.kind == PredictorKind::Svd ? " and at most 2 min(n_embd, n_ff)" : "") +
                                "; raise the max rank or choose another type");
  }
}

std::vector<int64_t> candidate_ranks(const PredictorOptions& o, const model::ModelSpec& spec) {
  const int64_t block = kernels::dtype_traits(o.dtype).block_size;
  const int64_t limit = o.kind == PredictorKind::Svd ? std::min(o.max_rank, 2 * std::min(spec.n_embd, spec.n_ff))
                                                     : o.max_rank;
  std::vector<int64_t> ranks;
  for (int64_t r = kMinRank; r <= limit; r *= 2) {
    if (r % block == 0) ranks.push_back(r);
  }
  return ranks;
}

int64_t auto_max_rank(const model::ModelSpec& spec) {
  int64_t r = kMinRank;
  while (2 * r * (spec.n_embd + spec.n_ff) * 4 <= 3 * spec.n_ff * spec.n_embd) r *= 2;
  return r;
}

PredictorBuild build_predictors(const gguf::GgufFile& file, const model::ModelSpec& spec,
                                const PredictorSamples& samples, const PredictorOptions& o,
                                const PredictorProgress& progress) {
  check_predictor_options(o, spec);
  if (samples.n_layer != spec.n_layer || samples.n_embd != spec.n_embd || samples.n_ff != spec.n_ff) {
    throw std::invalid_argument("predictor samples were recorded on a model of another shape");
  }
  const auto start = std::chrono::steady_clock::now();
  PredictorBuild b;
  b.options = o;
  b.ffn_form = spec.ffn_form;
  b.n_embd = spec.n_embd;
  b.n_ff = spec.n_ff;
  b.n_samples = samples.n_samples;
  b.split = split_samples(samples.n_samples, o.holdout, o.seed);
  if (b.split.train.empty() || b.split.calib.empty() || b.split.eval.empty()) {
    throw std::invalid_argument("predictors: " + std::to_string(samples.n_samples) +
                                " recorded tokens are too few to train, calibrate and evaluate; record more");
  }
  const auto ranks = candidate_ranks(o, spec);
  PredictorOptions svd_options = o;
  svd_options.kind = PredictorKind::Svd;
  const auto svd_ranks = candidate_ranks(svd_options, spec);
  const bool baseline = o.kind == PredictorKind::Trained && o.compare_svd && !svd_ranks.empty();
  const bool need_factors = o.kind == PredictorKind::Svd || baseline || o.init_from_svd;

  std::mutex progress_mutex;
  int64_t done = 0, total = 0;
  const auto advance = [&](int64_t n) {
    const std::lock_guard lock(progress_mutex);
    done += n;
    if (progress) progress(done, total);
  };
  {
    const LayerBuilder probe(file, spec, samples, o, b.split, advance);
    total = spec.n_layer * (static_cast<int64_t>(ranks.size()) * probe.units(o.kind) +
                            (baseline ? static_cast<int64_t>(svd_ranks.size()) * probe.units(PredictorKind::Svd) : 0));
  }
  b.layers.resize(static_cast<size_t>(spec.n_layer));
  if (baseline) b.baseline.resize(static_cast<size_t>(spec.n_layer));
  std::atomic<int64_t> next_layer{0};
  kernels::ThreadPool threads(static_cast<int>(std::min<int64_t>(
      o.n_threads > 0 ? o.n_threads : kernels::ThreadPool::physical_cores(), spec.n_layer)));
  threads.run([&](int, int) {
    LayerBuilder builder(file, spec, samples, o, b.split, advance);
    for (int64_t l = next_layer++; l < spec.n_layer; l = next_layer++) {
      GateFactors factors;
      if (need_factors) factors = builder.factors(l, std::max(ranks.back(), baseline ? svd_ranks.back() : 0));
      const auto li = static_cast<size_t>(l);
      b.layers[li] = builder.build(o.kind, l, ranks, need_factors ? &factors : nullptr);
      if (baseline) b.baseline[li] = builder.build(PredictorKind::Svd, l, svd_ranks, &factors);
    }
  });
  b.global_threshold = b.layers.front().threshold;
  for (const auto& p : b.layers) b.global_threshold = std::min(b.global_threshold, p.threshold);
  b.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return b;
}

sparse::StatsSections predictor_sections(const PredictorBuild& build) {
  return [&build](gguf::GgufWriter& w) {
    std::vector<float> thresholds;
    for (const auto& p : build.layers) {
      // fc1 {n_embd, r}: r rows of n_embd; fc2 {r, n_ff}: n_ff rows of r.
      w.add_tensor(model::layer_tensor_name(p.layer, "fc1"), build.options.dtype, {build.n_embd, p.rank}, p.fc1);
      w.add_tensor(model::layer_tensor_name(p.layer, "fc2"), build.options.dtype, {p.rank, build.n_ff}, p.fc2);
      thresholds.push_back(p.threshold);
    }
    w.set(std::string(sparse::kLayerThresholdsKey), gguf::Value::f32_array(thresholds));
    w.set(std::string(sparse::kSparseThresholdKey), gguf::Value(build.global_threshold));
    w.set(std::string(kPredictorKindKey), gguf::Value(std::string(predictor_kind_name(build.options.kind))));
    w.set(std::string(kPredictorTargetRecallKey), gguf::Value(static_cast<float>(build.options.target_recall)));
  };
}

}  // namespace tc::profiler
