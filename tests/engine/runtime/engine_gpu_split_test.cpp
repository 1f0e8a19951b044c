// The server's Engine with a GPU split, the "GPU" being HostDeviceBackend:
// hybrid mode (placement solved at start, or from `place`'s file) gives the
// CPU-only sparse engine's greedy tokens (and its engine view counts every
// predicted neuron on one side), layer offload (by K or by budget) the
// CPU-only dense engine's tokens and logprobs bit for bit; a split that
// cannot be set up leaves the engine Failed with the reason, including a
// `--device cuda` build or machine without CUDA.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/runtime/engine.h"
#include "engine/sparse/layer_offload_plan.h"
#include "engine/sparse/place_model.h"
#include "engine/sparse/placement.h"
#include "kernels/device_info.h"
#include "tests/engine/runtime/gpu_split_fixtures.h"
#include "tests/test_util.h"

using namespace std::chrono_literals;
using tc::config::GpuSplitMode;
using tc::runtime::Engine;
using tc::runtime::EngineOptions;
using tc::runtime::EngineState;
using tc::runtime::SubmitStatus;
using tc::test::gpu_split::MadeBackends;
using tc::text::TokenId;

namespace {

constexpr int kParallel = 2;
constexpr int64_t kCtx = 128;
constexpr int64_t kBatch = 32;

using Completion = tc::test::gpu_split::Reply;  // greedy tokens and their logprobs of one request
using tc::test::gpu_split::fake_cuda;

struct EngineRun {
  std::vector<Completion> completions;  // one per prompt, in order
  std::string summary;                  // Engine::setup_summary(), one line each
  tc::runtime::FfnActivity activity;    // Engine::ffn_activity() at the end
  // The fake GPU's bus counters at the end, read while the engine that owns
  // the backend lives (run_engine's `made`; all 0 without one).
  size_t n_devices = 0;
  size_t uploaded_bytes = 0, to_device_bytes = 0, to_host_bytes = 0;
};

EngineOptions engine_options(tc::runtime::ModelSetup model) {
  EngineOptions o;
  o.n_parallel = kParallel;
  o.n_ctx = kCtx;
  o.n_batch = kBatch;
  o.model = std::move(model);
  o.model.threads = 2;
  return o;
}

// Two requests decoded together (16 greedy tokens each, past EOS) until both finish.
EngineRun run_engine(std::shared_ptr<const tc::model::LoadedModel> loaded, const EngineOptions& options,
                     const MadeBackends* made = nullptr) {
  Engine engine(std::move(loaded), options);
  std::vector<std::shared_ptr<tc::runtime::RequestHandle>> handles;
  for (const auto& [n_prompt, seed] : {std::pair{9, 61}, std::pair{6, 62}}) {
    tc::runtime::GenerationRequest r;
    r.prompt = tc::test::random_tokens(static_cast<size_t>(n_prompt), static_cast<uint64_t>(seed),
                                       tc::test::gpu_split::kVocab);
    r.max_tokens = 16;
    r.sampling.temperature = 0.0f;
    r.ignore_eos = true;
    r.return_tokens = true;
    auto submitted = engine.submit(std::move(r));
    INFO(submitted.message);
    REQUIRE(submitted.status == SubmitStatus::Ok);
    handles.push_back(submitted.handle);
  }
  EngineRun run;
  for (auto& handle : handles) {
    Completion c = tc::test::gpu_split::collect_reply(*handle, engine);
    REQUIRE(c.tokens.size() == 16);
    run.completions.push_back(std::move(c));
  }
  CHECK(engine.state() == EngineState::Ready);
  for (const auto& line : engine.setup_summary()) run.summary += line + "\n";
  run.activity = engine.ffn_activity();
  if (made != nullptr && !made->devices.empty()) {
    run.n_devices = made->devices.size();
    run.uploaded_bytes = made->devices[0]->uploaded_bytes;
    run.to_device_bytes = made->devices[0]->to_device_bytes;
    run.to_host_bytes = made->devices[0]->to_host_bytes;
  }
  return run;
}

// The engine's failure once it left Loading; fails the test if it did not fail.
std::string start_failure(std::shared_ptr<const tc::model::LoadedModel> loaded, const EngineOptions& options) {
  Engine engine(std::move(loaded), options);
  const auto give_up = std::chrono::steady_clock::now() + 60s;
  while (engine.state() == EngineState::Loading && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(10ms);
  }
  REQUIRE(engine.state() == EngineState::Failed);
  CHECK(engine.submit({}).status == SubmitStatus::InvalidRequest);  // validation still answers
  CHECK(engine.setup_summary().empty());
  return engine.stats().failure;
}

void check_same_tokens(const EngineRun& got, const EngineRun& want, double logprob_tolerance) {
  REQUIRE(got.completions.size() == want.completions.size());
  for (size_t i = 0; i < want.completions.size(); ++i) {
    INFO("request " << i);
    CHECK(got.completions[i].tokens == want.completions[i].tokens);
    for (size_t t = 0; t < want.completions[i].logprobs.size(); ++t) {
      INFO("token " << t);
      const float a = got.completions[i].logprobs[t], b = want.completions[i].logprobs[t];
      if (logprob_tolerance == 0) {
        CHECK(std::memcmp(&a, &b, sizeof a) == 0);
      } else {
        CHECK(std::abs(a - b) <= logprob_tolerance);
      }
    }
  }
}

}  // namespace

