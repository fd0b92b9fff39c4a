// The memory check's cgroup reader on made-up /sys/fs/cgroup trees: a v2 group and its ancestors,
// a v1 memory hierarchy beside others, the hybrid layout (v2 in unified/), and what is no limit.
#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "train/memory_limits.h"
#include "unit/temp_dir.h"

using namespace optimus;
namespace fs = std::filesystem;

namespace {

// A fresh folder standing for /sys/fs/cgroup, removed at the end of the test.
struct FakeCgroupRoot {
  test::TempDir dir;
  const fs::path& path = dir.path;
  // Writes `text` to the file `file` under the folder `group` (made with its parents).
  void write(const std::string& group, const std::string& file, const std::string& text) const {
    fs::create_directories(path / group);
    std::ofstream(path / group / file) << text << "\n";
  }
};

constexpr uint64_t GiB = uint64_t{1} << 30;

}  // namespace

TEST_CASE("cgroup v2: the process's own group's memory.max minus memory.current is what is left") {
  FakeCgroupRoot root;
  root.write("", "memory.current", "123456789");  // the root has no memory.max
  root.write("job_7/step_0", "memory.max", std::to_string(2 * GiB));
  root.write("job_7/step_0", "memory.current", std::to_string(GiB / 2));
  const auto limit = train::cgroup_memory_limit(root.path, "0::/job_7/step_0\n");
  REQUIRE(limit.has_value());
  CHECK(limit->bytes_left == 2 * GiB - GiB / 2);
  CHECK(limit->name == "the memory limit of cgroup /job_7/step_0 (memory.max)");
}

TEST_CASE("cgroup v2: the inactive page cache of memory.stat is not counted as used") {
  FakeCgroupRoot root;
  root.write("g", "memory.max", std::to_string(2 * GiB));
  root.write("g", "memory.current", std::to_string(GiB + GiB / 2));
  root.write("g", "memory.stat",
             "anon 100\nfile 200\nactive_file 300\ninactive_file " + std::to_string(GiB) + "\ninactive_anon 400\n");
  const auto limit = train::cgroup_memory_limit(root.path, "0::/g\n");
  REQUIRE(limit.has_value());
  CHECK(limit->bytes_left == 2 * GiB - GiB / 2);
}

TEST_CASE("cgroup v1: total_inactive_file (the subtree's) is not counted as used, inactive_file (the group's) is") {
  FakeCgroupRoot root;
  root.write("memory/g", "memory.limit_in_bytes", std::to_string(2 * GiB));
  root.write("memory/g", "memory.usage_in_bytes", std::to_string(GiB + GiB / 2));
  root.write(
      "memory/g", "memory.stat",
      "cache 5\ninactive_file " + std::to_string(GiB / 2) + "\ntotal_inactive_file " + std::to_string(GiB) + "\n");
  const auto limit = train::cgroup_memory_limit(root.path, "4:memory:/g\n");
  REQUIRE(limit.has_value());
  CHECK(limit->bytes_left == 2 * GiB - GiB / 2);
}

TEST_CASE("cgroup: an inactive page cache larger than the usage leaves the whole limit, not a wrapped-around one") {
  FakeCgroupRoot root;
  root.write("g", "memory.max", std::to_string(GiB));
  root.write("g", "memory.current", "4096");
  root.write("g", "memory.stat", "inactive_file 8192\n");
  const auto limit = train::cgroup_memory_limit(root.path, "0::/g\n");
  REQUIRE(limit.has_value());
  CHECK(limit->bytes_left == GiB);
}

TEST_CASE("cgroup v2: an ancestor's smaller limit wins over the group's own") {
  FakeCgroupRoot root;
  root.write("job_7", "memory.max", std::to_string(GiB));
  root.write("job_7", "memory.current", std::to_string(GiB / 4));
  root.write("job_7/step_0", "memory.max", "max");
  root.write("job_7/step_0", "memory.current", "4096");
  const auto limit = train::cgroup_memory_limit(root.path, "0::/job_7/step_0\n");
  REQUIRE(limit.has_value());
  CHECK(limit->bytes_left == GiB - GiB / 4);
  CHECK(limit->name == "the memory limit of cgroup /job_7 (memory.max)");
}

TEST_CASE("cgroup v2 inside a container: \"0::/\" reads the root's files") {
  FakeCgroupRoot root;
  root.write("", "memory.max", std::to_string(3 * GiB));
  root.write("", "memory.current", std::to_string(GiB));
  const auto limit = train::cgroup_memory_limit(root.path, "0::/\n");
  REQUIRE(limit.has_value());
  CHECK(limit->bytes_left == 2 * GiB);
}

