#include "daemon/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <thread>

#include <gnutls/gnutls.h>

#include "collectors/common/text.h"
#include "config/listen.h"
#include "daemon/gzip.h"
#include "daemon/http_auth.h"

namespace iodrift::daemon {

namespace {

using Clock = std::chrono::steady_clock;

// What the reaper knows of one TCP connection (libmicrohttpd's socket context).
struct ConnectionState {
  int fd = -1;
  Clock::time_point since;     // opened, or its previous response finished
  Clock::time_point deadline;  // the next request head must be complete by then
  bool busy = false;           // a request head arrived; its answer is under way
  bool reaped = false;         // shut down by the reaper; libmicrohttpd closes it next
  std::string raw_path;        // the current request's path as sent (before %-decoding)
};

// A connection that waits for a request head (or a TLS handshake) this long may be evicted to
// make room for a new one when the server is at max_connections. Bounds the churn an attacker
// who reconnects at once can cause: each of its connections lives at least this long.
constexpr auto kMinEvictAge = std::chrono::milliseconds(250);

}  // namespace

struct HttpServer::Impl {
  std::map<std::string, HttpQueryHandler> routes;
  int gzip_level = 1;
  std::unique_ptr<BasicAuth> auth = std::make_unique<BasicAuth>();
  std::string cert_pem;  // kept alive for libmicrohttpd while the daemon runs
  std::string key_pem;
  Clock::duration request_timeout = std::chrono::seconds(10);

  // Slowloris reaper: connections and a thread that shuts down the overdue ones.
  std::mutex mu;
  std::condition_variable wake;
  bool stopping = false;
  std::set<ConnectionState*> connections;
  std::size_t live = 0;         // connections not reaped yet
  std::size_t soft_limit = 64;  // max_connections
  std::thread reaper;
  // When the reaper will wake up on its own (max: only when notified; min: it is awake).
  Clock::time_point reaper_wake = Clock::time_point::min();

  // Shuts down `c` (under `mu`): the CLOSED notification (which runs before libmicrohttpd
  // closes the fd) waits for `mu`, so `fd` still belongs to this connection. shutdown() makes
  // the next read see end of file and libmicrohttpd closes the connection on its own thread.
  void ShutDown(ConnectionState* c) {
    ::shutdown(c->fd, SHUT_RDWR);
    c->reaped = true;
    --live;
  }

  // Over max_connections: closes the connections that have waited longest for a request head
  // (slowloris, stalled TLS handshakes, idle keep-alive), at least kMinEvictAge old, until the
  // count is back at the limit. Connections with a request being answered are never evicted.
  // Under `mu`.
  void EvictOverLimit(Clock::time_point now) {
    while (live > soft_limit) {
      ConnectionState* oldest = nullptr;
      for (ConnectionState* c : connections) {
        if (c->busy || c->reaped || c->fd < 0 || now - c->since < kMinEvictAge) continue;
        if (oldest == nullptr || c->since < oldest->since) oldest = c;
      }
      if (oldest == nullptr) return;
      ShutDown(oldest);
    }
  }

  // When the reaper has something to do next: the earliest request-head deadline and, over the
  // limit, the moment the oldest idle connection may be evicted. max(): nothing (sleep until
  // notified). Under `mu`.
  Clock::time_point NextWork() const {
    auto next = Clock::time_point::max();
    for (const ConnectionState* c : connections) {
      if (c->busy || c->reaped || c->fd < 0) continue;
      next = std::min(next, c->deadline);
      if (live > soft_limit) next = std::min(next, c->since + kMinEvictAge);
    }
    return next;
  }

  // Wakes the reaper if `when` is before its planned wake-up. Under `mu` (call notify after).
  bool NeedsReaper(Clock::time_point when) const { return when < reaper_wake; }

