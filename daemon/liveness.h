// Liveness checks for the systemd watchdog (see systemd_notify.h): small, bounded tests that the
// daemon's own threads still answer. They never touch a probe target, so a probe stuck in the
// kernel cannot make them fail.
//
// Thread-safety: free functions without shared state; safe from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace iodrift::daemon {

// True when an HTTP server on HOST:PORT accepts a connection and answers `HEAD <path>` with an
// "HTTP/1.x " status line within `timeout` (connect, send and receive each bounded by it; any
// status counts: the point is that a server thread answered). `host` is an IPv4 or IPv6
// literal ("127.0.0.1", "::1"); a wildcard ("0.0.0.0", "::", "") is probed on loopback.
bool HttpAnswers(const std::string& host, std::uint16_t port, const std::string& path,
                 std::chrono::milliseconds timeout);

// For an HTTPS listener, where a plain `HEAD` gets no HTTP answer: true when HOST:PORT accepts a
// connection and, after we send one TLS record holding a fatal alert (a client giving up before
// its handshake), the server reacts within `timeout`: it closes or resets the connection, or
// sends bytes (a TLS alert). A server thread that handles connections does so at once; a wedged
// one leaves the connection open and silent. This needs no TLS client, no trust in the
// certificate (an expired one must not make systemd kill the daemon) and no credentials; it
// checks as much as HttpAnswers does: that the thread that accepted the connection works.
bool TlsListenerReacts(const std::string& host, std::uint16_t port,
                       std::chrono::milliseconds timeout);

}  // namespace iodrift::daemon
