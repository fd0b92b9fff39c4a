// The memory checks made before allocating: what the machine has, and what a run needs at least.
#include "train/memory_check.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

#include "comm/mpi_communicator.h"
#include "core/errors.h"
#include "train/memory_limits.h"

namespace optimus::train {

namespace {

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

AvailableMemory available_memory() {
  AvailableMemory available;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream(line.substr(13)) >> available.bytes;
      available.bytes *= 1024;  // kB
    }
  }
  std::ifstream self("/proc/self/cgroup");
  const std::string groups((std::istreambuf_iterator<char>(self)), std::istreambuf_iterator<char>());
  if (const auto cgroup = cgroup_memory_limit("/sys/fs/cgroup", groups)) {
    if (available.bytes == 0 || cgroup->bytes_left < available.bytes) {
      available = {cgroup->bytes_left, cgroup->name};
    }
  }
  return available;
}

double step_bytes_lower_bound(const model::GPTConfig& c, int B, int ranks, ModelUse use) {
  const double C = c.n_embd, T = c.n_positions, L = c.n_layer, V = c.vocab_size, NH = c.n_head, N = B * T;
  const double parameters = V * C + T * C + L * 12.0 * C * C;
  // Each block keeps 16·N·C + NH·B·T² floats: its input or output (1) and a working set of ln1 (1),
  // qkv (3), atty (1), res1 (1), ln2 (1), fch and fch_gelu (4 + 4), and the attention
  // probabilities. With recomputation (--recompute block) only the inputs stay, beside one working
  // set that every block reuses; counting that case keeps the bound below both.
  const double activations = L * N * C + 15.0 * N * C + NH * B * T * T + N * V;
  const double bytes_per_parameter = use == ModelUse::train ? 16.0 : 8.0;
  return (bytes_per_parameter * parameters + 4.0 * activations) / ranks;
}

void require_memory(comm::World& world, double bytes_per_rank, const std::string& what, const std::string& fix) {
  const int here = ranks_on_this_machine();
  world.agree_on([&] {
    // The machine's memory and a cgroup's are shared by the ranks on the machine.
    const AvailableMemory available = available_memory();
    const double shared = static_cast<double>(available.bytes);
    if (shared > 0 && bytes_per_rank * here > shared) {
      throw core::ConfigError(what + " needs at least " + gib(bytes_per_rank) + " per process (" +
                              std::to_string(here) + " on this machine), but only " + gib(shared) +
                              " of memory are available" +
                              (available.limit.empty() ? "" : " under " + available.limit) + "; " + fix);
    }
    // The address space is each process's own.
    const auto space = address_space_limit();
    if (space && bytes_per_rank > static_cast<double>(space->bytes_left)) {
      throw core::ConfigError(what + " needs at least " + gib(bytes_per_rank) + " per process, but " + space->name +
                              " leaves this process only " + gib(static_cast<double>(space->bytes_left)) + "; " + fix +
                              " (or raise the limit)");
    }
  });
}

uint64_t data_bytes_per_process(comm::World& world) {
  (void)world;  // collective through MPI_COMM_WORLD, like require_memory
  const uint64_t shared = available_memory().bytes;
  uint64_t share = shared == 0 ? UINT64_MAX : shared / (5 * static_cast<uint64_t>(ranks_on_this_machine()));
  if (const auto space = address_space_limit()) share = std::min(share, space->bytes_left / 5);
  return share;
}

}  // namespace optimus::train
