// Options of `thermocline serve` and their validation. The full loader
// (TOML file, THERMOCLINE_* environment, flags; precedence flags > env >
// file > defaults) grows here; today the CLI fills these from flags.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace tc::config {

// A configuration value that cannot be used; the message names the key.
class ConfigError : public std::runtime_error {
 public:
  ConfigError(const std::string& key, const std::string& problem)
      : std::runtime_error("config '" + key + "': " + problem), key_(key) {}
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

struct ServeOptions {
  std::string host = "127.0.0.1";   // bind address (key: host)
  int port = 8080;                  // TCP port (key: port)
  std::filesystem::path model;      // GGUF file (key: model); empty: the default model
  std::string model_alias;          // id shown in /v1/models (key: model_alias); empty: file stem
  int http_threads = 8;             // HTTP worker threads (key: http_threads)
};

// Throws ConfigError naming the first invalid key.
void validate(const ServeOptions& options);

}  // namespace tc::config
