// Validation of ServeOptions against the bounds and rules of the option table.
#include "config/serve_options.h"

#include "config/serve_option_table.h"

namespace tc::config {

void validate(const ServeOptions& o) {
  for (const auto& d : serve_option_table()) {
    if (auto problem = d.problem(o)) throw ConfigError(std::string(d.key), *problem);
  }
}

}  // namespace tc::config
