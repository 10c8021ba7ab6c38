#include "daemon/http_server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "collectors/common/text.h"

namespace iodrift::daemon {

struct HttpServer::Impl {
  std::map<std::string, HttpHandler> routes;
  int gzip_level = 1;
};

namespace {

bool AcceptsGzip(MHD_Connection* connection) {
  const char* value = MHD_lookup_connection_value(connection, MHD_HEADER_KIND,
                                                  MHD_HTTP_HEADER_ACCEPT_ENCODING);
  return value != nullptr && std::strstr(value, "gzip") != nullptr;
}

MHD_Result Queue(MHD_Connection* connection, const HttpResponse& response, bool gzip,
                 int gzip_level) {
  std::string compressed;
  const std::string* body = &response.body;
  if (gzip && response.body.size() > 1024) {
    compressed = GzipCompress(response.body, gzip_level);
    if (!compressed.empty()) body = &compressed;
    else gzip = false;
  } else {
    gzip = false;
  }
  MHD_Response* mhd = MHD_create_response_from_buffer(body->size(), const_cast<char*>(body->data()),
                                                      MHD_RESPMEM_MUST_COPY);
  if (mhd == nullptr) return MHD_NO;
  MHD_add_response_header(mhd, MHD_HTTP_HEADER_CONTENT_TYPE, response.content_type.c_str());
  if (gzip) MHD_add_response_header(mhd, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
  MHD_add_response_header(mhd, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ACCEPT_ENCODING);
  MHD_Result result = MHD_queue_response(connection, static_cast<unsigned>(response.status), mhd);
  MHD_destroy_response(mhd);
  return result;
}

MHD_Result HandleRequest(void* cls, MHD_Connection* connection, const char* url,
                         const char* method, const char* /*version*/, const char* /*upload_data*/,
                         std::size_t* upload_data_size, void** con_cls) {
  // Per-request markers in *con_cls: the first call brings headers only; body chunks follow;
  // the last call (no data) is where we answer.
  static char headers_seen, body_seen;
  auto* impl = static_cast<HttpServer::Impl*>(cls);
  if (*con_cls == nullptr) {
    *con_cls = &headers_seen;
    return MHD_YES;
  }
  if (*upload_data_size != 0) {
    // We accept no request bodies: discard each chunk, answer 413 once the body is complete.
    *upload_data_size = 0;
    *con_cls = &body_seen;
    return MHD_YES;
  }
  if (*con_cls == &body_seen) {
    return Queue(connection, {413, "text/plain; charset=utf-8", "request body not accepted\n"},
                 false, 0);
  }
  if (std::strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
      std::strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
    return Queue(connection, {405, "text/plain; charset=utf-8", "method not allowed\n"}, false, 0);
  }
  auto it = impl->routes.find(url);
  if (it == impl->routes.end()) {
    return Queue(connection, {404, "text/plain; charset=utf-8", "not found\n"}, false, 0);
  }
  HttpResponse response;
  try {
    response = it->second();
  } catch (const std::exception& e) {
    response = {500, "text/plain; charset=utf-8", std::string("internal error: ") + e.what() + "\n"};
  }
  return Queue(connection, response, AcceptsGzip(connection), impl->gzip_level);
}

void LogMhdError(void* /*cls*/, const char* /*fmt*/, va_list /*ap*/) {
  // libmicrohttpd reports client-side trouble (resets, timeouts) here; not worth a log line.
}

}  // namespace

Expected<std::pair<std::string, std::uint16_t>> SplitHostPort(const std::string& listen) {
  std::string host;
  std::string port_text;
  if (!listen.empty() && listen.front() == '[') {
    auto close = listen.find(']');
    if (close == std::string::npos || close + 1 >= listen.size() || listen[close + 1] != ':') {
      return Fail(EINVAL, "listen " + listen + ": expected [ADDRESS]:PORT");
    }
    host = listen.substr(1, close - 1);
    port_text = listen.substr(close + 2);
  } else {
    auto colon = listen.rfind(':');
    if (colon == std::string::npos) return Fail(EINVAL, "listen " + listen + ": expected HOST:PORT");
    host = listen.substr(0, colon);
    port_text = listen.substr(colon + 1);
  }
  auto port = text::ParseU64(port_text);
  if (!port || *port > 65535) return Fail(EINVAL, "listen " + listen + ": bad port");
  if (host.empty()) host = "0.0.0.0";
  return std::make_pair(host, static_cast<std::uint16_t>(*port));
}

std::string GzipCompress(const std::string& data, int level) {
  z_stream zs{};
  // windowBits 15 + 16: gzip framing; memLevel 8 is zlib's default.
  if (deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
  std::string out;
  out.resize(deflateBound(&zs, data.size()) + 32);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return rc == Z_STREAM_END ? out : std::string();
}

HttpServer::HttpServer() : impl_(std::make_unique<Impl>()) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Route(std::string path, HttpHandler handler) {
  impl_->routes[std::move(path)] = std::move(handler);
}

Expected<void> HttpServer::Start(const HttpServerOptions& options) {
  auto host_port = SplitHostPort(options.listen);
  if (!host_port) return tl::unexpected(host_port.error());
  host_ = host_port->first;
  impl_->gzip_level = options.gzip_level;

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  std::string port_text = std::to_string(host_port->second);
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
  daemon_ = MHD_start_daemon(
      flags, 0, nullptr, nullptr, &HandleRequest, impl_.get(),
      MHD_OPTION_LISTEN_SOCKET, fd,
      MHD_OPTION_THREAD_POOL_SIZE, static_cast<unsigned>(options.threads),
      MHD_OPTION_CONNECTION_LIMIT, static_cast<unsigned>(options.max_connections),
      MHD_OPTION_CONNECTION_TIMEOUT, static_cast<unsigned>(options.connection_timeout_seconds),
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, static_cast<std::size_t>(64 * 1024),
      MHD_OPTION_EXTERNAL_LOGGER, &LogMhdError, nullptr,
      MHD_OPTION_END);
  if (daemon_ == nullptr) {
    ::close(fd);
    return Fail(EIO, "listen " + options.listen + ": libmicrohttpd failed to start");
  }
  return {};
}

void HttpServer::Stop() {
  if (daemon_ != nullptr) {
    MHD_stop_daemon(daemon_);
    daemon_ = nullptr;
  }
}

std::string HttpServer::BaseUrl() const {
  std::string host = host_ == "0.0.0.0" ? "127.0.0.1" : host_ == "::" ? "::1" : host_;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return "http://" + host + ":" + std::to_string(port_);
}

}  // namespace iodrift::daemon
