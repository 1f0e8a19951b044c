// [cuda] Lookup drafts on the CUDA backend, through the Engine (in
// tc_tests_model, which the GPU check runs). Decode steps there run as step
// graphs, and a drafted step is another shape, whose graph is made or
// updated. The engine's greedy tokens with drafts equal its tokens without,
// two sequences side by side, at draft_max 3, 7 (steps within the graphs'
// 8 tokens) and 16 (beyond them). Skipped with a message where no CUDA
// backend is available.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <vector>

#include "engine/runtime/engine.h"
#include "tests/engine/runtime/engine_test_util.h"
#include "tests/kernels/cuda/cuda_test_util.h"

using namespace engine_test;

namespace {

std::vector<TokenId> repeating_phrase(size_t n, int times, uint64_t seed) {
  const auto once = random_prompt(n + 1, seed);
  std::vector<TokenId> out = {1};
  for (int i = 0; i < times; ++i) out.insert(out.end(), once.begin() + 1, once.end());
  return out;
}

std::vector<Outcome> run(int32_t draft_max) {
  EngineOptions o = options(2);
  o.model.device = {.cuda = true, .index = 0};
  o.lookup_draft.n_max = draft_max;
  Engine engine(test_model("f16"), o);
  std::vector<std::shared_ptr<RequestHandle>> handles;
  handles.push_back(submit(engine, request(repeating_phrase(9, 4, 41), 48)));
  handles.push_back(submit(engine, request(repeating_phrase(13, 3, 42), 40)));
  std::vector<Outcome> out;
  for (auto& h : handles) {
    out.push_back(collect(*h, 120s));
    check_finished(out.back(), FinishReason::Length);
  }
  if (draft_max > 0) {
    REQUIRE(wait_until([&] { return engine.stats().generated_tokens_total == 88; }));
    CHECK(engine.stats().draft_tokens_total > 0);
  }
  return out;
}

}  // namespace

TEST_CASE("[cuda] lookup drafts on the GPU give the tokens without drafts", "[cuda][engine][lookup_draft]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  const auto plain = run(0);
  for (const int32_t draft_max : {3, 7, 16}) {
    INFO("draft_max " << draft_max);
    const auto drafted = run(draft_max);
    for (size_t i = 0; i < plain.size(); ++i) {
      INFO("request " << i);
      CHECK(drafted[i].tokens == plain[i].tokens);
      for (size_t t = 0; t < plain[i].infos.size(); ++t) {
        CHECK(std::abs(drafted[i].infos[t].logprob - plain[i].infos[t].logprob) <= 1e-3f);
      }
    }
  }
}
