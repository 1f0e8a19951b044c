// Fixtures of the GPU split tests (set_up_model, the Engine in hybrid mode
// and layer offload): a backend factory whose "GPU" is HostDeviceBackend
// (tests/engine/model/host_device_backend.h), a planted sparse model with
// power-law activation statistics, a small dense model, and placements.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/loaded_model.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/model_setup.h"
#include "engine/sparse/placement_costs.h"
#include "tests/engine/model/host_device_backend.h"

namespace tc::test::gpu_split {

inline constexpr int64_t kVocab = 512;

// What a fake_gpu_factory made, in order. The backends belong to whoever
// the factory gave them to; the pointers are for reading the bus counters
// while that owner lives.
struct MadeBackends {
  std::vector<HostDeviceBackend*> devices;  // one per cuda request
  int n_cpu = 0;                            // cpu requests (real CPU backends)
};

// cuda[:N] -> a HostDeviceBackend, cpu -> the real CPU backend, both with
// the requested threads; records each in `made` (which must outlive its use).
runtime::BackendFactory fake_gpu_factory(MadeBackends& made);

// A ModelSetup for device cuda:0 with `split`, its backends from
// fake_gpu_factory(made).
runtime::ModelSetup fake_cuda(MadeBackends& made, config::GpuSplitSetting split);

// One request's tokens and their logprobs (return_tokens).
struct Reply {
  std::vector<text::TokenId> tokens;
  std::vector<float> logprobs;
};
// Reads `handle`'s events until the request ends; fails the test unless it
// finished within 120 s (naming the error and `engine`'s failure).
Reply collect_reply(runtime::RequestHandle& handle, const runtime::Engine& engine);

// placement::tiny_sparse_options' model (2 ReGLU layers with planted
// sparsity and predictors, f16, n_ctx_train 256), opened with a stats file
// of power-law firing counts (neuron i of layer l fires ~ 1 / (1 + (37 i +
// l) % n_ff)). Made once per process; `stats_path` (when not null) gets the
// stats file's path.
std::shared_ptr<const model::LoadedModel> sparse_model_with_stats(std::filesystem::path* stats_path = nullptr);
// The same model opened without the stats file.
std::shared_ptr<const model::LoadedModel> sparse_model_without_stats();

// A 3-layer dense q8_0 SwiGLU model (n_embd 64, n_ff 160, n_ctx_train 128).
std::shared_ptr<const model::LoadedModel> dense_model();

// The solver's budget for `shape` that leaves about half of the FFN bytes
// of `loaded` hot: the fixed cost plus half of every neuron's bytes.
uint64_t half_ffn_budget(const model::LoadedModel& loaded, const sparse::PlacementShape& shape);

// What set_up_model keeps out of a --placement auto budget for the prefetch
// caches when prefetch is on or auto, written out from docs/hybrid.md:
// n_ff / 16 slots in every layer but the first, at that layer's bytes per
// neuron.
uint64_t prefetch_cache_reserve(const model::LoadedModel& loaded, const sparse::PlacementShape& shape);

// `place`'s plan for `loaded` (opened with the stats file at `stats_path`)
// within `budget` for `shape`, written as a .gpuidx in a scratch folder
// named `name`; returns its path.
std::filesystem::path write_placement_file(const model::LoadedModel& loaded, const std::filesystem::path& stats_path,
                                           uint64_t budget, const sparse::PlacementShape& shape,
                                           const std::string& name);

}  // namespace tc::test::gpu_split
