// GPU split test fixtures: the fake-GPU backend factory and the models.
#include "tests/engine/runtime/gpu_split_fixtures.h"

#include <catch2/catch.hpp>

#include <chrono>

#include "engine/sparse/gpu_index.h"
#include "engine/sparse/place_model.h"
#include "engine/sparse/placement_costs.h"
#include "kernels/backend_from_setting.h"
#include "profiler/make_model.h"
#include "tests/engine/sparse/placement_fixtures.h"
#include "tests/test_util.h"

namespace tc::test::gpu_split {
namespace {

struct SparseFiles {
  std::filesystem::path model;
  std::filesystem::path stats;
};

const SparseFiles& sparse_files() {
  static const SparseFiles files = [] {
    const auto dir = scratch_dir("gpu_split_sparse_model");
    const profiler::MakeModelOptions o = placement::tiny_sparse_options(dir / "m.gguf");
    profiler::make_model(o);
    std::vector<std::vector<int32_t>> counts(static_cast<size_t>(o.n_layer));
    for (int64_t l = 0; l < o.n_layer; ++l) {
      for (int64_t i = 0; i < o.n_ff; ++i) {
        counts[static_cast<size_t>(l)].push_back(static_cast<int32_t>(100000 / (1 + (i * 37 + l) % o.n_ff)));
      }
    }
    placement::write_stats(o.output, counts, dir / "m.stats.gguf");
    return SparseFiles{o.output, dir / "m.stats.gguf"};
  }();
  return files;
}

}  // namespace

runtime::BackendFactory fake_gpu_factory(MadeBackends& made) {
  return [&made](const config::DeviceSetting& device, int n_threads) -> std::unique_ptr<kernels::Backend> {
    if (!device.cuda) {
      ++made.n_cpu;
      return kernels::create_backend(device, n_threads);
    }
    auto gpu = std::make_unique<HostDeviceBackend>(n_threads);
    made.devices.push_back(gpu.get());
    return gpu;
  };
}

runtime::ModelSetup fake_cuda(MadeBackends& made, config::GpuSplitSetting split) {
  runtime::ModelSetup s;
  s.device = {.cuda = true, .index = 0};
  s.gpu_split = std::move(split);
  s.create_backend = fake_gpu_factory(made);
  return s;
}

Reply collect_reply(runtime::RequestHandle& handle, const runtime::Engine& engine) {
  using namespace std::chrono_literals;
  Reply reply;
  runtime::StreamEvent ev;
  const auto give_up = std::chrono::steady_clock::now() + 120s;
  while (true) {
    REQUIRE(std::chrono::steady_clock::now() < give_up);
    if (!handle.next(ev, 100ms)) continue;
    for (const auto& t : ev.tokens) {
      reply.tokens.push_back(t.id);
      reply.logprobs.push_back(t.logprob);
    }
    if (ev.kind != runtime::StreamEvent::Kind::Text) break;
  }
  INFO(ev.error << " / " << engine.stats().failure);
  REQUIRE(ev.kind == runtime::StreamEvent::Kind::Finished);
  return reply;
}

std::shared_ptr<const model::LoadedModel> sparse_model_with_stats(std::filesystem::path* stats_path) {
  static const std::shared_ptr<const model::LoadedModel> loaded =
      model::load_model(sparse_files().model, {.stats = sparse_files().stats});
  if (stats_path != nullptr) *stats_path = sparse_files().stats;
  return loaded;
}

std::shared_ptr<const model::LoadedModel> sparse_model_without_stats() {
  static const std::shared_ptr<const model::LoadedModel> loaded = model::load_model(sparse_files().model);
  return loaded;
}

std::shared_ptr<const model::LoadedModel> dense_model() {
  static const std::shared_ptr<const model::LoadedModel> loaded = [] {
    profiler::MakeModelOptions o;
    o.output = scratch_dir("gpu_split_dense_model") / "m.gguf";
    o.n_vocab = kVocab;
    o.n_embd = 64;
    o.n_layer = 3;
    o.n_ff = 160;
    o.n_head = 4;
    o.n_head_kv = 2;
    o.n_ctx = 128;
    o.weight_type = "q8_0";
    o.seed = 17;
    o.n_threads = 2;
    profiler::make_model(o);
    return std::shared_ptr<const model::LoadedModel>(model::load_model(o.output));
  }();
  return loaded;
}

uint64_t half_ffn_budget(const model::LoadedModel& loaded, const sparse::PlacementShape& shape) {
  const auto costs = sparse::placement_costs(loaded.file, loaded.spec, loaded.predictors, shape);
  uint64_t ffn_bytes = 0;
  for (const auto& layer : costs.layers) ffn_bytes += layer.bytes() * static_cast<uint64_t>(loaded.spec.n_ff);
  return costs.fixed.total() + ffn_bytes / 2;
}

uint64_t prefetch_cache_reserve(const model::LoadedModel& loaded, const sparse::PlacementShape& shape) {
  const auto costs = sparse::placement_costs(loaded.file, loaded.spec, loaded.predictors, shape);
  uint64_t reserve = 0;
  for (size_t l = 1; l < costs.layers.size(); ++l) {
    reserve += static_cast<uint64_t>(loaded.spec.n_ff / 16) * costs.layers[l].bytes();
  }
  return reserve;
}

std::filesystem::path write_placement_file(const model::LoadedModel& loaded, const std::filesystem::path& stats_path,
                                           uint64_t budget, const sparse::PlacementShape& shape,
                                           const std::string& name) {
  sparse::PlaceRequest request;
  request.model = loaded.file.path();
  request.stats = stats_path;
  request.vram_budget = budget;
  request.shape = shape;
  request.prefetch = model::PrefetchMode::Off;  // the plain solver's plan, as place_loaded_model gives
  const auto path = scratch_dir(name) / "m.generated.gpuidx";
  sparse::write_gpu_index(sparse::to_gpu_index(sparse::place_model(request)), path);
  return path;
}

}  // namespace tc::test::gpu_split
