// The serve configuration loader: CLI11 flag registration, the TOML file,
// THERMOCLINE_* variables, the merge and --print-config.
#include "config/serve_config.h"

#include <CLI/CLI.hpp>
#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <climits>
#include <fstream>
#include <set>
#include <sstream>

#include "config/serve_option_table.h"
#include "config/text_util.h"

namespace tc::config {
namespace {

namespace fs = std::filesystem;

const char* type_name_of(const OptionDescriptor& d) {
  if (!d.choices.empty()) return "ENUM";
  switch (d.kind()) {
    case OptionKind::String: return "TEXT";
    case OptionKind::Path: return "FILE";
    case OptionKind::Int:
    case OptionKind::Int64: return "INT";
    case OptionKind::Double: return d.key.ends_with("_s") ? "SECONDS" : "NUMBER";
    case OptionKind::StringList: return "TEXT";
    case OptionKind::Bool: return "";
  }
  return "TEXT";
}

std::string node_type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    default: return "nothing";
  }
}

std::string file_location(const fs::path& file, const toml::source_region& where) {
  std::string out = "file " + file.string();
  if (where.begin.line > 0) out += ":" + std::to_string(where.begin.line);
  return out;
}

// The nearest key to a typo, when it is near enough to be the one meant.
std::string suggestion_for(std::string_view unknown) {
  const OptionDescriptor* best = nullptr;
  size_t best_distance = SIZE_MAX;
  for (const auto& d : serve_option_table()) {
    const size_t dist = edit_distance(unknown, d.key);
    if (dist < best_distance) {
      best_distance = dist;
      best = &d;
    }
  }
  if (best == nullptr || best_distance > std::max<size_t>(2, unknown.size() / 3)) return "";
  return " (did you mean '" + std::string(best->key) + "'?)";
}

// Sets one key from its TOML node; `where` names the file and line.
void set_from_toml(const OptionDescriptor& d, const toml::node& node, const fs::path& file, ServeOptions& o) {
  const std::string key(d.key);
  const std::string where = file_location(file, node.source());
  const auto expected = [&](const char* what) {
    throw ConfigError(key, std::string("expected ") + what + ", got " + node_type_name(node), where);
  };
  switch (d.kind()) {
    case OptionKind::String: {
      const auto* s = node.as_string();
      if (s == nullptr) expected("a string");
      o.*std::get<std::string ServeOptions::*>(d.field) = s->get();
      return;
    }
    case OptionKind::Path: {
      const auto* s = node.as_string();
      if (s == nullptr) expected("a string (a path)");
      fs::path p(s->get());
      // Relative to the file, so a config file works from any directory.
      if (!p.empty() && p.is_relative() && !d.is_keyword(s->get())) p = file.parent_path() / p;
      o.*std::get<fs::path ServeOptions::*>(d.field) = p;
      return;
    }
    case OptionKind::Int:
    case OptionKind::Int64: {
      const auto* i = node.as_integer();
      if (i == nullptr) expected("an integer");
      const int64_t v = i->get();
      if (d.kind() == OptionKind::Int) {
        if (v < INT_MIN || v > INT_MAX) {
          throw ConfigError(key, "must be in " + d.range_text() + ", got " + std::to_string(v), where);
        }
        o.*std::get<int ServeOptions::*>(d.field) = static_cast<int>(v);
      } else {
        o.*std::get<int64_t ServeOptions::*>(d.field) = v;
      }
      return;
    }
    case OptionKind::Double: {
      if (const auto* f = node.as_floating_point()) {
        o.*std::get<double ServeOptions::*>(d.field) = f->get();
      } else if (const auto* i = node.as_integer()) {
        o.*std::get<double ServeOptions::*>(d.field) = static_cast<double>(i->get());
      } else {
        expected("a number");
      }
      return;
    }
    case OptionKind::StringList: {
      const auto* arr = node.as_array();
      if (arr == nullptr) expected("an array of strings");
      std::vector<std::string> items;
      for (size_t idx = 0; idx < arr->size(); ++idx) {
        const toml::node& item = *arr->get(idx);
        const auto* s = item.as_string();
        if (s == nullptr) {
          throw ConfigError(key, "expected an array of strings, item " + std::to_string(idx + 1) + " is " +
                                     node_type_name(item), file_location(file, item.source()));
        }
        items.push_back(s->get());
      }
      o.*std::get<std::vector<std::string> ServeOptions::*>(d.field) = std::move(items);
      return;
    }
    case OptionKind::Bool: {
      const auto* b = node.as_boolean();
      if (b == nullptr) expected("a boolean");
      o.*std::get<bool ServeOptions::*>(d.field) = b->get();
      return;
    }
  }
}

