// The HTTP layer's limits on clients: sizes of a request head, the whole-
// request deadline, keep-alive, write stalls and open connections. Built
// from the serve options (config/serve_options.h documents each key).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstddef>

namespace tc::server::http {

// A request line longer than this is a 414, a header line longer than this
// a 431, whatever http_max_header_bytes says: cpp-httplib 0.11 (which routes
// the requests) has both limits compiled in (CPPHTTPLIB_REQUEST_URI_MAX_LENGTH,
// CPPHTTPLIB_HEADER_MAX_LENGTH), each counting the line end.
inline constexpr size_t kMaxRequestLineBytes = 8192;
inline constexpr size_t kMaxHeaderLineBytes = 8192;
// A chunk-size line (hex size and extensions) longer than this is a 400.
inline constexpr size_t kMaxChunkLineBytes = 1024;

struct HttpLimits {
  size_t max_header_bytes = 16 << 10;  // request line + headers; larger: 431 (414 for the request line)
  size_t max_headers = 100;            // header fields; more: 431
  uint64_t max_body_bytes = 8 << 20;   // decoded body; larger: 413
  // From a request's first byte to its last (head and body): a client that
  // has not sent the whole request by then gets a 408 and is disconnected.
  std::chrono::milliseconds request_timeout{30'000};
  // An idle keep-alive connection is closed after this; 0: one request per connection.
  std::chrono::milliseconds keep_alive_timeout{5'000};
  // A response write that makes no progress for this long drops the connection.
  std::chrono::milliseconds write_timeout{10'000};
  size_t max_connections = 1024;       // open connections; more are answered 503 and closed
};

}  // namespace tc::server::http
