// The `thermocline` binary: parses the subcommand and its flags (CLI11) and
// hands over to one module per subcommand. Errors end the process with a
// message naming the file, key or option at fault and a non-zero status.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <iostream>

#include "cli/commands.h"
#include "config/serve_options.h"
#include "engine/gguf/model_load_error.h"

int main(int argc, char** argv) {
  CLI::App app{"Thermocline: an OpenAI-compatible LLM inference server with a hybrid CPU/GPU sparse engine"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "thermocline 0.1.0");

  tc::cli::register_serve(app);
  tc::cli::register_inspect(app);
  tc::cli::register_make_model(app);
  tc::cli::register_make_mmproj(app);
  tc::cli::register_generate(app);
  tc::cli::register_bench(app);
  tc::cli::register_perplexity(app);
  tc::cli::register_profile(app);
  tc::cli::register_convert(app);
  tc::cli::register_place(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return tc::cli::run_selected(app);
  } catch (const tc::gguf::ModelLoadError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
  } catch (const tc::config::ConfigError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
  }
  return 1;
}