// Applies a TOML config file; `sources` (per table index) learns file:line.
void apply_toml_file(const fs::path& file, const std::string& file_source, ServeOptions& o,
                     std::vector<std::string>& sources) {
  std::error_code ec;
  if (fs::is_directory(file, ec)) throw ConfigError("config", "'" + file.string() + "' is a directory", file_source);
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError("config", "cannot read '" + file.string() + "'", file_source);
  std::ostringstream text;
  text << in.rdbuf();
  toml::table root;
  try {
    root = toml::parse(text.str(), file.string());
  } catch (const toml::parse_error& e) {
    const auto& at = e.source().begin;
    throw ConfigError("config", "invalid TOML: " + std::string(e.description()),
                      "file " + file.string() + ":" + std::to_string(at.line) + ":" + std::to_string(at.column));
  }
  const auto table = serve_option_table();
  for (const auto& [k, node] : root) {
    const OptionDescriptor* d = find_serve_option(k.str());
    if (d == nullptr) {
      throw ConfigError(std::string(k.str()), "unknown key in the config file" + suggestion_for(k.str()),
                        file_location(file, k.source()));
    }
    set_from_toml(*d, node, file, o);
    sources[static_cast<size_t>(d - table.data())] = file_location(file, node.source());
  }
}

// Reads api_key_file: one key per line, whitespace trimmed, blank lines and
// lines starting with '#' skipped.
std::vector<std::string> read_api_key_file(const fs::path& file, const std::string& source) {
  std::error_code ec;
  if (fs::is_directory(file, ec)) throw ConfigError("api_key_file", "'" + file.string() + "' is a directory", source);
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError("api_key_file", "cannot read '" + file.string() + "'", source);
  std::vector<std::string> keys;
  std::string line;
  for (size_t line_no = 1; std::getline(in, line); ++line_no) {
    const std::string_view key = trim(line);
    if (key.empty() || key.front() == '#') continue;
    if (auto problem = api_key_problem(key)) {
      throw ConfigError("api_key_file", "the key on line " + std::to_string(line_no) + " " + *problem,
                        source + ", " + file.string() + ":" + std::to_string(line_no));
    }
    keys.emplace_back(key);
  }
  if (in.bad()) throw ConfigError("api_key_file", "cannot read '" + file.string() + "'", source);
  if (keys.empty()) {
    throw ConfigError("api_key_file", "'" + file.string() + "' holds no keys (only blank lines and '#' comments)",
                      source);
  }
  return keys;
}

// A set environment variable with a non-blank value, else nullopt.
std::optional<std::string> env_value(const GetEnv& getenv, const std::string& name) {
  const char* v = getenv(name.c_str());
  if (v == nullptr || trim(v).empty()) return std::nullopt;
  return std::string(v);
}

constexpr std::array<std::string_view, 24> kModelSidecarKeys = {
    "chat_template_file", "mmproj", "parallel",       "ctx_size",         "batch_size", "queue_size", "threads",
    "device",             "stats",          "sparsity",         "sparse_max_tokens", "repack", "placement",
    "prefetch",           "offload_layers", "vram_budget",      "keep_alive", "max_tokens_cap", "pooling",
    "reasoning_format",   "cache_type_k",   "cache_type_v",     "context_shift", "lookup_draft"};

}  // namespace

