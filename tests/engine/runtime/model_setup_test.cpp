// set_up_model, the one set-up of serve's Engine and the CLI: the device
// backend comes first (its reason wins), each GPU split builds what it says
// (hybrid from a file or solved from the stats, layer offload by K or by
// budget, the KV cache split at K), and what depends on the model is
// refused naming the option. The "GPU" is HostDeviceBackend.
#include <catch2/catch.hpp>

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "config/gpu_split_setting.h"
#include "engine/model/hybrid_prefetch.h"
#include "engine/runtime/model_setup.h"
#include "engine/sparse/layer_offload_plan.h"
#include "engine/sparse/place_model.h"
#include "engine/sparse/placement.h"
#include "engine/sparse/placement_costs.h"
#include "kernels/backend.h"
#include "profiler/make_model.h"
#include "tests/engine/runtime/gpu_split_fixtures.h"
#include "tests/test_util.h"

using tc::config::GpuSplitMode;
using tc::runtime::ModelSetup;
using tc::runtime::set_up_model;
using tc::test::gpu_split::MadeBackends;

namespace {

const tc::sparse::PlacementShape kShape{.n_ctx = 128, .n_parallel = 2, .n_batch = 32};

ModelSetup fake_cuda_setup(MadeBackends& made, tc::config::GpuSplitSetting split) {
  ModelSetup s;
  s.device = {.cuda = true, .index = 0};
  s.threads = 2;
  s.gpu_split = std::move(split);
  s.create_backend = tc::test::gpu_split::fake_gpu_factory(made);
  return s;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

}  // namespace

TEST_CASE("set_up_model makes the device backend before anything that can fail later", "[runtime][setup]") {
  ModelSetup s;
  s.device = {.cuda = true, .index = 0};
  s.gpu_split.mode = GpuSplitMode::HybridFile;
  s.gpu_split.placement_file = "/nonexistent/m.gpuidx";
  int calls = 0;
  s.create_backend = [&calls](const tc::config::DeviceSetting&, int) -> std::unique_ptr<tc::kernels::Backend> {
    ++calls;
    throw tc::kernels::BackendUnavailable("no CUDA here (test)");
  };
  CHECK_THROWS_AS(set_up_model(tc::test::gpu_split::sparse_model_with_stats(), s, kShape),
                  tc::kernels::BackendUnavailable);
  CHECK(calls == 1);
}

TEST_CASE("set_up_model builds hybrid mode from a placement file or from the stats", "[runtime][setup]") {
  std::filesystem::path stats_path;
  const auto loaded = tc::test::gpu_split::sparse_model_with_stats(&stats_path);
  const uint64_t budget = tc::test::gpu_split::half_ffn_budget(*loaded, kShape);
  const auto plan = tc::sparse::place_loaded_model(*loaded, budget, kShape);
  REQUIRE(plan.n_hot() > 0);
  REQUIRE(plan.n_hot() < plan.n_neurons());
  const std::string hot_line =
      "hybrid: " + std::to_string(plan.n_hot()) + " of " + std::to_string(plan.n_neurons()) + " FFN neurons hot";
  // --placement auto --vram-budget BUDGET (= budget) --prefetch `prefetch`.
  auto auto_split = [budget](tc::config::PrefetchSetting prefetch) {
    tc::config::GpuSplitSetting split;
    split.mode = GpuSplitMode::HybridAuto;
    split.vram_budget = budget;
    split.vram_budget_text = "BUDGET";
    split.prefetch = prefetch;
    return split;
  };

  SECTION("solved at load within the given budget") {
    MadeBackends made;
    // Prefetch off: the whole budget for the solver.
    const auto split = auto_split(tc::config::PrefetchSetting::Off);
    const auto m = set_up_model(loaded, fake_cuda_setup(made, split), kShape);
    CHECK(m.llama->hybrid());
    CHECK(m.cpu_backend != nullptr);
    CHECK(made.devices.size() == 1);
    CHECK(made.n_cpu == 1);
    const std::string summary = joined(m.summary);
    CHECK_THAT(summary, Catch::Contains(hot_line) && Catch::Contains("solved at start from " + stats_path.string()) &&
                            Catch::Contains("--vram-budget BUDGET"));
    CHECK_THAT(summary, Catch::Contains("sparsity: sparse FFN"));
  }
  SECTION("solved at load with the prefetch caches inside the budget") {
    MadeBackends made;
    auto split = auto_split(tc::config::PrefetchSetting::On);
    const auto m = set_up_model(loaded, fake_cuda_setup(made, split), kShape);
    REQUIRE(m.llama->hybrid_prefetch() != nullptr);
    // The solver got the budget less the caches' largest size: n_ff / 16
    // slots in every layer but the first, at that layer's bytes per neuron.
    const auto costs = tc::sparse::placement_costs(loaded->file, loaded->spec, loaded->predictors, kShape);
    const uint64_t reserve = tc::test::gpu_split::prefetch_cache_reserve(*loaded, kShape);
    REQUIRE(reserve > 0);
    const auto smaller = tc::sparse::place_loaded_model(*loaded, budget - reserve, kShape);
    CHECK(smaller.n_hot() < plan.n_hot());
    const std::string summary = joined(m.summary);
    CHECK_THAT(summary, Catch::Contains("hybrid: " + std::to_string(smaller.n_hot()) + " of ") &&
                            Catch::Contains("kept for the prefetch caches"));
    // The plan's bytes (fixed part and hot rows) plus the caches it gets
    // (cache_slot_counts: what split_hybrid_weights allocates) fit the budget.
    tc::model::NeuronPlacement placement;
    for (const auto& layer : smaller.layers) placement.hot.push_back(layer.hot);
    tc::model::PrefetchOptions prefetch_on;
    prefetch_on.mode = tc::model::PrefetchMode::On;
    const auto slots = tc::model::cache_slot_counts(prefetch_on, placement, loaded->spec.n_ff);
    uint64_t cache_bytes = 0;
    for (size_t l = 0; l < slots.size(); ++l) cache_bytes += static_cast<uint64_t>(slots[l]) * costs.layers[l].bytes();
    CHECK(cache_bytes > 0);
    CHECK(cache_bytes <= reserve);
    CHECK(smaller.used_bytes() + cache_bytes <= budget);

    // A budget that holds the fixed part but not the caches as well: the
    // caches shrink to half of what the fixed part leaves.
    const uint64_t fixed = costs.fixed.total();
    split.vram_budget = fixed + reserve - 1;
    MadeBackends made_tight;
    const auto tight = set_up_model(loaded, fake_cuda_setup(made_tight, split), kShape);
    const tc::model::HybridPrefetch* tight_prefetch = tight.llama->hybrid_prefetch();
    REQUIRE(tight_prefetch != nullptr);
    uint64_t tight_cache_bytes = 0;
    for (int64_t l = 0; l < loaded->spec.n_layer; ++l) {
      const int64_t n = tight_prefetch->cache(l).n_slots();
      CHECK(n < loaded->spec.n_ff / 16);
      tight_cache_bytes += static_cast<uint64_t>(n) * costs.layers[static_cast<size_t>(l)].bytes();
    }
    CHECK(tight_cache_bytes > 0);
    CHECK(tight_cache_bytes <= (*split.vram_budget - fixed) / 2);

    // One that leaves less than a slot per layer for them is refused, naming both options.
    split.vram_budget = fixed + 1;
    MadeBackends made_small;
    try {
      set_up_model(loaded, fake_cuda_setup(made_small, split), kShape);
      FAIL("accepted a budget below the prefetch caches");
    } catch (const std::invalid_argument& e) {
      CHECK_THAT(e.what(), Catch::Contains("--vram-budget") && Catch::Contains("--prefetch off"));
    }
  }
  SECTION("from the file `place` wrote") {
    const auto file =
        tc::test::gpu_split::write_placement_file(*loaded, stats_path, budget, kShape, "setup_hybrid_file");
    MadeBackends made;
    tc::config::GpuSplitSetting split;
    split.mode = GpuSplitMode::HybridFile;
    split.placement_file = file;
    const auto m = set_up_model(loaded, fake_cuda_setup(made, split), kShape);
    CHECK(m.llama->hybrid());
    CHECK_THAT(joined(m.summary), Catch::Contains(hot_line + " (" + file.string() + ")"));
  }
}

TEST_CASE("set_up_model builds layer offload by K or by budget, with a split KV cache", "[runtime][setup]") {
  const auto loaded = tc::test::gpu_split::dense_model();
  const int64_t n_layer = loaded->spec.n_layer;
  const auto costs = tc::sparse::layer_offload_costs(loaded->file, loaded->spec, kShape);
  struct Case {
    int64_t offload_layers;
    std::optional<uint64_t> budget;
    int64_t want_k;
  };
  const Case cases[] = {{0, std::nullopt, 0},
                        {2, std::nullopt, 2},
                        {n_layer, std::nullopt, n_layer},
                        {-1, costs.device_bytes(2), 2},
                        {-1, costs.device_bytes(2) - 1, 1},
                        {-1, uint64_t{1} << 40, n_layer}};
  for (const auto& c : cases) {
    INFO("offload_layers " << c.offload_layers << ", budget " << c.budget.value_or(0));
    MadeBackends made;
    tc::config::GpuSplitSetting split;
    split.mode = GpuSplitMode::LayerOffload;
    split.offload_layers = c.offload_layers;
    split.vram_budget = c.budget;
    auto s = fake_cuda_setup(made, split);
    s.sparsity.mode = tc::config::SparsityMode::Dense;
    const auto m = set_up_model(loaded, s, kShape);
    CHECK(m.llama->n_device_layers() == c.want_k);
    CHECK(m.llama->offload_cpu() == m.cpu_backend.get());
    const auto kv = m.make_kv_cache();
    CHECK(kv.n_first_layers() == c.want_k);
    CHECK(kv.n_slots() == kShape.n_parallel);
    CHECK(kv.n_ctx() == kShape.n_ctx);
    CHECK_THAT(joined(m.summary), Catch::Contains("layer offload: the first " + std::to_string(c.want_k) + " of " +
                                                  std::to_string(n_layer) + " layers on host-device (test)"));
    if (c.budget) CHECK_THAT(joined(m.summary), Catch::Contains("(--vram-budget: "));
  }
}

namespace {

// A prefill step of 20 prompt tokens in slot 0, a full one of n_batch in
// slot 1 (grown on demand, the buffers would double from 20 to 40 tokens
// here), then a decode step of every slot (generated tokens: the sparse FFN
// where there is one).
void run_full_steps(tc::runtime::RunnableModel& m, tc::runtime::KvCache& kv) {
  std::vector<float> logits;
  std::vector<tc::text::TokenId> prompt(static_cast<size_t>(kShape.n_batch));
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<tc::text::TokenId>((7 * i + 3) % 500);
  const tc::model::StepSequence first{.slot = 0, .tokens = std::span(prompt).first(20)};
  REQUIRE(m.llama->forward(std::span(&first, 1), kv, logits) == tc::model::StepStatus::Ok);
  const tc::model::StepSequence full{.slot = 1, .tokens = prompt};
  REQUIRE(m.llama->forward(std::span(&full, 1), kv, logits) == tc::model::StepStatus::Ok);
  std::vector<tc::text::TokenId> next(static_cast<size_t>(kShape.n_parallel), 11);
  std::vector<tc::model::StepSequence> decode;
  for (int slot = 0; slot < kShape.n_parallel; ++slot) {
    decode.push_back({.slot = slot, .tokens = std::span(&next[static_cast<size_t>(slot)], 1), .generated = true});
  }
  REQUIRE(m.llama->forward(decode, kv, logits) == tc::model::StepStatus::Ok);
}

}  // namespace

TEST_CASE("set_up_model: the device memory of full-size steps is what the placement counted", "[runtime][setup]") {
  SECTION("hybrid mode") {
    const auto loaded = tc::test::gpu_split::sparse_model_with_stats();
    const auto ws = tc::sparse::hybrid_step_workspace(loaded->file, loaded->spec, loaded->predictors, kShape);
    const auto costs = tc::sparse::placement_costs(loaded->file, loaded->spec, loaded->predictors, kShape);
    CHECK(costs.fixed.workspace == ws.total());
    // Half the FFN hot: the hot down projection's rows split fewer ways than
    // the bound (every neuron) assumes; all of it hot: exactly the bound.
    for (const bool all_hot : {false, true}) {
      INFO("every neuron hot: " << all_hot);
      MadeBackends made;
      tc::config::GpuSplitSetting split;
      split.mode = GpuSplitMode::HybridAuto;
      split.vram_budget = all_hot ? uint64_t{1} << 40 : tc::test::gpu_split::half_ffn_budget(*loaded, kShape);
      split.vram_budget_text = "BUDGET";
      split.prefetch = tc::config::PrefetchSetting::Off;
      auto m = set_up_model(loaded, fake_cuda_setup(made, split), kShape);
      auto kv = m.make_kv_cache();
      run_full_steps(m, kv);
      REQUIRE(made.devices.size() == 1);
      const auto& device = *made.devices[0];
      // Nothing grew past the set-up's reservation: the buffers and the KV cache, to the byte.
      CHECK(device.allocated_bytes == costs.fixed.kv_cache + ws.buffers + ws.head_buffers);
      CHECK(device.scratch_peak > 0);
      // The prompt steps ran dense: the hot rows as plain matmuls (cuBLAS on a GPU), never the GEMV;
      // the 32-token one streamed the FFN's rows, unless every neuron was already on the device.
      CHECK(device.long_matmul_rows == 0);
      CHECK((device.prefetch_bytes.load() > 0) == !all_hot);
      // The set-up reserved the counted scratch; no op asked for more.
      CHECK(device.scratch_reserved == ws.scratch_bytes());
      // All of the device's memory but the weights is the placement's fixed KV cache and workspace.
      CHECK(device.allocated_bytes + device.scratch_reserved + device.blas_bytes == costs.fixed.kv_cache + ws.total());
      if (all_hot) {
        CHECK(device.scratch_peak == ws.scratch_bytes());
      } else {
        CHECK(device.scratch_peak <= ws.scratch_bytes());
      }
    }
  }
  SECTION("layer offload") {
    const auto loaded = tc::test::gpu_split::dense_model();
    const int64_t n_layer = loaded->spec.n_layer;
    const auto costs = tc::sparse::layer_offload_costs(loaded->file, loaded->spec, kShape);
    for (const int64_t k : {int64_t{1}, n_layer}) {
      INFO("k = " << k);
      MadeBackends made;
      tc::config::GpuSplitSetting split;
      split.mode = GpuSplitMode::LayerOffload;
      split.offload_layers = k;
      auto s = fake_cuda_setup(made, split);
      s.sparsity.mode = tc::config::SparsityMode::Dense;
      auto m = set_up_model(loaded, s, kShape);
      auto kv = m.make_kv_cache();
      run_full_steps(m, kv);
      const auto& device = *made.devices[0];
      const bool head = k == n_layer;
      const auto& ws = costs.workspace;
      CHECK(device.allocated_bytes ==
            costs.kv_per_layer * static_cast<uint64_t>(k) + ws.buffers + (head ? ws.head_buffers : 0));
      // The dense layers' largest cuBLAS request (every layer has the same shapes and dtypes), reserved at set-up.
      CHECK(device.scratch_peak == ws.scratch_bytes(head));
      CHECK(device.scratch_reserved == ws.scratch_bytes(head));
      CHECK(device.scratch_peak > 0);
      // Everything on the device, weights included, is what the plan counted for k layers.
      CHECK(device.uploaded_bytes + device.allocated_bytes + device.scratch_reserved + device.blas_bytes ==
            costs.device_bytes(k));
    }
  }
}

TEST_CASE("set_up_model refuses what the model cannot run, naming the option", "[runtime][setup]") {
  MadeBackends made;
  SECTION("placement auto without a stats file") {
    tc::config::GpuSplitSetting split;
    split.mode = GpuSplitMode::HybridAuto;
    split.vram_budget = uint64_t{1} << 30;
    CHECK_THROWS_WITH(set_up_model(tc::test::gpu_split::sparse_model_without_stats(),
                                   fake_cuda_setup(made, split), kShape),
                      Catch::Contains("--placement auto") && Catch::Contains("--stats"));
  }
  SECTION("placement auto with a budget below the fixed cost") {
    tc::config::GpuSplitSetting split;
    split.mode = GpuSplitMode::HybridAuto;
    split.vram_budget = 1000;
    CHECK_THROWS_AS(set_up_model(tc::test::gpu_split::sparse_model_with_stats(), fake_cuda_setup(made, split),
                                 kShape),
                    tc::sparse::PlacementError);
  }
  SECTION("hybrid mode with the dense FFN") {
    tc::config::GpuSplitSetting split;
    split.mode = GpuSplitMode::HybridAuto;
    split.vram_budget = uint64_t{1} << 30;
    auto s = fake_cuda_setup(made, split);
    s.sparsity.mode = tc::config::SparsityMode::Dense;
    CHECK_THROWS_WITH(set_up_model(tc::test::gpu_split::sparse_model_with_stats(), s, kShape),
                      Catch::Contains("--placement needs the sparse FFN"));
  }
  SECTION("layer offload with the sparse FFN, or more layers than the model has") {
    tc::config::GpuSplitSetting split;
    split.mode = GpuSplitMode::LayerOffload;
    split.offload_layers = 1;
    auto relu = fake_cuda_setup(made, split);
    relu.sparsity.mode = tc::config::SparsityMode::Relu;
    CHECK_THROWS_WITH(set_up_model(tc::test::gpu_split::sparse_model_with_stats(), relu, kShape),
                      Catch::Contains("--offload-layers (layer offload) runs the dense FFN"));
    split.offload_layers = 4;
    CHECK_THROWS_WITH(set_up_model(tc::test::gpu_split::dense_model(), fake_cuda_setup(made, split), kShape),
                      Catch::Contains("--offload-layers 4") && Catch::Contains("has 3 layers"));
  }
}

namespace {

// A one-layer model of architecture `arch` (make-model), loaded.
std::shared_ptr<const tc::model::LoadedModel> tiny_model(const std::string& arch, int64_t n_head_kv) {
  tc::profiler::MakeModelOptions o;
  o.output = tc::test::scratch_dir("setup_" + arch) / "m.gguf";
  o.arch = arch;
  o.n_vocab = 512;
  o.n_embd = 64;
  o.n_layer = 1;
  o.n_ff = 32;
  o.n_head = 4;
  o.n_head_kv = n_head_kv;
  o.n_threads = 2;
  tc::profiler::make_model(o);
  return tc::model::load_model(o.output);
}

}  // namespace

TEST_CASE("set_up_model runs a mixture of experts on the CPU when a GPU is asked, and says so", "[runtime][setup]") {
  const auto loaded = tiny_model("qwen3moe", 2);
  for (const bool offload : {false, true}) {
    INFO((offload ? "with --offload-layers 1" : "no GPU split"));
    tc::config::GpuSplitSetting split;
    if (offload) {
      split.mode = GpuSplitMode::LayerOffload;
      split.offload_layers = 1;
    }
    MadeBackends made;
    const auto m = set_up_model(loaded, fake_cuda_setup(made, split), kShape);
    CHECK(made.devices.empty());
    CHECK(made.n_cpu == 1);
    CHECK(m.backend->device() == tc::kernels::DeviceKind::Cpu);
    CHECK(m.llama->moe_ffn() != nullptr);
    CHECK(m.llama->offload_cpu() == nullptr);
    const std::string log = joined(m.summary);
    CHECK_THAT(log, Catch::Contains("device: cpu (not cuda): ") && Catch::Contains("mixture of experts"));
    CHECK((log.find("its GPU split does not apply") != std::string::npos) == offload);
  }
  // A dense model asked for the same GPU gets it.
  MadeBackends made;
  const auto dense = set_up_model(tc::test::gpu_split::dense_model(), fake_cuda_setup(made, {}), kShape);
  CHECK(made.devices.size() == 1);
}

TEST_CASE("set_up_model runs latent attention (deepseek2) on the CPU when a GPU is asked, and says so",
          "[runtime][setup]") {
  const auto loaded = tiny_model("deepseek2", 1);  // without experts: a dense FFN under latent attention
  REQUIRE(loaded->spec.is_mla());
  REQUIRE_FALSE(loaded->spec.has_experts());
  MadeBackends made;
  const auto m = set_up_model(loaded, fake_cuda_setup(made, {}), kShape);
  CHECK(made.devices.empty());
  CHECK(m.backend->device() == tc::kernels::DeviceKind::Cpu);
  CHECK_THAT(joined(m.summary), Catch::Contains("device: cpu (not cuda): ") && Catch::Contains("latent attention"));
}
