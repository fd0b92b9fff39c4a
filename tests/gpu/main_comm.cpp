// The device-communicator tests' main: run as
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
#include "mpi/mpi_main.h"
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
  const int rc = mpi_test::prepare_session(session, static_cast<int>(catch_args.size()), catch_args.data());
  if (rc >= 0) return rc;

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
    const optimus::comm::GpuChoice gpu = optimus::comm::choose_gpu(MPI_COMM_WORLD);
    const bool built = the_kind != "nccl" || optimus::core::cuda_backend_built();
    if (!world.all_agree(built && (the_kind != "nccl" || gpu.own_gpu))) {
      world.print0("skipped: NCCL needs one GPU per rank, and ranks of a node here share its %d GPU(s)\n",
                   gpu.gpus_in_use);
      return gpu_test::kSkip;
    }
    the_context = optimus::core::cuda_context(ledger, gpu.device);
  } else {
    world.print0("test_gpu_comm: unknown kind '%s'; use nccl, staged or staged-cpu\n", the_kind.c_str());
    return 2;
  }

  const int verdict = mpi_test::combined_verdict(session.run(), the_kind + " communicator tests");
  the_context.reset();
  the_world = nullptr;
  return verdict;
}
