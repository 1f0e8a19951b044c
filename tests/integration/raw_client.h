// A raw TCP client for tests that send what no HTTP library would: bytes
// exactly as given, pipelined requests, partial heads. It reads responses
// with deadlines and tells when the server closed the connection.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>

namespace tc::test {

struct RawResponse {
  int status = 0;                             // 0: no complete response before the deadline or close
  std::map<std::string, std::string> headers; // names lowercased
  std::string body;                           // de-chunked
  double seconds = 0;                         // from the call to the response's last byte
};

class RawConnection {
 public:
  // Connects to 127.0.0.1:port; connected() is false when that failed.
  explicit RawConnection(int port);
  ~RawConnection();
  RawConnection(RawConnection&& other) noexcept;
  RawConnection& operator=(RawConnection&&) = delete;
  RawConnection(const RawConnection&) = delete;

  bool connected() const { return fd_ >= 0; }
  // Sends all of `data`; false when the server closed or reset the connection.
  bool send(std::string_view data);
  // Half-closes the sending side.
  void shutdown_write();
  // Reads one response (Content-Length, chunked, or to the close) within `timeout`.
  RawResponse read_response(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Waits up to `timeout` for the server to close; true when it did (FIN or
  // reset). Discards what arrives meanwhile.
  bool wait_closed(std::chrono::milliseconds timeout);
  int fd() const { return fd_; }
  // Nagle's algorithm on (off by default, as the connection opens with
  // TCP_NODELAY): what most HTTP client libraries leave as it is.
  void use_nagle();

 private:
  // Reads more bytes into buf_ until `deadline`; false on close, error or time out.
  bool fill(std::chrono::steady_clock::time_point deadline);

  int fd_ = -1;
  std::string buf_;
  bool closed_ = false;
};

// Raises this process's open-file limit to its hard limit; returns it.
long raise_open_files();

}  // namespace tc::test
