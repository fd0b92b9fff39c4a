// Where a run computes: `--device cpu|cuda` and `--device-comm auto|nccl|staged` for
// train, eval and bench, in every layout. A CUDA run gives each rank the GPU comm::choose_gpu picks
// (by PCI bus id: a GPU of its own where the node has enough, whether a rank sees all of the node's
// GPUs or only its own) and records device memory in this process's device ledger; the data, the
// initial values (drawn on the host, then copied) and sampling stay on the CPU.
#pragma once

#include <string>

#include "comm/device_comm.h"
#include "comm/world.h"
#include "core/context.h"
#include "core/memory_ledger.h"

namespace CLI {
class App;
}

namespace optimus::train {

struct DeviceOptions {
  std::string device = "cpu";  // cpu or cuda
  std::string comm = "auto";   // a CUDA run's communicator: auto, nccl or staged (ignored on the CPU)

  comm::DeviceComm device_comm() const { return comm::parse_device_comm(comm); }
};

/// Adds --device and --device-comm to a subcommand.
void add_device_flags(CLI::App* app, DeviceOptions& d);

/// The ledger of this process's GPU memory (the CPU's is core::MemoryLedger::host()).
core::MemoryLedger& device_ledger();

/// The context a run computes on, recording into `ledger`: a CPU context for cpu; for cuda, a
/// CUDA context on the GPU comm::choose_gpu picks, after checking alike on every rank
/// that the build has the CUDA backend and that every rank sees a GPU — a core::ConfigError of one
/// sentence otherwise. Collective over the world for cuda (the checks and the node placement).
core::Context make_context(const DeviceOptions& d, comm::World& world, core::MemoryLedger& ledger);
/// The same, recording into the host ledger (cpu) or device_ledger() (cuda).
core::Context make_context(const DeviceOptions& d, comm::World& world);

}  // namespace optimus::train
