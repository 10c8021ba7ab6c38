// What the memory-state collectors take: plain options of their own, so the collectors do not
// depend on the configuration (config/ maps the `collectors:` section of a file onto these).
//
// Thread-safety: plain values.
#pragma once

#include <string>

namespace iodrift::proc {

struct VmstatOptions {
  bool enabled = true;
  // ECMAScript regex, whole-name match, or `default` (proc::kDefaultVmstatFields) or `all`.
  std::string fields = "default";

  bool operator==(const VmstatOptions&) const = default;
};

struct SlabinfoOptions {
  bool enabled = true;
  // Whole-name regexes. The defaults pick the caches that explain a slow buffered read path:
  // dentries, inodes, buffer heads, the page-cache xarray nodes, and the generic kmalloc caches.
  std::string include =
      "dentry|.*inode_cache|inode_cache|buffer_head|radix_tree_node|xfs_.*|btrfs_.*|ext4_.*|"
      "kmalloc-[0-9]+k?|kmalloc-rcl-.*|vm_area_struct|filp|names_cache|mm_struct|task_struct|"
      "anon_vma|anon_vma_chain|kernfs_node_cache|shmem_inode_cache|proc_inode_cache|sock_inode_"
      "cache";
  std::string exclude = "";

  bool operator==(const SlabinfoOptions&) const = default;
};

struct CollectorsOptions {
  bool meminfo = true;
  VmstatOptions vmstat;
  SlabinfoOptions slabinfo;
  bool pressure = true;
  bool buddyinfo = true;
  bool boot = true;
  bool dentries = true;
  bool balloon = true;  // virtio balloon free page reporting (sysfs); nothing on bare metal

  bool operator==(const CollectorsOptions&) const = default;
};

}  // namespace iodrift::proc
