// Fixtures of the hybrid-mode tests (hybrid_forward_test.cpp,
// hybrid_prefetch_test.cpp): planted sparse models, neuron placements, and
// a greedy prompt-then-decode run that keeps every step's logits.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/model/hybrid_weights.h"
#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "engine/sparse/gpu_index.h"
#include "engine/sparse/placement.h"
#include "engine/sparse/placement_costs.h"
#include "kernels/backend.h"
#include "profiler/make_model.h"
#include "tests/test_util.h"

namespace tc::test {

inline constexpr int64_t kHybridVocab = 512;

// A planted sparse ReLU model (make-model --sparse): n_embd 128, 10% of the
// neurons active per token, predictors of rank 32. f32/f16: n_ff 500, not a
// multiple of 32, so the bitmask's last word is partial; quantized ffn_down
// rows need whole blocks of 32: 544. `reshape` may change the options last.
inline std::unique_ptr<model::LoadedModel> planted_model(
    const std::string& name, bool pwri, const std::string& type, int64_t n_layer = 2,
    const std::function<void(profiler::MakeModelOptions&)>& reshape = {}) {
  profiler::MakeModelOptions o;
  o.output = scratch_dir("hybrid_forward_" + name) / "m.gguf";
  o.n_vocab = kHybridVocab;
  o.n_embd = 128;
  o.n_layer = n_layer;
  o.n_ff = type == "f32" || type == "f16" ? 500 : 544;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.n_ctx = 128;
  o.weight_type = type;
  o.ffn_form = model::FfnForm::ReGLU;
  o.seed = 33;
  o.n_threads = 2;
  o.sparse.enabled = true;
  o.sparse.active = 0.10;
  o.sparse.predictor_rank = 32;
  o.sparse.layout = pwri ? profiler::SparseLayout::PowerInfer : profiler::SparseLayout::Gguf;
  if (reshape) reshape(o);
  profiler::make_model(o);
  return model::load_model(o.output);
}

// Every `step`-th neuron of each layer hot, from `first` (step 1: all; an empty plan: none).
inline model::NeuronPlacement strided_hot(const model::ModelSpec& spec, int32_t first, int32_t step) {
  model::NeuronPlacement p;
  p.hot.resize(static_cast<size_t>(spec.n_layer));
  for (auto& layer : p.hot) {
    for (int32_t i = first; i < spec.n_ff; i += step) layer.push_back(i);
  }
  return p;
}
inline model::NeuronPlacement all_hot(const model::ModelSpec& spec) { return strided_hot(spec, 0, 1); }
inline model::NeuronPlacement none_hot(const model::ModelSpec& spec) { return strided_hot(spec, spec.n_ff, 1); }

// The solver's plan for half of the FFN bytes, from power-law firing counts
// (neuron i of layer l fires ~ 1 / (1 + (i * 37 + l) % n_ff)), written to a
// .gpuidx and read back as the CLI reads it.
inline model::NeuronPlacement solver_placement(const model::LoadedModel& m, const std::string& name) {
  const sparse::PlacementShape shape{.n_ctx = 64, .n_parallel = 2, .n_batch = 16};
  const auto costs = sparse::placement_costs(m.file, m.spec, m.predictors, shape);
  std::vector<std::vector<int32_t>> fire_counts(static_cast<size_t>(m.spec.n_layer));
  uint64_t ffn_bytes = 0;
  for (int64_t l = 0; l < m.spec.n_layer; ++l) {
    for (int64_t i = 0; i < m.spec.n_ff; ++i) {
      fire_counts[static_cast<size_t>(l)].push_back(static_cast<int32_t>(100000 / (1 + (i * 37 + l) % m.spec.n_ff)));
    }
    ffn_bytes += costs.layers[static_cast<size_t>(l)].bytes() * static_cast<uint64_t>(m.spec.n_ff);
  }
  const auto plan = sparse::solve_placement(costs, fire_counts, costs.fixed.total() + ffn_bytes / 2);
  REQUIRE(plan.n_hot() > 0);
  REQUIRE(plan.n_hot() < plan.n_neurons());
  sparse::GpuIndex index;
  index.vram_capacity = plan.neuron_budget();
  index.n_ff = m.spec.n_ff;
  for (const auto& layer : plan.layers) index.hot.push_back(layer.hot);
  const auto path = scratch_dir("hybrid_forward_gpuidx_" + name) / "m.generated.gpuidx";
  sparse::write_gpu_index(index, path);
  return model::NeuronPlacement{sparse::read_gpu_index(path, m.spec.n_layer, m.spec.n_ff).hot};
}

inline double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (const float x : v) m = std::max(m, static_cast<double>(std::abs(x)));
  return m;
}

// A prompt (one step), then `n_decode` greedy steps: the tokens and every step's logits.
struct GreedyRun {
  std::vector<text::TokenId> tokens;
  std::vector<float> logits;
};
inline GreedyRun greedy(model::LlamaModel& m, kernels::Backend& backend, const std::vector<text::TokenId>& prompt,
                        int n_decode) {
  runtime::KvCache kv(backend, m.spec(), 1, 96);
  GreedyRun run;
  std::vector<float> logits;
  const model::StepSequence first{0, prompt, false};
  REQUIRE(m.forward({&first, 1}, kv, logits) == model::StepStatus::Ok);
  for (int step = 0;; ++step) {
    run.logits.insert(run.logits.end(), logits.begin(), logits.end());
    run.tokens.push_back(static_cast<text::TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin()));
    if (step == n_decode) break;
    const model::StepSequence next{0, std::span(&run.tokens.back(), 1), false, true};
    REQUIRE(m.forward({&next, 1}, kv, logits) == model::StepStatus::Ok);
  }
  return run;
}

}  // namespace tc::test
