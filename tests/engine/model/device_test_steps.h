// What the device-path tests run: a small generated model (vocabulary
// kDeviceTestVocab), and a sequence of steps on it: two prompts prefilled
// in one step (9 and 5 tokens, the first with every position's logits),
// then decode steps of both sequences, then optionally one step of the
// first sequence alone (another step shape), every step's logits
// concatenated, for comparing backends bit for bit.
#pragma once

#include <catch2/catch.hpp>

#include <span>
#include <vector>

#include <memory>
#include <string>

#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "engine/runtime/kv_cache.h"
#include "kernels/backend.h"
#include "profiler/make_model.h"
#include "tests/test_util.h"

namespace tc::test {

inline constexpr int64_t kDeviceTestVocab = 512;

// 2 layers, n_embd 64, n_ff 192, GQA 4/2, in weight type `type`; `name`
// names its scratch folder. sparse: ReGLU with planted sparsity and
// predictors (pwri: PowerInfer's layout).
inline std::unique_ptr<model::LoadedModel> small_device_model(const std::string& name, const std::string& type,
                                                              bool tied = false, bool sparse = false,
                                                              bool pwri = false) {
  profiler::MakeModelOptions o;
  o.output = scratch_dir("device_forward_" + name) / "m.gguf";
  o.n_vocab = kDeviceTestVocab;
  o.n_embd = 64;
  o.n_layer = 2;
  o.n_ff = 192;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.n_ctx = 128;
  o.weight_type = type;
  o.tied_embeddings = tied;
  o.seed = 5;
  o.n_threads = 2;
  if (sparse) {
    o.ffn_form = model::FfnForm::ReGLU;
    o.sparse.enabled = true;
    o.sparse.predictor_rank = 32;
    o.sparse.layout = pwri ? profiler::SparseLayout::PowerInfer : profiler::SparseLayout::Gguf;
  }
  profiler::make_model(o);
  return model::load_model(o.output);
}

inline std::vector<float> run_two_sequences(model::LlamaModel& m, kernels::Backend& backend, int decode_steps,
                                            bool then_one_alone = false) {
  constexpr int64_t n_vocab = kDeviceTestVocab;
  runtime::KvCache kv(backend, m.spec(), 2, 64);
  const auto a = random_tokens(9, 1, n_vocab);
  const auto b = random_tokens(5, 2, n_vocab);
  std::vector<float> all, logits;
  const model::StepSequence prefill[] = {{0, a, true}, {1, b, false}};
  REQUIRE(m.forward(prefill, kv, logits) == model::StepStatus::Ok);
  all.insert(all.end(), logits.begin(), logits.end());
  for (int step = 0; step < decode_steps; ++step) {
    const text::TokenId next_a = static_cast<text::TokenId>((7 * step + 3) % n_vocab);
    const text::TokenId next_b = static_cast<text::TokenId>((11 * step + 5) % n_vocab);
    const model::StepSequence decode[] = {{0, std::span(&next_a, 1), false, true},
                                          {1, std::span(&next_b, 1), false, true}};
    REQUIRE(m.forward(decode, kv, logits) == model::StepStatus::Ok);
    all.insert(all.end(), logits.begin(), logits.end());
  }
  if (then_one_alone) {
    const text::TokenId last = static_cast<text::TokenId>(42 % n_vocab);
    const model::StepSequence alone[] = {{0, std::span(&last, 1), false, true}};
    REQUIRE(m.forward(alone, kv, logits) == model::StepStatus::Ok);
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

}  // namespace tc::test
