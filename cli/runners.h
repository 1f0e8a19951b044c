// The table from subcommand name to the function that runs it, filled by
// each register_* with a closure over its parsed options.
#pragma once

#include <functional>
#include <map>
#include <string>

namespace tc::cli {

std::map<std::string, std::function<int()>>& runners();

}  // namespace tc::cli