  // Event-driven: sleeps until the next deadline (or, with no connection waiting for a request
  // head, until notified), so an idle daemon has no periodic wake-up.
  void Reap() {
    std::unique_lock lock(mu);
    while (!stopping) {
      reaper_wake = NextWork();
      if (reaper_wake == Clock::time_point::max()) {
        wake.wait(lock);
      } else {
        wake.wait_until(lock, reaper_wake);
      }
      reaper_wake = Clock::time_point::min();  // awake: no notification needed
      if (stopping) break;
      const auto now = Clock::now();
      for (ConnectionState* c : connections) {
        if (c->busy || c->reaped || c->fd < 0 || now < c->deadline) continue;
        ShutDown(c);
      }
      EvictOverLimit(now);
    }
  }

  ConnectionState* StateOf(MHD_Connection* connection) {
    const MHD_ConnectionInfo* info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == nullptr ? nullptr : static_cast<ConnectionState*>(info->socket_context);
  }
};

namespace {

void OnConnection(void* cls, MHD_Connection* connection, void** socket_context,
                  MHD_ConnectionNotificationCode code) {
  auto* impl = static_cast<HttpServer::Impl*>(cls);
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    auto state = std::make_unique<ConnectionState>();
    const MHD_ConnectionInfo* info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    state->fd = info == nullptr ? -1 : info->connect_fd;
    state->since = Clock::now();
    state->deadline = state->since + impl->request_timeout;
    bool notify = false;
    {
      std::lock_guard lock(impl->mu);
      impl->connections.insert(state.get());
      ++impl->live;
      impl->EvictOverLimit(state->since);
      notify = impl->NeedsReaper(impl->live > impl->soft_limit ? state->since + kMinEvictAge
                                                               : state->deadline);
    }
    if (notify) impl->wake.notify_one();
    *socket_context = state.release();
  } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
    auto* state = static_cast<ConnectionState*>(*socket_context);
    if (state == nullptr) return;
    {
      std::lock_guard lock(impl->mu);
      impl->connections.erase(state);
      if (!state->reaped) --impl->live;
    }
    delete state;
    *socket_context = nullptr;
  }
}

// A request is done (answered or aborted): the connection may carry the next one, whose head
// must arrive within the timeout again.
void OnRequestCompleted(void* cls, MHD_Connection* connection, void** /*con_cls*/,
                        MHD_RequestTerminationCode /*code*/) {
  auto* impl = static_cast<HttpServer::Impl*>(cls);
  ConnectionState* state = impl->StateOf(connection);
  if (state == nullptr) return;
  bool notify = false;
  {
    std::lock_guard lock(impl->mu);
    state->busy = false;
    state->since = Clock::now();
    state->deadline = state->since + impl->request_timeout;
    notify = impl->NeedsReaper(impl->live > impl->soft_limit ? state->since + kMinEvictAge
                                                             : state->deadline);
  }
  if (notify) impl->wake.notify_one();
}

// Remembers the request's path as the client sent it (libmicrohttpd hands the handler the
// %-decoded path as a C string, in which "/metrics%00.html" reads as "/metrics").
void* OnUri(void* cls, const char* uri, MHD_Connection* connection) {
  auto* impl = static_cast<HttpServer::Impl*>(cls);
  if (ConnectionState* state = impl->StateOf(connection); state != nullptr && uri != nullptr) {
    std::string_view raw(uri);
    state->raw_path = std::string(raw.substr(0, raw.find('?')));
  }
  return nullptr;
}

void MarkBusy(HttpServer::Impl* impl, MHD_Connection* connection) {
  ConnectionState* state = impl->StateOf(connection);
  if (state == nullptr) return;
  std::lock_guard lock(impl->mu);
  state->busy = true;
}

bool AcceptsGzip(MHD_Connection* connection) {
  const char* value =
      MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING);
  return value != nullptr && AcceptEncodingAllowsGzip(value);
}

// The client's address ("127.0.0.1", "::1"), the key of the authentication failure limit.
std::string ClientOf(MHD_Connection* connection) {
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (info == nullptr || info->client_addr == nullptr) return {};
  char text[INET6_ADDRSTRLEN] = {};
  const sockaddr* addr = info->client_addr;
  if (addr->sa_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(addr)->sin_addr, text, sizeof(text));
  } else if (addr->sa_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr, text,
                sizeof(text));
  }
  return text;
}

