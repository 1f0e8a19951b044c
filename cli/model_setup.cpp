// add_model_options / open_cli_model.
#include "cli/model_setup.h"

#include <cstdio>
#include <stdexcept>

#include "config/device_setting.h"
#include "config/gpu_split_setting.h"
#include "engine/model/loaded_model.h"

namespace tc::cli {

CLI::Option* add_model_options(CLI::App* sub, ModelCliOptions& options) {
  sub->add_option("--device", options.device,
                  "cpu | cuda | cuda:N: the backend that runs the model (CUDA: the dense FFN, or hybrid with "
                  "--placement, or layer offload)")
      ->capture_default_str();
  sub->add_option("--placement", options.placement,
                  "Hybrid mode (needs --device cuda): the hot neurons of this .generated.gpuidx (from "
                  "`thermocline place`) on the GPU, the cold ones on the CPU; auto: solve the placement at load "
                  "from --stats within --vram-budget (default: free VRAM minus a margin)")
      ->check(CLI::Validator(
          [](const std::string& value) {
            return value == config::kPlacementAuto ? std::string() : CLI::ExistingFile(value);
          },
          "FILE|auto"));
  sub->add_option("--prefetch", options.prefetch,
                  "Hybrid mode: copy the cold neurons the next layer is predicted to use into a VRAM cache while "
                  "the GPU computes: on | off | auto (a per-layer cost model on measured bandwidths decides)")
      ->check(CLI::IsMember({"on", "off", "auto"}))
      ->capture_default_str();
  sub->add_option("--stats", options.stats,
                  "Stats file from `thermocline profile` (predictors, TEAL thresholds, firing counts for "
                  "--placement auto) recorded on this model")
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
                  "VRAM bytes (e.g. 12GiB, 800MiB; needs --device cuda): with --placement auto the solver's "
                  "budget; alone, layer offload with the largest --offload-layers K whose weights, KV cache and "
                  "workspace fit")
      ->excludes(offload);
  auto* repack = sub->add_option("--repack", options.repack,
                                 "CPU: Q4_0, Q4_1, Q8_0, Q3_K, Q4_K, Q5_K and Q6_K matrices (and Q5_0, Q5_1, "
                                 "IQ4_XS and IQ4_NL on AVX2) repacked at load into the matmul's lane layouts "
                                 "(auto: on x86 with AVX2 or AVX-512) or kept in the file's row layout (off, for "
                                 "comparisons)")
                     ->capture_default_str()
                     ->check(CLI::IsMember({"auto", "off"}));
  sub->add_flag("--no-repack", options.no_repack, "CPU: --repack off (for comparisons)")->excludes(repack);
  sub->add_option("--cache-type-k", options.cache_type_k,
                  "The KV cache's keys: f16, or q8_0 (8-bit blocks as llama.cpp's: about half the memory and the "
                  "bytes a long context's decode reads; CPU backend only)")
      ->capture_default_str()
      ->check(CLI::IsMember({"f16", "q8_0"}));
  sub->add_option("--cache-type-v", options.cache_type_v, "The KV cache's values: f16 or q8_0, as --cache-type-k")
      ->capture_default_str()
      ->check(CLI::IsMember({"f16", "q8_0"}));
  return sub->add_option("--sparse-max-tokens", options.sparse_max_tokens,
                         "Sparse mode: prompt chunks of at most this many tokens run the sparse FFN too "
                         "(generated tokens always do); 0: prompts run dense")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 16));
}

runtime::RunnableModel open_cli_model(const std::string& path, int threads, const ModelCliOptions& options,
                                      const ShapeOf& shape_of) {
  runtime::ModelSetup setup;
  setup.threads = threads;
  setup.sparse_max_tokens = options.sparse_max_tokens;
  // --repack's check admits only the two names.
  setup.cpu_repack = options.no_repack ? kernels::CpuRepack::Off : kernels::cpu_repack_from_name(options.repack).value();
  // The checks admit only the two names.
  setup.kv_types = {kernels::dtype_from_name(options.cache_type_k).value(),
                    kernels::dtype_from_name(options.cache_type_v).value()};
  try {
    setup.sparsity = config::parse_sparsity_setting(options.sparsity);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--sparsity: ") + e.what());
  }
  try {
    setup.device = config::parse_device_setting(options.device);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--device: ") + e.what());
  }
  setup.gpu_split = config::parse_gpu_split_setting(setup.device, options.placement, options.offload_layers,
                                                    options.vram_budget, options.prefetch);
  std::shared_ptr<const model::LoadedModel> loaded = model::load_model(path, {.stats = options.stats});
  const sparse::PlacementShape shape = shape_of(loaded->spec);
  runtime::RunnableModel m = runtime::set_up_model(std::move(loaded), setup, shape);
  for (const auto& line : m.summary) std::fprintf(stderr, "%s\n", line.c_str());
  return m;
}

}  // namespace tc::cli
