// Choosing the communicator for a context's memory: MPI for a CPU context; for a CUDA
// context NCCL when every rank of a node has a GPU of its own, else the host-staged one (NCCL
// refuses two ranks on one GPU). A flag forces either. Also the node-local rank, from which a
// rank picks its GPU (local rank % GPUs on the node).
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <string_view>

#include "comm/communicator.h"
#include "core/context.h"

namespace optimus::comm {

enum class DeviceComm {
  automatic,  // NCCL where each rank of a node has its own GPU, staged otherwise
  nccl,       // NcclCommunicator; an error if ranks share a GPU or NCCL is not built
  staged,     // StagedCommunicator: MPI on host copies of the device buffers
};

const char* device_comm_name(DeviceComm kind);  // "auto", "nccl", "staged"
/// "auto", "nccl" or "staged"; anything else is a core::ConfigError naming the value and the choices.
DeviceComm parse_device_comm(std::string_view text);

/// Where this rank sits on its node: its index among the ranks of its node, and how many there are.
struct NodePlacement {
  int local_rank = 0;
  int ranks_on_node = 1;
};
/// Collective over `comm` (MPI_Comm_split_type, shared memory).
NodePlacement node_placement(MPI_Comm comm);

/// What `requested` resolves to, given the most ranks any node runs, the fewest GPUs any node
/// has and whether NCCL is built: automatic → nccl if max_ranks_per_node <= min_gpus_per_node and
/// NCCL is built, else staged. A forced nccl that cannot work is a core::ConfigError saying why and
/// what to do. Pure: the same inputs give the same answer on every rank.
DeviceComm resolve_device_comm(DeviceComm requested, int max_ranks_per_node, int min_gpus_per_node, bool nccl_built);

/// The communicator for buffers in `ctx`'s memory over the group `comm` (not owned), recording
/// into `ledger` under `name`. Collective over `comm`: the placement and GPU counts are combined
/// over the group first, so every rank makes the same choice (and the same ConfigError).
/// A CPU context gets an MpiCommunicator whatever `requested` says.
std::unique_ptr<Communicator> make_device_communicator(MPI_Comm comm, const core::Context& ctx, DeviceComm requested,
                                                       std::string name, CommLedger& ledger = CommLedger::process());

}  // namespace optimus::comm
