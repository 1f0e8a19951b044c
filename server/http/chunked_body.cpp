// ChunkedDecoder (see chunked_body.h).
#include "server/http/chunked_body.h"

#include <algorithm>

namespace tc::server::http {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A chunk-size line without its line end: 1*HEXDIG, then nothing or
// [BWS] ";" extensions (ignored). 15 significant hex digits at most.
bool parse_chunk_size(std::string_view line, uint64_t& size) {
  size_t i = 0;
  size = 0;
  int significant = 0;
  while (i < line.size() && hex_value(line[i]) >= 0) {
    if (size > 0 || line[i] != '0') ++significant;
    if (significant > 15) return false;
    size = size * 16 + static_cast<uint64_t>(hex_value(line[i]));
    ++i;
  }
  if (i == 0) return false;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (i == line.size()) return true;
  if (line[i] != ';') return false;
  for (; i < line.size(); ++i) {
    const auto c = static_cast<unsigned char>(line[i]);
    if (c < 0x20 && c != '\t') return false;
    if (c == 0x7f) return false;
  }
  return true;
}

}  // namespace

ChunkedDecoder::Status ChunkedDecoder::fail(int status, std::string message) {
  error_ = {status, std::move(message)};
  return Status::Error;
}

ChunkedDecoder::Status ChunkedDecoder::feed(std::string_view in, size_t& consumed, std::string& out) {
  size_t pos = 0;
  const auto finish = [&](Status s) {
    consumed = pos;
    return s;
  };
  while (true) {
    switch (state_) {
      case State::Size:
      case State::Trailer: {
        const size_t lf = in.find('\n', pos);
        const size_t limit = state_ == State::Size ? kMaxChunkLineBytes : kMaxHeaderLineBytes;
        if (lf == std::string_view::npos) {
          if (in.size() - pos > limit) {
            return finish(fail(state_ == State::Size ? 400 : 431, state_ == State::Size
                                                                     ? "chunk-size line too long"
                                                                     : "a trailer line longer than the limit"));
          }
          return finish(Status::NeedMore);
        }
        std::string_view line = in.substr(pos, lf - pos);
        const size_t line_bytes = lf + 1 - pos;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.find('\r') != std::string_view::npos) return finish(fail(400, "a CR not followed by LF in the chunked body"));
        if (line_bytes > limit) return finish(fail(400, "chunk-size or trailer line too long"));
        pos = lf + 1;
        if (state_ == State::Size) {
          uint64_t size = 0;
          if (!parse_chunk_size(line, size)) return finish(fail(400, "invalid chunk size in the chunked body"));
          if (size > max_body_bytes_ - std::min<uint64_t>(out.size(), max_body_bytes_)) {
            return finish(fail(413, "request body is larger than the server's limit"));
          }
          remaining_ = size;
          state_ = size == 0 ? State::Trailer : State::Data;
          if (size > 0) out.reserve(out.size() + static_cast<size_t>(size));
        } else {
          trailer_bytes_ += line_bytes;
          if (trailer_bytes_ > max_trailer_bytes_) return finish(fail(431, "chunked body trailers too large"));
          if (line.empty()) {
            state_ = State::Done;
            return finish(Status::Done);
          }
          // Trailer fields are read and dropped; their syntax is still checked.
          if (line.front() == ' ' || line.front() == '\t' || line.find(':') == std::string_view::npos ||
              line.find(':') == 0) {
            return finish(fail(400, "malformed trailer field in the chunked body"));
          }
        }
        break;
      }
      case State::Data: {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, in.size() - pos));
        out.append(in.data() + pos, n);
        pos += n;
        remaining_ -= n;
        if (remaining_ > 0) return finish(Status::NeedMore);
        state_ = State::DataEnd;
        break;
      }
      case State::DataEnd: {
        if (pos < in.size() && in[pos] == '\n') {
          pos += 1;
        } else if (pos + 1 < in.size() && in[pos] == '\r' && in[pos + 1] == '\n') {
          pos += 2;
        } else if (pos == in.size() || (pos + 1 == in.size() && in[pos] == '\r')) {
          return finish(Status::NeedMore);
        } else {
          return finish(fail(400, "chunk data longer than its size in the chunked body"));
        }
        state_ = State::Size;
        break;
      }
      case State::Done:
        return finish(Status::Done);
    }
  }
}

}  // namespace tc::server::http