TEST_CASE("the engine in hybrid mode gives the CPU-only sparse engine's greedy tokens", "[engine][hybrid]") {
  std::filesystem::path stats_path;
  const auto loaded = tc::test::gpu_split::sparse_model_with_stats(&stats_path);
  const auto cpu = run_engine(loaded, engine_options({}));
  REQUIRE_THAT(cpu.summary, Catch::Contains("sparsity: sparse FFN"));

  // About half of the FFN bytes hot, for the engine's own shape.
  const tc::sparse::PlacementShape shape{.n_ctx = kCtx, .n_parallel = kParallel, .n_batch = kBatch};
  const uint64_t budget = tc::test::gpu_split::half_ffn_budget(*loaded, shape);
  const auto plan = tc::sparse::place_loaded_model(*loaded, budget, shape);
  REQUIRE(plan.n_hot() > 0);
  REQUIRE(plan.n_hot() < plan.n_neurons());

  tc::config::GpuSplitSetting split;  // prefetch auto, the default
  int64_t expected_hot = plan.n_hot();
  SECTION("placement auto: solved at start") {
    split.mode = GpuSplitMode::HybridAuto;
    split.vram_budget = budget;
    // The prefetch caches come out of the budget first.
    const uint64_t reserve = tc::test::gpu_split::prefetch_cache_reserve(*loaded, shape);
    expected_hot = tc::sparse::place_loaded_model(*loaded, budget - reserve, shape).n_hot();
    REQUIRE(expected_hot > 0);
  }
  SECTION("a placement file from `place`") {
    split.mode = GpuSplitMode::HybridFile;
    split.placement_file =
        tc::test::gpu_split::write_placement_file(*loaded, stats_path, budget, shape, "engine_hybrid_file");
  }
  MadeBackends made;
  const auto hybrid = run_engine(loaded, engine_options(fake_cuda(made, split)), &made);
  // Split sums differ from the CPU's in the last bits (docs/hybrid.md, Numerics).
  check_same_tokens(hybrid, cpu, 1e-3);
  CHECK_THAT(hybrid.summary, Catch::Contains("hybrid: " + std::to_string(expected_hot) + " of " +
                                             std::to_string(plan.n_neurons()) + " FFN neurons hot"));
  // The engine view's counters: every predicted neuron ran on one side.
  CHECK(cpu.activity.mode == "sparse");
  const auto& a = hybrid.activity;
  CHECK(a.mode == "hybrid");
  CHECK(a.window_steps > 0);
  REQUIRE(a.predicted.size() == static_cast<size_t>(loaded->spec.n_layer));
  int64_t on_device = 0;
  for (size_t l = 0; l < a.predicted.size(); ++l) {
    CHECK(a.predicted[l] > 0);
    CHECK(a.hot[l] + a.cached[l] + a.cold[l] == a.predicted[l]);
    on_device += a.hot[l];
  }
  CHECK(on_device > 0);
  CHECK(hybrid.n_devices == 1);
  CHECK(made.n_cpu == 1);
  CHECK(hybrid.uploaded_bytes > 0);  // the hot rows and the rest, at load
  CHECK(hybrid.to_host_bytes > 0);   // active sets and logits, per step
}

