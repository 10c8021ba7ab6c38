#include "daemon/liveness.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "daemon/http_server.h"
#include "tests/lib/ci_guarantee.h"

namespace iodrift::daemon {
namespace {

using std::chrono::milliseconds;

TEST(HttpAnswers, TrueWhenTheListenerAnswers) {
  HttpServer server;
  server.Route("/", [] { return HttpResponse{200, "text/plain", "hi"}; });
  ASSERT_TRUE(server.Start({.listen = "127.0.0.1:0"}));
  EXPECT_TRUE(HttpAnswers("127.0.0.1", server.port(), "/", milliseconds(2000)));
  EXPECT_TRUE(HttpAnswers("0.0.0.0", server.port(), "/", milliseconds(2000)));  // → loopback
  // Any status counts: a 404 still proves a server thread answered.
  EXPECT_TRUE(HttpAnswers("127.0.0.1", server.port(), "/nope", milliseconds(2000)));
  const auto port = server.port();
  server.Stop();
  EXPECT_FALSE(HttpAnswers("127.0.0.1", port, "/", milliseconds(500)));
}

TEST(HttpAnswers, FalseWhenNobodyAnswersInTime) {
  // A socket that listens but never accepts or replies: the kernel completes the handshake,
  // so only the receive timeout can end the check.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(HttpAnswers("127.0.0.1", ntohs(addr.sin_port), "/", milliseconds(300)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(2000));
  ::close(fd);
}

TEST(HttpAnswers, A401FromBasicAuthStillCounts) {
  HttpServer server;
  server.Route("/", [] { return HttpResponse{200, "text/plain", "hi"}; });
  HttpServerOptions options{.listen = "127.0.0.1:0"};
  // bcrypt of "pw" at cost 4.
  options.basic_auth_users = {
      {"u", "$2b$04$Y3NrnIAJbzElkdgBnXyqAuBouNuD4CCzhTbEaAwPXS1KbekEGECYy"}};
  ASSERT_TRUE(server.Start(options));
  EXPECT_TRUE(HttpAnswers("127.0.0.1", server.port(), "/", milliseconds(2000)));
}

// A throw-away self-signed certificate made with the openssl CLI; empty paths when it is missing.
struct TestCert {
  std::filesystem::path dir;
  std::string cert, key;
  TestCert() {
    char pattern[] = "/tmp/iodrift-liveness-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) return;
    dir = pattern;
    const std::string cmd =
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
        "-days 1 -subj /CN=localhost -keyout " +
        (dir / "key.pem").string() + " -out " + (dir / "cert.pem").string() + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) {
      cert = (dir / "cert.pem").string();
      key = (dir / "key.pem").string();
    }
  }
  ~TestCert() {
    std::error_code ignored;
    if (!dir.empty()) std::filesystem::remove_all(dir, ignored);
  }
};

TEST(TlsListenerReacts, TrueForATlsServerWherePlainHttpGetsNoAnswer) {
  TestCert tls;
  if (tls.cert.empty()) IODRIFT_SKIP_GUARANTEED("openssl CLI not available");
  HttpServer server;
  server.Route("/", [] { return HttpResponse{200, "text/plain", "hi"}; });
  ASSERT_TRUE(
      server.Start({.listen = "127.0.0.1:0", .tls_cert_file = tls.cert, .tls_key_file = tls.key}));
  ASSERT_TRUE(server.tls());
  EXPECT_TRUE(TlsListenerReacts("127.0.0.1", server.port(), milliseconds(2000)));
  // Why the watchdog needs the TLS check: a plain HEAD gets no HTTP status line from a TLS port.
  EXPECT_FALSE(HttpAnswers("127.0.0.1", server.port(), "/", milliseconds(1000)));
  const auto port = server.port();
  server.Stop();
  EXPECT_FALSE(TlsListenerReacts("127.0.0.1", port, milliseconds(500)));
}

TEST(TlsListenerReacts, FalseWhenTheListenerStaysSilent) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  EXPECT_FALSE(TlsListenerReacts("127.0.0.1", ntohs(addr.sin_port), milliseconds(300)));
  ::close(fd);
}

TEST(HttpAnswers, FalseOnANameInsteadOfAnAddress) {
  EXPECT_FALSE(HttpAnswers("localhost", 1, "/", milliseconds(100)));
}

}  // namespace
}  // namespace iodrift::daemon
