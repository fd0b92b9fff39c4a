// Contexts, and the host <-> device copies that stages use on any backend. On a CPU
// context the copies are memcpy; a CUDA context hands them to the CUDA backend (core/cuda/); on a
// meta context nothing moves, and the host side of a copy to the host becomes NaN.
#include "core/context.h"

#include <omp.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "core/cuda/cuda_ops.h"
#include "core/dispatch.h"

namespace optimus::core {

Context cpu_context(MemoryLedger& ledger, OpLedger* ops) {
  Context ctx;
  ctx.device = Device::cpu;
  ctx.ledger = &ledger;
  ctx.ops = ops;
  return ctx;
}

Context meta_context(MemoryLedger& ledger, OpLedger* ops, int threads) {
  if (threads < 1) {
    throw std::invalid_argument("meta_context: threads is " + std::to_string(threads) + ", must be 1 or more");
  }
  Context ctx;
  ctx.device = Device::meta;
  ctx.ledger = &ledger;
  ctx.ops = ops;
  ctx.meta_threads = threads;
  return ctx;
}

int scratch_threads(const Context& ctx) {
  return ctx.device == Device::meta ? ctx.meta_threads : omp_get_max_threads();
}

void copy_bytes_to_device(const Context& ctx, void* device_dst, const void* host_src, size_t bytes) {
  if (ctx.device == Device::meta) return;
  OPTIMUS_DISPATCH_CUDA(ctx, cuda::copy_bytes_to_device(ctx, device_dst, host_src, bytes));
  if (bytes > 0) std::memcpy(device_dst, host_src, bytes);
}

void copy_bytes_to_host(const Context& ctx, void* host_dst, const void* device_src, size_t bytes) {
  if (ctx.device == Device::meta) {
    // Every byte 0xFF: a float or a double reads NaN (an int -1), never a plausible value.
    if (bytes > 0) std::memset(host_dst, 0xFF, bytes);
    return;
  }
  OPTIMUS_DISPATCH_CUDA(ctx, cuda::copy_bytes_to_host(ctx, host_dst, device_src, bytes));
  if (bytes > 0) std::memcpy(host_dst, device_src, bytes);
}

void copy_bytes_on_device(const Context& ctx, void* device_dst, const void* device_src, size_t bytes) {
  if (ctx.device == Device::meta) return;
  OPTIMUS_DISPATCH_CUDA(ctx, cuda::copy_bytes_on_device(ctx, device_dst, device_src, bytes));
  if (bytes > 0) std::memcpy(device_dst, device_src, bytes);
}

void synchronize(const Context& ctx) {
  if (ctx.device == Device::meta) return;
  OPTIMUS_DISPATCH_CUDA(ctx, cuda::synchronize(ctx));
}

}  // namespace optimus::core
