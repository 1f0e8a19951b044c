// Subcommand registration: each register_* adds a CLI11 subcommand with its
// flags; run_selected() runs the one the user chose.
#pragma once

#include <CLI/CLI.hpp>

namespace tc::cli {

void register_serve(CLI::App& app);
void register_inspect(CLI::App& app);
void register_make_model(CLI::App& app);
void register_make_mmproj(CLI::App& app);
void register_generate(CLI::App& app);
void register_bench(CLI::App& app);
void register_perplexity(CLI::App& app);
void register_profile(CLI::App& app);
void register_convert(CLI::App& app);
void register_place(CLI::App& app);

// Runs the parsed subcommand; returns the process exit status. Throws on
// errors (ModelLoadError, ConfigError, invalid_argument, ...).
int run_selected(CLI::App& app);

}  // namespace tc::cli
