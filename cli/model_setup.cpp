// add_model_options / open_cli_model.
#include "cli/model_setup.h"

#include <cstdio>
#include <stdexcept>

#include "config/device_setting.h"
#include "engine/sparse/activation_stats.h"
#include "engine/sparse/gpu_index.h"
#include "engine/sparse/layer_offload_plan.h"
#include "engine/sparse/vram_budget.h"
#include "kernels/backend_from_setting.h"

namespace tc::cli {

CLI::Option* add_model_options(CLI::App* sub, ModelCliOptions& options) {
  sub->add_option("--device", options.device,
                  "cpu | cuda | cuda:N: the backend that runs the model (CUDA: the dense FFN, or hybrid with "
                  "--placement)")
      ->capture_default_str();
  sub->add_option("--placement", options.placement,
                  "Hybrid mode (needs --device cuda): the hot neurons of this .generated.gpuidx (from "
                  "`thermocline place`) on the GPU, the cold ones on the CPU")
      ->check(CLI::ExistingFile);
  sub->add_option("--prefetch", options.prefetch,
                  "Hybrid mode: copy the cold neurons the next layer is predicted to use into a VRAM cache while "
                  "the GPU computes: on | off | auto (a per-layer cost model on measured bandwidths decides)")
      ->check(CLI::IsMember({"on", "off", "auto"}))
      ->capture_default_str();
  sub->add_option("--stats", options.stats,
                  "Stats file from `thermocline profile` (predictors, TEAL thresholds) recorded on this model")
      ->check(CLI::ExistingFile);
  sub->add_option("--sparsity", options.sparsity,
                  "dense | auto (sparse FFN when the model has predictors) | relu (sparse FFN, required) | "
                  "teal:X (TEAL thresholds at target sparsity X, from --stats)")
      ->capture_default_str();
  auto* offload = sub->add_option("--offload-layers", options.offload_layers,
                                  "Layer offload (needs --device cuda; dense FFN): the first K layers on the GPU, "
                                  "the rest on the CPU; the output head too when K is every layer")
                      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  sub->add_option("--vram-budget", options.vram_budget,
                  "Layer offload (needs --device cuda): the largest --offload-layers K whose weights, KV cache "
                  "and workspace fit this many bytes (e.g. 12GiB, 800MiB)")
      ->excludes(offload);
  return sub->add_option("--sparse-max-tokens", options.sparse_max_tokens,
                         "Sparse mode: prompt chunks of at most this many tokens run the sparse FFN too "
                         "(generated tokens always do); 0: prompts run dense")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 16));
}

