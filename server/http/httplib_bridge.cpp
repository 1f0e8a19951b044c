// HttplibRouter and its replaying stream (see httplib_bridge.h).
#include "server/http/httplib_bridge.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "server/http/socket_io.h"

namespace tc::server::http {
namespace {

// The connection serve() is answering on this thread; -1 outside it.
thread_local int t_request_fd = -1;

// Reads the request (head, then body, then end of stream); writes go to the
// connection.
class ReplayStream final : public httplib::Stream {
 public:
  ReplayStream(const ReadyRequest& request, std::chrono::milliseconds write_stall)
      : request_(request), write_stall_(write_stall) {}

  bool is_readable() const override { return read_ < request_.head.size() + request_.body.size(); }
  // A content provider's is_writable(): false once the client has gone.
  bool is_writable() const override { return !failed_ && peer_connected(request_.fd); }

  ssize_t read(char* ptr, size_t size) override {
    const size_t n_head = request_.head.size();
    std::string_view from;
    if (read_ < n_head) {
      from = request_.head.substr(read_);
    } else {
      from = request_.body.substr(std::min(read_ - n_head, request_.body.size()));
    }
    const size_t n = std::min(size, from.size());
    std::memcpy(ptr, from.data(), n);
    read_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (failed_ || !write_all(request_.fd, std::string_view(ptr, size), write_stall_)) {
      failed_ = true;
      return -1;
    }
    return static_cast<ssize_t>(size);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = std::string(request_.peer_ip);
    port = request_.peer_port;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override { local_address(request_.fd, ip, port); }
  socket_t socket() const override { return request_.fd; }

  bool failed() const { return failed_; }

 private:
  const ReadyRequest& request_;
  std::chrono::milliseconds write_stall_;
  size_t read_ = 0;
  bool failed_ = false;
};

}  // namespace

HttplibRouter::HttplibRouter() {
  // httplib stops a content provider (a stream) once its listening socket
  // is gone; this server never opens one, so it says there is one.
  svr_sock_ = 0;
}

HttplibRouter::~HttplibRouter() { svr_sock_ = INVALID_SOCKET; }

bool HttplibRouter::serve(const ReadyRequest& request, std::chrono::milliseconds write_stall) {
  ReplayStream stream(request, write_stall);
  bool closed = false;
  struct CurrentFd {
    explicit CurrentFd(int fd) { t_request_fd = fd; }
    ~CurrentFd() { t_request_fd = -1; }
  } current(request.fd);
  const bool ok = process_request(stream, request.close_after, closed, nullptr);
  return ok && !closed && !request.close_after && !stream.failed();
}

bool request_client_connected() { return t_request_fd < 0 || peer_connected(t_request_fd); }

}  // namespace tc::server::http