TEST_CASE("the engine in layer offload mode gives the CPU-only dense engine's tokens bit for bit",
          "[engine][offload]") {
  const auto loaded = tc::test::gpu_split::dense_model();
  tc::runtime::ModelSetup dense;
  dense.sparsity.mode = tc::config::SparsityMode::Dense;
  const auto cpu = run_engine(loaded, engine_options(dense));
  const int64_t n_layer = loaded->spec.n_layer;
  const tc::sparse::PlacementShape shape{.n_ctx = kCtx, .n_parallel = kParallel, .n_batch = kBatch};
  const auto costs = tc::sparse::layer_offload_costs(loaded->file, loaded->spec, shape);

  tc::config::GpuSplitSetting split;
  split.mode = GpuSplitMode::LayerOffload;
  int64_t want_k = 0;
  SECTION("--offload-layers 1") {
    split.offload_layers = want_k = 1;
  }
  SECTION("every layer, the head too") {
    split.offload_layers = want_k = n_layer;
  }
  SECTION("--vram-budget: the largest K that fits") {
    split.vram_budget = costs.device_bytes(2);
    want_k = 2;
  }
  MadeBackends made;
  auto setup = fake_cuda(made, split);
  setup.sparsity.mode = tc::config::SparsityMode::Dense;
  const auto offload = run_engine(loaded, engine_options(setup), &made);
  check_same_tokens(offload, cpu, 0);
  CHECK_THAT(offload.summary, Catch::Contains("layer offload: the first " + std::to_string(want_k) + " of " +
                                              std::to_string(n_layer) + " layers"));
  CHECK(offload.activity.mode == "dense");
  CHECK(offload.activity.predicted.empty());
  CHECK(offload.n_devices == 1);
  CHECK(offload.uploaded_bytes > 0);
  CHECK(offload.to_device_bytes > 0);
}

TEST_CASE("an engine whose GPU split cannot be set up fails at start with the reason", "[engine][hybrid]") {
  MadeBackends made;
  tc::config::GpuSplitSetting split;
  split.mode = GpuSplitMode::LayerOffload;
  split.offload_layers = 4;
  auto setup = fake_cuda(made, split);
  setup.sparsity.mode = tc::config::SparsityMode::Dense;
  CHECK_THAT(start_failure(tc::test::gpu_split::dense_model(), engine_options(setup)),
             Catch::Contains("engine failed to start") && Catch::Contains("has 3 layers"));

  split.mode = GpuSplitMode::HybridAuto;
  split.offload_layers = -1;
  split.vram_budget = uint64_t{1} << 30;
  CHECK_THAT(start_failure(tc::test::gpu_split::sparse_model_without_stats(), engine_options(fake_cuda(made, split))),
             Catch::Contains("--placement auto") && Catch::Contains("--stats"));
}

TEST_CASE("device cuda with placement auto, in a build or machine without CUDA, fails with the backend's reason",
          "[engine][hybrid]") {
  const auto gpus = tc::kernels::query_gpus();
  if (gpus.cuda_built && !gpus.devices.empty()) {
    WARN("a CUDA device is present (" << gpus.status << "): nothing to refuse here");
    return;
  }
  tc::runtime::ModelSetup setup;  // the real backend factory
  setup.device = {.cuda = true, .index = 0};
  setup.gpu_split.mode = GpuSplitMode::HybridAuto;  // no budget: it would need the GPU's free memory too
  const std::string failure = start_failure(tc::test::gpu_split::sparse_model_with_stats(), engine_options(setup));
  CHECK_THAT(failure, Catch::Contains("engine failed to start") && Catch::Contains("CUDA"));
  CHECK_THAT(failure, !Catch::Contains("--vram-budget"));  // the backend's reason comes first
}
