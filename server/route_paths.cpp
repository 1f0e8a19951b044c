// Route path patterns and canonical names (see route_paths.h).
#include "server/route_paths.h"

#include <vector>

namespace tc::server {
namespace {

std::vector<std::string> segments(std::string_view path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    size_t j = i;
    while (j < path.size() && path[j] != '/') ++j;
    if (j > i) out.emplace_back(path.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace

std::string route_pattern(std::string_view path) {
  std::string pattern = "/+(?:v1/+)?";
  bool first = true;
  for (const auto& s : segments(path)) {
    if (!first) pattern += "/+";
    pattern += s;  // route names are plain [a-z_] words: nothing to escape
    first = false;
  }
  return pattern + "/*";
}

std::string canonical_route(std::string_view path) {
  std::string out;
  for (const auto& s : segments(path)) out += "/" + s;
  return out.empty() ? "/" : out;
}

}  // namespace tc::server