std::span<const std::string_view> model_sidecar_keys() { return kModelSidecarKeys; }

ModelSidecar read_model_sidecar(const fs::path& file, const ServeOptions& base) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError("config", "cannot read '" + file.string() + "'", "file " + file.string());
  std::ostringstream text;
  text << in.rdbuf();
  toml::table root;
  try {
    root = toml::parse(text.str(), file.string());
  } catch (const toml::parse_error& e) {
    const auto& at = e.source().begin;
    throw ConfigError("config", "invalid TOML: " + std::string(e.description()),
                      "file " + file.string() + ":" + std::to_string(at.line) + ":" + std::to_string(at.column));
  }
  ModelSidecar out{base, {}};
  std::vector<const OptionDescriptor*> set;
  for (const auto& [k, node] : root) {
    const std::string key(k.str());
    if (key == "aliases") {
      const auto* arr = node.as_array();
      if (arr == nullptr) throw ConfigError(key, "expected an array of strings, got " + node_type_name(node), file_location(file, node.source()));
      for (size_t idx = 0; idx < arr->size(); ++idx) {
        const auto* s = arr->get(idx)->as_string();
        if (s == nullptr || trim(s->get()).empty()) {
          throw ConfigError(key, "item " + std::to_string(idx + 1) + " must be a non-empty string",
                            file_location(file, arr->get(idx)->source()));
        }
        out.aliases.emplace_back(trim(s->get()));
      }
      continue;
    }
    const OptionDescriptor* d = find_serve_option(key);
    const bool per_model = std::find(kModelSidecarKeys.begin(), kModelSidecarKeys.end(), key) != kModelSidecarKeys.end();
    if (d == nullptr || !per_model) {
      std::string allowed = "aliases";
      for (auto a : kModelSidecarKeys) allowed += ", " + std::string(a);
      throw ConfigError(key,
                        std::string(d == nullptr ? "unknown key" : "is a server-wide key, not a per-model one") +
                            " in a model's options file (allowed: " + allowed + ")",
                        file_location(file, k.source()));
    }
    set_from_toml(*d, node, file, out.options);
    set.push_back(d);
  }
  for (const OptionDescriptor* d : set) {
    if (auto problem = d->problem(out.options)) {
      throw ConfigError(std::string(d->key), *problem, "file " + file.string());
    }
  }
  return out;
}

std::shared_ptr<ServeFlags> add_serve_flags(CLI::App& cmd) {
  auto flags = std::make_shared<ServeFlags>();
  const auto table = serve_option_table();
  flags->values.resize(table.size());
  cmd.add_option_function<std::string>(
         "--config", [flags](const std::string& v) { flags->config_file = v; },
         "TOML config file (env THERMOCLINE_CONFIG); flags > env > file > defaults")
      ->type_name("FILE");
  cmd.add_flag_callback(
      "--print-config", [flags] { flags->print_config = true; },
      "Print the effective configuration as TOML (api keys masked) and exit");
  const ServeOptions defaults;
  for (size_t i = 0; i < table.size(); ++i) {
    const OptionDescriptor& d = table[i];
    std::string help = std::string(d.help) + " (env " + d.env_name() + ")";
    CLI::Option* opt = nullptr;
    if (d.kind() == OptionKind::Bool) {
      // A flag without a value; the negated name ('!') counts -1, and the
      // last one given wins.
      opt = cmd.add_flag_function(
          std::string(d.flags),
          [flags, i](std::int64_t count) { flags->values[i] = std::vector<std::string>{count > 0 ? "true" : "false"}; },
          help);
      opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
      continue;
    }
    if (d.kind() == OptionKind::StringList) {
      opt = cmd.add_option_function<std::vector<std::string>>(
          std::string(d.flags), [flags, i](const std::vector<std::string>& v) { flags->values[i] = v; }, help);
      opt->allow_extra_args(false);
    } else {
      opt = cmd.add_option_function<std::string>(
          std::string(d.flags), [flags, i](const std::string& v) { flags->values[i] = std::vector<std::string>{v}; },
          help);
      opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
      const std::string shown = d.toml_value(defaults, true);
      if (shown != "\"\"") opt->default_str(shown);
    }
    opt->type_name(d.choices.empty() ? type_name_of(d) : d.range_text());
  }
  return flags;
}

