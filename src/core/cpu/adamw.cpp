// AdamW on the CPU (chapter 01), the update of torch.optim.AdamW: decoupled weight decay first,
// then the moment updates, then the bias-corrected step. It is elementwise, so every stage runs it
// on whatever shard of a parameter it holds and the shards stay equal to the serial update.
#include "core/adamw_step.h"
#include "core/cuda/cuda_ops.h"
#include "core/dispatch.h"
#include "core/ops.h"

namespace optimus::core {

namespace {

// Per element, counted on adamw_element (core/adamw_step.h) (op_ledger.h's conventions): the decay one; m's lerp
// three; v's update four; the denominator (sqrt, divide, add) three; the step (multiply, divide,
// subtract) three: fourteen. param, m, v and grad are read, param, m and v written.
OpCost adamw_cost(int64_t n) {
  return {.kind = OpKind::optimizer, .flops = 14 * n, .bytes_read = floats(4 * n), .bytes_written = floats(3 * n)};
}

}  // namespace

void adamw_update(const Context& ctx, float* param, float* m, float* v, const float* grad, int64_t n,
                  const AdamWConfig& cfg) {
  OPTIMUS_DISPATCH(ctx, adamw_cost(n), cuda::adamw_update(ctx, param, m, v, grad, n, cfg));
  const AdamWScalars s = adamw_scalars(cfg);
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < n; ++k) adamw_element(param[k], m[k], v[k], grad[k], s);
}

}  // namespace optimus::core
