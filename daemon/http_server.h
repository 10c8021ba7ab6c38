// HttpServer: the metrics listener, on libmicrohttpd.
//
// Why not prometheus-cpp's Exposer: Debian 12's prometheus-cpp embeds civetweb 1.15, which
// crashes on the first TLS handshake under OpenSSL 3, has no socket activation and serializes
// every scrape under one mutex. libmicrohttpd gives per-connection timeouts, connection limits,
// a thread pool, and TLS via GnuTLS. prometheus-cpp stays the metric model and text format.
//
// The server knows nothing about metrics: it maps GET paths to handlers that return a body, and
// gzips that body when the client sends `Accept-Encoding: gzip` (Prometheus always does).
//
// Protections, the same for every route:
// - TLS (optional): HTTPS only, TLS 1.2 or newer, certificate and key from PEM files read and
//   checked at Start().
// - Basic auth (optional, http_auth.h): every request without valid credentials gets 401 with
//   `WWW-Authenticate: Basic realm="iodrift"`, before the path is looked at (so unknown paths do
//   not tell which ones exist).
// - Unknown paths answer 404 (exact match on the path as sent, %-decoded with NUL kept:
//   "/metrics%00.html" is not "/metrics"), methods other than GET/HEAD 405. A request that
//   announces a body (Content-Length > 0, Transfer-Encoding) is answered 413 as soon as its head
//   is in, before any body byte is read (no "100 Continue"), and its connection is closed.
// - A request line or headers that do not fit the per-connection memory limit (64 KiB) are
//   answered by libmicrohttpd (414 URI too long / 431 header fields too large) and closed.
// - Connection slots: over `max_connections`, the connection that has waited longest for a
//   request head (slowloris, stalled TLS handshake, idle keep-alive; at least kMinEvictAge old)
//   is shut down to make room for the new one; connections with a request being answered are
//   never evicted. libmicrohttpd's own limit is HardConnectionLimit(); beyond it connections
//   wait in the kernel's accept queue while the reaper evicts.
// - libmicrohttpd's connection timeout only fires on *idle* connections: a client sending one
//   byte a second never idles (slowloris). A reaper thread therefore also closes every
//   connection that has not delivered a complete request head (TLS handshake included) within
//   `connection_timeout` of opening or of its previous response. It sleeps until the earliest
//   deadline (no connection waiting for a request head: until notified of one), so an idle
//   server never wakes up.
// - Gzip only when Accept-Encoding accepts it with q > 0.
//
// Thread-safety: handlers run on the server's pool threads, possibly concurrently. Start() and
// Stop() are called from one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collectors/common/error.h"
#include "daemon/prepared_body.h"

struct MHD_Daemon;

namespace iodrift::daemon {

struct HttpResponse {
  HttpResponse() = default;
  HttpResponse(int status_code, std::string type, std::string text, PreparedParts parts = {})
      : status(status_code),
        content_type(std::move(type)),
        body(std::move(text)),
        tail(std::move(parts)) {}

  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  // Sent after `body`: parts prepared once (daemon/prepared_body.h), whose deflate blocks a gzip
  // response reuses instead of compressing their text again.
  PreparedParts tail;
};

using HttpHandler = std::function<HttpResponse()>;
// The query arguments of a request (`?runs=10&x` → {"runs": "10", "x": ""}), decoded; a key given
// twice keeps its first value. At most kMaxQueryArguments are kept. A request whose query holds
// a control character (0x00..0x1f or 0x7f, decoded) in a key or value is answered 400 before
// any handler sees it.
using HttpQuery = std::map<std::string, std::string>;
using HttpQueryHandler = std::function<HttpResponse(const HttpQuery&)>;
inline constexpr std::size_t kMaxQueryArguments = 32;

struct HttpServerOptions {
  std::string listen = "127.0.0.1:9723";  // HOST:PORT or [V6]:PORT; port 0 picks a free port
  unsigned max_connections = 64;
  unsigned connection_timeout_seconds = 10;
  unsigned threads = 2;
  int gzip_level = 1;  // zlib level for gzip responses (1 = fastest)
  // TLS: PEM files, both set = HTTPS only. Read by Start().
  std::string tls_cert_file{};
  std::string tls_key_file{};
  // Basic auth: user -> bcrypt hash; empty = no authentication.
  std::map<std::string, std::string> basic_auth_users{};
};

class HttpServer {
 public:
  HttpServer();
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Registers `handler` for GET `path` (exact match; the query string is not part of it). Call
  // before Start(). The second form also sees the query arguments.
  void Route(std::string path, HttpHandler handler);
  void Route(std::string path, HttpQueryHandler handler);

  // Binds and starts serving. Fails with a one-line message naming the address
  // ("listen 127.0.0.1:9723: address already in use") when the socket cannot be bound, or the
  // file and what is wrong when a TLS file cannot be read or parsed.
  Expected<void> Start(const HttpServerOptions& options);

  // Stops accepting and waits for running handlers. Idempotent.
  void Stop();

  // The port actually bound (useful with port 0). 0 before Start().
  std::uint16_t port() const { return port_; }
  // "http://HOST:PORT", or "https://HOST:PORT" with TLS.
  std::string BaseUrl() const;
  // True when serving HTTPS (after a successful Start()).
  bool tls() const { return tls_; }

  // Handles one request; public for the libmicrohttpd callback, not for callers.
  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  MHD_Daemon* daemon_ = nullptr;
  std::uint16_t port_ = 0;
  std::string host_;
  bool tls_ = false;
};

// Checks that `cert_pem` and `key_pem` form a usable GnuTLS credential (certificate parses, key
// parses and matches it). Fails with GnuTLS's reason.
Expected<void> CheckTlsCredentials(const std::string& cert_pem, const std::string& key_pem);

// The connection count libmicrohttpd itself enforces (it stops accepting beyond it):
// max_connections plus headroom, in which connections over max_connections wait to be evicted.
unsigned HardConnectionLimit(const HttpServerOptions& options);

// True when an Accept-Encoding header value accepts gzip: "gzip" or "x-gzip" with q > 0, or "*"
// with q > 0 when gzip is not named ("gzip;q=0" refuses it). Case-insensitive.
bool AcceptEncodingAllowsGzip(std::string_view header);

// %XX-decodes a request path; NUL bytes are kept (so "/metrics%00.html" never equals "/metrics"),
// malformed escapes stay as they are.
std::string PercentDecodePath(std::string_view raw);

}  // namespace iodrift::daemon
