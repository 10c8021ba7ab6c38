#include "collectors/common/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace iodrift {

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.Release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

int UniqueFd::Release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

Expected<void> WriteAll(int fd, std::string_view data, const std::string& what) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      return Fail(err, SystemErrorMessage("write " + what, err));
    }
    done += static_cast<std::size_t>(n);
  }
  return {};
}

namespace {

// The one bounded read loop: read() (or pread() from offset 0 when `positional`) until end of
// file into a buffer sized for `size_hint`, retrying EINTR; EFBIG past `max_bytes`.
Expected<std::string> ReadBounded(int fd, std::size_t max_bytes, const std::string& what,
                                  std::size_t size_hint, bool positional) {
  std::string out;
  out.resize(std::max<std::size_t>(positional ? 4096 : 8192, size_hint + size_hint / 4 + 1024));
  std::size_t used = 0;
  for (;;) {
    if (used == out.size()) {
      if (out.size() > max_bytes) break;
      out.resize(out.size() * 2);
    }
    const ssize_t n =
        positional ? ::pread(fd, out.data() + used, out.size() - used, static_cast<off_t>(used))
                   : ::read(fd, out.data() + used, out.size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      return Fail(err, SystemErrorMessage("read " + what, err));
    }
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  if (used > max_bytes) {
    return Fail(EFBIG, "read " + what + ": larger than " + std::to_string(max_bytes) + " bytes");
  }
  out.resize(used);
  return out;
}

}  // namespace

Expected<std::string> ReadAll(int fd, std::size_t max_bytes, const std::string& what) {
  return ReadBounded(fd, max_bytes, what, 0, false);
}

Expected<std::string> PreadAll(int fd, std::size_t size_hint, std::size_t max_bytes,
                               const std::string& what) {
  return ReadBounded(fd, max_bytes, what, size_hint, true);
}

Expected<UniqueFd> OpenDirectory(int dirfd, const std::string& name, bool nofollow) {
  const int fd = ::openat(dirfd, name.c_str(),
                          O_RDONLY | O_DIRECTORY | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0));
  if (fd < 0) {
    const int err = errno;
    return Fail(err, SystemErrorMessage("open directory " + name, err));
  }
  return UniqueFd(fd);
}

Expected<std::string> ReadRegularFile(int dirfd, const std::string& name, std::size_t max_bytes,
                                      const std::string& shown) {
  const int raw =
      ::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (raw < 0) {
    const int err = errno;
    if (err == ELOOP) return Fail(err, "open " + shown + ": is a symbolic link; not following it");
    return Fail(err, SystemErrorMessage("open " + shown, err));
  }
  UniqueFd fd(raw);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    const int err = errno;
    return Fail(err, SystemErrorMessage("fstat " + shown, err));
  }
  if (!S_ISREG(st.st_mode)) return Fail(EINVAL, shown + " is not a regular file");
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    return Fail(EFBIG, "read " + shown + ": larger than " + std::to_string(max_bytes) + " bytes");
  }
  return ReadAll(fd.get(), max_bytes, shown);
}

Expected<std::string> ReadRegularFile(const std::filesystem::path& path, std::size_t max_bytes) {
  return ReadRegularFile(AT_FDCWD, path.string(), max_bytes, path.string());
}

Expected<void> WriteFileAtomically(int dirfd, const std::string& name, std::string_view contents,
                                   mode_t mode, const std::string& shown_dir) {
  const std::string tmp = name + ".tmp";
  const std::string shown_tmp = shown_dir + "/" + tmp;
  const std::string shown = shown_dir + "/" + name;
  // A temporary left by a crash (or planted): removed, never followed. A failure shows below
  // (EEXIST, or the read-only / permission error of the create).
  ::unlinkat(dirfd, tmp.c_str(), 0);
  const int raw = ::openat(dirfd, tmp.c_str(),
                           O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, mode);
  if (raw < 0) {
    const int err = errno;
    return Fail(err, SystemErrorMessage("create " + shown_tmp, err));
  }
  UniqueFd fd(raw);
  auto fail = [&](const Error& e) -> Expected<void> {
    fd = UniqueFd();
    ::unlinkat(dirfd, tmp.c_str(), 0);
    return tl::unexpected(e);
  };
  // O_CREAT applies the umask; the mode asked for is the mode meant.
  if (::fchmod(fd.get(), mode) != 0) {
    return fail(Error{errno, SystemErrorMessage("chmod " + shown_tmp, errno)});
  }
  if (auto w = WriteAll(fd.get(), contents, shown_tmp); !w) return fail(w.error());
  if (::fsync(fd.get()) != 0)
    return fail(Error{errno, SystemErrorMessage("fsync " + shown_tmp, errno)});
  if (::close(fd.Release()) != 0) {
    return fail(Error{errno, SystemErrorMessage("close " + shown_tmp, errno)});
  }
  if (::renameat(dirfd, tmp.c_str(), dirfd, name.c_str()) != 0) {
    return fail(Error{errno, SystemErrorMessage("rename " + shown_tmp + " to " + shown, errno)});
  }
  // The rename is durable only once the directory entry is on disk.
  if (::fsync(dirfd) != 0) {
    const int err = errno;
    return Fail(err, SystemErrorMessage("fsync " + shown_dir, err));
  }
  return {};
}

}  // namespace iodrift
