// RawConnection (see raw_client.h).
#include "tests/integration/raw_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>

namespace tc::test {
namespace {

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::max<int64_t>(0, left));
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

RawConnection::RawConnection(int port) {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd_);
    fd_ = -1;
    return;
  }
  int yes = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
}

RawConnection::~RawConnection() {
  if (fd_ >= 0) close(fd_);
}

RawConnection::RawConnection(RawConnection&& other) noexcept
    : fd_(other.fd_), buf_(std::move(other.buf_)), closed_(other.closed_) {
  other.fd_ = -1;
}

void RawConnection::use_nagle() {
  int no = 0;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &no, sizeof no);
}

bool RawConnection::send(std::string_view data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

void RawConnection::shutdown_write() { ::shutdown(fd_, SHUT_WR); }

bool RawConnection::fill(Clock::time_point deadline) {
  if (closed_) return false;
  pollfd p{fd_, POLLIN, 0};
  const int rc = poll(&p, 1, remaining_ms(deadline));
  if (rc <= 0) return false;
  char chunk[65536];
  const ssize_t n = recv(fd_, chunk, sizeof chunk, 0);
  if (n <= 0) {
    closed_ = true;
    return false;
  }
  buf_.append(chunk, static_cast<size_t>(n));
  return true;
}

RawResponse RawConnection::read_response(std::chrono::milliseconds timeout) {
  const auto start = Clock::now();
  const auto deadline = start + timeout;
  RawResponse r;
  size_t head_end = std::string::npos;
  while ((head_end = buf_.find("\r\n\r\n")) == std::string::npos) {
    if (!fill(deadline)) return r;
  }
  const std::string head = buf_.substr(0, head_end);
  size_t pos = head.find("\r\n");
  const std::string status_line = head.substr(0, pos);
  if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12) return r;
  const int status = std::atoi(status_line.c_str() + 9);
  while (pos != std::string::npos && pos < head.size()) {
    const size_t next = head.find("\r\n", pos + 2);
    const std::string line = head.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
    const size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string v = line.substr(colon + 1);
      while (!v.empty() && v.front() == ' ') v.erase(0, 1);
      r.headers[lower(line.substr(0, colon))] = v;
    }
    pos = next;
  }
  size_t at = head_end + 4;
  if (status >= 100 && status < 200) {  // an interim response: no body
    buf_.erase(0, at);
  } else if (auto it = r.headers.find("content-length"); it != r.headers.end()) {
    const size_t n = std::stoul(it->second);
    while (buf_.size() < at + n) {
      if (!fill(deadline)) return r;
    }
    r.body = buf_.substr(at, n);
    buf_.erase(0, at + n);
  } else if (r.headers["transfer-encoding"] == "chunked") {
    while (true) {
      size_t eol;
      while ((eol = buf_.find("\r\n", at)) == std::string::npos) {
        if (!fill(deadline)) return r;
      }
      const size_t size = std::stoul(buf_.substr(at, eol - at), nullptr, 16);
      while (buf_.size() < eol + 2 + size + 2) {
        if (!fill(deadline)) return r;
      }
      r.body += buf_.substr(eol + 2, size);
      at = eol + 2 + size + 2;
      if (size == 0) break;
    }
    buf_.erase(0, at);
  } else {
    while (fill(deadline)) {
    }
    if (!closed_) return r;
    r.body = buf_.substr(at);
    buf_.clear();
  }
  r.status = status;
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

bool RawConnection::wait_closed(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (fill(deadline)) buf_.clear();
  return closed_;
}

long raise_open_files() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) return -1;
  if (r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
    getrlimit(RLIMIT_NOFILE, &r);
  }
  return r.rlim_cur == RLIM_INFINITY ? 1L << 20 : static_cast<long>(r.rlim_cur);
}

}  // namespace tc::test
