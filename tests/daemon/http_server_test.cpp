#include "daemon/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "daemon/gzip.h"
#include "tests/lib/ci_guarantee.h"

namespace iodrift::daemon {
namespace {

TEST(GzipCompress, RoundTripsThroughZlib) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "iodrift_meminfo_MemFree_bytes 12345\n";
  std::string gz = GzipCompress(text, 1);
  ASSERT_FALSE(gz.empty());
  EXPECT_LT(gz.size(), text.size() / 10);
  EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b);
  z_stream zs{};
  ASSERT_EQ(inflateInit2(&zs, 15 + 16), Z_OK);
  std::string out(text.size() + 16, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(gz.data());
  zs.avail_in = static_cast<uInt>(gz.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  inflateEnd(&zs);
  EXPECT_EQ(out, text);
}

// gunzip with zlib, which checks the member's CRC-32 and length: "" on any error.
std::string Gunzip(std::string gz, std::size_t expected) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) return "";
  std::string out(expected + 16, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(gz.data());
  zs.avail_in = static_cast<uInt>(gz.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  const bool whole = rc == Z_STREAM_END && zs.avail_in == 0;
  inflateEnd(&zs);
  return whole ? out : "<" + std::to_string(rc) + ">";
}

// Prepared parts (the probe families) are appended as their own deflate blocks: the client gets
// head + parts, and the gzip trailer's CRC and length cover the whole (zlib checks both).
TEST(GzipCompress, AppendsPreparedPartsAsTheirOwnDeflateBlocks) {
  std::string head, first, second;
  for (int i = 0; i < 3000; ++i)
    head += "iodrift_meminfo_MemFree_bytes " + std::to_string(i) + "\n";
  for (int i = 0; i < 2000; ++i) {
    first += "iodrift_probe_runs_total{probe=\"p" + std::to_string(i) + "\"} 1\n";
  }
  for (int i = 0; i < 50; ++i) second += "iodrift_page_cache_tax_ratio " + std::to_string(i) + "\n";
  const auto a = std::make_shared<const PreparedBody>(first);
  const auto b = std::make_shared<const PreparedBody>(second);
  const auto empty = std::make_shared<const PreparedBody>("");
  for (int level : {1, 6}) {
    SCOPED_TRACE(level);
    for (const std::string& h : {head, std::string("x"), std::string()}) {
      const std::string expected = h + first + second;
      const std::string gz = GzipCompress(h, level, {a, empty, b});
      ASSERT_FALSE(gz.empty());
      EXPECT_LT(gz.size(), expected.size() / 4);
      EXPECT_EQ(Gunzip(gz, expected.size()), expected);
      // The second use reuses the parts' blocks: the same bytes.
      EXPECT_EQ(GzipCompress(h, level, {a, empty, b}), gz);
    }
  }
  EXPECT_EQ(Gunzip(GzipCompress(head, 1, {}), head.size()), head);
}

TEST(HttpServer, ServesRoutesOnAFreePortAndNamesTheAddressOnBindFailure) {
  HttpServer server;
  server.Route("/x", [] { return HttpResponse{200, "text/plain", "hello"}; });
  ASSERT_TRUE(server.Start({.listen = "127.0.0.1:0"}));
  EXPECT_NE(server.port(), 0);
  HttpServer second;
  auto busy = second.Start({.listen = "127.0.0.1:" + std::to_string(server.port())});
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.error().message,
            "listen 127.0.0.1:" + std::to_string(server.port()) + ": address already in use");
  server.Stop();
}

// ---- raw-socket helpers
// ---------------------------------------------------------------------------

int ConnectLoopback(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends `request` and reads until the server closes (or 5 s pass); returns what came back.
std::string Exchange(std::uint16_t port, const std::string& request) {
  int fd = ConnectLoopback(port);
  if (fd < 0) return "";
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string reply;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, 200) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    reply.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return reply;
}

std::string Get(std::uint16_t port, const std::string& path, const std::string& extra = "") {
  return Exchange(port, "GET " + path + " HTTP/1.0\r\nHost: x\r\n" + extra + "\r\n");
}

// A request without a body leaves the connection open (HTTP/1.1 keep-alive): a second request on
// it is answered too. Answered in libmicrohttpd's first call, the connection was closed after
// every answer, a new TCP connection per scrape.
TEST(HttpServer, KeepsTheConnectionOpenForTheNextRequest) {
  HttpServer server;
  std::atomic<int> handled{0};
  server.Route("/x", [&handled] {
    ++handled;
    return HttpResponse{200, "text/plain", "hello-" + std::to_string(handled.load()) + "\n"};
  });
  ASSERT_TRUE(server.Start({.listen = "127.0.0.1:0"}));
  const std::string reply = Exchange(server.port(),
                                     "GET /x HTTP/1.1\r\nHost: x\r\n\r\n"
                                     "GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_NE(reply.find("hello-1\n"), std::string::npos) << reply;
  EXPECT_NE(reply.find("hello-2\n"), std::string::npos) << reply;
  EXPECT_EQ(handled.load(), 2);
  server.Stop();
}

// A NUL or another control character in a query key or value is refused (400, naming the
// key) before the handler runs: "?runs=1%00junk" is not "?runs=1".
TEST(HttpServer, AQueryWithAControlCharacterIsRefusedWith400) {
  HttpServer server;
  std::atomic<int> handled{0};
  server.Route("/q", [&handled](const HttpQuery& query) {
    ++handled;
    std::string body;
    for (const auto& [k, v] : query) body += k + "=" + v + ";";
    return HttpResponse{200, "text/plain", body};
  });
  ASSERT_TRUE(server.Start({.listen = "127.0.0.1:0"}));
  for (const std::string bad :
       {"/q?runs=1%00junk", "/q?runs=%00", "/q?ok=1&runs=1%0a2", "/q?runs=%1b[31m", "/q?x=%7f",
        "/q?ru%00ns=1", "/q?a%09b=1", "/q?runs=1%0d%0aSet-Cookie:%20x"}) {
    const std::string reply = Get(server.port(), bad);
    EXPECT_EQ(reply.substr(0, 13), "HTTP/1.1 400 ") << bad << ": " << reply;
    EXPECT_NE(reply.find("control character"), std::string::npos) << bad << ": " << reply;
    EXPECT_EQ(reply.find('\x1b'), std::string::npos) << bad << ": " << reply;
  }
  EXPECT_EQ(handled.load(), 0);
  // Printable values, UTF-8 included, still reach the handler.
  const std::string reply = Get(server.port(), "/q?name=a%20b%C3%A9&runs=1");
  EXPECT_NE(reply.find("\r\n\r\nname=a b\xc3\xa9;runs=1;"), std::string::npos) << reply;
  EXPECT_EQ(handled.load(), 1);
  server.Stop();
}

// A response with prepared parts: the plain body is head + parts; the gzip one decompresses to
// the same bytes.
TEST(HttpServer, SendsPreparedPartsAfterTheBodyPlainAndGzip) {
  std::string head(4000, 'h'), tail_text;
  for (int i = 0; i < 500; ++i) tail_text += "iodrift_probe_success{probe=\"p\"} 1\n";
  const auto part = std::make_shared<const PreparedBody>(tail_text);
  HttpServer server;
  server.Route("/m", [&] { return HttpResponse{200, "text/plain", head, {part}}; });
  ASSERT_TRUE(server.Start({.listen = "127.0.0.1:0"}));
  const std::string plain = Get(server.port(), "/m");
  const auto body_at = plain.find("\r\n\r\n");
  ASSERT_NE(body_at, std::string::npos);
  EXPECT_EQ(plain.substr(body_at + 4), head + tail_text);
  const std::string gz = Get(server.port(), "/m", "Accept-Encoding: gzip\r\n");
  const auto gz_at = gz.find("\r\n\r\n");
  ASSERT_NE(gz_at, std::string::npos);
  EXPECT_NE(gz.substr(0, gz_at).find("Content-Encoding: gzip"), std::string::npos) << gz;
  EXPECT_EQ(Gunzip(gz.substr(gz_at + 4), head.size() + tail_text.size()), head + tail_text);
  server.Stop();
}

// bcrypt (cost 4) of "s3cret"; "alice:s3cret" in base64 is YWxpY2U6czNjcmV0.
constexpr const char* kHash = "$2b$04$Y3NrnIAJbzElkdgBnXyqAuBouNuD4CCzhTbEaAwPXS1KbekEGECYy";

TEST(HttpServer, QueryArgumentsReachTheHandlerDecodedAndBounded) {
  HttpServer server;
  server.Route("/q", [](const HttpQuery& query) {
    std::string body;
    for (const auto& [k, v] : query) body += k + "=" + v + ";";
    return HttpResponse{200, "text/plain", body};
  });
  server.Route("/plain", [] { return HttpResponse{200, "text/plain", "plain"}; });
  ASSERT_TRUE(server.Start({.listen = "127.0.0.1:0"}));
  std::string reply = Get(server.port(), "/q?runs=10&name=a%20b&flag&runs=11");
  EXPECT_NE(reply.find("\r\n\r\nflag=;name=a b;runs=10;"), std::string::npos) << reply;
  EXPECT_NE(Get(server.port(), "/plain?x=1").find("\r\n\r\nplain"), std::string::npos);
  std::string many = "/q?";
  for (int i = 0; i < 100; ++i) many += "k" + std::to_string(100 + i) + "=1&";
  reply = Get(server.port(), many);
  const std::string body = reply.substr(reply.find("\r\n\r\n") + 4);
  EXPECT_EQ(static_cast<std::size_t>(std::count(body.begin(), body.end(), ';')), kMaxQueryArguments)
      << body;
  server.Stop();
}

TEST(HttpServer, BasicAuthGuardsEveryPath) {
  HttpServer server;
  server.Route("/x", [] { return HttpResponse{200, "text/plain", "hello"}; });
  HttpServerOptions options{.listen = "127.0.0.1:0"};
  options.basic_auth_users = {{"alice", kHash}};
  ASSERT_TRUE(server.Start(options));
  const std::string denied = Get(server.port(), "/x");
  EXPECT_THAT(denied, ::testing::StartsWith("HTTP/1.1 401"));
  EXPECT_THAT(denied, ::testing::HasSubstr("WWW-Authenticate: Basic realm=\"iodrift\""));
  EXPECT_THAT(denied, ::testing::Not(::testing::HasSubstr("hello")));
  // Unknown paths are 401 too: no hint which paths exist.
  EXPECT_THAT(Get(server.port(), "/nope"), ::testing::StartsWith("HTTP/1.1 401"));
  EXPECT_THAT(Get(server.port(), "/x", "Authorization: Basic YWxpY2U6d3Jvbmc=\r\n"),
              ::testing::StartsWith("HTTP/1.1 401"));  // alice:wrong
  const std::string ok = Get(server.port(), "/x", "Authorization: Basic YWxpY2U6czNjcmV0\r\n");
  EXPECT_THAT(ok, ::testing::StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(ok, ::testing::HasSubstr("hello"));
  EXPECT_THAT(Get(server.port(), "/nope", "Authorization: Basic YWxpY2U6czNjcmV0\r\n"),
              ::testing::StartsWith("HTTP/1.1 404"));
}

TEST(HttpServer, OversizedRequestLineAndHeadersAreRefused) {
  HttpServer server;
  server.Route("/x", [] { return HttpResponse{200, "text/plain", "hello"}; });
  ASSERT_TRUE(server.Start({.listen = "127.0.0.1:0"}));
  EXPECT_THAT(Get(server.port(), "/" + std::string(100000, 'a')),
              ::testing::StartsWith("HTTP/1.1 414"));
  EXPECT_THAT(Get(server.port(), "/x", "X-Big: " + std::string(100000, 'a') + "\r\n"),
              ::testing::StartsWith("HTTP/1.1 431"));
  EXPECT_THAT(Get(server.port(), "/x"), ::testing::StartsWith("HTTP/1.1 200"));
}

// The connection pool is 32 KiB (libmicrohttpd mallocs pools up to 32 KiB and mmaps larger
// ones, unmapping them at every close): a request head of 24 KiB is still served, 40 KiB is not.
TEST(HttpServer, RequestHeadsFitIn32KiB) {
  HttpServer server;
  server.Route("/x", [] { return HttpResponse{200, "text/plain", "hello"}; });
  ASSERT_TRUE(server.Start({.listen = "127.0.0.1:0"}));
  EXPECT_THAT(Get(server.port(), "/x", "X-Pad: " + std::string(24 * 1024, 'a') + "\r\n"),
              ::testing::StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(Get(server.port(), "/x", "X-Pad: " + std::string(40 * 1024, 'a') + "\r\n"),
              ::testing::StartsWith("HTTP/1.1 431"));
}

TEST(HttpServer, SlowClientIsCutOffWhileOthersAreServed) {
  HttpServer server;
  server.Route("/x", [] { return HttpResponse{200, "text/plain", "hello"}; });
  ASSERT_TRUE(server.Start({.listen = "127.0.0.1:0", .connection_timeout_seconds = 1}));
  int slow = ConnectLoopback(server.port());
  ASSERT_GE(slow, 0);
  ASSERT_GT(::send(slow, "GET /x HTTP/1.1\r\n", 17, MSG_NOSIGNAL), 0);
  // One header byte every 200 ms: never idle, so only the request-head deadline can end it.
  bool cut = false;
  for (int i = 0; i < 50 && !cut; ++i) {  // up to 10 s
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (i == 2) {
      EXPECT_THAT(Get(server.port(), "/x"), ::testing::StartsWith("HTTP/1.1 200"));
    }
    cut = ::send(slow, "X", 1, MSG_NOSIGNAL) < 0;
    pollfd pfd{slow, POLLIN, 0};
    char c;
    if (::poll(&pfd, 1, 0) > 0 && ::recv(slow, &c, 1, MSG_DONTWAIT) <= 0) cut = true;
  }
  ::close(slow);
  EXPECT_TRUE(cut) << "a client trickling header bytes was never disconnected";
  EXPECT_THAT(Get(server.port(), "/x"), ::testing::StartsWith("HTTP/1.1 200"));
}

// ---- TLS
// -----------------------------------------------------------------------------------------

class HttpServerTls : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/iodrift-http-tls-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
    for (const char* name : {"a", "b"}) {
      const std::string cmd =
          "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 "
          "-subj /CN=localhost -keyout " +
          (dir_ / (std::string(name) + ".key")).string() + " -out " +
          (dir_ / (std::string(name) + ".crt")).string() + " >/dev/null 2>&1";
      if (std::system(cmd.c_str()) != 0) IODRIFT_SKIP_GUARANTEED("openssl CLI not available");
    }
  }
  void TearDown() override {
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

TEST_F(HttpServerTls, ServesHttpsAndSaysSo) {
  HttpServer server;
  ASSERT_TRUE(server.Start(
      {.listen = "127.0.0.1:0", .tls_cert_file = Path("a.crt"), .tls_key_file = Path("a.key")}));
  EXPECT_TRUE(server.tls());
  EXPECT_EQ(server.BaseUrl(), "https://127.0.0.1:" + std::to_string(server.port()));
  // Plain HTTP to the TLS port gets no HTTP answer.
  EXPECT_THAT(Get(server.port(), "/x"), ::testing::Not(::testing::StartsWith("HTTP/")));
}

TEST_F(HttpServerTls, BadFilesFailStartWithAClearMessage) {
  HttpServer server;
  auto missing = server.Start(
      {.listen = "127.0.0.1:0", .tls_cert_file = Path("none.crt"), .tls_key_file = Path("a.key")});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message,
            "tls_cert_file " + Path("none.crt") + ": no such file or directory");
  // The key of another certificate.
  auto mismatch = server.Start(
      {.listen = "127.0.0.1:0", .tls_cert_file = Path("a.crt"), .tls_key_file = Path("b.key")});
  ASSERT_FALSE(mismatch);
  EXPECT_THAT(mismatch.error().message, ::testing::StartsWith("TLS: tls_cert_file "));
  // Not PEM at all.
  std::ofstream(Path("junk.crt"))
      << "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n";
  auto junk = server.Start(
      {.listen = "127.0.0.1:0", .tls_cert_file = Path("junk.crt"), .tls_key_file = Path("a.key")});
  ASSERT_FALSE(junk);
  EXPECT_THAT(junk.error().message, ::testing::StartsWith("TLS: tls_cert_file "));
  auto half = server.Start({.listen = "127.0.0.1:0", .tls_cert_file = Path("a.crt")});
  ASSERT_FALSE(half);
  EXPECT_THAT(half.error().message, ::testing::HasSubstr("both"));
}

}  // namespace
}  // namespace iodrift::daemon
