// HttpFront (see http_front.h): the epoll loop, each connection's state
// from accept to close, and the worker threads.
#include "server/http/http_front.h"

#include <spdlog/spdlog.h>

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "server/http/chunked_body.h"
#include "server/http/memory_release.h"
#include "server/http/request_head.h"
#include "server/http/socket_io.h"
#include "server/request_body.h"

namespace tc::server::http {
namespace {

using Clock = std::chrono::steady_clock;

// After the last response on a connection the server shuts its side and
// reads what the client still sends for this long before closing, so that
// the kernel does not answer unread bytes with a reset that could destroy
// the response before the client read it.
constexpr auto kLinger = std::chrono::seconds(2);
// How often deadlines are checked.
constexpr auto kSweepInterval = std::chrono::milliseconds(100);
// Bytes read from a socket per readiness event.
constexpr size_t kReadChunk = 256 << 10;
// A connection buffer with more spare room than this is shrunk after its request.
constexpr size_t kKeepBufferBytes = 64 << 10;

enum class Phase {
  Idle,       // waiting for a request's first byte (keep-alive)
  Head,       // reading a request head
  Body,       // reading a Content-Length body
  Chunked,    // decoding a chunked body
  InWorker,   // a worker answers the request; not watched by the loop
  Lingering,  // answered and shut for writing; draining until close
};

struct Connection {
  int fd = -1;
  std::string peer_ip;
  int peer_port = 0;
  Phase phase = Phase::Idle;
  bool fresh = true;  // no request yet: the deadline since accept() applies to the first one
  Clock::time_point deadline;
  std::string in;  // received and not yet consumed
  size_t scan_from = 0;
  RequestHead head;
  std::optional<ChunkedDecoder> chunked;
  std::string chunked_body;
  // Set for the worker, and its verdict.
  std::string canonical;
  bool close_after = false;
  bool keep = false;
};

// The request line's method and path as far as they can be read, for the
// log line of a request that was answered before its head was complete.
void peek_request_line(std::string_view in, Rejection& r) {
  while (!in.empty() && (in.front() == '\r' || in.front() == '\n')) in.remove_prefix(1);
  const size_t eol = in.find_first_of("\r\n");
  const std::string_view line = in.substr(0, std::min<size_t>(eol, 512));
  const size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos || sp1 > 16) return;
  const size_t sp2 = line.find(' ', sp1 + 1);
  const std::string_view method = line.substr(0, sp1);
  for (const char c : method) {
    if (c < 'A' || c > 'Z') return;
  }
  std::string_view target = line.substr(sp1 + 1, sp2 == std::string_view::npos ? std::string_view::npos : sp2 - sp1 - 1);
  target = target.substr(0, target.find('?'));
  if (target.empty() || target.front() != '/') return;
  r.method = std::string(method);
  r.path = std::string(target.substr(0, 256));
}

}  // namespace

struct HttpFront::Impl {
  HttpLimits limits;
  FrontHooks hooks;
  size_t n_workers;
  int listen_fd = -1;
  int epoll_fd = -1;
  int wake_fd = -1;
  int port = -1;
  std::string error;
  std::unordered_map<int, std::unique_ptr<Connection>> connections;
  Clock::time_point accept_paused_until{};
  bool accept_paused = false;
  Clock::time_point last_limit_warning{};

  // Shared with other threads.
  std::mutex mutex;
  std::condition_variable work_ready;
  std::deque<Connection*> jobs;        // complete requests for the workers
  std::vector<Connection*> returned;   // answered, back to the loop
  bool workers_stop = false;
  bool stop_requested = false;
  bool drain_requested = false;
  std::vector<std::thread> workers;

  // Loop state.
  bool stopping = false;
  bool draining = false;

  Impl(HttpLimits l, size_t n, FrontHooks h) : limits(l), hooks(std::move(h)), n_workers(n) {}

  ~Impl() {
    for (auto& [fd, c] : connections) close(fd);
    for (const int fd : {listen_fd, epoll_fd, wake_fd}) {
      if (fd >= 0) close(fd);
    }
  }

  void wake() {
    const uint64_t one = 1;
    (void)!write(wake_fd, &one, sizeof one);
  }

