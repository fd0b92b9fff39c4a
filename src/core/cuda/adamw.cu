// AdamW on the GPU (chapter 01): torch.optim.AdamW's update, elementwise, as core/cpu/adamw.cpp.
// The arithmetic is the CPU op's own (core/adamw_step.h): the scalars worked out on the host, then
// each element one thread of a grid-stride loop.
#include "core/adamw_step.h"
#include "core/cuda/common.cuh"
#include "core/cuda/cuda_ops.h"

namespace optimus::core::cuda {

namespace {

__global__ void adamw_kernel(float* param, float* m, float* v, const float* grad, int64_t n, AdamWScalars s) {
  for (int64_t k = grid_first(); k < n; k += grid_stride()) adamw_element(param[k], m[k], v[k], grad[k], s);
}

}  // namespace

void adamw_update(const Context& ctx, float* param, float* m, float* v, const float* grad, int64_t n,
                  const AdamWConfig& cfg) {
  if (n == 0) return;
  adamw_kernel<<<blocks_for(n), kBlock, 0, stream_of(ctx)>>>(param, m, v, grad, n, adamw_scalars(cfg));
  OPTIMUS_CUDA_LAUNCH_CHECK();
}

}  // namespace optimus::core::cuda