// True when the request announces a body (Content-Length > 0 or any Transfer-Encoding).
bool HasBody(MHD_Connection* connection) {
  const char* length =
      MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
  if (length != nullptr) {
    auto n = text::ParseU64(text::Trim(length));
    if (!n || *n > 0) return true;
  }
  return MHD_lookup_connection_value(connection, MHD_HEADER_KIND,
                                     MHD_HTTP_HEADER_TRANSFER_ENCODING) != nullptr;
}

MHD_Result Queue(MHD_Connection* connection, const HttpResponse& response, bool gzip,
                 int gzip_level) {
  std::string compressed;
  const std::string* body = &response.body;
  std::size_t size = response.body.size();
  for (const auto& part : response.tail) size += part->text().size();
  if (gzip && size > 1024) {
    compressed = GzipCompress(response.body, gzip_level, response.tail);
    if (!compressed.empty())
      body = &compressed;
    else
      gzip = false;
  } else {
    gzip = false;
  }
  std::string joined;
  if (!gzip && !response.tail.empty()) {
    joined.reserve(size);
    joined = response.body;
    for (const auto& part : response.tail) joined += part->text();
    body = &joined;
  }
  MHD_Response* mhd = MHD_create_response_from_buffer(body->size(), const_cast<char*>(body->data()),
                                                      MHD_RESPMEM_MUST_COPY);
  if (mhd == nullptr) return MHD_NO;
  MHD_add_response_header(mhd, MHD_HTTP_HEADER_CONTENT_TYPE, response.content_type.c_str());
  if (gzip) MHD_add_response_header(mhd, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
  MHD_add_response_header(mhd, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ACCEPT_ENCODING);
  if (response.status == MHD_HTTP_UNAUTHORIZED) {
    MHD_add_response_header(mhd, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Basic realm=\"iodrift\"");
  }
  MHD_Result result = MHD_queue_response(connection, static_cast<unsigned>(response.status), mhd);
  MHD_destroy_response(mhd);
  return result;
}

// The decoded query arguments of a request, or the first one that holds a control character.
struct QueryArguments {
  HttpQuery query;
  std::optional<std::string> bad_key;  // its key, made printable
};

// Sizes come with the strings: a NUL ("?runs=1%00junk") is seen, not taken for the value's end.
MHD_Result AddQueryArgument(void* cls, MHD_ValueKind /*kind*/, const char* key,
                            std::size_t key_size, const char* value, std::size_t value_size) {
  auto* args = static_cast<QueryArguments*>(cls);
  const std::string_view k = key == nullptr ? std::string_view() : std::string_view(key, key_size);
  const std::string_view v =
      value == nullptr ? std::string_view() : std::string_view(value, value_size);
  if (text::HasControlCharacter(k) || text::HasControlCharacter(v)) {
    args->bad_key = text::TerminalSafe(k);
    return MHD_NO;  // stop iterating: the request is refused
  }
  if (args->query.size() >= kMaxQueryArguments) return MHD_NO;
  args->query.emplace(k, v);
  return MHD_YES;
}

MHD_Result HandleRequest(void* cls, MHD_Connection* connection, const char* url, const char* method,
                         const char* /*version*/, const char* /*upload_data*/,
                         std::size_t* upload_data_size, void** con_cls) {
  // The first call brings the request head only; body chunks would follow, then a last call. A
  // request that announces a body is answered in the first call: refused before any of it is
  // read (no "100 Continue", nothing held open while a client trickles bytes or never sends the
  // body it announced), and libmicrohttpd closes that connection after the answer. A request
  // without a body is answered in the second call, which follows at once: libmicrohttpd 0.9.75
  // closes every connection whose answer was queued in the first call, so answering there would
  // cost a TCP connection (accept, a 64 KiB pool mapped and unmapped) per scrape.
  static char answered;
  static char head_seen;
  auto* impl = static_cast<HttpServer::Impl*>(cls);
  if (*con_cls == &answered) {
    // Only reached if libmicrohttpd reads a body after all: discard it.
    *upload_data_size = 0;
    return MHD_YES;
  }
  const bool body = *con_cls == nullptr && HasBody(connection);
  if (*con_cls == nullptr && !body) {
    MarkBusy(impl, connection);
    *con_cls = &head_seen;
    return MHD_YES;
  }
  *con_cls = &answered;
  // A request with a body is answered at once below; its connection stays subject to the
  // reaper and to eviction, in case libmicrohttpd keeps reading the body it announced.
  // Authentication first, for every path and method: a client without credentials learns
  // nothing about which paths exist.
  if (impl->auth->enabled()) {
    const char* authorization =
        MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    const AuthDecision decision =
        impl->auth->Check(authorization == nullptr ? "" : authorization, ClientOf(connection));
    if (decision == AuthDecision::kTooManyFailures) {
      return Queue(connection,
                   {429, "text/plain; charset=utf-8", "too many failed authentications\n"}, false,
                   0);
    }
    if (decision != AuthDecision::kAllowed) {
      // Queue() adds `WWW-Authenticate: Basic realm="iodrift"` to every 401.
      return Queue(connection, {401, "text/plain; charset=utf-8", "unauthorized\n"}, false, 0);
    }
  }
  if (body) {
    return Queue(connection, {413, "text/plain; charset=utf-8", "request body not accepted\n"},
                 false, 0);
  }
  if (std::strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
      std::strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
    return Queue(connection, {405, "text/plain; charset=utf-8", "method not allowed\n"}, false, 0);
  }
  // Exact match on the path as sent, %-decoded with NUL kept ("/metrics%00.html" is not
  // "/metrics").
  std::string path = url;
  if (ConnectionState* state = impl->StateOf(connection); state != nullptr) {
    std::lock_guard lock(impl->mu);
    if (!state->raw_path.empty()) path = PercentDecodePath(state->raw_path);
  }
  auto it = impl->routes.find(path);
  if (it == impl->routes.end()) {
    return Queue(connection, {404, "text/plain; charset=utf-8", "not found\n"}, false, 0);
  }
  QueryArguments args;
  MHD_get_connection_values_n(connection, MHD_GET_ARGUMENT_KIND, AddQueryArgument, &args);
  if (args.bad_key) {
    return Queue(connection,
                 {400, "text/plain; charset=utf-8",
                  "query argument '" + *args.bad_key +
                      "': control characters (NUL included) are not accepted in a query\n"},
                 false, 0);
  }
  HttpResponse response;
  try {
    response = it->second(args.query);
  } catch (const std::exception& e) {
    response = {500, "text/plain; charset=utf-8",
                std::string("internal error: ") + e.what() + "\n"};
  }
  return Queue(connection, response, AcceptsGzip(connection), impl->gzip_level);
}

void LogMhdError(void* /*cls*/, const char* /*fmt*/, va_list /*ap*/) {
  // libmicrohttpd reports client-side trouble (resets, timeouts) here; not worth a log line.
}

// The contents of the PEM file named by `key` (at most 1 MiB).
Expected<std::string> ReadPem(const std::string& key, const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    return Fail(err, SystemErrorMessage(key + " " + path, err));
  }
  std::string text;
  char buffer[16384];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return Fail(err, SystemErrorMessage(key + " " + path, err));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > 1024 * 1024) {
      ::close(fd);
      return Fail(EFBIG, key + " " + path + ": larger than 1 MiB");
    }
  }
  ::close(fd);
  return text;
}

}  // namespace

