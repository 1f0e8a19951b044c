// add_model_options / open_cli_model.
#include "cli/model_setup.h"

#include <cstdio>
#include <stdexcept>

#include "config/device_setting.h"
#include "kernels/backend_from_setting.h"

namespace tc::cli {

CLI::Option* add_model_options(CLI::App* sub, ModelCliOptions& options) {
  sub->add_option("--device", options.device,
                  "cpu | cuda | cuda:N: the backend that runs the model (CUDA: dense FFN only so far)")
      ->capture_default_str();
  sub->add_option("--stats", options.stats,
                  "Stats file from `thermocline profile` (predictors, TEAL thresholds) recorded on this model")
      ->check(CLI::ExistingFile);
  sub->add_option("--sparsity", options.sparsity,
                  "dense | auto (sparse FFN when the model has predictors) | relu (sparse FFN, required) | "
                  "teal:X (TEAL thresholds at target sparsity X, from --stats)")
      ->capture_default_str();
  return sub->add_option("--sparse-max-tokens", options.sparse_max_tokens,
                         "Sparse mode: prompt chunks of at most this many tokens run the sparse FFN too "
                         "(generated tokens always do); 0: prompts run dense")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 16));
}

CliModel open_cli_model(const std::string& path, int threads, const ModelCliOptions& options) {
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
  CliModel m;
  m.loaded = model::load_model(path, {.stats = options.stats});
  m.backend = kernels::create_backend(device, threads);
  m.plan = sparse::plan_sparsity(*m.loaded, setting, options.sparse_max_tokens,
                                 m.backend->device() == kernels::DeviceKind::Cpu);
  m.llama = std::make_unique<model::LlamaModel>(*m.loaded, *m.backend, m.plan.forward);
  m.plan.attach(*m.llama);
  std::fprintf(stderr, "sparsity: %s\n", m.plan.summary.c_str());
  return m;
}

}  // namespace tc::cli
