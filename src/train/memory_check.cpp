// The memory checks made before allocating: what the machine has, and what a run needs at least.
#include "train/memory_check.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "comm/mpi_communicator.h"
#include "core/errors.h"

namespace optimus::train {

namespace {

// The first number in a file (a cgroup limit), or 0 if the file is missing or says "max".
uint64_t number_in(const char* path) {
  std::ifstream f(path);
  uint64_t v = 0;
  return (f >> v) ? v : 0;
}

std::string gib(double bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.3g GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return s;
}

// How many ranks of the world share this rank's machine.
int ranks_on_this_machine() {
  MPI_Comm node;
  OPTIMUS_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int n = 1;
  MPI_Comm_size(node, &n);
  MPI_Comm_free(&node);
  return n;
}

}  // namespace

uint64_t available_memory_bytes() {
  uint64_t available = 0;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream(line.substr(13)) >> available;
      available *= 1024;  // kB
    }
  }
  // A cgroup's limit minus what the group already uses, where one is set.
  const uint64_t limit_v2 = number_in("/sys/fs/cgroup/memory.max");
  const uint64_t limit_v1 = number_in("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  const uint64_t used =
      std::max(number_in("/sys/fs/cgroup/memory.current"), number_in("/sys/fs/cgroup/memory/memory.usage_in_bytes"));
  for (uint64_t limit : {limit_v2, limit_v1}) {
    if (limit == 0 || limit > (uint64_t{1} << 60)) continue;  // none, or v1's "unlimited"
    const uint64_t left = limit > used ? limit - used : 0;
    available = available == 0 ? left : std::min(available, left);
  }
  return available;
}

double step_bytes_lower_bound(const model::GPTConfig& c, int B, int ranks, ModelUse use) {
  const double C = c.n_embd, T = c.n_positions, L = c.n_layer, V = c.vocab_size, NH = c.n_head, N = B * T;
  const double parameters = V * C + T * C + L * 12.0 * C * C;
  const double activations = L * (18.0 * N * C + NH * B * T * T) + N * V;
  const double bytes_per_parameter = use == ModelUse::train ? 16.0 : 8.0;
  return (bytes_per_parameter * parameters + 4.0 * activations) / ranks;
}

void require_memory(comm::World& world, double bytes_per_rank, const std::string& what, const std::string& fix) {
  const int here = ranks_on_this_machine();
  world.agree_on([&] {
    const double available = static_cast<double>(available_memory_bytes());
    if (available > 0 && bytes_per_rank * here > available) {
      throw core::ConfigError(what + " needs at least " + gib(bytes_per_rank) + " per process (" +
                              std::to_string(here) + " on this machine), but only " + gib(available) +
                              " of memory are available; " + fix);
    }
  });
}

uint64_t data_bytes_per_process(comm::World& world) {
  (void)world;  // collective through MPI_COMM_WORLD, like require_memory
  const uint64_t available = available_memory_bytes();
  return available == 0 ? UINT64_MAX : available / (5 * static_cast<uint64_t>(ranks_on_this_machine()));
}

}  // namespace optimus::train
