// PredictorRecorder (reservoir sampling of ffn_in rows and firing bits) and
// the pass over the corpus that drives it.
#include "profiler/predictor_samples.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>

#include "engine/runtime/kv_cache.h"
#include "kernels/check.h"
#include "profiler/profile.h"

namespace tc::profiler {

uint64_t predictor_samples_bytes(int64_t n_layer, int64_t n_embd, int64_t n_ff, int64_t max_samples) {
  const auto row = static_cast<uint64_t>(4 * n_embd + 8 * ((n_ff + 63) / 64));
  return static_cast<uint64_t>(n_layer) * static_cast<uint64_t>(max_samples) * row;
}

void require_relu_ffn(const model::ModelSpec& spec) {
  if (model::is_relu_family(spec.ffn_form)) return;
  throw std::invalid_argument("predictors need a ReLU-family model (ffn form reglu, drelu or relu); '" + spec.name +
                              "' is " + std::string(model::ffn_form_name(spec.ffn_form)) +
                              ", whose activations have no exact zeros to predict");
}

PredictorRecorder::PredictorRecorder(const model::ModelSpec& spec, int64_t max_samples, uint64_t seed)
    : rule_(sparse::firing_rule_for(spec.ffn_form)), max_samples_(max_samples), rng_(seed) {
  require_relu_ffn(spec);
  if (max_samples < 1) throw std::invalid_argument("predictor samples: keep at least 1 token per layer");
  samples_.n_layer = spec.n_layer;
  samples_.n_embd = spec.n_embd;
  samples_.n_ff = spec.n_ff;
  samples_.x.resize(static_cast<size_t>(spec.n_layer));
  samples_.fired.resize(static_cast<size_t>(spec.n_layer));
}

void PredictorRecorder::on_ffn(int64_t layer, int64_t n_tokens, const float* ffn_in, const float* gate,
                               const float* up) {
  auto& s = samples_;
  if (layer == 0) {
    // Algorithm R: token g (0-based) fills slot g while there is room, then
    // replaces a random slot with probability max_samples / (g + 1).
    step_slots_.assign(static_cast<size_t>(n_tokens), -1);
    for (int64_t t = 0; t < n_tokens; ++t) {
      const int64_t g = s.n_seen + t;
      if (g < max_samples_) {
        step_slots_[static_cast<size_t>(t)] = g;
      } else {
        const auto j = static_cast<int64_t>(draw_below(rng_(), static_cast<uint64_t>(g + 1)));
        if (j < max_samples_) step_slots_[static_cast<size_t>(t)] = j;
      }
    }
    s.n_seen += n_tokens;
    s.n_samples = std::min(s.n_seen, max_samples_);
  }
  TC_CHECK(static_cast<int64_t>(step_slots_.size()) == n_tokens, "predictor recorder: layers saw different steps");
  auto& xs = s.x[static_cast<size_t>(layer)];
  auto& bits = s.fired[static_cast<size_t>(layer)];
  const int64_t n_words = s.n_words();
  xs.resize(static_cast<size_t>(s.n_samples * s.n_embd));
  bits.resize(static_cast<size_t>(s.n_samples * n_words));
  for (int64_t t = 0; t < n_tokens; ++t) {
    const int64_t slot = step_slots_[static_cast<size_t>(t)];
    if (slot < 0) continue;
    std::memcpy(xs.data() + slot * s.n_embd, ffn_in + t * s.n_embd, static_cast<size_t>(s.n_embd) * sizeof(float));
    const float* g = gate + t * s.n_ff;  // f32 [n_ff]
    const float* u = up + t * s.n_ff;    // f32 [n_ff]
    uint64_t* out = bits.data() + slot * n_words;
    std::fill(out, out + n_words, uint64_t{0});
    for (int64_t i = 0; i < s.n_ff; ++i) {
      // The ReLU rules have no threshold (require_relu_ffn).
      out[i / 64] |= static_cast<uint64_t>(sparse::fires(rule_, g[i], u[i], 0.0f)) << (i % 64);
    }
  }
}

PredictorSamples PredictorRecorder::take() {
  PredictorSamples out = std::move(samples_);
  samples_ = PredictorSamples{out.n_layer, out.n_embd, out.n_ff, 0, 0, {}, {}};
  samples_.x.resize(static_cast<size_t>(out.n_layer));
  samples_.fired.resize(static_cast<size_t>(out.n_layer));
  return out;
}

namespace {

// Detaches the observer however the run ends.
struct ObserverGuard {
  model::LlamaModel& model;
  ~ObserverGuard() { model.set_observer(nullptr); }
};

}  // namespace

PredictorSamples record_predictor_samples(const model::LoadedModel& loaded, kernels::Backend& backend,
                                          std::span<const text::TokenId> tokens, text::TokenId bos,
                                          const RecordOptions& options, const RecordProgress& progress) {
  const auto& spec = loaded.spec;
  require_relu_ffn(spec);
  if (options.n_ctx < 1 || options.n_batch < 1) {
    throw std::invalid_argument("predictor samples: context and batch must hold at least 1 token");
  }
  if (options.max_samples < 1) throw std::invalid_argument("predictor samples: keep at least 1 token per layer");
  const auto n_corpus = static_cast<int64_t>(tokens.size());
  if (n_corpus == 0) throw std::invalid_argument("predictor samples: the corpus has no tokens");
  const int64_t n_ctx = std::min(options.n_ctx, n_corpus);
  const int64_t n_batch = std::min(options.n_batch, n_ctx);
  const int64_t want = options.n_tokens > 0 ? options.n_tokens : 4 * options.max_samples;
  // Chunks of the whole corpus; run n_run of them, evenly spaced.
  const int64_t n_chunks = (n_corpus + n_ctx - 1) / n_ctx;
  const int64_t n_run = std::clamp<int64_t>((want + n_ctx - 1) / n_ctx, 1, n_chunks);
  std::vector<int64_t> starts;
  for (int64_t k = 0; k < n_run; ++k) starts.push_back((k * n_chunks / n_run) * n_ctx);

  model::LlamaModel llama(loaded, backend);
  runtime::KvCache kv(backend, spec, 1, n_ctx);
  PredictorRecorder recorder(spec, options.max_samples, options.seed);
  llama.set_observer(&recorder);
  const ObserverGuard guard{llama};
  run_corpus_chunks(llama, kv, tokens, bos, starts, n_ctx, n_batch, "predictor samples", progress);
  return recorder.take();
}

SampleSplit split_samples(int64_t n_samples, double holdout, uint64_t seed) {
  if (!(holdout > 0.0 && holdout < 1.0)) {
    throw std::invalid_argument("predictor samples: the held-out fraction must be in (0, 1), got " +
                                std::to_string(holdout));
  }
  std::vector<int64_t> order(static_cast<size_t>(n_samples));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::mt19937_64 rng(seed);
  for (int64_t i = n_samples - 1; i > 0; --i) {
    std::swap(order[static_cast<size_t>(i)],
              order[static_cast<size_t>(draw_below(rng(), static_cast<uint64_t>(i + 1)))]);
  }
  const auto n_held = static_cast<int64_t>(holdout * static_cast<double>(n_samples));
  const int64_t n_calib = n_held / 2;
  const int64_t n_train = n_samples - n_held;
  SampleSplit split;
  split.train.assign(order.begin(), order.begin() + n_train);
  split.calib.assign(order.begin() + n_train, order.begin() + n_train + n_calib);
  split.eval.assign(order.begin() + n_train + n_calib, order.end());
  // Ascending indices: the gathers read memory in order.
  std::sort(split.train.begin(), split.train.end());
  std::sort(split.calib.begin(), split.calib.end());
  std::sort(split.eval.begin(), split.eval.end());
  return split;
}

}  // namespace tc::profiler
