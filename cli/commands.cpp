// Dispatch from the parsed subcommand to its runner.
#include "cli/commands.h"

#include <functional>
#include <map>
#include <string>

#include "cli/runners.h"

namespace tc::cli {

std::map<std::string, std::function<int()>>& runners() {
  static std::map<std::string, std::function<int()>> table;
  return table;
}

int run_selected(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands()) {
    auto it = runners().find(sub->get_name());
    if (it != runners().end()) return it->second();
  }
  return 2;
}

}  // namespace tc::cli
