#include "collectors/common/kept_files.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "collectors/common/file_util.h"

namespace iodrift {

namespace {

bool OnProcOrSysfs(int fd) {
  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0) return false;
  return fs.f_type == PROC_SUPER_MAGIC || fs.f_type == SYSFS_MAGIC;
}

}  // namespace

KeptFiles::~KeptFiles() {
  for (auto& [key, entry] : entries_) {
    if (entry.fd >= 0) ::close(entry.fd);
  }
}

int KeptFiles::TakeFd(const std::string& key, std::size_t& size_hint) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return -1;
  size_hint = it->second.size;
  const int fd = it->second.fd;
  it->second.fd = -1;
  return fd;
}

void KeptFiles::PutFd(const std::string& key, int fd, std::size_t size, bool keep) {
  std::unique_lock lock(mu_);
  Entry& entry = entries_[key];
  entry.size = size;
  if (!keep) entry.never = true;
  if (keep && !entry.never && entry.fd < 0) {
    entry.fd = fd;
    return;
  }
  lock.unlock();
  ::close(fd);
}

Expected<std::string> KeptFiles::Read(const std::filesystem::path& path, std::size_t max_bytes) {
  std::string key = path.string();
  std::size_t size_hint = 0;
  if (const int kept = TakeFd(key, size_hint); kept >= 0) {
    auto text = PreadAll(kept, size_hint, max_bytes, key);
    if (text) {
      PutFd(key, kept, text->size(), true);
      return text;
    }
    // Reopen on error; a file that cannot be pread is not kept again.
    ::close(kept);
    if (text.error().code == ESPIPE) {
      std::lock_guard lock(mu_);
      entries_[key].never = true;
    }
    if (text.error().code == EFBIG) return text;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return Fail(err, SystemErrorMessage("open " + key, err));
  }
  UniqueFd owned(fd);
  auto text = ReadAll(fd, max_bytes, key);
  if (!text) return text;
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end() && it->second.never) return text;
  }
  const bool keep = OnProcOrSysfs(fd);
  PutFd(key, owned.Release(), text->size(), keep);
  return text;
}

std::size_t KeptFiles::KeptCount() const {
  std::lock_guard lock(mu_);
  std::size_t n = 0;
  for (const auto& [key, entry] : entries_) n += entry.fd >= 0 ? 1 : 0;
  return n;
}

}  // namespace iodrift
