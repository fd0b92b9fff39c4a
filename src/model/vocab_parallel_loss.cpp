// Vocab-parallel cross-entropy.
#include "model/vocab_parallel_loss.h"

#include "core/ops.h"

namespace optimus::model {

void vocab_parallel_cross_entropy_forward(const core::Context& ctx, comm::Communicator& group, float* losses,
                                          float* maxes, float* sumexp, float* target_logit, const float* logits,
                                          const int* targets, int N, int Vl, int v0, int V_real) {
  core::crossentropy_partial_max(ctx, maxes, logits, N, Vl, v0, V_real);
  group.all_reduce(maxes, N, comm::ReduceOp::max);  // the row max over the whole vocabulary
  core::crossentropy_partial_sumexp(ctx, sumexp, logits, maxes, N, Vl, v0, V_real);
  group.all_reduce(sumexp, N);  // Σ exp(logit − max) over the whole vocabulary
  core::crossentropy_partial_target(ctx, target_logit, logits, targets, N, Vl, v0);
  group.all_reduce(target_logit, N);  // only the rank holding the target contributes
  core::crossentropy_losses(ctx, losses, maxes, sumexp, target_logit, N);
}

}  // namespace optimus::model
