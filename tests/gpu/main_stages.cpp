// The stage tests' main: run as
//   mpiexec -np N test_gpu_stages [--cpu-stand-in | --nccl] "[tag]"
// Every rank checks for a GPU; where any rank has none, every rank exits 77, which ctest reports as
// skipped. Otherwise each rank makes a CUDA context on its GPU (comm::choose_gpu: ranks that share a
// node share its GPUs; 4 ranks on one GPU share it) and a device communicator over the world on it:
// the host-staged one (what `--device-comm auto` picks where ranks share a GPU), or with --nccl
// NCCL's (one GPU per rank, else skipped). Verdicts are combined over all ranks, as in tests/mpi.
// With --cpu-stand-in a CPU context takes the GPU's place (label mpi, any machine): the comparisons
// are then exact, and what is tested is the tests' own logic and the stages on a communicator that
// is not the World's (the staged one, over host memory).
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
#include "gpu_test.h"
#include "mpi/mpi_main.h"
#include "stage_test.h"

namespace {
optimus::comm::World* the_world = nullptr;
std::unique_ptr<optimus::comm::Communicator> the_device_world;
}  // namespace

namespace mpi_test {

optimus::comm::World& world() {
  return *the_world;
}

}  // namespace mpi_test

namespace stage_test {
optimus::comm::Communicator& device_world() {
  return *the_device_world;
}
}  // namespace stage_test

int main(int argc, char** argv) {
  optimus::comm::World world(argc, argv);
  the_world = &world;
  const std::string mode = argc > 1 && std::string(argv[1]).rfind("--", 0) == 0 ? argv[1] : "";
  const bool stand_in = mode == "--cpu-stand-in";
  if (!mode.empty() && !stand_in && mode != "--nccl") {
    world.print0("test_gpu_stages: unknown mode '%s'; use --cpu-stand-in or --nccl\n", mode.c_str());
    return 2;
  }
  std::vector<char*> catch_args = {argv[0]};  // Catch sees the rest
  for (int k = mode.empty() ? 1 : 2; k < argc; ++k) catch_args.push_back(argv[k]);

  Catch::Session session;
  const int rc = mpi_test::prepare_session(session, static_cast<int>(catch_args.size()), catch_args.data());
  if (rc >= 0) return rc;

  optimus::core::MemoryLedger ledger;  // this rank's GPU memory
  if (stand_in) {
    world.print0("a CPU context stands in for the GPU\n");
    gpu_test::the_cuda = optimus::core::cpu_context(ledger);
    the_device_world =
        std::make_unique<optimus::comm::StagedCommunicator>(MPI_COMM_WORLD, *gpu_test::the_cuda, "world");
  } else {
    const int gpus = optimus::core::cuda_device_count();
    if (!world.all_agree(gpus > 0)) {
      world.print0("skipped: the stages on the GPU need a GPU on every rank (%s)\n",
                   optimus::core::cuda_device_report().c_str());
      return gpu_test::kSkip;
    }
    world.print0("%s\n", optimus::core::cuda_device_report().c_str());
    const optimus::comm::GpuChoice gpu = optimus::comm::choose_gpu(MPI_COMM_WORLD);
    if (mode == "--nccl" && !world.all_agree(gpu.own_gpu)) {
      world.print0("skipped: NCCL needs one GPU per rank, and ranks here share a GPU\n");
      return gpu_test::kSkip;
    }
    gpu_test::the_cuda = optimus::core::cuda_context(ledger, gpu.device);
    const auto kind = mode == "--nccl" ? optimus::comm::DeviceComm::nccl : optimus::comm::DeviceComm::staged;
    the_device_world = optimus::comm::make_device_communicator(MPI_COMM_WORLD, *gpu_test::the_cuda, kind, "world");
    world.print0("device communicator: %s\n", optimus::comm::device_comm_name(kind));
  }

  const int verdict = mpi_test::combined_verdict(session.run(), "gpu stage tests");
  the_device_world.reset();
  gpu_test::the_cuda.reset();  // the stream and cuBLAS handle go before MPI_Finalize and main's return
  the_world = nullptr;
  return verdict;
}
