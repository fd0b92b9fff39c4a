// Reading the memory limits of memory_limits.h: the cgroup files of this process's group and its
// ancestors, and RLIMIT_AS against the address space in use.
#include "train/memory_limits.h"

#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

namespace optimus::train {

namespace {

namespace fs = std::filesystem;

// The first number in a file, or nullopt if the file is missing or says "max".
std::optional<uint64_t> number_in(const fs::path& file) {
  std::ifstream f(file);
  uint64_t v = 0;
  if (f >> v) return v;
  return std::nullopt;
}

// The value of `key` in a memory.stat file ("inactive_file 12345" lines), or 0.
uint64_t stat_in(const fs::path& file, const std::string& key) {
  std::ifstream f(file);
  for (std::string name; f >> name;) {
    uint64_t v = 0;
    if (!(f >> v)) return 0;
    if (name == key) return v;
  }
  return 0;
}

// One hierarchy's view of this process: where its files are and which files hold the limit and use.
struct Hierarchy {
  fs::path base;            // the hierarchy's root folder
  std::string group;        // the process's group, "/a/b" ("/" for the root)
  const char* limit;        // memory.max or memory.limit_in_bytes
  const char* usage;        // memory.current or memory.usage_in_bytes
  const char* reclaimable;  // memory.stat's inactive_file (v2) or total_inactive_file (v1, the subtree's)
};

// The group and its ancestors up to the base: each one's limit minus its usage, the smallest kept.
void tighten(const Hierarchy& h, std::optional<MemoryLimit>& best) {
  fs::path relative = fs::path(h.group).relative_path();
  while (true) {
    const fs::path dir = h.base / relative;
    const std::optional<uint64_t> limit = number_in(dir / h.limit);
    if (limit && *limit < (uint64_t{1} << 60)) {
      // The usage counts the page cache too; its inactive part the kernel takes back before it kills.
      const uint64_t usage = number_in(dir / h.usage).value_or(0);
      const uint64_t used = usage - std::min(usage, stat_in(dir / "memory.stat", h.reclaimable));
      const uint64_t left = *limit > used ? *limit - used : 0;
      if (!best || left < best->bytes_left) {
        best = MemoryLimit{left, "the memory limit of cgroup /" + relative.generic_string() + " (" + h.limit + ")"};
      }
    }
    if (relative.empty()) return;
    relative = relative.parent_path();
  }
}

// The hierarchies of /proc/self/cgroup's lines that hold memory: v2's ("0::/path") and v1's memory
// controller ("7:memory:/path", or with other controllers: "7:cpu,memory:/path").
std::vector<Hierarchy> memory_hierarchies(const fs::path& root, const std::string& self_cgroup) {
  std::vector<Hierarchy> found;
  std::istringstream lines(self_cgroup.empty() ? "0::/\n1:memory:/\n" : self_cgroup);
  for (std::string line; std::getline(lines, line);) {
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1), group = line.substr(second + 1);
    if (controllers.empty()) {  // v2: at the root, or in unified/ beside v1 (a "hybrid" system)
      for (const fs::path& base : {root, root / "unified"}) {
        found.push_back({base, group, "memory.max", "memory.current", "inactive_file"});
      }
      continue;
    }
    std::istringstream names(controllers);
    for (std::string name; std::getline(names, name, ',');) {
      if (name == "memory") {
        found.push_back(
            {root / "memory", group, "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"});
      }
    }
  }
  return found;
}

}  // namespace

std::optional<MemoryLimit> cgroup_memory_limit(const fs::path& root, const std::string& self_cgroup) {
  std::optional<MemoryLimit> best;
  for (const Hierarchy& h : memory_hierarchies(root, self_cgroup)) tighten(h, best);
  return best;
}

std::optional<MemoryLimit> address_space_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return std::nullopt;
  uint64_t in_use = 0;  // VmSize, in kB
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmSize:", 0) == 0) std::istringstream(line.substr(7)) >> in_use;
  }
  in_use *= 1024;
  const uint64_t cap = limit.rlim_cur;
  return MemoryLimit{cap > in_use ? cap - in_use : 0, "the address-space limit (ulimit -v)"};
}

}  // namespace optimus::train