CliModel open_cli_model(const std::string& path, int threads, const ModelCliOptions& options,
                        const ShapeOf& shape_of) {
  config::SparsitySetting setting;
  try {
    setting = config::parse_sparsity_setting(options.sparsity);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--sparsity: ") + e.what());
  }
  config::DeviceSetting device;
  try {
    device = config::parse_device_setting(options.device);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--device: ") + e.what());
  }
  const bool hybrid = !options.placement.empty();
  if (hybrid && !device.cuda) {
    throw std::invalid_argument("--placement runs hybrid mode (hot neurons on a GPU, cold ones on the CPU): it "
                                "needs --device cuda; on the CPU every neuron is already on the CPU, drop "
                                "--placement");
  }
  if (options.prefetch != "on" && options.prefetch != "off" && options.prefetch != "auto") {
    throw std::invalid_argument("--prefetch: '" + options.prefetch + "' is not on, off or auto");
  }
  const auto prefetch = options.prefetch == "on"    ? model::PrefetchMode::On
                        : options.prefetch == "off" ? model::PrefetchMode::Off
                                                    : model::PrefetchMode::Auto;
  if (prefetch == model::PrefetchMode::On && !hybrid) {
    throw std::invalid_argument("--prefetch on copies cold neurons into VRAM in hybrid mode: it needs --placement");
  }
  const bool by_budget = !options.vram_budget.empty();
  const bool offload = options.offload_layers >= 0 || by_budget;
  const char* offload_flag = by_budget ? "--vram-budget" : "--offload-layers";
  uint64_t budget = 0;
  if (offload) {
    if (!device.cuda) {
      throw std::invalid_argument(std::string(offload_flag) + " runs layer offload (the first layers on a GPU, the "
                                  "rest on the CPU): it needs --device cuda");
    }
    if (hybrid) {
      throw std::invalid_argument(std::string(offload_flag) + " (layer offload) and --placement (hybrid mode) are "
                                  "two modes: pick one (the placement already spent its VRAM budget)");
    }
    if (by_budget) {
      try {
        budget = sparse::parse_byte_size(options.vram_budget);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(std::string("--vram-budget: ") + e.what());
      }
    }
  }
  CliModel m;
  m.loaded = model::load_model(path, {.stats = options.stats});
  m.shape = shape_of(m.loaded->spec);
  m.backend = kernels::create_backend(device, threads);
  model::LayerOffloadOptions offload_options;
  std::string offload_summary;
  if (offload) {
    const auto& spec = m.loaded->spec;
    offload_options.n_device_layers = options.offload_layers;
    if (by_budget) {
      const auto plan = sparse::plan_layer_offload(sparse::layer_offload_costs(m.loaded->file, spec, m.shape), budget);
      offload_options.n_device_layers = plan.n_device_layers;
      offload_summary = " (--vram-budget: " + plan.summary + ")";
    } else if (options.offload_layers > spec.n_layer) {
      throw std::invalid_argument("--offload-layers " + std::to_string(options.offload_layers) + ": " + path +
                                  " has " + std::to_string(spec.n_layer) + " layers");
    }
    m.cold_backend = kernels::create_backend(config::DeviceSetting{}, threads);
    offload_options.cpu = m.cold_backend.get();
  }
  m.plan = sparse::plan_sparsity(*m.loaded, setting, options.sparse_max_tokens,
                                 hybrid || m.backend->device() == kernels::DeviceKind::Cpu);
  model::HybridOptions hybrid_options;
  if (hybrid) {
    if (m.plan.forward.ffn_mode != model::FfnMode::Sparse) {
      throw std::invalid_argument("--placement needs the sparse FFN (a ReLU-family model with predictors, "
                                  "--sparsity auto or relu); the plan here is: " + m.plan.summary);
    }
    const auto& spec = m.loaded->spec;
    const uint64_t hash = sparse::fingerprint_model(m.loaded->file, spec).tensor_hash;
    hybrid_options.placement.hot = sparse::read_gpu_index(options.placement, spec.n_layer, spec.n_ff, hash).hot;
    hybrid_options.prefetch.mode = prefetch;
    m.cold_backend = kernels::create_backend(config::DeviceSetting{}, threads);
    hybrid_options.cpu = m.cold_backend.get();
  }
  int64_t n_hot = 0;
  for (const auto& layer : hybrid_options.placement.hot) n_hot += static_cast<int64_t>(layer.size());
  if (offload && m.plan.forward.ffn_mode != model::FfnMode::Dense) {
    throw std::invalid_argument(std::string(offload_flag) + " (layer offload) runs the dense FFN: use --sparsity "
                                "dense (the plan here is: " + m.plan.summary + ")");
  }
  m.llama = std::make_unique<model::LlamaModel>(*m.loaded, *m.backend, m.plan.forward, std::move(hybrid_options),
                                                offload_options);
  m.plan.attach(*m.llama);
  std::fprintf(stderr, "sparsity: %s\n", m.plan.summary.c_str());
  if (hybrid) {
    const int64_t n_neurons = m.loaded->spec.n_layer * m.loaded->spec.n_ff;
    std::fprintf(stderr, "hybrid: %lld of %lld FFN neurons hot (%s) on %s, the cold ones on %s\n",
                 static_cast<long long>(n_hot), static_cast<long long>(n_neurons), options.placement.c_str(),
                 m.backend->name().c_str(), m.cold_backend->name().c_str());
    std::fprintf(stderr, "prefetch: %s\n", m.llama->hybrid_prefetch() != nullptr
                                                 ? m.llama->hybrid_prefetch()->summary().c_str()
                                                 : "off");
  }
  if (offload) {
    std::fprintf(stderr, "layer offload: the first %lld of %lld layers on %s (%s of weights%s), the rest on %s%s\n",
                 static_cast<long long>(offload_options.n_device_layers),
                 static_cast<long long>(m.loaded->spec.n_layer), m.backend->name().c_str(),
                 sparse::human_bytes(m.llama->device_weight_bytes()).c_str(),
                 offload_options.n_device_layers == m.loaded->spec.n_layer ? ", output head included" : "",
                 m.cold_backend->name().c_str(), offload_summary.c_str());
  }
  return m;
}

}  // namespace tc::cli
