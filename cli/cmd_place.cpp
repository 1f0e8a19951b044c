// `thermocline place -m MODEL --stats STATS [--vram-budget B] [--ctx N]
// [--parallel N] [--batch N] [--prefetch on|off|auto] [-o PLAN.gpuidx]`:
// spends a VRAM budget on the model (attention, predictors, head, KV cache,
// workspace, the prefetch caches' reserve, then the hottest FFN neurons per
// byte), prints the plan and writes PowerInfer's gpuidx file
// (docs/placement.md).
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/runners.h"
#include "config/byte_size.h"
#include "config/serve_options.h"
#include "engine/sparse/place_model.h"

namespace tc::cli {

void register_place(CLI::App& app) {
  struct Options {
    sparse::PlaceRequest request;
    std::string budget;
    std::string prefetch = "auto";
    std::string output;
  };
  auto o = std::make_shared<Options>();
  const config::ServeOptions serve_defaults;
  o->request.shape.n_parallel = serve_defaults.parallel;
  o->request.shape.n_batch = serve_defaults.batch_size;
  auto* sub = app.add_subcommand(
      "place",
      "Plan which FFN neurons live in VRAM: spend a VRAM budget on attention and norms, predictors, the output "
      "head, the KV cache and a workspace, then on the neurons that fire most per byte (from `profile` "
      "statistics) across all layers. Prints the plan and writes PowerInfer's .generated.gpuidx file.");
  sub->add_option("-m,--model", o->request.model, "GGUF or PWRI model file")->required()->check(CLI::ExistingFile);
  sub->add_option("--stats", o->request.stats, "Activation statistics of this model (thermocline profile -o)")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("--vram-budget", o->budget,
                  "VRAM to spend: bytes, or a number with a unit: KiB/MiB/GiB/TiB and K/M/G/T are powers of 1024, "
                  "KB/MB/GB/TB powers of 1000 (12GiB, 1.5G, 800MiB, 16GB). Default: free memory of GPU 0 minus "
                  "max(512 MiB, 5% of its total); required on a machine or build without a GPU")
      ->type_name("BYTES");
  sub->add_option("-c,--ctx", o->request.shape.n_ctx,
                  "KV cache positions per slot (default: serve's 4096, at most the model's training context)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  sub->add_option("--parallel", o->request.shape.n_parallel, "KV cache slots (sequences served at once)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  sub->add_option("-b,--batch", o->request.shape.n_batch, "Tokens per engine step at most (sizes the workspace)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  sub->add_option("--prefetch", o->prefetch,
                  "The prefetch mode the plan is for (as serve's --prefetch): on or auto keep the neuron caches' "
                  "largest size (n_ff / 16 neurons in every layer but the first) out of the budget")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off", "auto"}));
  sub->add_option("-o,--output", o->output, "gpuidx file to write (default: MODEL.generated.gpuidx)")
      ->type_name("FILE");

  runners()["place"] = [o] {
    if (!o->budget.empty()) {
      o->request.vram_budget = config::parse_byte_size(o->budget);
      o->request.vram_budget_text = o->budget;
    }
    o->request.prefetch = o->prefetch == "off" ? model::PrefetchMode::Off
                          : o->prefetch == "on" ? model::PrefetchMode::On
                                                : model::PrefetchMode::Auto;
    const sparse::PlaceResult result = sparse::place_model(o->request);
    const std::filesystem::path output =
        o->output.empty() ? sparse::default_gpu_index_path(o->request.model) : std::filesystem::path(o->output);
    sparse::write_gpu_index(sparse::to_gpu_index(result), output);
    std::cout << sparse::placement_report(result);
    std::fprintf(stderr, "wrote %s\n", output.string().c_str());
    return 0;
  };
}

}  // namespace tc::cli
