// /proc/slabinfo: kernel slab allocator caches (man 5 slabinfo). Mode 0400: root only.
//
//   slabinfo - version: 2.1
//   # name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables ...
//   dentry            123456 130000    192   21    1 : tunables    0    0    0 : slabdata   6190
//   6190      0
//
// Tolerance: the header must say "version: 2.x" (else an error: the column meaning is unknown);
// cache names may contain ':' and '/'; lines with too few numeric columns are skipped and
// counted. Bytes of a cache = num_slabs * pagesperslab * page_size when slabdata is present,
// else (a line of exactly name + 5 numbers) num_objs * objsize; a longer line without a complete
// "slabdata A N" group is a truncated read and is malformed, and so is a line whose figure (or
// the running total) would overflow 64 bits. Names are NOT guaranteed unique (several caches may
// be created with one name and not merged, e.g. with slab_nomerge): caches are kept as printed;
// a collector that labels by name must sum repeats.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/common/error.h"
#include "collectors/common/proc_root.h"

namespace iodrift::proc {

struct SlabCache {
  std::string name;
  std::uint64_t active_objects = 0;
  std::uint64_t objects = 0;
  std::uint64_t object_size = 0;  // bytes
  std::uint64_t objects_per_slab = 0;
  std::uint64_t pages_per_slab = 0;
  std::uint64_t active_slabs = 0;
  std::uint64_t slabs = 0;
  std::uint64_t bytes = 0;  // memory held by the cache (see header comment)
};

struct Slabinfo {
  std::vector<SlabCache> caches;
  std::size_t malformed_lines = 0;
  std::uint64_t total_bytes = 0;  // sum of `bytes` over all caches
};

// `page_size` is used for the byte figure (sysconf(_SC_PAGESIZE) in the reader). Pure. Fails
// with EINVAL when the text is empty or its first line is not a 2.x header.
Expected<Slabinfo> ParseSlabinfo(std::string_view text, std::uint64_t page_size);
// Reads root/slabinfo. Fails with the errno of the read (EACCES when not root: the message says
// how to fix it) or with the parser's error.
Expected<Slabinfo> ReadSlabinfo(const ProcRoot& root);

}  // namespace iodrift::proc
