// Residency witnesses: how a probe proves where its timed bytes came from — the device (buffered,
// after dropping the target's cached pages) or the page cache (cached).
//
// Three witnesses, tried in this order:
//   "cachestat", "mincore"  the page-cache residency of the region, before the read
//                           (io_util.h MeasureResidency). Since Linux 5.0 (mincore) and 6.14
//                           (cachestat) the kernel answers only a caller that owns the file or
//                           may write it (or has CAP_FOWNER/CAP_SYS_ADMIN): root, or the owner of
//                           a probe file in its own directory. The service user (iodrift with
//                           CAP_DAC_READ_SEARCH) reading a root-owned file or a block device is
//                           neither.
//   "task_io"               the reading threads' own I/O accounting, /proc/thread-self/io
//                           read_bytes, sampled around the read (collectors/proc/task_io.h): the
//                           bytes those threads caused to be fetched from storage. Every thread
//                           may read its own file (CONFIG_TASK_IO_ACCOUNTING). It is counted when
//                           a read bio is submitted, so it only witnesses block-backed targets
//                           (a raw device, or a local filesystem with a device underneath);
//                           network filesystems, FUSE (fuseblk too: its server reads the
//                           device) and memory-backed ones get no witness.
//   "none"                  neither applies: suspect residency_unverified, as before.
// Not used: the device's sectors read (/sys/block/<dev>/stat, readable by everyone) count every
// reader of the device, so another process's reads would pass an undropped cache as verified.
//
// Rules (pure, below): a read came from the device when read_bytes ≥ 99 % of the bytes timed
// (the complement of the buffered probe's 1 % residency bound); readahead past the last byte
// read and filesystem metadata may push read_bytes above the bytes timed, which is still "from
// the device". Pages another process keeps (mapped, locked, or reading the same range at the same
// moment) are page-cache hits that read_bytes does not count, so such a run fails the rule: its
// timing would mix the device with memory. A read came from the page cache (cached) when
// read_bytes ≤ 1 % of the bytes timed.
//
// Thread-safety: the pure functions are reentrant; ThreadStorageReadBytes reads the calling
// thread's counters.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "collectors/probes/probe.h"

namespace iodrift::probes {

inline constexpr std::string_view kWitnessTaskIo = "task_io";
inline constexpr std::string_view kWitnessNone = "none";

// Share of the timed bytes the readers fetched from storage beyond which a run counts as read
// from the device (buffered), and below which as read from the page cache (cached).
inline constexpr double kMinStorageFraction = 0.99;
inline constexpr double kMaxStorageFractionCached = 0.01;

// Pure. storage_read_bytes / bytes_timed; 0 when nothing was timed.
double StorageReadFraction(std::uint64_t bytes_timed, std::uint64_t storage_read_bytes);
// Pure. The rules above; both false when bytes_timed is 0.
bool ReadFromStorage(std::uint64_t bytes_timed, std::uint64_t storage_read_bytes);
bool ReadFromPageCache(std::uint64_t bytes_timed, std::uint64_t storage_read_bytes);

// Pure. Whether read_bytes witnesses reads of this target: a raw block device, or a local
// (remote "0") filesystem that is neither FUSE nor memory-backed and has a device underneath.
bool TaskIoWitnessApplies(const TargetInfo& target);

// The calling thread's read_bytes (/proc/thread-self/io); nullopt when it cannot be read
// (no CONFIG_TASK_IO_ACCOUNTING) or lacks the field.
std::optional<std::uint64_t> ThreadStorageReadBytes();

}  // namespace iodrift::probes
