// The limits on this process's memory besides the machine's: its memory cgroup's (v1 or v2, as
// Slurm's task/cgroup and containers set them, and every ancestor's up to the root) and the
// address-space limit (ulimit -v). The cgroup files are read under a folder given as an argument,
// so a test can hand the reader a made-up tree; the memory check (memory_check.h) takes the smallest.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace optimus::train {

/// A limit on what this process may still allocate: the bytes left under it, and the limit named
/// for a message ("the memory limit of cgroup /job_42", "the address-space limit (ulimit -v)").
struct MemoryLimit {
  uint64_t bytes_left = 0;
  std::string name;
};

/// The tightest memory cgroup limit on this process. `self_cgroup` is the text of /proc/self/cgroup
/// ("0::/path" for v2, "N:...,memory,...:/path" for v1; empty reads as the root of both), `root`
/// the cgroup file system (/sys/fs/cgroup; v2 there or, mounted beside v1, in its unified/). The
/// group and each ancestor up to the root is read (v2: memory.max and memory.current; v1, under
/// memory/: memory.limit_in_bytes and memory.usage_in_bytes); each limit minus its group's usage is
/// what is left under it, and the smallest wins. The usage counts the group's page cache, whose
/// inactive part (memory.stat's inactive_file, v1's total_inactive_file) the kernel reclaims before
/// it kills: that part is not counted as used (as `docker stats` reads a container's use). A missing file, "max" or v1's "unlimited" (a value
/// past 2^60) is no limit; nullopt when there is none.
std::optional<MemoryLimit> cgroup_memory_limit(const std::filesystem::path& root, const std::string& self_cgroup);

/// The address-space limit (getrlimit RLIMIT_AS) minus the address space this process already
/// has (VmSize in /proc/self/status); nullopt when it is unlimited.
std::optional<MemoryLimit> address_space_limit();

}  // namespace optimus::train
