// LayerNorm over rows split over a group's columns.
#include "model/split_layernorm.h"

#include "core/tensor.h"

namespace optimus::model {

void split_layernorm_forward(const core::Context& ctx, comm::Communicator& group, float* out, float* mean, float* rstd,
                             const float* inp, const float* weight, const float* bias, int N, int Cl, int C,
                             float eps) {
  core::layernorm_partial_sum(ctx, mean, inp, N, Cl);
  group.all_reduce(mean, N);  // the row sum over all C columns
  core::layernorm_partial_sqdev(ctx, rstd, inp, mean, N, Cl, C);
  group.all_reduce(rstd, N);  // Σ (x − mean)² over all C columns
  core::layernorm_normalize(ctx, out, mean, rstd, inp, mean, rstd, weight, bias, N, Cl, C, eps);
}

void split_layernorm_backward(const core::Context& ctx, comm::Communicator& group, const core::LayerGrads& add_to,
                              const float* dout, const float* inp, const float* weight, const float* mean,
                              const float* rstd, int N, int Cl, int C) {
  core::Buffer sums(*ctx.ledger, core::MemoryCategory::communication, {2, N}, ctx.device);  // Σ g, then Σ g·x̂
  float* sum_g = sums.data();
  float* sum_gx = sums.data() + N;
  core::layernorm_backward_partial(ctx, sum_g, sum_gx, dout, inp, weight, mean, rstd, N, Cl);
  group.all_reduce(sums.data(), 2 * int64_t{N});  // both sums over all C columns, one call
  core::layernorm_backward_apply(ctx, add_to, dout, inp, weight, mean, rstd, sum_g, sum_gx, N, Cl, C);
}

}  // namespace optimus::model
