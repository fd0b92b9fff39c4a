// Philox dropout on the GPU: one thread per element evaluates the same pure function
// of (seed, stream, step, canonical index) as core/cpu/dropout.cpp, so the masks are identical
// bit for bit, and backward recomputes the mask instead of storing it.
#include "core/cuda/common.cuh"
#include "core/cuda/cuda_ops.h"
#include "core/cuda/dropout.cuh"

namespace optimus::core::cuda {

namespace {

// out[k] = keep(k) ? inp[k] · keep_scale : 0, keep(k) = philox_uniform(key, global(k), step) >= p
__global__ void dropout_forward_kernel(float* out, const float* inp, GlobalBlock block, PhiloxKey key, uint32_t step,
                                       float p, float keep_scale, int64_t n) {
  for (int64_t k = grid_first(); k < n; k += grid_stride()) {
    const bool keep = dropout_keep(key, static_cast<uint64_t>(global_index(block, k)), step, p);
    out[k] = keep ? inp[k] * keep_scale : 0.0f;
  }
}

// dinp[k] += keep(k) ? dout[k] · keep_scale : 0 (everything kept when p = 0)
__global__ void dropout_backward_kernel(float* dinp, const float* dout, GlobalBlock block, PhiloxKey key, uint32_t step,
                                        float p, float keep_scale, int64_t n) {
  for (int64_t k = grid_first(); k < n; k += grid_stride()) {
    const bool keep = p == 0.0f || dropout_keep(key, static_cast<uint64_t>(global_index(block, k)), step, p);
    // __fmul_rn: a multiply the compiler may not fuse with the add, so the sum rounds as the CPU's does.
    if (keep) dinp[k] += __fmul_rn(dout[k], keep_scale);
  }
}

}  // namespace

void launch_dropout_forward(const Context& ctx, float* out, const float* inp, const DropoutSpec& spec) {
  const int64_t n = spec.block.numel();
  if (n == 0) return;
  const float keep_scale = 1.0f / (1.0f - spec.p);
  dropout_forward_kernel<<<blocks_for(n), kBlock, 0, stream_of(ctx)>>>(out, inp, spec.block, spec.key, spec.step,
                                                                       spec.p, keep_scale, n);
  OPTIMUS_CUDA_LAUNCH_CHECK();
}

void dropout_forward(const Context& ctx, float* out, const float* inp, const DropoutSpec& spec) {
  const int64_t n = spec.block.numel();
  if (spec.p == 0.0f) {
    if (out != inp) cuda::copy_bytes_on_device(ctx, out, inp, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  launch_dropout_forward(ctx, out, inp, spec);
}

void dropout_backward(const Context& ctx, float* dinp, const float* dout, const DropoutSpec& spec) {
  const int64_t n = spec.block.numel();
  if (dinp == nullptr || n == 0) return;
  const float keep_scale = spec.p == 0.0f ? 1.0f : 1.0f / (1.0f - spec.p);
  dropout_backward_kernel<<<blocks_for(n), kBlock, 0, stream_of(ctx)>>>(dinp, dout, spec.block, spec.key, spec.step,
                                                                        spec.p, keep_scale, n);
  OPTIMUS_CUDA_LAUNCH_CHECK();
}

}  // namespace optimus::core::cuda
