// A rank's GPU, and the choice between NCCL and the host-staged communicator, made identically on
// every rank.
#include "comm/device_comm.h"

#include <algorithm>
#include <iterator>
#include <numeric>
#include <set>
#include <string>

#include "comm/mpi_communicator.h"
#include "comm/staged_communicator.h"
#include "core/errors.h"
#if defined(OPTIMUS_WITH_CUDA)
#include "comm/nccl_communicator.h"
#endif

namespace optimus::comm {

const char* device_comm_name(DeviceComm kind) {
  // In the enum's order.
  static constexpr const char* kNames[] = {"auto", "nccl", "staged"};
  static_assert(std::size(kNames) == static_cast<size_t>(DeviceComm::staged) + 1);
  return kNames[static_cast<size_t>(kind)];
}

DeviceComm parse_device_comm(std::string_view text) {
  if (text == "auto") return DeviceComm::automatic;
  if (text == "nccl") return DeviceComm::nccl;
  if (text == "staged") return DeviceComm::staged;
  throw core::ConfigError("the device communicator '" + std::string(text) +
                          "' is not one of auto, nccl, staged; pass one of those");
}

namespace {

// The ranks of `comm` that share this rank's node, in rank order (freed by the caller).
MPI_Comm node_of(MPI_Comm comm) {
  MPI_Comm node = MPI_COMM_NULL;
  int rank = 0;
  OPTIMUS_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  OPTIMUS_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  return node;
}

// Every rank's string, gathered over `comm` in rank order.
std::vector<std::string> all_gather_strings(MPI_Comm comm, const std::string& mine) {
  int size = 0;
  OPTIMUS_MPI_CHECK(MPI_Comm_size(comm, &size));
  const int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<size_t>(size)), offsets(static_cast<size_t>(size));
  OPTIMUS_MPI_CHECK(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm));
  std::exclusive_scan(lengths.begin(), lengths.end(), offsets.begin(), 0);
  std::string all(static_cast<size_t>(offsets.back() + lengths.back()), '\0');
  OPTIMUS_MPI_CHECK(
      MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, comm));
  std::vector<std::string> each;
  for (int r = 0; r < size; ++r) each.push_back(all.substr(static_cast<size_t>(offsets[r]), lengths[r]));
  return each;
}

// "a;b;c" from {a, b, c} and back (bus ids hold no ';').
std::string join(const std::vector<std::string>& ids) {
  std::string s;
  for (const auto& id : ids) s += (s.empty() ? "" : ";") + id;
  return s;
}
std::vector<std::string> split_ids(const std::string& s) {
  std::vector<std::string> ids;
  for (size_t at = 0; at < s.size();) {
    const size_t end = std::min(s.find(';', at), s.size());
    ids.push_back(s.substr(at, end - at));
    at = end + 1;
  }
  return ids;
}

int distinct(const std::vector<std::string>& ids) {
  return static_cast<int>(std::set<std::string>(ids.begin(), ids.end()).size());
}

}  // namespace

std::vector<int> assign_gpus(const std::vector<std::vector<std::string>>& visible) {
  std::vector<int> device(visible.size(), -1);
  std::set<std::string> taken;
  for (size_t r = 0; r < visible.size(); ++r) {
    const std::vector<std::string>& mine = visible[r];
    for (size_t d = 0; d < mine.size() && device[r] < 0; ++d) {
      if (taken.insert(mine[d]).second) device[r] = static_cast<int>(d);
    }
    if (device[r] < 0 && !mine.empty()) device[r] = static_cast<int>(r % mine.size());
  }
  return device;
}

GpuChoice choose_gpu(MPI_Comm comm) {
  MPI_Comm node = node_of(comm);
  std::vector<std::vector<std::string>> visible;
  for (const std::string& seen : all_gather_strings(node, join(core::cuda_bus_ids())))
    visible.push_back(split_ids(seen));
  int local = 0;
  OPTIMUS_MPI_CHECK(MPI_Comm_rank(node, &local));
  OPTIMUS_MPI_CHECK(MPI_Comm_free(&node));

  const std::vector<int> device = assign_gpus(visible);
  std::vector<std::string> chosen;  // the bus id each rank of the node computes on
  for (size_t r = 0; r < visible.size(); ++r) {
    if (device[r] >= 0) chosen.push_back(visible[r][static_cast<size_t>(device[r])]);
  }
  GpuChoice c;
  c.device = device[static_cast<size_t>(local)];
  c.ranks_on_node = static_cast<int>(visible.size());
  c.gpus_in_use = distinct(chosen);
  c.own_gpu = c.device >= 0 && std::count(chosen.begin(), chosen.end(),
                                          visible[static_cast<size_t>(local)][static_cast<size_t>(c.device)]) == 1;
  return c;
}

