// The arithmetic of one AdamW step, which both backends run: the step's scalars, worked out on the
// host in double once (as PyTorch does in Python), and the update of one element in float, compiled
// for the CPU loop (core/cpu/adamw.cpp) and the GPU kernel (core/cuda/adamw.cu) alike, so the two
// backends multiply by the same floats in the same order.
#pragma once

#include <cmath>

#include "core/ops.h"

#if defined(__CUDACC__)
#define OPTIMUS_HOST_DEVICE __host__ __device__
#else
#define OPTIMUS_HOST_DEVICE
#endif

namespace optimus::core {

/// The floats one AdamW step multiplies by.
struct AdamWScalars {
  float decay;                  // 1 - lr * weight_decay
  float one_minus_beta1;        // 1 - β1
  float beta2;                  // β2
  float one_minus_beta2;        // 1 - β2
  float step_size;              // lr / (1 - β1^t)
  float bias_correction2_sqrt;  // √(1 - β2^t)
  float eps;
};

inline AdamWScalars adamw_scalars(const AdamWConfig& cfg) {
  const double beta1 = cfg.beta1, beta2 = cfg.beta2, lr = cfg.lr;
  return {.decay = static_cast<float>(1.0 - lr * cfg.weight_decay),
          .one_minus_beta1 = static_cast<float>(1.0 - beta1),
          .beta2 = cfg.beta2,
          .one_minus_beta2 = static_cast<float>(1.0 - beta2),
          .step_size = static_cast<float>(lr / (1.0 - std::pow(beta1, cfg.step))),
          .bias_correction2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(beta2, cfg.step))),
          .eps = cfg.eps};
}

/// One element: param *= decay; m += (1-β1)(g - m), PyTorch's lerp form of β1 m + (1-β1) g, so the
/// rounding matches; v = β2 v + (1-β2) g²; param -= step_size · m / (√v / √(1-β2^t) + eps).
OPTIMUS_HOST_DEVICE inline void adamw_element(float& param, float& m, float& v, float g, const AdamWScalars& s) {
  param *= s.decay;
  m += s.one_minus_beta1 * (g - m);
  v = v * s.beta2 + s.one_minus_beta2 * g * g;
  const float denom = sqrtf(v) / s.bias_correction2_sqrt + s.eps;
  param -= s.step_size * m / denom;
}

}  // namespace optimus::core
