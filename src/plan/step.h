// One training step of any layout on any context, the trainer's own (train::train_step): zero the
// gradients, forward and backward, the loss over the copies, clip the gradients, one AdamW update.
// The planner (chapter 4) runs it on the meta device, one simulated rank at a time, to read what a
// step costs each rank; the exactness test runs it on the CPU under MPI and on meta, and finds the
// same ledgers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "comm/communicator.h"
#include "comm/meta_communicator.h"
#include "core/context.h"
#include "model/activation_block.h"
#include "model/config.h"
#include "train/data_parallel.h"
#include "train/layout.h"

namespace optimus::plan {

/// What a step needs besides the model: the batch (B sequences of T tokens, the whole step's), the
/// clipping bound (0 or less: no clipping), the learning rate and the initialisation seed.
struct StepOptions {
  int B = 1;
  int T = 1;
  float grad_clip = 0.0f;
  float lr = 1e-3f;
  uint32_t seed = 7;
  int grad_accum = 1;         // micro-batches per step, each B / (copies·grad_accum) sequences
  model::StageOptions stage;  // recomputation, sequence parallelism (chapter 5), overlap (chapter 6)
  /// Data parallelism: the copies' groups, over which the gradients are summed during the backward
  /// pass as the trainer sums them (train::SumOverCopies); each copy runs its share of B. Null: one copy.
  const train::DataParallel* data_parallel = nullptr;
};

/// The step's two values (NaN on meta); the memory ledger as it stood after the update, before
/// the model was released (its current bytes are what a rank holds from one step to the next);
/// and what the step alone did, without building the model: its ops (when the context records
/// them) and its collectives.
struct StepResult {
  float loss = 0.0f;
  float norm = 0.0f;
  core::MemorySnapshot after_step;
  core::OpLedger ops;
  comm::CommLedger comm;
};

/// Builds the model of `layout` with its memory and ops on `ctx` and its collectives on `world`
/// (the 2D grid splits it into "row" and "col"), then runs one training step on `inputs` and
/// `targets` (B·T token ids each, host memory, the same on every rank). The
/// model, its activations and the optimizer's moments are released on return; the ledgers keep
/// their peaks. A layout the world or the shapes do not fit is a core::ConfigError.
///
/// Whether clipping scales the gradients depends on the norm's value, which a meta run has not
/// (its NaN norm clips nothing): a CPU and a meta run record the same ops when the CPU run does
/// not clip either (grad_clip 0, or a bound above its norm).
StepResult run_training_step(train::Layout layout, const model::GPTConfig& config, const core::Context& ctx,
                             comm::Communicator& world, const StepOptions& options, const int* inputs,
                             const int* targets);

/// Builds the model as run_training_step does and runs one forward pass in evaluation mode (no
/// dropout), loss included: what the bench times as "forward" and the paper calls inference.
/// Its result's norm is 0 and after_step is the ledger after the pass.
StepResult run_forward_pass(train::Layout layout, const model::GPTConfig& config, const core::Context& ctx,
                            comm::Communicator& world, const StepOptions& options, const int* inputs,
                            const int* targets);

}  // namespace optimus::plan
