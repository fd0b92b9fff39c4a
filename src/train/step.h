// One training step, the same for the trainer, the benchmark and the planner: zero the gradients,
// accumulate this copy's share of the batch (forward and backward per micro-batch, the gradients
// summed over the copies as the backward pass completes them), the whole batch's loss over the
// copies, clip the gradients to a global norm, one AdamW update. The trainer checks the loss and the
// norm between the phases (StepChecks), the benchmark times the step, the planner records it.
#pragma once

#include <cstdint>
#include <functional>

#include "model/model.h"
#include "train/data_parallel.h"
#include "train/optimizer.h"

namespace optimus::train {

/// What one step reads: the whole batch (the same on every rank; each copy takes its share) and
/// the update's settings.
struct StepBatch {
  const int* inputs = nullptr;   // (B, T) token ids, host memory
  const int* targets = nullptr;  // (B, T)
  int B = 0, T = 0;
  int grad_accum = 1;      // micro-batches per copy, each B / (D·grad_accum) sequences
  int index = 0;           // the step's number, which keys the dropout masks
  float grad_clip = 0.0f;  // the bound of the gradients' global norm (0 or less: no clipping)
  float lr = 0.0f;         // the update's learning rate
};

/// What a caller checks between a step's phases, on every rank alike (the loss and the norm are the
/// same on every rank): a check that returns false ends the step there, before the update. An
/// empty one checks nothing.
struct StepChecks {
  /// The whole batch's loss, before clipping (a check may also change it: the trainer's tests inject NaN).
  std::function<bool(float& loss)> loss_ok;
  /// The gradients' global norm, before the update.
  std::function<bool(float norm)> norm_ok;
};

struct StepOutcome {
  float loss = 0.0f;
  float norm = 0.0f;
  bool updated = false;  // false: a check ended the step before the update
};

/// Runs one step of `gpt` (its gradients summed over dp's copies by a SumOverCopies the caller
/// holds) and updates it with `optimizer`. Collective over the model's ranks and the copies.
StepOutcome train_step(model::Model& gpt, const DataParallel& dp, AdamW& optimizer, const StepBatch& batch,
                       const StepChecks& checks = {});

}  // namespace optimus::train
