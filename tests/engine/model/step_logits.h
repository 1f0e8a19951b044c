// Test helpers: every position's logits from a prompt run in one step and
// then the rest of the tokens one per step through the KV cache, or from
// every token in its own step, for comparing a model on two backends (or
// two modes, or against a reference) position by position.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

#include "engine/model/llama_model.h"
#include "engine/runtime/kv_cache.h"

namespace tc::test {

// The largest |a[i] - b[i]|, in units of b's largest |value|.
inline double relative_max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

// f32 [tokens.size(), n_vocab]: the prompt's n_prompt positions (one step,
// all_logits), then one row per decode step. The KV cache: 1 slot, 64 tokens.
inline std::vector<float> prompt_then_decode_logits(model::LlamaModel& m, kernels::Backend& backend,
                                                    const std::vector<text::TokenId>& tokens, size_t n_prompt) {
  runtime::KvCache kv(backend, m.spec(), 1, 64);
  std::vector<float> all, logits;
  const model::StepSequence prompt{0, std::span(tokens.data(), n_prompt), true};
  REQUIRE(m.forward({&prompt, 1}, kv, logits) == model::StepStatus::Ok);
  all = logits;
  for (size_t i = n_prompt; i < tokens.size(); ++i) {
    const model::StepSequence step{0, std::span(tokens.data() + i, 1), false, true};
    REQUIRE(m.forward({&step, 1}, kv, logits) == model::StepStatus::Ok);
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

// f32 [tokens.size(), n_vocab]: one token per step (decode steps, the
// sparse FFN's path) from an empty KV cache of 1 slot, 64 tokens.
inline std::vector<float> decode_each_logits(model::LlamaModel& m, kernels::Backend& backend,
                                             const std::vector<text::TokenId>& tokens) {
  runtime::KvCache kv(backend, m.spec(), 1, 64);
  std::vector<float> all, logits;
  for (const text::TokenId& t : tokens) {
    const model::StepSequence step{0, std::span(&t, 1), false, true};
    REQUIRE(m.forward({&step, 1}, kv, logits) == model::StepStatus::Ok);
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

// The last token's logits (f32 [n_vocab]) with the prompt in pieces: its
// first `split` tokens in one step beside slot 1's first 7 tokens, then the
// rest one per step (a KV cache of 2 slots, 64 tokens each); the same as
// the whole prompt in one step where pieces and neighbours change nothing.
inline std::vector<float> last_logits_in_pieces(model::LlamaModel& m, const std::vector<text::TokenId>& tokens,
                                                size_t split) {
  runtime::KvCache kv = m.make_kv_cache(2, 64);
  const std::span<const text::TokenId> all(tokens);
  std::vector<float> logits;
  const model::StepSequence first[] = {{0, all.first(split), false}, {1, all.first(7), false}};
  REQUIRE(m.forward(first, kv, logits) == model::StepStatus::Ok);
  for (size_t i = split; i < tokens.size(); ++i) {
    const model::StepSequence one{0, all.subspan(i, 1), false};
    REQUIRE(m.forward({&one, 1}, kv, logits) == model::StepStatus::Ok);
  }
  return logits;
}

}  // namespace tc::test
