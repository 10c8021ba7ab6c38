#include "collectors/common/proc_root.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "collectors/common/file_util.h"

namespace iodrift {

Expected<std::string> ProcRoot::Read(std::string_view relative, std::size_t max_bytes) const {
  return ReadWholeFile(Path(relative), max_bytes);
}

Expected<std::string> ReadWholeFile(const std::filesystem::path& path, std::size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return Fail(err, SystemErrorMessage("open " + path.string(), err));
  }
  UniqueFd owned(fd);
  return ReadAll(owned.get(), max_bytes, path.string());
}

}  // namespace iodrift
