// One training step.
#include "train/step.h"

namespace optimus::train {

StepOutcome train_step(model::Model& gpt, const DataParallel& dp, AdamW& optimizer, const StepBatch& batch,
                       const StepChecks& checks) {
  StepOutcome out;
  gpt.params().zero_grads();
  const double share =
      accumulate_gradients(gpt, dp, batch.inputs, batch.targets, batch.B, batch.T, batch.grad_accum, batch.index);
  out.loss = static_cast<float>(loss_over_copies(gpt, dp, share));
  if (checks.loss_ok && !checks.loss_ok(out.loss)) return out;
  out.norm = gpt.clip_gradients(batch.grad_clip);
  if (checks.norm_ok && !checks.norm_ok(out.norm)) return out;
  optimizer.update(gpt.params(), batch.lr);
  out.updated = true;
  return out;
}

}  // namespace optimus::train
