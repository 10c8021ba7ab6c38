// Helpers for the probe and scheduler tests: temporary directories, files of random data, specs
// with test-sized budgets, and running a test body in a forked child with a private mount
// namespace (so a test can mount ramfs/tmpfs without root, through a user namespace).
//
// Thread-safety: test-only; use from the test's main thread.
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "collectors/probes/context.h"
#include "collectors/probes/io_util.h"
#include "collectors/probes/probe.h"
#include "collectors/probes/probe_env.h"
#include "config/config.h"

namespace iodrift::probes::testing {

// A fresh directory under /tmp, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = "/tmp/iodrift-test-XXXXXX";
    char* p = mkdtemp(tmpl.data());
    if (p != nullptr) path_ = p;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// Writes `bytes` of pseudo-random data to `path` and fsyncs it; returns false on failure.
inline bool WriteRandomFile(const std::filesystem::path& path, std::uint64_t bytes) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  std::string buf(1 << 20, '\0');
  std::uint64_t seed = 42;
  for (std::uint64_t done = 0; done < bytes;) {
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), bytes - done));
    FillPseudoRandom(buf.data(), n, seed++);
    if (write(fd, buf.data(), n) != static_cast<ssize_t>(n)) {
      close(fd);
      return false;
    }
    done += n;
  }
  const bool ok = fsync(fd) == 0;
  close(fd);
  return ok;
}

// A run's suspects without those that describe the machine (kMachineStateSuspects: io or memory
// pressure from other work, low free memory): what a test of the probe's own checks asserts, so
// that it holds on a busy machine.
// Whether the machine lets `path` be read with O_DIRECT: an open with O_DIRECT and one aligned
// 4 KiB read, done here without the probe code, so a test can check the probe's `supported`
// answer against the machine instead of trusting it.
inline bool MachineReadsWithODirect(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  if (fd < 0) return false;
  void* buffer = nullptr;
  bool ok = false;
  if (::posix_memalign(&buffer, 4096, 4096) == 0) {
    ok = ::pread(fd, buffer, 4096, 0) >= 0;
    std::free(buffer);
  }
  ::close(fd);
  return ok;
}

inline std::vector<std::string> OwnSuspects(const std::vector<std::string>& suspects) {
  std::vector<std::string> own;
  for (const auto& s : suspects) {
    if (!probes::IsMachineStateSuspect(s)) own.push_back(s);
  }
  return own;
}
// The same for a comma-joined list ("io_pressure,cache_not_dropped,"), joined the same way.
inline std::string OwnSuspects(const std::string& joined) {
  std::string own, item;
  std::istringstream in(joined);
  while (std::getline(in, item, ',')) {
    if (!item.empty() && !probes::IsMachineStateSuspect(item)) own += item + ",";
  }
  return own;
}

inline probes::ProbeSpec MakeSpec(const std::string& name, probes::ProbeKind kind,
                                  const std::string& target, std::uint64_t size = 16ull << 20) {
  probes::ProbeSpec spec;
  spec.name = name;
  spec.kind = kind;
  spec.target = target;
  spec.size = size;
  spec.files = 64;
  spec.requests = 64;
  spec.timeout = std::chrono::seconds(20);
  spec.time_budget = std::chrono::milliseconds(100);
  return spec;
}

inline ProbeEnv MakeEnv(const std::filesystem::path& state_dir) {
  ProbeEnv env;
  env.state_dir = state_dir;
  env.probe_file_bytes = 16ull << 20;
  return env;
}

// key=value lines <-> map, to carry a child's findings back through a pipe.
inline std::string Encode(const std::map<std::string, std::string>& m) {
  std::string out;
  for (const auto& [k, v] : m) {
    std::string value = v;
    for (char& c : value) {
      if (c == '\n') c = ' ';
    }
    out += k + "=" + value + "\n";
  }
  return out;
}
inline std::map<std::string, std::string> Decode(const std::string& text) {
  std::map<std::string, std::string> m;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) m[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return m;
}

inline std::map<std::string, std::string> Summarize(const ProbeResult& r) {
  return {{"outcome", OutcomeName(r.outcome)},
          {"supported", r.supported ? "1" : "0"},
          {"bytes", std::to_string(r.bytes)},
          {"error", r.error},
          {"mode", r.mode},
          {"fstype", r.target_info.fstype},
          {"suspect", [&] {
             std::string s;
             for (const auto& x : r.suspect) s += x + ",";
             return s;
           }()}};
}

struct ChildRun {
  std::string skip_reason;  // non-empty: the namespace could not be made; skip the test
  std::map<std::string, std::string> values;
  int exit_code = -1;
};

// Forks; the child enters a new mount namespace (through a new user namespace when not root),
// makes its mounts private, runs `body` and sends back what it returns. Mounts made in the child
// vanish with it. The child never returns into gtest.
inline ChildRun RunInPrivateMountNamespace(
    const std::function<std::map<std::string, std::string>()>& body) {
  ChildRun run;
  int fds[2];
  if (pipe(fds) != 0) {
    run.skip_reason = "pipe failed";
    return run;
  }
  const uid_t uid = geteuid();
  const gid_t gid = getegid();
  const pid_t pid = fork();
  if (pid < 0) {
    run.skip_reason = "fork failed";
    return run;
  }
  if (pid == 0) {
    close(fds[0]);
    auto send = [&](const std::string& s) {
      std::size_t off = 0;
      while (off < s.size()) {
        const ssize_t n = write(fds[1], s.data() + off, s.size() - off);
        if (n <= 0) break;
        off += static_cast<std::size_t>(n);
      }
    };
    auto write_file = [](const char* path, const std::string& data) {
      const int fd = open(path, O_WRONLY | O_CLOEXEC);
      if (fd < 0) return false;
      const bool ok = write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size());
      close(fd);
      return ok;
    };
    bool ok;
    if (uid == 0) {
      ok = unshare(CLONE_NEWNS) == 0;
    } else {
      ok = unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0 &&
           write_file("/proc/self/setgroups", "deny") &&
           write_file("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") &&
           write_file("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1");
    }
    if (!ok || mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      send(Encode({{"skip", "cannot create a private mount namespace here"}}));
      _exit(77);
    }
    send(Encode(body()));
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) out.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.values = Decode(out);
  if (run.exit_code == 77) run.skip_reason = run.values["skip"];
  return run;
}

}  // namespace iodrift::probes::testing
