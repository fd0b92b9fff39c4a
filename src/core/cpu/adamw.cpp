// AdamW on the CPU (chapter 01), the update of torch.optim.AdamW: decoupled weight decay first,
// then the moment updates, then the bias-corrected step. It is elementwise, so every stage runs it
// on whatever shard of a parameter it holds and the shards stay equal to the serial update.
#include <cmath>

#include "core/cuda/cuda_ops.h"
#include "core/dispatch.h"
#include "core/ops.h"

namespace optimus::core {

namespace {

// Per element, counted on the code below (op_ledger.h's conventions): the decay one; m's lerp
// three; v's update four; the denominator (sqrt, divide, add) three; the step (multiply, divide,
// subtract) three: fourteen. param, m, v and grad are read, param, m and v written.
OpCost adamw_cost(int64_t n) {
  return {.kind = OpKind::optimizer, .flops = 14 * n, .bytes_read = floats(4 * n), .bytes_written = floats(3 * n)};
}

}  // namespace

void adamw_update(const Context& ctx, float* param, float* m, float* v, const float* grad, int64_t n,
                  const AdamWConfig& cfg) {
  OPTIMUS_DISPATCH(ctx, adamw_cost(n), cuda::adamw_update(ctx, param, m, v, grad, n, cfg));
  // Scalars are worked out in double once, as PyTorch does in Python, then used in float.
  const double beta1 = cfg.beta1, beta2 = cfg.beta2, lr = cfg.lr;
  const float decay = static_cast<float>(1.0 - lr * cfg.weight_decay);
  const float one_minus_beta1 = static_cast<float>(1.0 - beta1);
  const float one_minus_beta2 = static_cast<float>(1.0 - beta2);
  const float step_size = static_cast<float>(lr / (1.0 - std::pow(beta1, cfg.step)));
  const float bias_correction2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(beta2, cfg.step)));
  const float b2 = cfg.beta2;
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < n; ++k) {
    const float g = grad[k];
    param[k] *= decay;
    // m = β1 m + (1 − β1) g, written as PyTorch's lerp so the rounding matches.
    m[k] += one_minus_beta1 * (g - m[k]);
    v[k] = v[k] * b2 + one_minus_beta2 * g * g;
    const float denom = std::sqrt(v[k]) / bias_correction2_sqrt + cfg.eps;
    param[k] -= step_size * m[k] / denom;
  }
}

}  // namespace optimus::core
