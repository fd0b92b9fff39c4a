// AdamW on the GPU (chapter 01): torch.optim.AdamW's update, elementwise, as core/cpu/adamw.cpp.
// The step's scalars are worked out on the host in double exactly as the CPU op does, so both
// backends multiply by the same floats; each element is then one thread of a grid-stride loop.
#include <cmath>

#include "core/cuda/common.cuh"
#include "core/cuda/cuda_ops.h"

namespace optimus::core::cuda {

namespace {

// param *= decay; m += (1-β1)(g - m); v = β2 v + (1-β2) g²; param -= step_size · m / (√v / √(1-β2^t) + eps)
__global__ void adamw_kernel(float* param, float* m, float* v, const float* grad, int64_t n, float decay,
                             float one_minus_beta1, float beta2, float one_minus_beta2, float step_size,
                             float bias_correction2_sqrt, float eps) {
  for (int64_t k = grid_first(); k < n; k += grid_stride()) {
    const float g = grad[k];
    param[k] *= decay;
    m[k] += one_minus_beta1 * (g - m[k]);  // PyTorch's lerp form of β1 m + (1 - β1) g
    v[k] = v[k] * beta2 + one_minus_beta2 * g * g;
    const float denom = sqrtf(v[k]) / bias_correction2_sqrt + eps;
    param[k] -= step_size * m[k] / denom;
  }
}

}  // namespace

void adamw_update(const Context& ctx, float* param, float* m, float* v, const float* grad, int64_t n,
                  const AdamWConfig& cfg) {
  if (n == 0) return;
  const double beta1 = cfg.beta1, beta2 = cfg.beta2, lr = cfg.lr;
  const float decay = static_cast<float>(1.0 - lr * cfg.weight_decay);
  const float one_minus_beta1 = static_cast<float>(1.0 - beta1);
  const float one_minus_beta2 = static_cast<float>(1.0 - beta2);
  const float step_size = static_cast<float>(lr / (1.0 - std::pow(beta1, cfg.step)));
  const float bias_correction2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(beta2, cfg.step)));
  adamw_kernel<<<blocks_for(n), kBlock, 0, stream_of(ctx)>>>(param, m, v, grad, n, decay, one_minus_beta1, cfg.beta2,
                                                             one_minus_beta2, step_size, bias_correction2_sqrt,
                                                             cfg.eps);
  OPTIMUS_CUDA_LAUNCH_CHECK();
}

}  // namespace optimus::core::cuda