ServeOptions resolve_serve_options(const ServeFlags& flags, const GetEnv& getenv) {
  const auto table = serve_option_table();
  ServeOptions o;
  std::vector<std::string> sources(table.size(), "default");

  // The file.
  std::optional<std::string> config_file = flags.config_file;
  std::string config_source = "flag --config";
  if (!config_file) {
    config_file = env_value(getenv, "THERMOCLINE_CONFIG");
    config_source = "env THERMOCLINE_CONFIG";
  }
  if (config_file) {
    if (trim(*config_file).empty()) throw ConfigError("config", "empty file name", config_source);
    apply_toml_file(fs::path(*config_file), config_source, o, sources);
  }

  // The environment; THERMOCLINE_API_KEY adds one key to THERMOCLINE_API_KEYS.
  for (size_t i = 0; i < table.size(); ++i) {
    const std::string name = table[i].env_name();
    if (auto v = env_value(getenv, name)) {
      table[i].set_from_text(o, *v, "env " + name);
      sources[i] = "env " + name;
    }
  }
  if (auto key = env_value(getenv, "THERMOCLINE_API_KEY")) {
    const OptionDescriptor* d = find_serve_option("api_keys");
    const size_t i = static_cast<size_t>(d - table.data());
    if (sources[i] != "env THERMOCLINE_API_KEYS") {
      o.api_keys.clear();
      sources[i] = "env THERMOCLINE_API_KEY";
    } else {
      sources[i] = "env THERMOCLINE_API_KEYS/THERMOCLINE_API_KEY";
    }
    o.api_keys.emplace_back(trim(*key));
  }

  // The flags.
  for (size_t i = 0; i < table.size() && i < flags.values.size(); ++i) {
    if (!flags.values[i]) continue;
    const OptionDescriptor& d = table[i];
    const std::string source = "flag " + d.long_flag();
    const auto& given = *flags.values[i];
    if (d.kind() == OptionKind::StringList) {
      // An empty item is most likely an unset shell variable; never let it
      // quietly replace (and so switch off) a list.
      for (const auto& item : given) {
        if (trim(item).empty()) throw ConfigError(std::string(d.key), "empty value", source);
      }
      d.set_list(o, given);
    } else if (!given.empty()) {
      d.set_from_text(o, given.back(), source);
    }
    sources[i] = source;
  }

  for (size_t i = 0; i < table.size(); ++i) {
    if (auto problem = table[i].problem(o)) throw ConfigError(std::string(table[i].key), *problem, sources[i]);
  }

  if (!o.api_key_file.empty()) {
    const size_t i = static_cast<size_t>(find_serve_option("api_key_file") - table.data());
    for (auto& key : read_api_key_file(o.api_key_file, sources[i])) o.api_keys.push_back(std::move(key));
  }
  std::set<std::string> seen;
  std::erase_if(o.api_keys, [&seen](const std::string& k) { return !seen.insert(k).second; });
  return o;
}

bool print_config_requested(const ServeFlags& flags) { return flags.print_config; }

std::string to_toml(const ServeOptions& options, bool mask_api_keys) {
  std::string out = "# thermocline serve: effective configuration (flags > env > file > defaults)\n";
  if (!options.api_key_file.empty()) {
    out += "# api_keys includes the keys read from api_key_file\n";
  }
  for (const auto& d : serve_option_table()) {
    out += std::string(d.key) + " = " + d.toml_value(options, mask_api_keys) + "\n";
  }
  return out;
}

}  // namespace tc::config
