// set_up_model: backend(s), sparsity plan, GPU split, forward pass.
#include "engine/runtime/model_setup.h"

#include <cstdio>
#include <stdexcept>
#include <utility>

#include "engine/model/hybrid_prefetch.h"
#include "engine/sparse/activation_stats.h"
#include "engine/sparse/gpu_index.h"
#include "engine/sparse/layer_offload_plan.h"
#include "engine/sparse/place_model.h"
#include "engine/sparse/vram_budget.h"
#include "kernels/backend_from_setting.h"

namespace tc::runtime {
namespace {

using config::GpuSplitMode;

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * fraction);
  return buf;
}

// Hybrid mode's hot neurons, and how they were chosen (for the summary).
struct HotNeurons {
  model::NeuronPlacement placement;
  std::string origin;  // the file, or "solved at start: ..."
};

// Hybrid mode's prefetch options from the GPU split's setting.
model::PrefetchOptions prefetch_options(const config::GpuSplitSetting& split) {
  model::PrefetchOptions options;
  switch (split.prefetch) {
    case config::PrefetchSetting::Off:
      options.mode = model::PrefetchMode::Off;
      break;
    case config::PrefetchSetting::On:
      options.mode = model::PrefetchMode::On;
      break;
    case config::PrefetchSetting::Auto:
      options.mode = model::PrefetchMode::Auto;
      break;
  }
  return options;
}

// Solving the placement may shrink `prefetch`'s caches to the budget.
HotNeurons hot_neurons(const model::LoadedModel& loaded, const ModelSetup& setup, model::PrefetchOptions& prefetch,
                       const sparse::PlacementShape& shape) {
  const auto& spec = loaded.spec;
  const auto& split = setup.gpu_split;
  if (split.mode == GpuSplitMode::HybridFile) {
    const uint64_t hash = sparse::fingerprint_model(loaded.file, spec).tensor_hash;
    return {{sparse::read_gpu_index(split.placement_file, spec.n_layer, spec.n_ff, hash).hot},
            split.placement_file.string()};
  }
  if (!loaded.stats_file) {
    throw std::invalid_argument("--placement auto solves the placement from activation statistics: pass --stats "
                                "FILE (from `thermocline profile` on this model), or a placement file");
  }
  const sparse::VramBudget budget =
      sparse::resolve_vram_budget(split.vram_budget, split.vram_budget_text, setup.device.index);
  // The prefetch caches come out of the same budget: the solver spends
  // what is left once their largest size is set aside (at most half of
  // what the fixed part leaves, unless a size was given).
  uint64_t cache_reserve = 0;
  const sparse::PlacementPlan plan =
      sparse::place_with_prefetch_caches(loaded, budget.bytes, budget.source, shape, prefetch, &cache_reserve);
  HotNeurons hot;
  for (const auto& layer : plan.layers) hot.placement.hot.push_back(layer.hot);
  hot.origin = "solved at start from " + loaded.stats_file->path() + ": " + sparse::human_bytes(plan.used_bytes()) +
               (cache_reserve > 0 ? " + " + sparse::human_bytes(cache_reserve) + " kept for the prefetch caches" : "") +
               " of " + budget.source + ", expected GPU share of firings " + percent(plan.gpu_share());
  return hot;
}

}  // namespace