  void watch(Connection& c, bool add) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = c.fd;
    epoll_ctl(epoll_fd, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, c.fd, &ev);
  }

  void close_connection(int fd) {
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
    close(fd);
    connections.erase(fd);
  }

  // The last response is out: shut our side, read until the client closes
  // or kLinger passes.
  void linger(Connection& c) {
    shutdown(c.fd, SHUT_WR);
    c.phase = Phase::Lingering;
    c.deadline = Clock::now() + kLinger;
    std::string().swap(c.in);
    std::string().swap(c.chunked_body);
    c.chunked.reset();
  }

  void reject(Connection& c, const HttpError& e) {
    Rejection r;
    r.status = e.status;
    r.message = e.message;
    if (!c.head.method.empty()) {
      r.method = c.head.method;
      r.path = std::string(c.head.path());
      r.origin = std::string(c.head.field("Origin"));
    } else {
      peek_request_line(c.in, r);
    }
    const HeaderList extra = hooks.rejected ? hooks.rejected(r) : HeaderList{};
    write_some(c.fd, error_response(e, extra));
    linger(c);
  }

  void dispatch(Connection& c) {
    const uint64_t body_bytes = c.head.framing == BodyFraming::Length    ? c.head.content_length
                                : c.head.framing == BodyFraming::Chunked ? c.chunked_body.size()
                                                                         : 0;
    c.canonical = canonical_head(c.head, body_bytes);
    c.close_after = !c.head.keep_alive || draining || limits.keep_alive_timeout.count() == 0;
    c.phase = Phase::InWorker;
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c.fd, nullptr);
    {
      std::lock_guard lock(mutex);
      jobs.push_back(&c);
    }
    work_ready.notify_one();
  }

  // Moves a connection on as far as the bytes it has allow: parses the head,
  // collects the body, dispatches a complete request, or rejects one.
  void advance(Connection& c) {
    while (true) {
      switch (c.phase) {
        case Phase::Idle:
          if (c.in.empty()) return;
          c.phase = Phase::Head;
          // The whole-request deadline runs from the request's first byte
          // (from accept() for a connection's first request).
          if (!c.fresh) c.deadline = Clock::now() + limits.request_timeout;
          c.fresh = false;
          c.scan_from = 0;
          c.head = RequestHead{};
          [[fallthrough]];
        case Phase::Head: {
          HeadParse parsed = parse_request_head(c.in, limits, c.scan_from);
          if (parsed.status == HeadStatus::NeedMore) return;
          if (parsed.status == HeadStatus::Error) return reject(c, parsed.error);
          c.head = std::move(parsed.head);
          c.in.erase(0, c.head.head_bytes);
          c.scan_from = 0;
          if (c.head.framing == BodyFraming::Length) {
            if (c.head.content_length > limits.max_body_bytes) {
              return reject(c, {413, body_too_large_error().message});
            }
            c.phase = Phase::Body;
          } else if (c.head.framing == BodyFraming::Chunked) {
            c.phase = Phase::Chunked;
            c.chunked.emplace(limits.max_body_bytes, limits.max_header_bytes);
            c.chunked_body.clear();
          } else {
            return dispatch(c);
          }
          // The client waits for this before it sends the body (curl does
          // for a second).
          if (c.head.expect_continue && c.in.empty()) write_some(c.fd, kContinueResponse);
          break;
        }
        case Phase::Body:
          if (c.in.size() >= c.head.content_length) return dispatch(c);
          return;
        case Phase::Chunked: {
          size_t consumed = 0;
          const auto status = c.chunked->feed(c.in, consumed, c.chunked_body);
          c.in.erase(0, consumed);
          if (status == ChunkedDecoder::Status::Error) return reject(c, c.chunked->error());
          if (status == ChunkedDecoder::Status::NeedMore) return;
          return dispatch(c);
        }
        case Phase::InWorker:
        case Phase::Lingering:
          return;
      }
    }
  }

  void on_readable(Connection& c) {
    static thread_local std::vector<char> buf(kReadChunk);
    const ssize_t n = recv(c.fd, buf.data(), buf.size(), 0);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
      return close_connection(c.fd);
    }
    if (n == 0) return close_connection(c.fd);  // the client left (mid-request: nothing to answer)
    if (c.phase == Phase::Lingering) return;     // dropped
    const size_t want = c.in.size() + static_cast<size_t>(n);
    if (c.phase == Phase::Body && want > c.in.capacity()) {
      // Grows by doubling as the body arrives, never past its length: a
      // head announcing a large body reserves nothing before the bytes come.
      c.in.reserve(std::max<size_t>(want, std::min<size_t>(static_cast<size_t>(c.head.content_length),
                                                           2 * c.in.capacity())));
    }
    c.in.append(buf.data(), static_cast<size_t>(n));
    // Mid-request (or a request's first bytes): acknowledge at once, so a
    // client holding the rest behind Nagle's algorithm sends it.
    if (c.phase != Phase::InWorker) acknowledge_now(c.fd);
    advance(c);
  }

  void accept_all() {
    while (true) {
      const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE) {
          // Out of descriptors: stop watching the listener for a moment
          // instead of spinning on it.
          epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr);
          accept_paused = true;
          accept_paused_until = Clock::now() + std::chrono::milliseconds(100);
          warn_limit("out of file descriptors");
        }
        return;
      }
      if (connections.size() >= limits.max_connections || stopping) {
        write_some(fd, error_response({503, stopping ? "the server is shutting down"
                                                     : "the server has too many open connections; retry shortly"}));
        close(fd);
        if (!stopping) warn_limit("http_max_connections (" + std::to_string(limits.max_connections) + ") reached");
        continue;
      }
      configure_accepted(fd);
      auto c = std::make_unique<Connection>();
      c->fd = fd;
      peer_address(fd, c->peer_ip, c->peer_port);
      // A new connection gets the request deadline for its first request.
      c->deadline = Clock::now() + limits.request_timeout;
      watch(*c, true);
      connections.emplace(fd, std::move(c));
    }
  }

  void warn_limit(const std::string& what) {
    const auto now = Clock::now();
    if (now - last_limit_warning < std::chrono::seconds(10)) return;
    last_limit_warning = now;
    spdlog::warn("refusing connections: {}", what);
  }

  // A worker is done with `c`.
  void on_returned(Connection& c) {
    if (stopping) return close_connection(c.fd);
    if (!c.keep) {
      linger(c);
      watch(c, true);
      return;
    }
    c.phase = Phase::Idle;
    c.head = RequestHead{};
    c.deadline = Clock::now() + limits.keep_alive_timeout;
    watch(c, true);
    advance(c);  // a pipelined request may be complete already
  }

  void sweep(Clock::time_point now) {
    std::vector<int> expired;
    for (auto& [fd, c] : connections) {
      if (c->phase != Phase::InWorker && now >= c->deadline) expired.push_back(fd);
    }
    for (const int fd : expired) {
      Connection& c = *connections.at(fd);
      if (c.phase == Phase::Head || c.phase == Phase::Body || c.phase == Phase::Chunked) {
        reject(c, {408, "the request was not received in time (http_request_timeout_s)"});
      } else {
        close_connection(fd);
      }
    }
  }

  void take_signals() {
    uint64_t count = 0;
    (void)!read(wake_fd, &count, sizeof count);
    std::vector<Connection*> back;
    bool stop_now = false;
    bool drain_now = false;
    {
      std::lock_guard lock(mutex);
      back.swap(returned);
      stop_now = stop_requested && !stopping;
      drain_now = drain_requested && !draining;
    }
    // Draining: each response from now on closes its connection; a request
    // on an idle connection still gets its answer (a 503 for generations).
    if (drain_now) draining = true;
    if (stop_now) {
      stopping = true;
      draining = true;
      epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr);
      close(listen_fd);
      listen_fd = -1;
      std::vector<int> open;
      for (auto& [fd, c] : connections) {
        if (c->phase != Phase::InWorker) open.push_back(fd);
      }
      for (const int fd : open) close_connection(fd);
    }
    for (Connection* c : back) on_returned(*c);
  }

  void worker_loop() {
    while (true) {
      Connection* c = nullptr;
      {
        std::unique_lock lock(mutex);
        work_ready.wait(lock, [&] { return workers_stop || !jobs.empty(); });
        if (jobs.empty()) return;
        c = jobs.front();
        jobs.pop_front();
      }
      const bool length = c->head.framing == BodyFraming::Length;
      const std::string_view body = length ? std::string_view(c->in).substr(0, c->head.content_length)
                                           : std::string_view(c->chunked_body);
      const size_t body_bytes = body.size();
      ReadyRequest request{c->canonical, body, c->fd, c->peer_ip, c->peer_port, c->close_after};
      bool keep = false;
      try {
        keep = hooks.handle(request);
      } catch (...) {
        keep = false;
      }
      c->keep = keep && !c->close_after;
      if (length) c->in.erase(0, static_cast<size_t>(c->head.content_length));
      std::string().swap(c->chunked_body);
      c->chunked.reset();
      if (c->in.capacity() - c->in.size() > kKeepBufferBytes) std::string(c->in).swap(c->in);
      std::string().swap(c->canonical);
      if (body_bytes >= kReleaseAfterBodyBytes) release_free_memory();
      {
        std::lock_guard lock(mutex);
        returned.push_back(c);
      }
      wake();
    }
  }
};

