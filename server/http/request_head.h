// A strict HTTP/1.x request head reader (RFC 9112): finds the end of the
// head within the limits, parses the request line and the header fields,
// and decides the body's framing. Anything ambiguous -- conflicting or
// malformed Content-Length, Content-Length with Transfer-Encoding, folded
// or malformed fields, stray CRs -- is an error with its status, so that a
// proxy in front and this server can never disagree on where a request ends.
// No I/O here; unit-tested directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/http/http_limits.h"

namespace tc::server::http {

// A request the server answers itself and then closes the connection.
struct HttpError {
  int status = 400;     // 400, 408, 413, 414, 417, 431, 501, 503, 505
  std::string message;  // for the OpenAI error body and the log
};

enum class BodyFraming { None, Length, Chunked };

struct RequestHead {
  std::string method;
  std::string target;     // as sent: origin-form path and query, or "*"
  int minor_version = 1;  // HTTP/1.<minor_version>
  std::vector<std::pair<std::string, std::string>> fields;  // name as sent, value trimmed
  BodyFraming framing = BodyFraming::None;
  uint64_t content_length = 0;  // framing Length
  bool keep_alive = true;       // HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with keep-alive
  bool expect_continue = false; // "Expect: 100-continue"
  size_t head_bytes = 0;        // bytes of the head in the buffer, leading empty lines included

  // The first field named `name` (case-insensitive), "" when absent.
  std::string_view field(std::string_view name) const;
  // The target's path (the target up to '?').
  std::string_view path() const;
};

enum class HeadStatus { NeedMore, Complete, Error };

struct HeadParse {
  HeadStatus status = HeadStatus::NeedMore;
  RequestHead head;  // Complete
  HttpError error;   // Error
};

// Parses the head at the start of `buffer`. NeedMore while it is incomplete
// and within the limits; `scan_from` is where an earlier call stopped
// looking for the head's end (0 the first time; updated), so that a head
// arriving byte by byte is scanned once.
HeadParse parse_request_head(std::string_view buffer, const HttpLimits& limits, size_t& scan_from);

// The head as cpp-httplib reads it: request line and fields with CRLF line
// ends, Transfer-Encoding and Expect dropped (the body arrives decoded and
// "100 Continue" was already sent), and Content-Length set to `body_bytes`
// (for every POST, PUT, PATCH and DELETE, so that none is read to EOF).
std::string canonical_head(const RequestHead& head, uint64_t body_bytes);

// Case-insensitive ASCII comparison.
bool equals_ignore_case(std::string_view a, std::string_view b);

}  // namespace tc::server::http
