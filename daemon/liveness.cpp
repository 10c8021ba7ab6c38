#include "daemon/liveness.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

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

}  // namespace

bool HttpAnswers(const std::string& host, std::uint16_t port, const std::string& path,
                 std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
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
    return false;
  }
  Fd fd(::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return false;
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    if (errno != EINPROGRESS || !WaitFor(fd.get(), POLLOUT, deadline)) return false;
    int err = 0;
    socklen_t err_len = sizeof(err);
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &err_len) != 0 || err != 0) {
      return false;
    }
  }
  const std::string request = "HEAD " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
  std::size_t sent = 0;
  while (sent < request.size()) {
    if (!WaitFor(fd.get(), POLLOUT, deadline)) return false;
    ssize_t n = ::send(fd.get(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR) return false;
    if (n > 0) sent += static_cast<std::size_t>(n);
  }
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

}  // namespace iodrift::daemon
