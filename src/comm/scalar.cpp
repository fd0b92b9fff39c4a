// One double through a communicator, on the host or through a one-element device buffer. A meta
// context holds no device memory to stage it in: its double goes from the host, as on the CPU, and
// what comes back is NaN, since a meta communicator brings no value from the other ranks.
#include "comm/scalar.h"

#include <limits>

#include "core/memory_ledger.h"
#include "core/tensor.h"

namespace optimus::comm {

double all_reduce_scalar(Communicator& comm, const core::Context& ctx, double x, ReduceOp op) {
  if (ctx.device == core::Device::meta) {
    comm.all_reduce(&x, 1, op);  // recorded as on the CPU; the sum of the other ranks' values is unknown
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (ctx.device == core::Device::cpu) {
    comm.all_reduce(&x, 1, op);
    return x;
  }
  // Two 4-byte words hold the double; device allocations are aligned far beyond 8 bytes.
  core::Buffer word(*ctx.ledger, core::MemoryCategory::communication, {2}, ctx.device);
  double* on_device = reinterpret_cast<double*>(word.data());
  core::copy_to_device(ctx, on_device, &x, 1);
  comm.all_reduce(on_device, 1, op);
  core::copy_to_host(ctx, &x, on_device, 1);  // waits for the collective (NCCL queues it on the stream)
  return x;
}

}  // namespace optimus::comm
