// Contexts, and the host <-> device copies and the sum that stages use on any backend. On a CPU
// context the copies are memcpy; a CUDA context hands them to the CUDA backend (core/cuda/).
#include "core/context.h"

#include <algorithm>
#include <cstring>
#include <vector>

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

void sum(const Context& ctx, double* out, const float* x, int64_t n) {
  OPTIMUS_DISPATCH(ctx, cuda::sum(ctx, out, x, n));
  // The chunking of sum_squares (cpu/elementwise.cpp), so both reductions order their terms alike.
  constexpr int64_t kChunk = 1 << 14;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> partial(static_cast<size_t>(chunks));  // (chunks)
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    double s = 0.0;
    for (int64_t k = c * kChunk; k < std::min(n, (c + 1) * kChunk); ++k) s += static_cast<double>(x[k]);
    partial[static_cast<size_t>(c)] = s;
  }
  double total = 0.0;
  for (double s : partial) total += s;
  *out = total;
}

}  // namespace optimus::core
