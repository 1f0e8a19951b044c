// The `thermocline serve` configuration loader: flags (CLI11), a TOML file
// (--config / THERMOCLINE_CONFIG, toml++) and THERMOCLINE_* environment
// variables, merged as flags > env > file > defaults, then validated.
// Every key, flag and variable comes from config/serve_option_table.h.
#pragma once

#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <string>
#include <vector>

#include "config/serve_options.h"

namespace CLI {
class App;
}

namespace tc::config {

// What the command line gave, filled by CLI11 callbacks while `cmd` parses.
struct ServeFlags {
  std::optional<std::string> config_file;  // --config FILE
  bool print_config = false;               // --print-config
  // Indexed like serve_option_table(): the values given for each key; one
  // for a scalar key (the last occurrence wins), all occurrences for a list
  // key; nullopt when the flag was not given.
  std::vector<std::optional<std::vector<std::string>>> values;
};

// Registers every serve flag (one or more names per key, see the table) and
// --config, --print-config on `cmd`; values are plain strings here and are
// parsed and validated by resolve_serve_options, so one error path names the
// key and its source. The returned handle is filled when `cmd` parses.
std::shared_ptr<ServeFlags> add_serve_flags(CLI::App& cmd);

// Reads an environment variable; nullptr when unset. Tests pass a fake.
using GetEnv = std::function<const char*(const char*)>;

// Resolves defaults <- file <- env <- flags, validates every key, then reads
// api_key_file and appends its keys to api_keys (duplicates dropped, first
// occurrence kept). Relative paths in the TOML file are relative to the
// file's folder; an empty environment variable counts as unset. Throws
// ConfigError naming the key and where its value came from ("flag --port",
// "env THERMOCLINE_PORT", "file serve.toml:3", "default"); for the file
// itself (unreadable, bad TOML) the key is "config".
ServeOptions resolve_serve_options(const ServeFlags& flags, const GetEnv& getenv = ::getenv);

// A model's own options in a `serve --models-dir` folder: NAME.toml beside
// NAME.gguf. It may set the per-model keys (kModelSidecarKeys: context,
// slots, sparsity, placement, chat template, keep_alive, ...) and
// `aliases`, more ids the model answers to.
struct ModelSidecar {
  ServeOptions options;              // the serve options with the file's keys applied
  std::vector<std::string> aliases;  // as listed, each non-empty
};
// The keys NAME.toml may set (besides `aliases`).
std::span<const std::string_view> model_sidecar_keys();
// Reads `file` onto a copy of `base` and validates the keys it set. Relative
// paths are relative to the file's folder. Throws ConfigError naming the key
// and "file NAME.toml:LINE" for an unreadable file, bad TOML, a key that is
// not per-model (or unknown), a wrong type or a bad value.
ModelSidecar read_model_sidecar(const std::filesystem::path& file, const ServeOptions& base);

// Whether --print-config was given: print to_toml(resolved options), exit 0.
bool print_config_requested(const ServeFlags& flags);

// Every key with its value as a TOML document (table order), readable back
// by --config; api_keys print as "***" each when `mask_api_keys`.
std::string to_toml(const ServeOptions& options, bool mask_api_keys = true);

}  // namespace tc::config
