// ProcRoot: where iodrift reads kernel state from.
//
// Every reader takes a ProcRoot instead of hard-coding "/proc", so the same code reads the live
// kernel, `/host/proc` inside a container, or a captured fixture tree in tests
// (`iodriftd --proc-root DIR`). Paths are relative to /proc: "meminfo", "pressure/io",
// "sys/kernel/random/boot_id".
//
// A root made with KeepingFilesOpen() keeps the procfs/sysfs files it reads open and re-reads
// them with pread (collectors/common/kept_files.h); its copies share those fds.
//
// Thread-safety: immutable after construction (the kept-file cache is thread-safe); safe to share.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "collectors/common/error.h"

namespace iodrift {

class KeptFiles;

// Pseudo-files larger than this are refused (the largest real one we read, /proc/stat with a
// long `intr` line, is ~130 KiB on a 65k-IRQ machine; slabinfo on big hosts ~100 KiB).
inline constexpr std::size_t kMaxProcFileBytes = 4u << 20;

class ProcRoot {
 public:
  ProcRoot() : root_("/proc") {}
  explicit ProcRoot(std::filesystem::path root) : root_(std::move(root)) {}

  const std::filesystem::path& root() const { return root_; }

  // Absolute path of `relative` (e.g. "pressure/io") under this root.
  std::filesystem::path Path(std::string_view relative) const { return root_ / relative; }

  // Reads the whole pseudo-file `relative` (see ReadWholeFile).
  Expected<std::string> Read(std::string_view relative,
                             std::size_t max_bytes = kMaxProcFileBytes) const;

  // This root, keeping the procfs/sysfs files read through it open between reads.
  ProcRoot KeepingFilesOpen() const;

 private:
  std::filesystem::path root_;
  std::shared_ptr<KeptFiles> kept_;
};

// Reads `path` completely with a read() loop (never trusting st_size, which is 0 or 4096 for
// /proc files). Fails with the errno and a message naming the path when the file cannot be
// opened or read, and with EFBIG when it holds more than `max_bytes`.
Expected<std::string> ReadWholeFile(const std::filesystem::path& path,
                                    std::size_t max_bytes = kMaxProcFileBytes);

}  // namespace iodrift
