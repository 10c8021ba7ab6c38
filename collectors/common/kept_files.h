// KeptFiles: procfs and sysfs files kept open between scrapes and re-read with pread(fd, …, 0).
//
// Opening a /proc file costs a path walk, a file allocation and a seq_file setup; re-reading an
// open one from offset 0 makes the kernel generate fresh contents without that. A scrape reads
// ~20 such files, so this is a large share of a scrape's kernel time.
//
// Only files on procfs or sysfs (fstatfs) are kept: a --proc-root fixture tree on an ordinary or
// FUSE filesystem is opened and read afresh every time, as before, so a replaced fixture file or
// a hung FUSE file behaves exactly as without the cache. A kept fd that fails to read is closed
// and the file opened again (reopen on error); a file that refuses pread (ESPIPE) is never kept.
// A file read by two threads at once is read through two fds (the fd is taken out of the cache
// during a read, and no lock is held while reading: a hung read blocks nobody else).
//
// Thread-safety: Read() may be called from any number of threads at once.
#pragma once

#include <cstddef>
#include <filesystem>
#include <mutex>
#include <string>
#include <unordered_map>

#include "collectors/common/error.h"

namespace iodrift {

class KeptFiles {
 public:
  KeptFiles() = default;
  ~KeptFiles();
  KeptFiles(const KeptFiles&) = delete;
  KeptFiles& operator=(const KeptFiles&) = delete;

  // The whole contents of `path` (at most `max_bytes`; EFBIG beyond), like ReadWholeFile.
  Expected<std::string> Read(const std::filesystem::path& path, std::size_t max_bytes);

  // Files kept open now (for tests).
  std::size_t KeptCount() const;

 private:
  struct Entry {
    int fd = -1;           // kept fd, -1 while none (or taken out by a read)
    bool never = false;    // not procfs/sysfs, or refuses pread: always open afresh
    std::size_t size = 0;  // last size read, to size the buffer for one read
  };
  int TakeFd(const std::string& key, std::size_t& size_hint);
  void PutFd(const std::string& key, int fd, std::size_t size, bool keep);

  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace iodrift
