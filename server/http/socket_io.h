// Socket plumbing of the HTTP layer: the listening socket, accepted
// sockets' options, writes bounded by a stall timeout, and whether a peer
// is still there. POSIX sockets, Linux (poll, POLLRDHUP).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace tc::server::http {

// A non-blocking listening socket bound to host:port (a name or address;
// port 0: any free port), SO_REUSEADDR, backlog SOMAXCONN. Returns the fd,
// or -1 with `error` set; `bound_port` is the port it got.
int open_listener(const std::string& host, int port, int& bound_port, std::string& error);

// An accepted socket: TCP_NODELAY (a response's head and body are separate
// writes; Nagle's algorithm against the client's delayed ACK held the second
// ~40 ms on every reused connection).
void configure_accepted(int fd);

// Acknowledges what `fd` received now, not after the delayed-ACK timer
// (TCP_QUICKACK, which Linux clears again by itself). Called while a
// request is still arriving: a client that writes its head and body
// separately with Nagle's algorithm on (cpp-httplib's client, for one)
// holds the body until its head is acknowledged, ~40 ms on a reused
// connection, where the kernel delays ACKs to ride on responses.
void acknowledge_now(int fd);

// Writes all of `data` to the non-blocking socket `fd`, waiting up to
// `stall` each time the socket cannot take more. False: the peer is gone or
// stalled that long.
bool write_all(int fd, std::string_view data, std::chrono::milliseconds stall);

// One best-effort non-blocking write (for short answers on a fresh socket).
void write_some(int fd, std::string_view data);

// False when the peer has closed or reset the connection (its FIN or an
// error is pending); data it sent and that is not read yet does not count.
bool peer_connected(int fd);

// The peer's address as text and its port ("" and 0 when unknown).
void peer_address(int fd, std::string& ip, int& port);
void local_address(int fd, std::string& ip, int& port);

// Raises the soft limit on open files to the hard one; returns the limit in force.
long raise_open_file_limit();

}  // namespace tc::server::http
