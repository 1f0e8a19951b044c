// Hands the HTTP layer's complete requests to cpp-httplib for routing and
// response writing. httplib 0.11 (Debian 12) reads requests from a socket
// itself, one thread per connection, with no whole-request deadline, and
// drops what it read past a request; its protected process_request() runs
// one request from any httplib::Stream, so it is given a stream that
// replays the request HttpFront already read and checked, and writes to
// the connection.
#pragma once

#include <chrono>

#include <httplib.h>

#include "server/http/http_front.h"

namespace tc::server::http {

class HttplibRouter : public httplib::Server {
 public:
  HttplibRouter();
  ~HttplibRouter() override;

  // Routes `request` and writes the response on its connection, each write
  // waiting at most `write_stall` for the client to take more. Returns
  // whether the connection can carry another request. Thread-safe (the
  // routes must be installed first).
  bool serve(const ReadyRequest& request, std::chrono::milliseconds write_stall);
};

// In a route handler (serve() runs it on the calling thread): whether the
// client of the request being answered is still connected. A handler that
// waits before it writes anything (a request whose model loads) asks this
// to stop waiting for a client that left. True outside serve().
bool request_client_connected();

}  // namespace tc::server::http
