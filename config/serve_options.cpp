// Validation of ServeOptions.
#include "config/serve_options.h"

namespace tc::config {

void validate(const ServeOptions& o) {
  if (o.host.empty()) throw ConfigError("host", "must not be empty");
  if (o.port < 1 || o.port > 65535) throw ConfigError("port", "must be in 1..65535, got " + std::to_string(o.port));
  if (o.http_threads < 1 || o.http_threads > 1024) {
    throw ConfigError("http_threads", "must be in 1..1024, got " + std::to_string(o.http_threads));
  }
}

}  // namespace tc::config
