// One training step, or one forward pass, of a layout, with what it records.
#include "plan/step.h"

#include <optional>

#include "train/optimizer.h"
#include "train/step.h"

namespace optimus::plan {

namespace {

// What `run` (a step or a pass) records from now on: the ledgers' snapshots before it.
struct Recording {
  core::OpLedger ops;
  comm::CommLedger comm;
};

Recording start_recording(const model::Model& gpt, comm::Communicator& world) {
  return {gpt.context().ops != nullptr ? *gpt.context().ops : core::OpLedger{}, world.ledger().snapshot()};
}

void stop_recording(const model::Model& gpt, comm::Communicator& world, const Recording& before, StepResult& result) {
  result.after_step = gpt.context().ledger->snapshot();
  if (gpt.context().ops != nullptr) result.ops = gpt.context().ops->since(before.ops);
  result.comm = world.ledger().since(before.comm);
}

// The trainer's step (train::train_step), recorded.
StepResult step(model::Model& gpt, comm::Communicator& world, const StepOptions& o, const int* inputs,
                const int* targets) {
  train::AdamW optimizer(gpt.params(), gpt.context(), train::AdamWOptions{});
  const std::optional<train::DataParallel> one_copy =
      o.data_parallel == nullptr ? std::optional<train::DataParallel>(std::in_place, world, 1) : std::nullopt;
  const train::DataParallel& dp = o.data_parallel != nullptr ? *o.data_parallel : *one_copy;
  train::SumOverCopies copies(gpt, dp, o.stage.overlap);
  const Recording before = start_recording(gpt, world);
  const train::StepOutcome out =
      train::train_step(gpt, dp, optimizer, {inputs, targets, o.B, o.T, o.grad_accum, /*index=*/0, o.grad_clip, o.lr});
  StepResult result;
  result.loss = out.loss, result.norm = out.norm;
  stop_recording(gpt, world, before, result);
  return result;
}

// The bench's forward pass: evaluation mode, the loss computed, a copy's share of the batch.
StepResult forward(model::Model& gpt, comm::Communicator& world, const StepOptions& o, const int* inputs,
                   const int* targets) {
  const int copies = o.data_parallel != nullptr ? o.data_parallel->replicas : 1;
  const Recording before = start_recording(gpt, world);
  StepResult result;
  result.loss = gpt.forward(inputs, targets, o.B / copies, o.T, /*step=*/0, /*train=*/false);
  stop_recording(gpt, world, before, result);
  return result;
}

}  // namespace

StepResult run_training_step(train::Layout layout, const model::GPTConfig& config, const core::Context& ctx,
                             comm::Communicator& world, const StepOptions& options, const int* inputs,
                             const int* targets) {
  const train::LayoutModel built = train::build_model(layout, config, options.seed, world, ctx, options.stage);
  return step(*built.model, world, options, inputs, targets);
}

StepResult run_forward_pass(train::Layout layout, const model::GPTConfig& config, const core::Context& ctx,
                            comm::Communicator& world, const StepOptions& options, const int* inputs,
                            const int* targets) {
  const train::LayoutModel built = train::build_model(layout, config, options.seed, world, ctx, options.stage);
  return forward(*built.model, world, options, inputs, targets);
}

}  // namespace optimus::plan
