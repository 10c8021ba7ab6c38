#include "daemon/liveness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

namespace iodrift::daemon {
namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Waits for `events` on `fd` until `deadline`; false on timeout or error.
bool WaitFor(int fd, short events, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    struct pollfd pfd {
      fd, events, 0
    };
    int r = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (r > 0) return (pfd.revents & events) != 0;
    if (r == 0) return false;
    if (errno != EINTR) return false;
  }
}

// A non-blocking socket connected to HOST:PORT (wildcards mean loopback) by `deadline`, or -1.
int ConnectBy(const std::string& host, std::uint16_t port,
              std::chrono::steady_clock::time_point deadline) {
  sockaddr_storage addr{};
  socklen_t len = 0;
  std::string h = host;
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (h.empty() || h == "0.0.0.0") h = "127.0.0.1";
  if (h == "::") h = "::1";
  auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
  if (::inet_pton(AF_INET, h.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    len = sizeof(sockaddr_in);
  } else if (::inet_pton(AF_INET6, h.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    len = sizeof(sockaddr_in6);
  } else {
    return -1;
  }
  const int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    int err = 0;
    socklen_t err_len = sizeof(err);
    if (errno != EINPROGRESS || !WaitFor(fd, POLLOUT, deadline) ||
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &err_len) != 0 || err != 0) {
      ::close(fd);
      return -1;
    }
  }
  return fd;
}

bool SendAll(int fd, std::string_view data, std::chrono::steady_clock::time_point deadline) {
  std::size_t sent = 0;
  while (sent < data.size()) {
    if (!WaitFor(fd, POLLOUT, deadline)) return false;
    ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR) return false;
    if (n > 0) sent += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

bool HttpAnswers(const std::string& host, std::uint16_t port, const std::string& path,
                 std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  Fd fd(ConnectBy(host, port, deadline));
  if (fd.get() < 0) return false;
  const std::string request = "HEAD " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
  if (!SendAll(fd.get(), request, deadline)) return false;
  std::string reply;
  while (reply.size() < 9) {
    if (!WaitFor(fd.get(), POLLIN, deadline)) return false;
    char buf[64];
    ssize_t n = ::recv(fd.get(), buf, sizeof(buf), 0);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return false;
    }
    reply.append(buf, static_cast<std::size_t>(n));
  }
  return reply.size() >= 9 && reply.compare(0, 7, "HTTP/1.") == 0 && reply[8] == ' ';
}

bool TlsListenerReacts(const std::string& host, std::uint16_t port,
                       std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  Fd fd(ConnectBy(host, port, deadline));
  if (fd.get() < 0) return false;
  // One complete TLS record (type 21 = alert, version 3.3, length 2): fatal (2)
  // handshake_failure (40). Complete, so the server never waits for more bytes.
  static constexpr char kAlert[] = {0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28};
  if (!SendAll(fd.get(), std::string_view(kAlert, sizeof(kAlert)), deadline)) {
    return errno == ECONNRESET || errno == EPIPE;  // closed on us already: it reacted
  }
  for (;;) {
    // POLLHUP / POLLERR (a reset) count as a reaction too.
    if (!WaitFor(fd.get(), POLLIN | POLLHUP | POLLERR, deadline)) return false;  // silent
    char buf[64];
    const ssize_t n = ::recv(fd.get(), buf, sizeof(buf), 0);
    if (n >= 0) return true;  // bytes (an alert) or end of file
    if (errno == EAGAIN || errno == EINTR) continue;
    return errno == ECONNRESET;
  }
}

}  // namespace iodrift::daemon
