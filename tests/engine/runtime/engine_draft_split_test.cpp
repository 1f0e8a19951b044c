// Lookup drafts where the forward is not the plain CPU one: the sparse FFN
// (a drafted chunk of generated tokens runs it too), hybrid mode and layer
// offload on the fake GPU (HostDeviceBackend). Each gives the greedy tokens
// of the same setup without drafts, on prompts that repeat so that drafts
// are made.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/runtime/engine.h"
#include "engine/sparse/place_model.h"
#include "tests/engine/runtime/gpu_split_fixtures.h"
#include "tests/test_util.h"

using namespace std::chrono_literals;
using tc::config::GpuSplitMode;
using tc::runtime::Engine;
using tc::runtime::EngineOptions;
using tc::test::gpu_split::MadeBackends;
using tc::text::TokenId;

namespace {

constexpr int64_t kCtx = 128;

using tc::test::gpu_split::fake_cuda;
using tc::test::gpu_split::Reply;

struct Run {
  std::vector<Reply> replies;
  int64_t drafted = 0;
  std::string summary;
};

// A random phrase said three times after BOS.
std::vector<TokenId> repeating(size_t n, uint64_t seed) {
  const auto phrase = tc::test::random_tokens(n, seed, tc::test::gpu_split::kVocab);
  std::vector<TokenId> out = {1};
  for (int i = 0; i < 3; ++i) out.insert(out.end(), phrase.begin(), phrase.end());
  return out;
}

// Two greedy requests of 24 tokens decoded side by side.
Run run(std::shared_ptr<const tc::model::LoadedModel> loaded, tc::runtime::ModelSetup setup, int32_t draft_max) {
  EngineOptions o;
  o.n_parallel = 2;
  o.n_ctx = kCtx;
  o.n_batch = 32;
  o.model = std::move(setup);
  o.model.threads = 2;
  o.lookup_draft.n_max = draft_max;
  Engine engine(std::move(loaded), o);
  std::vector<std::shared_ptr<tc::runtime::RequestHandle>> handles;
  for (const auto& [n, seed] : {std::pair{7, 71}, std::pair{5, 72}}) {
    tc::runtime::GenerationRequest r;
    r.prompt = repeating(static_cast<size_t>(n), static_cast<uint64_t>(seed));
    r.max_tokens = 24;
    r.sampling.temperature = 0.0f;
    r.ignore_eos = true;
    r.return_tokens = true;
    auto submitted = engine.submit(std::move(r));
    INFO(submitted.message);
    REQUIRE(submitted.status == tc::runtime::SubmitStatus::Ok);
    handles.push_back(submitted.handle);
  }
  Run out;
  for (auto& handle : handles) {
    Reply reply = tc::test::gpu_split::collect_reply(*handle, engine);
    REQUIRE(reply.tokens.size() == 24);
    out.replies.push_back(std::move(reply));
  }
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  while (engine.stats().generated_tokens_total < 48 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  out.drafted = engine.stats().draft_tokens_total;
  for (const auto& line : engine.setup_summary()) out.summary += line + "\n";
  return out;
}

void check_same(const Run& got, const Run& want, float logprob_tolerance) {
  REQUIRE(got.replies.size() == want.replies.size());
  for (size_t i = 0; i < want.replies.size(); ++i) {
    INFO("request " << i);
    CHECK(got.replies[i].tokens == want.replies[i].tokens);
    for (size_t t = 0; t < want.replies[i].logprobs.size(); ++t) {
      INFO("token " << t);
      CHECK(std::abs(got.replies[i].logprobs[t] - want.replies[i].logprobs[t]) <= logprob_tolerance);
    }
  }
}

}  // namespace

TEST_CASE("lookup drafts on the sparse FFN and in hybrid mode give the tokens without drafts",
          "[engine][lookup_draft][hybrid]") {
  const auto loaded = tc::test::gpu_split::sparse_model_with_stats();
  const Run plain = run(loaded, {}, 0);
  REQUIRE_THAT(plain.summary, Catch::Contains("sparsity: sparse FFN"));
  CHECK(plain.drafted == 0);
  const Run drafted = run(loaded, {}, 8);
  CHECK(drafted.drafted > 0);
  check_same(drafted, plain, 1e-3f);

  const tc::sparse::PlacementShape shape{.n_ctx = kCtx, .n_parallel = 2, .n_batch = 32};
  tc::config::GpuSplitSetting split;
  split.mode = GpuSplitMode::HybridAuto;
  split.vram_budget = tc::test::gpu_split::half_ffn_budget(*loaded, shape);
  MadeBackends made;
  const Run hybrid = run(loaded, fake_cuda(made, split), 8);
  REQUIRE_THAT(hybrid.summary, Catch::Contains("hybrid: "));
  CHECK(hybrid.drafted > 0);
  // Split sums differ from the CPU's in the last bits (docs/hybrid.md, Numerics).
  check_same(hybrid, plain, 1e-3f);
}

TEST_CASE("lookup drafts in layer offload give the tokens without drafts", "[engine][lookup_draft][offload]") {
  const auto loaded = tc::test::gpu_split::dense_model();
  tc::runtime::ModelSetup dense;
  dense.sparsity.mode = tc::config::SparsityMode::Dense;
  const Run plain = run(loaded, dense, 0);
  tc::config::GpuSplitSetting split;
  split.mode = GpuSplitMode::LayerOffload;
  split.offload_layers = 2;
  MadeBackends made;
  auto setup = fake_cuda(made, split);
  setup.sparsity.mode = tc::config::SparsityMode::Dense;
  const Run offload = run(loaded, setup, 8);
  REQUIRE_THAT(offload.summary, Catch::Contains("layer offload: the first 2 of"));
  CHECK(offload.drafted > 0);
  check_same(offload, plain, 1e-4f);
}