TEST_CASE("cgroup v1: the memory line among other controllers, its group under memory/") {
  FakeCgroupRoot root;
  root.write("memory", "memory.limit_in_bytes", "9223372036854771712");  // v1's "unlimited"
  root.write("memory/slurm/uid_0/job_42", "memory.limit_in_bytes", std::to_string(2 * GiB));
  root.write("memory/slurm/uid_0/job_42", "memory.usage_in_bytes", std::to_string(GiB));
  root.write("memory/slurm/uid_0/job_42/step_0", "memory.limit_in_bytes", "9223372036854771712");
  root.write("cpu,cpuacct/slurm", "memory.limit_in_bytes", "1");  // not the memory hierarchy
  const std::string self =
      "12:pids:/slurm/uid_0/job_42/step_0\n"
      "5:cpu,cpuacct:/slurm\n"
      "4:memory:/slurm/uid_0/job_42/step_0\n"
      "1:name=systemd:/\n"
      "0::/\n";
  const auto limit = train::cgroup_memory_limit(root.path, self);
  REQUIRE(limit.has_value());
  CHECK(limit->bytes_left == GiB);
  CHECK(limit->name == "the memory limit of cgroup /slurm/uid_0/job_42 (memory.limit_in_bytes)");
}

TEST_CASE("cgroup v1 with its memory controller mounted beside others (\"7:cpu,memory:/g\")") {
  FakeCgroupRoot root;
  root.write("memory/g", "memory.limit_in_bytes", std::to_string(GiB));
  const auto limit = train::cgroup_memory_limit(root.path, "7:cpu,memory:/g\n");
  REQUIRE(limit.has_value());
  CHECK(limit->bytes_left == GiB);  // no usage file: nothing used
}

TEST_CASE("cgroup hybrid: v2 in unified/ beside v1, the smaller of the two wins") {
  FakeCgroupRoot root;
  root.write("memory/a", "memory.limit_in_bytes", std::to_string(4 * GiB));
  root.write("unified/b", "memory.max", std::to_string(GiB));
  const auto limit = train::cgroup_memory_limit(root.path, "4:memory:/a\n0::/b\n");
  REQUIRE(limit.has_value());
  CHECK(limit->bytes_left == GiB);
  CHECK(limit->name == "the memory limit of cgroup /b (memory.max)");
}

TEST_CASE("cgroup: a usage past the limit leaves 0 bytes, not a wrapped-around number") {
  FakeCgroupRoot root;
  root.write("g", "memory.max", std::to_string(GiB));
  root.write("g", "memory.current", std::to_string(GiB + 1));
  const auto limit = train::cgroup_memory_limit(root.path, "0::/g\n");
  REQUIRE(limit.has_value());
  CHECK(limit->bytes_left == 0);
}

TEST_CASE("cgroup: no limit anywhere (max, unlimited, missing files, a group that is not there) is nullopt") {
  FakeCgroupRoot root;
  root.write("g", "memory.max", "max");
  root.write("memory", "memory.limit_in_bytes", "9223372036854771712");
  CHECK_FALSE(train::cgroup_memory_limit(root.path, "0::/g\n4:memory:/\n").has_value());
  CHECK_FALSE(train::cgroup_memory_limit(root.path, "0::/not/there\n").has_value());
  CHECK_FALSE(train::cgroup_memory_limit(root.path / "nowhere", "").has_value());
}

TEST_CASE("cgroup: empty /proc/self/cgroup text reads the roots of v2 and v1") {
  FakeCgroupRoot root;
  root.write("memory", "memory.limit_in_bytes", std::to_string(GiB));
  const auto limit = train::cgroup_memory_limit(root.path, "");
  REQUIRE(limit.has_value());
  CHECK(limit->bytes_left == GiB);
}

TEST_CASE("address space: under a soft RLIMIT_AS of 64 GiB less than 64 GiB is left, and without one no limit") {
  rlimit saved{};
  REQUIRE(getrlimit(RLIMIT_AS, &saved) == 0);
  const auto before = train::address_space_limit();
  if (saved.rlim_cur == RLIM_INFINITY) CHECK_FALSE(before.has_value());
  rlimit lowered = saved;
  lowered.rlim_cur = 64 * GiB;  // far above this test's own address space, below any hard limit set for a test
  if (saved.rlim_max != RLIM_INFINITY && saved.rlim_max < lowered.rlim_cur) lowered.rlim_cur = saved.rlim_max;
  REQUIRE(setrlimit(RLIMIT_AS, &lowered) == 0);
  const auto limit = train::address_space_limit();
  REQUIRE(setrlimit(RLIMIT_AS, &saved) == 0);  // the soft limit goes back up to where it was
  REQUIRE(limit.has_value());
  CHECK(limit->bytes_left > 0);
  CHECK(limit->bytes_left < lowered.rlim_cur);  // the process's own address space is counted
  CHECK(limit->name == "the address-space limit (ulimit -v)");
}
