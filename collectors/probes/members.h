// Arrays and their members: the disks under a stacked block device (md, dm, anything with
// /sys/block/<dev>/slaves/) or under a multi-device btrfs filesystem, and probing each member
// with the same kind and size as the array (probe option `members: true`) to export
// array/member ratios (the seed's "a RAID5 of three should read ~2x one disk").
//
// Discovery is pure over a sysfs root directory, so tests build their own trees (this kernel
// has no md or dm) and a daemon configured with `sys_root` reads one.
//
// Thread-safety: all functions are reentrant. ProbeMembers reads devices and runs on the probe
// thread.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "collectors/probes/probe.h"
#include "collectors/probes/probe_env.h"

namespace iodrift::probes {

// The whole disk a block device name belongs to ("sda" for "sda1"; the name itself when it is
// not a partition or sysfs does not know it): <sys_root>/class/block/<name>/partition, else a
// <sys_root>/block/*/<name>/partition directory.
std::string DiskOfBlockName(const std::string& name, const std::filesystem::path& sys_root);

// The member disks under block device `name` (a disk or partition name as in /sys/block):
// the entries of <sys_root>/block/<disk>/slaves/, each resolved to its disk and followed down
// through stacked devices (dm-0 over md0 over sda1, sdb1 → sda, sdb), sorted and unique. Empty
// when `name` has no slaves (not an array). Loops and depth beyond 16 stop the walk.
std::vector<std::string> ArrayMembers(const std::string& name,
                                      const std::filesystem::path& sys_root);

// The member disks of the btrfs filesystem that block device `name` (its mount source) belongs
// to: the entries of <sys_root>/fs/btrfs/<fsid>/devices/ of the fsid that lists `name`, each
// resolved to its disk (and through stacked devices); empty when `name` is in no btrfs
// filesystem's device list.
std::vector<std::string> BtrfsMembers(const std::string& name,
                                      const std::filesystem::path& sys_root);

// "a,b,c"
std::string JoinDevices(const std::vector<std::string>& devices);

// Runs the probe's kind on each member of result.target_info.members (/dev/<member>, read-only,
// only when <member> is a plain name and /dev/<member> itself is a block device node — the names
// come from sysfs, which `sys_root` may replace with any tree; others get a member_errors entry),
// the same spec with `members` off) after the array's own run, within the array run's
// deadline, and fills result.member_figures (throughput, or read ops/s for random),
// result.member_ratios (array figure / member figure) and result.member_errors; the bytes the
// members' runs read are in result.extra["member_bytes"] (not in result.bytes: the array's figure
// and baseline stay the array's own). `run_kind`
// runs one kind (the runner's dispatch).
using RunKindFn =
    std::function<void(const ProbeSpec&, const ProbeEnv&, const RunControl&, ProbeResult&)>;
void ProbeMembers(const ProbeSpec& spec, const ProbeEnv& env, const RunControl& control,
                  const RunKindFn& run_kind, ProbeResult& result);

}  // namespace iodrift::probes
