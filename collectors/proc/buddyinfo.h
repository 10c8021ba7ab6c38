// /proc/buddyinfo: free blocks per node, zone and order (Documentation/filesystems/proc.rst).
//
//   Node 0, zone      DMA      1      1      1      0      2      1      1      0      1      1 3
//   Node 0, zone    DMA32      3      4      4      3      5      4      4      5      4      5 726
//
// Tolerance: any number of orders (MAX_ORDER differs by config); trailing space optional; lines
// not of the form "Node N, zone NAME counts..." are skipped and counted. All zones of one kernel
// print the same number of orders: the width most lines share (the wider on a tie) is kept and
// lines of another width (e.g. a truncated last line) are skipped and counted, as is a repeated
// (node, zone) pair. So every zone in `zones` has the same free_blocks.size().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/common/error.h"
#include "collectors/common/proc_root.h"

namespace iodrift::proc {

struct BuddyZone {
  std::string node;                        // "0"
  std::string zone;                        // "Normal"
  std::vector<std::uint64_t> free_blocks;  // index = order
};

struct Buddyinfo {
  std::vector<BuddyZone> zones;
  std::size_t malformed_lines = 0;
};

// Pure; never fails.
Buddyinfo ParseBuddyinfo(std::string_view text);
// Reads root/buddyinfo. Fails with the errno of the read, or with EINVAL when no zone parsed.
Expected<Buddyinfo> ReadBuddyinfo(const ProcRoot& root);

}  // namespace iodrift::proc
