// POST routes whose JSON body Thermocline reads itself, through httplib's
// content reader, instead of letting httplib read it. httplib 0.11 (Debian
// 12) parses a body sent as application/x-www-form-urlencoded -- what
// `curl -d` sends when no Content-Type is given -- into form fields, and
// answers 413 to any such body over 8 KiB, a limit compiled into Debian's
// shared library: `curl -d @request.json` failed for every prompt past
// 8 KiB. Read here, the body is taken as sent whatever its Content-Type.
// (The HTTP layer, server/http/, has read the whole body before, decoded a
// chunked one, and answered 413 to any over --max-body-bytes.)
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <httplib.h>

#include "server/request_body.h"

namespace tc::server {

// A POST handler given the body as JSON: `body.error` is the 400 or 413 to
// answer when it could not be read or parsed (the handler decides when to
// look, so that an unready server still answers 503 first).
using JsonPostHandler = std::function<void(const httplib::Request&, ParsedBody body, httplib::Response&)>;

// Registers `handler` for POST `pattern`, bodies bounded by max_body_bytes.
void post_json_route(httplib::Server& http, const std::string& pattern, int64_t max_body_bytes,
                     JsonPostHandler handler);

}  // namespace tc::server
