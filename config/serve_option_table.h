// The one table of `thermocline serve` options: key, flags, environment
// variable, help text, value kind, bounds and field access. Flag
// registration, env and TOML reading, validation, --print-config and the
// docs test all walk this table, so they cannot drift apart.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "config/serve_options.h"

namespace tc::config {

// Where a key's value lives in ServeOptions; the alternative is its kind.
using OptionField = std::variant<std::string ServeOptions::*, std::filesystem::path ServeOptions::*,
                                 int ServeOptions::*, int64_t ServeOptions::*, double ServeOptions::*,
                                 std::vector<std::string> ServeOptions::*, bool ServeOptions::*>;
enum class OptionKind { String, Path, Int, Int64, Double, StringList, Bool };  // OptionField's index order

struct OptionDescriptor {
  std::string_view key;    // TOML key; env is THERMOCLINE_<KEY>; flag --<key-with-dashes>
  // CLI11 names, e.g. "-c,--ctx-size"; always includes --<key-with-dashes>.
  // A Bool key's flags take no value: "--webui,!--no-webui" (the '!' one sets false).
  std::string_view flags;
  std::string_view help;   // one line for --help
  OptionField field;
  // Inclusive bounds of Int, Int64 and Double keys (every numeric key has a
  // minimum; max is optional); unused for the other kinds.
  double min = 0;
  std::optional<double> max = std::nullopt;
  // Allowed values of an enum-like String key; empty: any.
  std::span<const std::string_view> choices = {};
  // Words a Path key takes besides paths (placement's "auto"): kept as
  // written, never resolved against the config file's folder.
  std::span<const std::string_view> keywords = {};
  // Extra rule for keys that a bound or choice cannot say (host, api_keys,
  // cors_origins): the problem, or nullopt when valid.
  std::optional<std::string> (*check)(const ServeOptions&) = nullptr;

  OptionKind kind() const { return static_cast<OptionKind>(field.index()); }
  bool is_keyword(std::string_view value) const {
    for (auto k : keywords) {
      if (k == value) return true;
    }
    return false;
  }
  bool numeric() const {
    return kind() == OptionKind::Int || kind() == OptionKind::Int64 || kind() == OptionKind::Double;
  }
  std::string env_name() const;    // THERMOCLINE_<KEY uppercased>
  std::string long_flag() const;   // --<key-with-dashes>
  std::string range_text() const; // "1..65535", ">= 0", "trace|debug|..." or ""

  // Parses `text` (an env variable or flag value; list items are
  // comma-separated and trimmed, empty items dropped) into the field. Throws
  // ConfigError naming this key and `source` when the text is not a value of
  // the key's kind (a bad number, or one that does not fit the field).
  // Bool keys read true|false|1|0|on|off|yes|no, in any case.
  void set_from_text(ServeOptions& o, std::string_view text, const std::string& source) const;
  // Sets a StringList key from separate items (repeated flags), each trimmed
  // and split at commas like an env value.
  void set_list(ServeOptions& o, const std::vector<std::string>& items) const;
  // The field's value as a TOML literal; api_keys become "***" when `mask`.
  std::string toml_value(const ServeOptions& o, bool mask) const;
  // The field's problem (bound, choice or rule), or nullopt when valid.
  std::optional<std::string> problem(const ServeOptions& o) const;
};

// Every ServeOptions field, in the order of serve_options.h.
std::span<const OptionDescriptor> serve_option_table();
// The descriptor of `key`, or nullptr.
const OptionDescriptor* find_serve_option(std::string_view key);

// What is wrong with one API key (empty, whitespace, control character,
// ','), or nullopt; never quotes the key.
std::optional<std::string> api_key_problem(std::string_view key);

}  // namespace tc::config