unsigned HardConnectionLimit(const HttpServerOptions& options) {
  const unsigned soft = std::max(1u, options.max_connections);
  return soft + std::max(64u, 3 * soft);
}

bool AcceptEncodingAllowsGzip(std::string_view header) {
  // RFC 9110 §12.5.3: codings separated by ',', each with optional ";q=VALUE"; q=0 means "not
  // acceptable". gzip is chosen when listed (or x-gzip) with q > 0, or when "*" has q > 0 and
  // gzip is not listed.
  std::optional<bool> gzip, star;
  while (!header.empty()) {
    const std::size_t comma = header.find(',');
    std::string_view item = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    const std::size_t semi = item.find(';');
    std::string coding(text::Trim(item.substr(0, semi)));
    std::transform(coding.begin(), coding.end(), coding.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    bool acceptable = true;
    std::string_view params = semi == std::string_view::npos ? "" : item.substr(semi + 1);
    while (!params.empty()) {
      const std::size_t next = params.find(';');
      std::string_view param = text::Trim(params.substr(0, next));
      params = next == std::string_view::npos ? std::string_view() : params.substr(next + 1);
      if (param.size() >= 2 && (param[0] == 'q' || param[0] == 'Q') && param[1] == '=') {
        // q = 0, 0., 0.0, 0.00 or 0.000: not acceptable; anything else (up to 1) is.
        std::string_view q = text::Trim(param.substr(2));
        acceptable = !(q.empty() || q.find_first_not_of("0.") == std::string_view::npos);
      }
    }
    if (coding == "gzip" || coding == "x-gzip") {
      if (!gzip) gzip = acceptable;
    } else if (coding == "*") {
      if (!star) star = acceptable;
    }
  }
  if (gzip) return *gzip;
  return star.value_or(false);
}

std::string PercentDecodePath(std::string_view raw) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '%' && i + 2 < raw.size()) {
      const int hi = hex(raw[i + 1]);
      const int lo = hex(raw[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(raw[i]);
  }
  return out;
}

Expected<void> CheckTlsCredentials(const std::string& cert_pem, const std::string& key_pem) {
  gnutls_certificate_credentials_t credentials = nullptr;
  if (gnutls_certificate_allocate_credentials(&credentials) < 0) {
    return Fail(ENOMEM, "TLS: cannot allocate GnuTLS credentials");
  }
  gnutls_datum_t cert{reinterpret_cast<unsigned char*>(const_cast<char*>(cert_pem.data())),
                      static_cast<unsigned>(cert_pem.size())};
  gnutls_datum_t key{reinterpret_cast<unsigned char*>(const_cast<char*>(key_pem.data())),
                     static_cast<unsigned>(key_pem.size())};
  // Parses both and checks that the key belongs to the (first) certificate.
  const int rc = gnutls_certificate_set_x509_key_mem2(credentials, &cert, &key, GNUTLS_X509_FMT_PEM,
                                                      nullptr, 0);
  gnutls_certificate_free_credentials(credentials);
  if (rc < 0) return Fail(EINVAL, gnutls_strerror(rc));
  return {};
}

HttpServer::HttpServer() : impl_(std::make_unique<Impl>()) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Route(std::string path, HttpHandler handler) {
  impl_->routes[std::move(path)] = [handler = std::move(handler)](const HttpQuery&) {
    return handler();
  };
}

void HttpServer::Route(std::string path, HttpQueryHandler handler) {
  impl_->routes[std::move(path)] = std::move(handler);
}

Expected<void> HttpServer::Start(const HttpServerOptions& options) {
  auto listen = config::ParseListen(options.listen);
  if (!listen) return Fail(EINVAL, "listen " + options.listen + ": " + listen.error().message);
  host_ = listen->host;
  impl_->gzip_level = options.gzip_level;
  impl_->request_timeout = std::chrono::seconds(std::max(1u, options.connection_timeout_seconds));
  {
    std::lock_guard lock(impl_->mu);
    impl_->soft_limit = std::max(1u, options.max_connections);
  }
  impl_->auth = std::make_unique<BasicAuth>(options.basic_auth_users);

  // TLS files first: a bad certificate must stop the daemon before it binds anything.
  tls_ = false;
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return Fail(EINVAL, "TLS needs both tls_cert_file and tls_key_file");
  }
  if (!options.tls_cert_file.empty()) {
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
      return Fail(ENOTSUP, "TLS: this libmicrohttpd was built without TLS support");
    }
    auto cert = ReadPem("tls_cert_file", options.tls_cert_file);
    if (!cert) return tl::unexpected(cert.error());
    auto key = ReadPem("tls_key_file", options.tls_key_file);
    if (!key) return tl::unexpected(key.error());
    if (auto usable = CheckTlsCredentials(*cert, *key); !usable) {
      return Fail(EINVAL, "TLS: tls_cert_file " + options.tls_cert_file + " / tls_key_file " +
                              options.tls_key_file + ": " + usable.error().message);
    }
    impl_->cert_pem = std::move(*cert);
    impl_->key_pem = std::move(*key);
    tls_ = true;
  }

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  std::string port_text = std::to_string(listen->port);
  if (int rc = ::getaddrinfo(host_.c_str(), port_text.c_str(), &hints, &found); rc != 0) {
    return Fail(EINVAL, "listen " + options.listen + ": " + ::gai_strerror(rc));
  }
  int fd = ::socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, 0);
  int err = errno;
  if (fd >= 0) {
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, found->ai_addr, found->ai_addrlen) != 0 || ::listen(fd, 128) != 0) {
      err = errno;
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) return Fail(err, SystemErrorMessage("listen " + options.listen, err));

  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);

  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
  // TLS options go in an array so one MHD_start_daemon call serves both cases. TLS 1.2 and 1.3
  // only, as node_exporter's default min_version.
  static const char kTlsPriorities[] = "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2";
  std::vector<MHD_OptionItem> tls_options;
  if (tls_) {
    flags |= MHD_USE_TLS;
    tls_options.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, impl_->cert_pem.data()});
    tls_options.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, impl_->key_pem.data()});
    tls_options.push_back({MHD_OPTION_HTTPS_PRIORITIES, 0, const_cast<char*>(kTlsPriorities)});
  }
  tls_options.push_back({MHD_OPTION_END, 0, nullptr});
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = false;
  }
  daemon_ = MHD_start_daemon(
      flags, 0, nullptr, nullptr, &HandleRequest, impl_.get(), MHD_OPTION_LISTEN_SOCKET, fd,
      MHD_OPTION_THREAD_POOL_SIZE, static_cast<unsigned>(options.threads),
      // The hard limit: libmicrohttpd stops accepting beyond it. max_connections itself is kept
      // by evicting the connections that wait longest for a request head (EvictOverLimit), so
      // that new connections still get in while slow or stalled ones hold the slots.
      MHD_OPTION_CONNECTION_LIMIT, static_cast<unsigned>(HardConnectionLimit(options)),
      MHD_OPTION_URI_LOG_CALLBACK, &OnUri, impl_.get(), MHD_OPTION_CONNECTION_TIMEOUT,
      static_cast<unsigned>(options.connection_timeout_seconds),
      // Request line + headers must fit in this; larger ones get 414/431 and are closed.
      // 32 KiB, not more: libmicrohttpd 0.9.75 mallocs a connection's pool up to 32 KiB and
      // mmaps a larger one, and the munmap at every close (a scrape every 15 s comes on a new
      // connection: idle ones close after connection_timeout) flushed the TLB of every CPU
      // running a daemon thread (~30 % of a new-connection scrape's CPU in perf).
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, static_cast<std::size_t>(32 * 1024),
      MHD_OPTION_NOTIFY_CONNECTION, &OnConnection, impl_.get(), MHD_OPTION_NOTIFY_COMPLETED,
      &OnRequestCompleted, impl_.get(), MHD_OPTION_EXTERNAL_LOGGER, &LogMhdError, nullptr,
      MHD_OPTION_ARRAY, tls_options.data(), MHD_OPTION_END);
  if (daemon_ == nullptr) {
    ::close(fd);
    return Fail(EIO, "listen " + options.listen + ": libmicrohttpd failed to start" +
                         (tls_ ? " (TLS)" : ""));
  }
  impl_->reaper = std::thread([impl = impl_.get()] { impl->Reap(); });
  return {};
}

void HttpServer::Stop() {
  if (impl_->reaper.joinable()) {
    {
      std::lock_guard lock(impl_->mu);
      impl_->stopping = true;
    }
    impl_->wake.notify_all();
    impl_->reaper.join();
  }
  if (daemon_ != nullptr) {
    MHD_stop_daemon(daemon_);
    daemon_ = nullptr;
  }
}

std::string HttpServer::BaseUrl() const {
  std::string host = host_ == "0.0.0.0" ? "127.0.0.1" : host_ == "::" ? "::1" : host_;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return (tls_ ? "https://" : "http://") + host + ":" + std::to_string(port_);
}

}  // namespace iodrift::daemon