HttpFront::HttpFront(HttpLimits limits, size_t n_workers, FrontHooks hooks)
    : impl_(std::make_unique<Impl>(limits, std::max<size_t>(n_workers, 1), std::move(hooks))) {}

HttpFront::~HttpFront() = default;

bool HttpFront::bind(const std::string& host, int port) {
  Impl& m = *impl_;
  const long fd_limit = raise_open_file_limit();
  if (fd_limit > 0 && static_cast<size_t>(fd_limit) < m.limits.max_connections + 64) {
    spdlog::warn("the open-file limit ({}) is below http_max_connections ({}) + 64: connections past it are refused",
                 fd_limit, m.limits.max_connections);
  }
  m.listen_fd = open_listener(host, port, m.port, m.error);
  if (m.listen_fd < 0) return false;
  m.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  m.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (m.epoll_fd < 0 || m.wake_fd < 0) {
    m.error = "cannot create the event loop";
    return false;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = m.listen_fd;
  epoll_ctl(m.epoll_fd, EPOLL_CTL_ADD, m.listen_fd, &ev);
  ev.data.fd = m.wake_fd;
  epoll_ctl(m.epoll_fd, EPOLL_CTL_ADD, m.wake_fd, &ev);
  return true;
}

int HttpFront::port() const { return impl_->port; }
const std::string& HttpFront::error() const { return impl_->error; }

void HttpFront::run() {
  Impl& m = *impl_;
  for (size_t i = 0; i < m.n_workers; ++i) m.workers.emplace_back([&m] { m.worker_loop(); });
  std::vector<epoll_event> events(256);
  auto last_sweep = Clock::now();
  while (!(m.stopping && m.connections.empty())) {
    const bool timed = !m.connections.empty() || m.accept_paused;
    const int n = epoll_wait(m.epoll_fd, events.data(), static_cast<int>(events.size()),
                             timed ? static_cast<int>(kSweepInterval.count()) : -1);
    for (int i = 0; i < n; ++i) {
      const int fd = events[static_cast<size_t>(i)].data.fd;
      if (fd == m.wake_fd) {
        m.take_signals();
      } else if (fd == m.listen_fd) {
        m.accept_all();
      } else if (auto it = m.connections.find(fd); it != m.connections.end()) {
        m.on_readable(*it->second);
      }
    }
    const auto now = Clock::now();
    if (m.accept_paused && now >= m.accept_paused_until && m.listen_fd >= 0) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = m.listen_fd;
      epoll_ctl(m.epoll_fd, EPOLL_CTL_ADD, m.listen_fd, &ev);
      m.accept_paused = false;
    }
    if (now - last_sweep >= kSweepInterval) {
      m.sweep(now);
      last_sweep = now;
    }
  }
  {
    std::lock_guard lock(m.mutex);
    m.workers_stop = true;
  }
  m.work_ready.notify_all();
  for (auto& t : m.workers) t.join();
  m.workers.clear();
}

void HttpFront::begin_drain() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->drain_requested = true;
  }
  impl_->wake();
}

void HttpFront::stop() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stop_requested = true;
  }
  if (impl_->wake_fd >= 0) impl_->wake();
}

}  // namespace tc::server::http
