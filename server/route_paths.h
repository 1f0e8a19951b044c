// Route paths: each route answers with and without the /v1 prefix, with
// repeated slashes collapsed and a trailing slash allowed.
#pragma once

#include <string>
#include <string_view>

namespace tc::server {

// "chat/completions" -> the regex "/+(?:v1/+)?chat/+completions/*".
std::string route_pattern(std::string_view path);

// The canonical name of a request path for logs and metrics:
// "//v1//chat/completions/" -> "/v1/chat/completions".
std::string canonical_route(std::string_view path);

// canonical_route() for a path that is one of the server's routes (with or
// without /v1), else "other": a bounded label set for metrics, whatever
// paths unauthenticated clients send.
std::string route_label(std::string_view path);

}  // namespace tc::server
