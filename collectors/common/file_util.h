// The one place where iodrift reads and writes its own small files: EINTR-safe read/write loops,
// a bounded read of a regular file that never follows a symlink, never blocks on a FIFO or device
// and never reads more than a bound, and a crash-safe atomic write through a directory fd that
// never follows a planted symlink.
//
// Rules (docs/security.md): every file the daemon writes is created O_CREAT|O_EXCL|O_NOFOLLOW
// relative to a directory fd (a symlink or file planted at the name makes the write fail, it is
// never followed or truncated); every state file is opened O_NOFOLLOW|O_NONBLOCK and checked with
// fstat(S_ISREG) before a byte is read.
//
// Thread-safety: free functions are reentrant; UniqueFd is a move-only owner used by one thread.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include "collectors/common/error.h"

namespace iodrift {

// Owns a file descriptor; closes it on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.Release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release();

 private:
  int fd_ = -1;
};

// write() until all of `data` is written, retrying EINTR. `what` names the file in the error.
Expected<void> WriteAll(int fd, std::string_view data, const std::string& what);

// The bounded read, written once: read() until EOF, retrying EINTR; fails with EFBIG when more
// than `max_bytes` arrive. PreadAll reads with pread() from offset 0 (a kept procfs/sysfs file,
// kept_files.h) into a buffer sized for `size_hint` bytes.
Expected<std::string> ReadAll(int fd, std::size_t max_bytes, const std::string& what);
Expected<std::string> PreadAll(int fd, std::size_t size_hint, std::size_t max_bytes,
                               const std::string& what);

// Opens directory `name` relative to `dirfd` (AT_FDCWD: a path) with O_DIRECTORY|O_CLOEXEC, and
// O_NOFOLLOW when `nofollow` (a symlink then fails with ELOOP/ENOTDIR).
Expected<UniqueFd> OpenDirectory(int dirfd, const std::string& name, bool nofollow);

// Reads regular file `name` relative to `dirfd` (AT_FDCWD: a path): opened
// O_RDONLY|O_NOFOLLOW|O_NONBLOCK|O_NOCTTY|O_CLOEXEC (a symlink fails with ELOOP, a FIFO never
// blocks), refused with EINVAL when fstat says it is not a regular file, with EFBIG when it is
// larger than `max_bytes` (checked on st_size and again while reading). `shown` names the file in
// messages.
Expected<std::string> ReadRegularFile(int dirfd, const std::string& name, std::size_t max_bytes,
                                      const std::string& shown);
Expected<std::string> ReadRegularFile(const std::filesystem::path& path, std::size_t max_bytes);

// Replaces `name` in directory `dirfd` with `contents`, crash-safely: a stale `name`.tmp is
// removed (unlinkat never follows a symlink), `name`.tmp is created O_CREAT|O_EXCL|O_NOFOLLOW
// with `mode`, written, fsync()ed, renameat() over `name` (a symlink at `name` is replaced, its
// target untouched) and the directory fsync()ed. On failure the old file is intact and the
// temporary removed. `shown_dir` names the directory in messages.
Expected<void> WriteFileAtomically(int dirfd, const std::string& name, std::string_view contents,
                                   mode_t mode, const std::string& shown_dir);

}  // namespace iodrift
