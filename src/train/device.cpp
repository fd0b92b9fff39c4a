// The run's device: the flags, the checks that every rank can run on it, and the GPU of a rank.
#include "train/device.h"

#include <mpi.h>

#include <CLI/CLI.hpp>

#include "core/errors.h"

namespace optimus::train {

void add_device_flags(CLI::App* app, DeviceOptions& d) {
  app->add_option("--device", d.device,
                  "cpu, or cuda: the model, its gradients, the optimizer state and the activations on a GPU "
                  "(each rank of a node takes a GPU no rank before it took, by PCI bus id, and shares one when "
                  "there are more ranks than GPUs); the data, the initial values and sampling stay on the CPU")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app->add_option("--device-comm", d.comm,
                  "the communicator of a cuda run: nccl (one GPU per rank), staged (MPI on host copies; any "
                  "number of ranks per GPU), or auto (nccl where every rank has a GPU of its own); the CPU "
                  "always uses MPI")
      ->check(CLI::IsMember({"auto", "nccl", "staged"}))
      ->capture_default_str();
}

core::MemoryLedger& device_ledger() {
  // Made once the CUDA runtime has started (cuda_device_count starts it), so that at exit it goes
  // first, and its pool's cudaFree still finds the runtime there.
  static core::MemoryLedger ledger = (core::cuda_device_count(), core::MemoryLedger{});
  return ledger;
}

core::Context make_context(const DeviceOptions& d, comm::World& world, core::MemoryLedger& ledger) {
  if (d.device == "cpu") return core::cpu_context(ledger);
  if (d.device != "cuda") {
    throw core::ConfigError("--device " + d.device + " is not a device of optimus; choose cpu or cuda");
  }
  (void)d.device_comm();  // an unknown --device-comm is a ConfigError here, before any collective
  if (!core::cuda_backend_built()) {
    throw core::ConfigError(
        "--device cuda was asked for, but this build has no CUDA backend (configured with OPTIMUS_CUDA=OFF or "
        "without a CUDA toolkit); rebuild with the CUDA toolkit, or use --device cpu");
  }
  const int gpus = core::cuda_device_count();
  if (!world.all_agree(gpus > 0)) {
    // cuda_device_report() reads "no GPU: <why> (<code>); the CPU backend will be used": keep the why.
    std::string why = core::cuda_device_report();
    why = why.substr(0, why.find(';'));
    if (why.rfind("no GPU: ", 0) == 0) why = why.substr(8);
    throw core::ConfigError(gpus > 0 ? "--device cuda needs a GPU on every rank, but another rank has none; run "
                                       "where every node has a GPU, or use --device cpu"
                                     : "--device cuda was asked for, but this machine has no usable GPU: " + why +
                                           "; run where there is a GPU, or use --device cpu");
  }
  return core::cuda_context(ledger, comm::choose_gpu(MPI_COMM_WORLD).device);
}

core::Context make_context(const DeviceOptions& d, comm::World& world) {
  return make_context(d, world, d.device == "cuda" ? device_ledger() : core::MemoryLedger::host());
}

}  // namespace optimus::train