DeviceComm resolve_device_comm(DeviceComm requested, int ranks_on_node, int gpus_in_use, bool nccl_built) {
  const bool gpu_per_rank = ranks_on_node <= gpus_in_use;
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
                                std::to_string(ranks_on_node) + " ranks on " + std::to_string(gpus_in_use) +
                                " GPU(s); run at most " + std::to_string(gpus_in_use) +
                                " ranks per node, or use the staged (or auto) device communicator");
      }
      return DeviceComm::nccl;
  }
  return DeviceComm::staged;
}

std::string describe_device_comm(DeviceComm chosen, int ranks_on_node, int gpus_in_use) {
  const std::string ranks = std::to_string(ranks_on_node) + (ranks_on_node == 1 ? " rank" : " ranks");
  if (chosen == DeviceComm::nccl) return "nccl (each of a node's " + ranks + " has a GPU of its own)";
  if (ranks_on_node > gpus_in_use) {
    return "staged (a node's " + ranks + " share " + std::to_string(gpus_in_use) +
           " GPU(s): NCCL needs one GPU per rank)";
  }
  return "staged (as asked, or no NCCL in this build)";
}

std::unique_ptr<Communicator> make_device_communicator(MPI_Comm comm, const core::Context& ctx, DeviceComm requested,
                                                       std::string name, CommLedger& ledger, std::string* chosen) {
  if (ctx.device == core::Device::cpu) return std::make_unique<MpiCommunicator>(comm, std::move(name), ledger);
  if (ctx.device == core::Device::meta) {
    throw core::ConfigError(
        "a meta context has no MPI or NCCL communicator (a meta run has no numbers to move); give a meta model a "
        "comm::MetaCommunicator, which plays one rank of a world of any size in one process");
  }

  // The GPUs this group's ranks compute on, node by node, by bus id; every rank must decide alike,
  // so the node where ranks share GPUs most (the largest ranks − GPUs) decides for all.
  const std::vector<std::string> ids = core::cuda_bus_ids();
  const bool known = ctx.cuda_device >= 0 && ctx.cuda_device < static_cast<int>(ids.size());
  MPI_Comm node = node_of(comm);
  const std::vector<std::string> on_node =
      all_gather_strings(node, known ? ids[static_cast<size_t>(ctx.cuda_device)] : "");
  OPTIMUS_MPI_CHECK(MPI_Comm_free(&node));
  const int ranks = static_cast<int>(on_node.size()), gpus = distinct(on_node);
  int group = 0;
  OPTIMUS_MPI_CHECK(MPI_Comm_size(comm, &group));
  std::vector<int> nodes(3 * static_cast<size_t>(group));  // (ranks − GPUs, ranks, GPUs) of each rank's node
  const int mine[3] = {ranks - gpus, ranks, gpus};
  OPTIMUS_MPI_CHECK(MPI_Allgather(mine, 3, MPI_INT, nodes.data(), 3, MPI_INT, comm));
  size_t worst = 0;
  for (size_t r = 1; r < static_cast<size_t>(group); ++r) {
    if (nodes[3 * r] > nodes[3 * worst]) worst = r;
  }
#if defined(OPTIMUS_WITH_CUDA)
  constexpr bool nccl_built = true;
#else
  constexpr bool nccl_built = false;
#endif
  const DeviceComm kind = resolve_device_comm(requested, nodes[3 * worst + 1], nodes[3 * worst + 2], nccl_built);
  if (chosen != nullptr) *chosen = describe_device_comm(kind, nodes[3 * worst + 1], nodes[3 * worst + 2]);
#if defined(OPTIMUS_WITH_CUDA)
  if (kind == DeviceComm::nccl) return std::make_unique<NcclCommunicator>(comm, ctx, std::move(name), ledger);
#else
  (void)kind;  // without NCCL it is always staged (a forced nccl has thrown)
#endif
  return std::make_unique<StagedCommunicator>(comm, ctx, std::move(name), ledger);
}

}  // namespace optimus::comm
