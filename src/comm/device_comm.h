// Choosing a rank's GPU and the communicator for a context's memory. A rank's GPU is chosen by
// PCI bus id among the ranks of its node, so it works whether each rank sees all of the node's GPUs
// or only its own (CUDA_VISIBLE_DEVICES per task). The communicator is MPI for a CPU context; for a
// CUDA context NCCL when no two ranks of a node compute on one GPU, else the host-staged one (NCCL
// refuses two ranks on one GPU). A flag forces either.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

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

/// The GPUs of one node's ranks, given the PCI bus ids each sees (`visible`, in node-local rank
/// order): in that order each rank takes the first GPU it sees that no rank before it took; when
/// every GPU it sees is taken, it shares its (local rank % count)-th. Returns each rank's device
/// index in its own numbering, -1 for a rank that sees none. Pure: every rank computes the same.
std::vector<int> assign_gpus(const std::vector<std::vector<std::string>>& visible);

/// A rank's GPU, and whether another rank of its node computes on it too.
struct GpuChoice {
  int device = -1;       // the CUDA device index, in this rank's numbering (-1: it sees no GPU)
  bool own_gpu = false;  // no other rank of the node chose the same GPU
  int ranks_on_node = 1;
  int gpus_in_use = 0;  // distinct GPUs the node's ranks chose
};
/// Collective over `comm`: gathers the bus ids each rank of a node sees and applies assign_gpus.
GpuChoice choose_gpu(MPI_Comm comm);

/// What `requested` resolves to, given a node's ranks and the distinct GPUs they compute on (the
/// node where ranks share GPUs most, or any node when none do) and whether NCCL is built:
/// automatic → nccl if ranks_on_node <= gpus_in_use and NCCL is built, else staged. A forced nccl
/// that cannot work is a core::ConfigError saying why and what to do. Pure: the same inputs give
/// the same answer on every rank.
DeviceComm resolve_device_comm(DeviceComm requested, int ranks_on_node, int gpus_in_use, bool nccl_built);

/// "nccl (each of the node's 4 ranks has a GPU of its own)" or "staged (a node's 4 ranks share 1
/// GPU)": the choice and why, for the line a run prints at start-up.
std::string describe_device_comm(DeviceComm chosen, int ranks_on_node, int gpus_in_use);

/// The communicator for buffers in `ctx`'s memory over the group `comm` (not owned), recording
/// into `ledger` under `name`. Collective over `comm`: which GPU each rank's context is on (by bus
/// id) is combined over the group first, so every rank makes the same choice (and the same
/// ConfigError). A CPU context gets an MpiCommunicator whatever `requested` says. When `chosen` is
/// given it receives the choice and why (describe_device_comm).
std::unique_ptr<Communicator> make_device_communicator(MPI_Comm comm, const core::Context& ctx, DeviceComm requested,
                                                       std::string name, CommLedger& ledger = CommLedger::process(),
                                                       std::string* chosen = nullptr);

}  // namespace optimus::comm