RunnableModel set_up_model(std::shared_ptr<const model::LoadedModel> loaded, const ModelSetup& setup,
                           const sparse::PlacementShape& shape) {
  if (!loaded) throw std::invalid_argument("no model");
  const BackendFactory create =
      setup.create_backend ? setup.create_backend : [](const config::DeviceSetting& device, int n_threads) {
        return kernels::create_backend(device, n_threads);
      };
  const model::ModelSpec& spec = loaded->spec;
  // A mixture of experts, latent attention, encoders and layers of two
  // kinds (Gemma 4, Gemma 3n, Qwen 3.5, Granite 4.0-H) run on the CPU backend only
  // so far: asked for a GPU (a server's default for a whole models folder),
  // such a model runs there, and the log says why.
  const bool layers_of_kinds = spec.architecture->gemma4_layers || spec.architecture->altup_layers ||
                               spec.architecture->bidirectional || spec.has_recurrent_layers();
  const bool experts_on_cpu = (spec.has_experts() || spec.is_mla() || layers_of_kinds) && setup.device.cuda;
  const config::GpuSplitSetting split = experts_on_cpu ? config::GpuSplitSetting{} : setup.gpu_split;
  const bool hybrid = split.hybrid();
  const bool offload = split.mode == GpuSplitMode::LayerOffload;
  const char* offload_flag = split.offload_layers < 0 ? "--vram-budget" : "--offload-layers";

  RunnableModel m;
  m.loaded = std::move(loaded);
  m.shape = shape;
  m.backend = create(experts_on_cpu ? config::DeviceSetting{} : setup.device, setup.threads);
  if (experts_on_cpu) {
    m.summary.push_back("device: cpu (not " + config::device_setting_string(setup.device) + "): " +
                        m.loaded->file.path() +
                        (layers_of_kinds       ? " is " + spec.arch + ", whose layers differ in kind and which runs"
                         : spec.has_experts() ? std::string(" is a mixture of experts, which runs")
                                              : std::string(" has latent attention (MLA), which runs")) +
                        " on the CPU backend only so far" +
                        (setup.gpu_split.mode != GpuSplitMode::None ? " (its GPU split does not apply)" : ""));
  }
  m.kv_types = setup.kv_types;
  // Checked here, before any placement work, as the cache will check it.
  if (const std::string why = KvCache::unsupported_reason(spec, setup.kv_types, m.backend.get()); !why.empty()) {
    throw std::invalid_argument("--cache-type-k/--cache-type-v: " + why);
  }
  model::LayerOffloadOptions offload_options;
  std::string offload_origin;
  if (offload) {
    offload_options.n_device_layers = split.offload_layers;
    if (split.offload_layers < 0) {
      const auto plan = sparse::plan_layer_offload(sparse::layer_offload_costs(m.loaded->file, spec, shape),
                                                   split.vram_budget.value_or(0));
      offload_options.n_device_layers = plan.n_device_layers;
      offload_origin = " (--vram-budget: " + plan.summary + ")";
    } else if (split.offload_layers > spec.n_layer) {
      throw std::invalid_argument("--offload-layers " + std::to_string(split.offload_layers) + ": " +
                                  m.loaded->file.path() + " has " + std::to_string(spec.n_layer) + " layers");
    }
  }
  m.plan = sparse::plan_sparsity(*m.loaded, setup.sparsity, setup.sparse_max_tokens,
                                 hybrid || m.backend->device() == kernels::DeviceKind::Cpu);
  m.plan.forward.cpu_repack = setup.cpu_repack;
  if (offload && m.plan.forward.ffn_mode != model::FfnMode::Dense) {
    throw std::invalid_argument(std::string(offload_flag) + " (layer offload) runs the dense FFN: use --sparsity "
                                "dense (the plan here is: " + m.plan.summary + ")");
  }
  model::HybridOptions hybrid_options;
  std::string hot_origin;
  if (hybrid) {
    if (m.plan.forward.ffn_mode != model::FfnMode::Sparse) {
      throw std::invalid_argument("--placement needs the sparse FFN (a ReLU-family model with predictors, "
                                  "--sparsity auto or relu); the plan here is: " + m.plan.summary);
    }
    hybrid_options.prefetch = prefetch_options(setup.gpu_split);
    HotNeurons hot = hot_neurons(*m.loaded, setup, hybrid_options.prefetch, shape);
    hybrid_options.placement = std::move(hot.placement);
    hot_origin = std::move(hot.origin);
  }
  if (hybrid || offload) {
    m.cpu_backend = create(config::DeviceSetting{}, setup.threads);
    hybrid_options.cpu = hybrid ? m.cpu_backend.get() : nullptr;
    offload_options.cpu = offload ? m.cpu_backend.get() : nullptr;
  }
  int64_t n_hot = 0;
  for (const auto& layer : hybrid_options.placement.hot) n_hot += static_cast<int64_t>(layer.size());
  m.llama = std::make_unique<model::LlamaModel>(*m.loaded, *m.backend, m.plan.forward, std::move(hybrid_options),
                                                offload_options);
  m.plan.attach(*m.llama);
  // The step buffers and the GPU's scratch at the shape's size now: the
  // device memory the placement counted, and no allocation while serving.
  m.llama->reserve_steps(shape.step_tokens(), shape.logit_rows());
  if (m.backend->device() != kernels::DeviceKind::Cpu) {
    const auto& file = m.loaded->file;
    if (hybrid) {
      m.backend->reserve_scratch(sparse::hybrid_step_workspace(file, spec, m.loaded->predictors, shape).scratch_bytes());
    } else if (!offload || offload_options.n_device_layers > 0) {
      const bool head = !offload || offload_options.n_device_layers == spec.n_layer;
      m.backend->reserve_scratch(sparse::dense_step_workspace(file, spec, shape).scratch_bytes(head));
    }
  }

  m.summary.push_back("sparsity: " + m.plan.summary);
  if (m.llama->repacked_weight_bytes() > 0) {
    m.summary.push_back("cpu matmul: " + sparse::human_bytes(m.llama->repacked_weight_bytes()) +
                        " of Q4_0, Q4_1, Q8_0, Q3_K-Q6_K and IQ4_XS matrices repacked into 16-row lane tiles "
                        "at load "
                        "(docs/engine.md)");
  }
  if (hybrid) {
    m.summary.push_back("hybrid: " + std::to_string(n_hot) + " of " + std::to_string(spec.n_layer * spec.n_ff) +
                        " FFN neurons hot (" + hot_origin + ") on " + m.backend->name() + ", the cold ones on " +
                        m.cpu_backend->name());
    const model::HybridPrefetch* prefetch = m.llama->hybrid_prefetch();
    m.summary.push_back("prefetch: " + (prefetch != nullptr ? prefetch->summary() : std::string("off")));
  }
  if (offload) {
    const int64_t k = offload_options.n_device_layers;
    m.summary.push_back("layer offload: the first " + std::to_string(k) + " of " + std::to_string(spec.n_layer) +
                        " layers on " + m.backend->name() + " (" +
                        sparse::human_bytes(m.llama->device_weight_bytes()) + " of weights" +
                        (k == spec.n_layer ? ", output head included" : "") + "), the rest on " +
                        m.cpu_backend->name() + offload_origin);
  }
  return m;
}

}  // namespace tc::runtime
