// HttpFront: the server's connections. One thread (run()) accepts them and
// reads every request, head and body, without blocking (epoll): it checks
// the head strictly (request_head.h), decodes chunked bodies, enforces the
// size limits and the whole-request deadline, and answers the requests it
// cannot read itself. Only a complete request reaches a worker thread,
// which answers it on the connection and hands the connection back; bytes
// already read past that request (pipelining) stay for the next one. Idle
// keep-alive connections and slow clients hold no thread.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "server/http/error_response.h"
#include "server/http/http_limits.h"

namespace tc::server::http {

// One complete request, given to a worker.
struct ReadyRequest {
  std::string_view head;  // canonical_head(): CRLF lines, Content-Length set, no Transfer-Encoding
  std::string_view body;  // decoded, at most max_body_bytes
  int fd = -1;            // the connection (non-blocking): write with write_all
  std::string_view peer_ip;
  int peer_port = 0;
  bool close_after = false;  // the response must say "Connection: close"
};

// A request the front answered itself.
struct Rejection {
  int status = 400;
  std::string message;
  std::string method;  // "" when the request line could not be read
  std::string path;    // the target without its query; "" likewise
  std::string origin;  // the Origin header, when the head was read
};

struct FrontHooks {
  // On a worker thread: answers the request (any number of writes to fd).
  // Returns whether the connection can carry another request. Must not throw.
  std::function<bool(const ReadyRequest&)> handle;
  // On the front's thread, before the error response is written: records
  // the rejection and returns headers to add to it (CORS).
  std::function<HeaderList(const Rejection&)> rejected;
};

class HttpFront {
 public:
  // `n_workers` threads answer the complete requests.
  HttpFront(HttpLimits limits, size_t n_workers, FrontHooks hooks);
  ~HttpFront();
  HttpFront(const HttpFront&) = delete;
  HttpFront& operator=(const HttpFront&) = delete;

  // Binds host:port (0: any free port). False with error() set when it cannot.
  bool bind(const std::string& host, int port);
  int port() const;
  const std::string& error() const;

  // Serves until stop(), then returns once every connection is closed
  // (requests in a worker finish first).
  void run();
  // Thread-safe: every response from now on closes its connection.
  void begin_drain();
  // Thread-safe: stop accepting, close every connection not in a worker.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tc::server::http
