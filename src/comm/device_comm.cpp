// The choice between NCCL and the host-staged communicator, made identically on every rank.
#include "comm/device_comm.h"

#include <string>

#include "comm/mpi_communicator.h"
#include "comm/staged_communicator.h"
#include "core/errors.h"
#if defined(OPTIMUS_WITH_CUDA)
#include "comm/nccl_communicator.h"
#endif

namespace optimus::comm {

const char* device_comm_name(DeviceComm kind) {
  switch (kind) {
    case DeviceComm::automatic:
      return "auto";
    case DeviceComm::nccl:
      return "nccl";
    case DeviceComm::staged:
      return "staged";
  }
  return "?";
}

DeviceComm parse_device_comm(std::string_view text) {
  if (text == "auto") return DeviceComm::automatic;
  if (text == "nccl") return DeviceComm::nccl;
  if (text == "staged") return DeviceComm::staged;
  throw core::ConfigError("the device communicator '" + std::string(text) +
                          "' is not one of auto, nccl, staged; pass one of those");
}

NodePlacement node_placement(MPI_Comm comm) {
  MPI_Comm node = MPI_COMM_NULL;
  int rank = 0;
  OPTIMUS_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  OPTIMUS_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  NodePlacement p;
  OPTIMUS_MPI_CHECK(MPI_Comm_rank(node, &p.local_rank));
  OPTIMUS_MPI_CHECK(MPI_Comm_size(node, &p.ranks_on_node));
  OPTIMUS_MPI_CHECK(MPI_Comm_free(&node));
  return p;
}

DeviceComm resolve_device_comm(DeviceComm requested, int max_ranks_per_node, int min_gpus_per_node, bool nccl_built) {
  const bool gpu_per_rank = max_ranks_per_node <= min_gpus_per_node;
  switch (requested) {
    case DeviceComm::staged:
      return DeviceComm::staged;
    case DeviceComm::automatic:
      return nccl_built && gpu_per_rank ? DeviceComm::nccl : DeviceComm::staged;
    case DeviceComm::nccl:
      if (!nccl_built) {
        throw core::ConfigError(
            "the nccl device communicator was asked for, but this build has no NCCL; rebuild "
            "with the CUDA toolkit and NCCL, or use the staged one");
      }
      if (!gpu_per_rank) {
        throw core::ConfigError("the nccl device communicator needs one GPU per rank, but a node runs " +
                                std::to_string(max_ranks_per_node) + " ranks on " + std::to_string(min_gpus_per_node) +
                                " GPU(s); run at most " + std::to_string(min_gpus_per_node) +
                                " ranks per node, or use the staged (or auto) device communicator");
      }
      return DeviceComm::nccl;
  }
  return DeviceComm::staged;
}

std::unique_ptr<Communicator> make_device_communicator(MPI_Comm comm, const core::Context& ctx, DeviceComm requested,
                                                       std::string name, CommLedger& ledger) {
  if (ctx.device == core::Device::cpu) return std::make_unique<MpiCommunicator>(comm, std::move(name), ledger);
  if (ctx.device == core::Device::meta) {
    throw core::ConfigError(
        "a meta context has no MPI or NCCL communicator (a meta run has no numbers to move); give a meta model a "
        "comm::MetaCommunicator, which plays one rank of a world of any size in one process");
  }

  // Every rank must decide alike: combine the worst case of the group first.
  const NodePlacement placement = node_placement(comm);
  int worst[2] = {placement.ranks_on_node, -core::cuda_device_count()};  // max ranks, -(min GPUs)
  OPTIMUS_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, worst, 2, MPI_INT, MPI_MAX, comm));
#if defined(OPTIMUS_WITH_CUDA)
  constexpr bool nccl_built = true;
#else
  constexpr bool nccl_built = false;
#endif
  const DeviceComm kind = resolve_device_comm(requested, worst[0], -worst[1], nccl_built);
#if defined(OPTIMUS_WITH_CUDA)
  if (kind == DeviceComm::nccl) return std::make_unique<NcclCommunicator>(comm, ctx, std::move(name), ledger);
#else
  (void)kind;  // without NCCL it is always staged (a forced nccl has thrown)
#endif
  return std::make_unique<StagedCommunicator>(comm, ctx, std::move(name), ledger);
}

}  // namespace optimus::comm
