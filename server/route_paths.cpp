// Route path patterns and canonical names (see route_paths.h).
#include "server/route_paths.h"

#include <array>
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

std::string route_label(std::string_view path) {
  static constexpr std::array<std::string_view, 31> kRoutes = {
      "/completions", "/chat/completions", "/embeddings", "/models",     "/health",      "/metrics",      "/tokenize",
      "/completion",  "/infill",           "/responses",  "/messages",   "/messages/count_tokens",
      "/responses/input_tokens",
      "/detokenize",  "/props",            "/engine/stats", "/engine/firing_curve", "/", "/api/version",
      "/api/tags",    "/api/show",         "/api/ps",     "/api/generate", "/api/chat",    "/api/embed",
      "/api/embeddings", "/api/pull",      "/api/push",   "/api/create",  "/api/copy",     "/api/delete"};
  std::string route = canonical_route(path);
  const std::string_view unversioned =
      route.rfind("/v1/", 0) == 0 ? std::string_view(route).substr(3) : std::string_view(route);
  for (const auto known : kRoutes) {
    if (unversioned == known) return route;
  }
  return "other";
}

}  // namespace tc::server
