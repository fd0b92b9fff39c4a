// Contexts, and the host <-> device copies that stages use on any backend. On a CPU
// context the copies are memcpy; a CUDA context hands them to the CUDA backend (core/cuda/).
#include "core/context.h"

#include <cstring>

#include "core/cuda/cuda_ops.h"
#include "core/dispatch.h"

namespace optimus::core {

Context cpu_context(MemoryLedger& ledger) {
  Context ctx;
  ctx.device = Device::cpu;
  ctx.ledger = &ledger;
  return ctx;
}

void copy_bytes_to_device(const Context& ctx, void* device_dst, const void* host_src, size_t bytes) {
  OPTIMUS_DISPATCH(ctx, cuda::copy_bytes_to_device(ctx, device_dst, host_src, bytes));
  if (bytes > 0) std::memcpy(device_dst, host_src, bytes);
}

void copy_bytes_to_host(const Context& ctx, void* host_dst, const void* device_src, size_t bytes) {
  OPTIMUS_DISPATCH(ctx, cuda::copy_bytes_to_host(ctx, host_dst, device_src, bytes));
  if (bytes > 0) std::memcpy(host_dst, device_src, bytes);
}

void copy_bytes_on_device(const Context& ctx, void* device_dst, const void* device_src, size_t bytes) {
  OPTIMUS_DISPATCH(ctx, cuda::copy_bytes_on_device(ctx, device_dst, device_src, bytes));
  if (bytes > 0) std::memcpy(device_dst, device_src, bytes);
}

void synchronize(const Context& ctx) {
  OPTIMUS_DISPATCH(ctx, cuda::synchronize(ctx));
}

}  // namespace optimus::core
