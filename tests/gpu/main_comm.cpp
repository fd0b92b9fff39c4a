// The device-communicator tests' main (issue 7): run as
//   mpiexec -np N test_gpu_comm KIND [catch arguments]
// with KIND nccl, staged (both on GPU buffers) or staged-cpu (the staged communicator over a CPU
// context, which needs no GPU). Every rank checks the same conditions and, where a GPU kind cannot
// run here (no GPU; for nccl, more ranks on a node than GPUs), every rank exits 77, which ctest
// reports as skipped. Otherwise the verdicts of all ranks are combined, as in tests/mpi.
#define CATCH_CONFIG_RUNNER
#include <mpi.h>

#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/device_comm.h"
#include "comm/mpi_communicator.h"
#include "comm/staged_communicator.h"
#include "comm_test.h"
#include "gpu_test.h"
#include "mpi/mpi_test.h"
#if defined(OPTIMUS_WITH_CUDA)
#include "comm/nccl_communicator.h"
#endif

namespace {
optimus::comm::World* the_world = nullptr;
std::optional<optimus::core::Context> the_context;
std::string the_kind;
}  // namespace

namespace mpi_test {

optimus::comm::World& world() {
  return *the_world;
}

std::string failed_ranks(bool ok) {
  const int p = world().size();
  const int mine = ok ? 0 : 1;
  std::vector<int> failed(static_cast<size_t>(p));
  OPTIMUS_MPI_CHECK(MPI_Allgather(&mine, 1, MPI_INT, failed.data(), 1, MPI_INT, MPI_COMM_WORLD));
  std::string list;
  int count = 0;
  for (int r = 0; r < p; ++r) {
    if (!failed[static_cast<size_t>(r)]) continue;
    list += (count++ ? ", " : "") + std::to_string(r);
  }
  if (count == 0) return "";
  return (count == 1 ? "rank " : "ranks ") + list + " (of " + std::to_string(p) + ")";
}

}  // namespace mpi_test

namespace comm_test {

const optimus::core::Context& context() {
  return *the_context;
}

const std::string& kind() {
  return the_kind;
}

std::unique_ptr<optimus::comm::Communicator> make_communicator(MPI_Comm comm, const std::string& name,
                                                               optimus::comm::CommLedger& ledger) {
#if defined(OPTIMUS_WITH_CUDA)
  if (the_kind == "nccl") return std::make_unique<optimus::comm::NcclCommunicator>(comm, context(), name, ledger);
#endif
  return std::make_unique<optimus::comm::StagedCommunicator>(comm, context(), name, ledger);
}

}  // namespace comm_test

int main(int argc, char** argv) {
  optimus::comm::World world(argc, argv);
  the_world = &world;
  if (argc < 2) {
    world.print0("usage: test_gpu_comm nccl|staged|staged-cpu [catch arguments]\n");
    return 2;
  }
  the_kind = argv[1];
  // Catch sees the program name and what follows the kind.
  std::vector<char*> catch_args = {argv[0]};
  for (int k = 2; k < argc; ++k) catch_args.push_back(argv[k]);

  Catch::Session session;
  session.configData().useColour = Catch::UseColour::No;
  if (const int rc = session.applyCommandLine(static_cast<int>(catch_args.size()), catch_args.data()); rc != 0) {
    return rc;
  }
  Catch::ConfigData& config = session.configData();
  if (config.listTests || config.listTestNamesOnly || config.listTags || config.listReporters) {
    return world.rank() == 0 ? session.run() : 0;
  }
  config.warnings = static_cast<Catch::WarnAbout::What>(config.warnings | Catch::WarnAbout::NoTests);

  optimus::core::MemoryLedger ledger;  // this rank's device memory
  if (the_kind == "staged-cpu") {
    the_context = optimus::core::cpu_context(ledger);
  } else if (the_kind == "staged" || the_kind == "nccl") {
    const int gpus = optimus::core::cuda_device_count();
    if (!world.all_agree(gpus > 0)) {
      world.print0("skipped: the %s communicator needs a GPU on every rank (%s)\n", the_kind.c_str(),
                   optimus::core::cuda_device_report().c_str());
      return gpu_test::kSkip;
    }
    const optimus::comm::NodePlacement place = optimus::comm::node_placement(MPI_COMM_WORLD);
    const bool built = the_kind != "nccl" || optimus::core::cuda_backend_built();
    if (!world.all_agree(built && (the_kind != "nccl" || place.ranks_on_node <= gpus))) {
      world.print0("skipped: NCCL needs one GPU per rank, and a node here runs more ranks than it has GPUs (%d)\n",
                   gpus);
      return gpu_test::kSkip;
    }
    the_context = optimus::core::cuda_context(ledger, place.local_rank % gpus);
  } else {
    world.print0("test_gpu_comm: unknown kind '%s'; use nccl, staged or staged-cpu\n", the_kind.c_str());
    return 2;
  }

  const int local = session.run();
  const std::string failed = mpi_test::failed_ranks(local == 0);
  if (failed.empty()) {
    world.print0("%s communicator tests: all %d ranks passed\n", the_kind.c_str(), world.size());
  } else {
    world.print0("%s communicator tests: FAILED on %s\n", the_kind.c_str(), failed.c_str());
  }
  the_context.reset();
  the_world = nullptr;
  return failed.empty() ? 0 : 1;
}
