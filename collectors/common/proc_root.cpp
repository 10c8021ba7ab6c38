#include "collectors/common/proc_root.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "collectors/common/file_util.h"
#include "collectors/common/kept_files.h"

namespace iodrift {

Expected<std::string> ProcRoot::Read(std::string_view relative, std::size_t max_bytes) const {
  if (kept_) return kept_->Read(Path(relative), max_bytes);
  return ReadWholeFile(Path(relative), max_bytes);
}

ProcRoot ProcRoot::KeepingFilesOpen() const {
  ProcRoot out(root_);
  out.kept_ = std::make_shared<KeptFiles>();
  return out;
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
