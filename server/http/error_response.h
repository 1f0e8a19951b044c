// The responses the HTTP layer writes itself, before any route runs: an
// OpenAI error body with "Connection: close" (the connection is closed
// after it), for requests that cannot be read (400, 408, 413, 414, 417,
// 431, 501, 505) or a server at its connection limit (503).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "server/http/request_head.h"

namespace tc::server::http {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// The whole response: status line, headers (`extra` added, e.g. CORS) and body.
std::string error_response(const HttpError& error, const HeaderList& extra = {});

// "HTTP/1.1 100 Continue" and its empty line.
inline constexpr std::string_view kContinueResponse = "HTTP/1.1 100 Continue\r\n\r\n";

}  // namespace tc::server::http
