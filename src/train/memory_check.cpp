// The memory checks made before allocating: what the machine has, what a run needs at least (a
// formula), and what it needs exactly (its step on the meta device, beside what the process holds).
#include "train/memory_check.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
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

// The ranks of the world that share this rank's machine: how many, and the sum of `bytes` over them.
struct OnThisMachine {
  int ranks = 1;
  double bytes = 0;
};
OnThisMachine on_this_machine(double bytes) {
  MPI_Comm node;
  OPTIMUS_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  OnThisMachine here;
  MPI_Comm_size(node, &here.ranks);
  OPTIMUS_MPI_CHECK(MPI_Allreduce(&bytes, &here.bytes, 1, MPI_DOUBLE, MPI_SUM, node));
  MPI_Comm_free(&node);
  return here;
}

int ranks_on_this_machine() {
  return on_this_machine(0).ranks;
}

// "needs X GiB more per process for its training step (...)": the exact need, as the messages say it.
std::string step_need(ModelUse use, double step, double held, const OnThisMachine& here) {
  return " needs " + gib(step) + " more per process for its " +
         (use == ModelUse::train ? "training step" : "forward pass") + " (its peak on the meta device, beside the " +
         gib(held) + " the process holds now" +
         (here.ranks > 1 ? "; the " + std::to_string(here.ranks) + " processes on this machine need " +
                               gib(here.bytes) + " more together"
                         : "") +
         ")";
}

// With OPTIMUS_MEMORY_REPORT set: this rank's numbers, one line on stderr.
void report(comm::World& world, double step, double held, const OnThisMachine& here) {
  const char* wanted = std::getenv("OPTIMUS_MEMORY_REPORT");
  if (wanted == nullptr || *wanted == '\0') return;
  const AvailableMemory available = available_memory();
  std::fprintf(stderr,
               "memory check: rank %d of %d: step %.1f MiB + held %.1f MiB = %.1f MiB; %d processes on this "
               "machine, %.1f MiB more together; available %.1f MiB%s%s\n",
               world.rank(), world.size(), step / (1 << 20), held / (1 << 20), (step + held) / (1 << 20), here.ranks,
               here.bytes / (1 << 20), static_cast<double>(available.bytes) / (1 << 20),
               available.limit.empty() ? "" : " under ", available.limit.c_str());
  std::fflush(stderr);
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

double resident_bytes() {
  std::ifstream status("/proc/self/status");
  double kb = 0;
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) std::istringstream(line.substr(6)) >> kb;
  }
  return kb * 1024;
}

RunShape sampling_shape(const model::GPTConfig& config) {
  return {.config = config, .B = 1, .T = config.n_positions, .use = ModelUse::evaluate};
}

double step_bytes_lower_bound(const model::GPTConfig& c, int B, int ranks, ModelUse use) {
  const double C = c.n_embd, T = c.n_positions, L = c.n_layer, V = c.vocab_size, NH = c.n_head, N = B * T;
  const double parameters = V * C + T * C + L * 12.0 * C * C;
  // Each block keeps 16·N·C + NH·B·T² floats: its input or output (1) and a working set of ln1 (1),
  // qkv (3), atty (1), res1 (1), ln2 (1), fch and fch_gelu (4 + 4), and the attention
  // probabilities. With recomputation (--recompute block) only the inputs stay, beside one working
  // set that every block reuses; counting that case keeps the bound below both.
  const double activations = L * N * C + 15.0 * N * C + NH * B * T * T + N * V;
  const double bytes_per_parameter = use == ModelUse::train ? 16.0 : 4.0;
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

void require_run_memory(comm::World& world, RunShape shape, const StepPeak& step_peak, const std::string& what,
                        const std::string& fix) {
  // The screen: a formula, instant for any size, against sizes the meta step would take long to record.
  const int ranks = shape.world_size / shape.data_parallel;
  model::GPTConfig at_T = shape.config;  // the activations are those of T, the positions table is small
  at_T.n_positions = shape.T;
  const int micro_batch = shape.B / (shape.data_parallel * shape.grad_accum);
  require_memory(world, step_bytes_lower_bound(at_T, micro_batch, ranks, shape.use), what, fix);
  // The measurement: this rank's step on meta, and what this process holds already.
  shape.rank = world.rank();
  double step = 0;
  world.agree_on([&] { step = step_peak(shape); });  // a shape the stage refuses, refused on every rank
  const double held = resident_bytes();
  const OnThisMachine here = on_this_machine(step);
  report(world, step, held, here);
  world.agree_on([&] {
    // The machine's memory and a cgroup's are shared by the ranks on the machine; what each process
    // holds already is used there, so the steps' new bytes are compared with what is left.
    const AvailableMemory available = available_memory();
    const double shared = static_cast<double>(available.bytes);
    if (shared > 0 && here.bytes > shared) {
      throw core::ConfigError(what + step_need(shape.use, step, held, here) + ", but only " + gib(shared) +
                              " of memory are available" +
                              (available.limit.empty() ? "" : " under " + available.limit) + "; " + fix);
    }
    // The address space is each process's own; what it has mapped is already taken from the limit.
    const auto space = address_space_limit();
    if (space && step > static_cast<double>(space->bytes_left)) {
      throw core::ConfigError(what + step_need(shape.use, step, held, {1, step}) + ", but " + space->name +
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
