#include "collectors/common/proc_root.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace iodrift {

Expected<std::string> ProcRoot::Read(std::string_view relative, std::size_t max_bytes) const {
  return ReadWholeFile(Path(relative), max_bytes);
}

Expected<std::string> ReadWholeFile(const std::filesystem::path& path, std::size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    return Fail(err, SystemErrorMessage("open " + path.string(), err));
  }
  std::string out;
  out.resize(8192);
  std::size_t used = 0;
  for (;;) {
    if (used == out.size()) {
      if (out.size() > max_bytes) break;
      out.resize(out.size() * 2);
    }
    ssize_t n = ::read(fd, out.data() + used, out.size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return Fail(err, SystemErrorMessage("read " + path.string(), err));
    }
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (used > max_bytes) {
    return Fail(EFBIG,
                "read " + path.string() + ": larger than " + std::to_string(max_bytes) + " bytes");
  }
  out.resize(used);
  return out;
}

}  // namespace iodrift
