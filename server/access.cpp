// API key and CORS checks (see access.h).
#include "server/access.h"

#include <cctype>

namespace tc::server {
namespace {

// Compares without an early exit on the first differing byte.
bool constant_time_equal(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = a.size() < b.size() ? a.size() : b.size();
  for (size_t i = 0; i < n; ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

bool matches_any(const std::vector<std::string>& keys, std::string_view candidate) {
  bool found = false;
  for (const auto& k : keys) found |= constant_time_equal(k, candidate);
  return found && !candidate.empty();
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

bool api_key_accepted(const std::vector<std::string>& keys, std::string_view authorization,
                      std::string_view x_api_key) {
  if (keys.empty()) return true;
  authorization = trim(authorization);
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.size() > kBearer.size()) {
    std::string scheme(authorization.substr(0, kBearer.size()));
    for (auto& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (scheme == "bearer " && matches_any(keys, trim(authorization.substr(kBearer.size())))) return true;
  }
  return matches_any(keys, trim(x_api_key));
}

std::string cors_allow_origin(const std::vector<std::string>& allowed, std::string_view origin) {
  if (origin.empty()) return "";
  bool any = false;
  for (const auto& a : allowed) {
    if (a == origin) return std::string(origin);
    any = any || a == "*";
  }
  return any ? "*" : "";
}

}  // namespace tc::server
