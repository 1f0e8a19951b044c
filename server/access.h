// Access control: API keys (`Authorization: Bearer KEY` or `X-Api-Key: KEY`)
// and CORS origins. Pure functions over header values; http_server.cpp
// applies them to every route but /health.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tc::server {

// True when `keys` is empty (auth off) or either header carries one of them.
// Keys are compared in constant time.
bool api_key_accepted(const std::vector<std::string>& keys, std::string_view authorization,
                      std::string_view x_api_key);

// The Access-Control-Allow-Origin value for a request from `origin`: the
// origin itself when it is listed, "*" when "*" is listed, "" (no CORS
// headers) otherwise or when `origin` is empty.
std::string cors_allow_origin(const std::vector<std::string>& allowed, std::string_view origin);

}  // namespace tc::server
