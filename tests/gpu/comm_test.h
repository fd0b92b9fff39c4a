// Helpers for the device-communicator tests: the context and communicator kind that
// main_comm.cpp set up, and arrays in the context's memory (GPU, or host for staged-cpu).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "core/context.h"
#include "core/tensor.h"

namespace comm_test {

/// This rank's context: a CUDA context on its GPU, or a CPU one for the staged-cpu kind.
const optimus::core::Context& context();
/// "nccl", "staged" or "staged-cpu".
const std::string& kind();
/// A communicator of the kind under test over `comm`.
std::unique_ptr<optimus::comm::Communicator> make_communicator(MPI_Comm comm, const std::string& name,
                                                               optimus::comm::CommLedger& ledger);

/// n elements of T in the context's memory (a Buffer of 4-byte words underneath).
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(const std::vector<T>& host)
      : n_(static_cast<int64_t>(host.size())),
        storage_(*context().ledger, optimus::core::MemoryCategory::communication,
                 {static_cast<int64_t>((host.size() * sizeof(T) + 3) / 4)}, context().device) {
    optimus::core::copy_to_device(context(), data(), host.data(), n_);
  }
  T* data() const { return reinterpret_cast<T*>(storage_.data()); }
  std::vector<T> host() const {
    std::vector<T> h(static_cast<size_t>(n_));
    optimus::core::copy_to_host(context(), h.data(), data(), n_);
    return h;
  }

 private:
  int64_t n_;
  optimus::core::Buffer storage_;
};

}  // namespace comm_test
