// /proc/<pid>/task/<tid>/io: a task's I/O accounting (Documentation/filesystems/proc.rst §3.3,
// needs CONFIG_TASK_IO_ACCOUNTING).
//
//   rchar: 67131754
//   wchar: 0
//   syscr: 105
//   syscw: 0
//   read_bytes: 67137536
//   write_bytes: 0
//   cancelled_write_bytes: 0
//
// read_bytes is what this task caused to be fetched from storage (block/blk-core.c submit_bio():
// the bytes of every read bio the task submits, readahead included); rchar counts the bytes its
// read() calls returned, page-cache hits included. A task may always read its own file (same
// thread group, procfs ptrace check), whatever its user and capabilities.
//
// Tolerance: unknown lines are ignored (newer kernels may add some); a missing field is nullopt;
// a known field whose value is not a non-negative integer is an error.
//
// Thread-safety: ParseTaskIo is pure; ReadThreadIo reads the calling thread's own file.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "collectors/common/error.h"

namespace iodrift::proc {

struct TaskIo {
  std::optional<std::uint64_t> rchar;
  std::optional<std::uint64_t> wchar;
  std::optional<std::uint64_t> syscr;
  std::optional<std::uint64_t> syscw;
  std::optional<std::uint64_t> read_bytes;
  std::optional<std::uint64_t> write_bytes;
  std::optional<std::uint64_t> cancelled_write_bytes;
};

// Pure. Fails with EINVAL naming the field when a known field's value does not parse.
Expected<TaskIo> ParseTaskIo(std::string_view text);

// Reads /proc/thread-self/io: the calling thread's own counters. Always the live /proc, never a
// configured proc root: the file describes the caller itself. Fails with the errno of the read
// (ENOENT without CONFIG_TASK_IO_ACCOUNTING) or the parser's error.
Expected<TaskIo> ReadThreadIo();

}  // namespace iodrift::proc
