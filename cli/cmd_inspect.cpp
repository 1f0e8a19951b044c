// `thermocline inspect FILE [--json] [--max-array N]`.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/runners.h"
#include "profiler/inspect.h"

namespace tc::cli {

void register_inspect(CLI::App& app) {
  auto opts = std::make_shared<profiler::InspectOptions>();
  auto path = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("inspect", "Print a GGUF/PWRI file's metadata, model, tokenizer and tensors");
  sub->add_option("file", *path, "GGUF or PowerInfer (PWRI) file")->required();
  sub->add_flag("--json", opts->json, "Print JSON instead of a table");
  sub->add_option("--max-array", opts->max_array_items, "Array elements shown before eliding")
      ->check(CLI::Range(0, 1 << 30));
  runners()["inspect"] = [opts, path] {
    std::cout << profiler::inspect_file(*path, *opts);
    return 0;
  };
}

}  // namespace tc::cli
