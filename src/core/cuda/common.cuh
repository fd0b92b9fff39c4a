// What the CUDA ops share: the context's stream and cuBLAS handle, launch sizes, grid-stride
// indices, the block reductions of the row-wise ops (LayerNorm, softmax, cross-entropy), and
// stream-ordered scratch memory recorded in the context's ledger. Included by core/cuda/*.cu only.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/context.h"
#include "core/cuda/check.h"

namespace optimus::core::cuda {

inline cudaStream_t stream_of(const Context& ctx) {
  return static_cast<cudaStream_t>(ctx.cuda_stream);
}
inline cublasHandle_t cublas_of(const Context& ctx) {
  return static_cast<cublasHandle_t>(ctx.cublas_handle);
}

// ---- launch sizes ------------------------------------------------------------------------------

/// Threads per block of the elementwise kernels, and of the row kernels (one block per row). A
/// multiple of 32, as block_reduce needs.
inline constexpr int kBlock = 256;
/// Elementwise kernels are grid-stride loops: at most this many blocks, each thread taking every
/// (blocks · threads)-th element, so any n (also past 2^31) is covered with 64-bit indices.
inline constexpr int64_t kMaxBlocks = 1 << 16;

/// Blocks for a grid-stride loop over n elements (n > 0).
inline unsigned int blocks_for(int64_t n, int threads = kBlock) {
  return static_cast<unsigned int>(std::clamp<int64_t>((n + threads - 1) / threads, 1, kMaxBlocks));
}

/// This thread's first element in a grid-stride loop, and the loop's stride.
__device__ inline int64_t grid_first() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t grid_stride() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

// ---- block reductions --------------------------------------------------------------------------

struct SumOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

/// The reduction of `value` over all threads of the block, returned to every thread. Every thread
/// of the block must call it (no early return before it), and blockDim.x must be a multiple of 32.
/// Each warp reduces by shuffles, then thread 0 combines the warps' results in warp order, so the
/// result is the same on every run. Safe to call several times in a row.
template <typename T, typename Op>
__device__ T block_reduce(T value, Op op) {
  __shared__ T warp_result[32];  // one per warp (at most 1024 threads)
  __shared__ T result;
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset /= 2) value = op(value, __shfl_down_sync(0xffffffffu, value, offset));
  if (lane == 0) warp_result[warp] = value;
  __syncthreads();
  if (threadIdx.x == 0) {
    T r = warp_result[0];
    for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w) r = op(r, warp_result[w]);
    result = r;
  }
  __syncthreads();
  return result;
}

// ---- scratch memory ----------------------------------------------------------------------------

/// Device memory for the duration of one op: a block of the context's ledger's pool (core/block_pool.h),
/// recorded as workspace like the CPU ops' scratch Buffers, and given back when the object goes out of
/// scope, with no wait: the kernels queued in between may still use it, and the next take of the block
/// zero-fills it on the legacy default stream, which runs after them.
class DeviceScratch {
 public:
  DeviceScratch(const Context& ctx, size_t bytes) : ctx_(&ctx), bytes_(bytes) {
    if (bytes_ == 0) return;
    ctx_->ledger->allocate(MemoryCategory::workspace, bytes_);  // throws past the budget
    try {
      data_ = ctx_->ledger->pool().take(ctx_->cuda_device, bytes_, Fill::none);  // filled all the same
    } catch (...) {
      ctx_->ledger->release(MemoryCategory::workspace, bytes_);
      throw;
    }
  }
  ~DeviceScratch() {
    if (data_ == nullptr) return;
    ctx_->ledger->pool().give_back(data_, ctx_->cuda_device, bytes_);
    ctx_->ledger->release(MemoryCategory::workspace, bytes_);
  }
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;

  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  const Context* ctx_;
  size_t bytes_;
  void* data_ = nullptr;
};

}  // namespace optimus::core::cuda
