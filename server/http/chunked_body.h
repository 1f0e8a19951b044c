// An incremental decoder of chunked request bodies (RFC 9112 section 7.1):
// strict hex sizes, CRLF after each chunk's data, trailer fields read and
// dropped, the decoded size bounded. No I/O; unit-tested directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/http/request_head.h"

namespace tc::server::http {

class ChunkedDecoder {
 public:
  enum class Status { NeedMore, Done, Error };

  ChunkedDecoder(uint64_t max_body_bytes, size_t max_trailer_bytes)
      : max_body_bytes_(max_body_bytes), max_trailer_bytes_(max_trailer_bytes) {}

  // Decodes what it can of `in`, appending data to `out`; `consumed` says
  // how many bytes of `in` it took (the rest waits for more input, or after
  // Done belongs to the next request). Error sets error(): 400 for bad
  // syntax, 413 past max_body_bytes.
  Status feed(std::string_view in, size_t& consumed, std::string& out);
  const HttpError& error() const { return error_; }

 private:
  enum class State { Size, Data, DataEnd, Trailer, Done };
  Status fail(int status, std::string message);

  uint64_t max_body_bytes_;
  size_t max_trailer_bytes_;
  State state_ = State::Size;
  uint64_t remaining_ = 0;     // of the current chunk's data
  size_t trailer_bytes_ = 0;
  HttpError error_;
};

}  // namespace tc::server::http
