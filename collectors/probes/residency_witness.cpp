#include "collectors/probes/residency_witness.h"

#include "collectors/probes/io_util.h"
#include "collectors/proc/task_io.h"

namespace iodrift::probes {

double StorageReadFraction(std::uint64_t bytes_timed, std::uint64_t storage_read_bytes) {
  if (bytes_timed == 0) return 0;
  return static_cast<double>(storage_read_bytes) / static_cast<double>(bytes_timed);
}

bool ReadFromStorage(std::uint64_t bytes_timed, std::uint64_t storage_read_bytes) {
  return bytes_timed > 0 &&
         StorageReadFraction(bytes_timed, storage_read_bytes) >= kMinStorageFraction;
}

bool ReadFromPageCache(std::uint64_t bytes_timed, std::uint64_t storage_read_bytes) {
  return bytes_timed > 0 &&
         StorageReadFraction(bytes_timed, storage_read_bytes) <= kMaxStorageFractionCached;
}

bool TaskIoWitnessApplies(const TargetInfo& target) {
  if (target.fstype == "block") return true;
  // fuseblk (ntfs-3g …): a user-space process reads the device, not the probe's thread.
  const bool fuse = target.fstype.rfind("fuse", 0) == 0;
  return target.remote == "0" && !target.device.empty() && !fuse &&
         !IsMemoryBackedFs(target.fstype);
}

std::optional<std::uint64_t> ThreadStorageReadBytes() {
  Expected<proc::TaskIo> io = proc::ReadThreadIo();
  if (!io) return std::nullopt;
  return io->read_bytes;
}

}  // namespace iodrift::probes
