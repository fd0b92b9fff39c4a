// One training step, for a layout chosen by name; and the meta world each layout needs.
#include "plan/step.h"

#include <optional>

#include "comm/grid.h"
#include "core/errors.h"
#include "serial/gpt.h"
#include "tp1d/gpt.h"
#include "tp2d/gpt.h"
#include "tp2d/shard_2d.h"
#include "train/data_parallel.h"
#include "train/optimizer.h"

namespace optimus::plan {

namespace {

// What `run` (a step or a pass) records from now on: the ledgers' snapshots before it.
struct Recording {
  core::OpLedger ops;
  comm::CommLedger comm;
};

template <typename Model>
Recording start_recording(Model& gpt, comm::Communicator& world) {
  return {gpt.context().ops != nullptr ? *gpt.context().ops : core::OpLedger{}, world.ledger().snapshot()};
}

template <typename Model>
void stop_recording(Model& gpt, comm::Communicator& world, const Recording& before, StepResult& result) {
  result.after_step = gpt.context().ledger->snapshot();
  if (gpt.context().ops != nullptr) result.ops = gpt.context().ops->since(before.ops);
  result.comm = world.ledger().since(before.comm);
}

// The trainer's step (train/trainer.cpp), without its checks and reports.
template <typename Model>
StepResult step(Model& gpt, comm::Communicator& world, const StepOptions& o, const int* inputs, const int* targets) {
  train::AdamW optimizer(gpt.params(), gpt.context(), train::AdamWOptions{});
  std::optional<train::SumOverCopies<Model>> copies;
  if (o.data_parallel != nullptr) copies.emplace(gpt, *o.data_parallel, o.memory.overlap);
  const Recording before = start_recording(gpt, world);
  gpt.params().zero_grads();
  StepResult result;
  result.loss = gpt.forward(inputs, targets, o.B, o.T, /*step=*/0);
  gpt.backward();
  result.norm = gpt.clip_gradients(o.grad_clip);
  optimizer.update(gpt.params(), o.lr);
  stop_recording(gpt, world, before, result);
  return result;
}

// The bench's forward (train/bench.cpp): evaluation mode, the loss computed.
template <typename Model>
StepResult forward(Model& gpt, comm::Communicator& world, const StepOptions& o, const int* inputs, const int* targets) {
  const Recording before = start_recording(gpt, world);
  StepResult result;
  result.loss = gpt.forward(inputs, targets, o.B, o.T, /*step=*/0, /*train=*/false);
  stop_recording(gpt, world, before, result);
  return result;
}

// Builds the model of `layout` and hands it to `run`.
template <typename Run>
StepResult with_gpt(const std::string& layout, const model::GPTConfig& config, const core::Context& ctx,
                    comm::Communicator& world, uint32_t seed, const model::StageOptions& memory, Run&& run) {
  if (layout != "1d") model::require_no_sequence_parallel(memory, layout);
  if (layout == "serial") {
    if (world.size() != 1) {
      throw core::ConfigError("the serial layout runs on 1 rank, not " + std::to_string(world.size()));
    }
    serial::GPT gpt(config, ctx, seed, memory);
    return run(gpt);
  }
  if (layout == "1d") {
    comm::Grid1D grid(world);
    tp1d::GPT gpt(config, ctx, seed, grid, memory);
    return run(gpt);
  }
  if (layout == "2d") {
    tp2d::check_divisible_2d(config, comm::Grid2D::side(world.size()));  // before the grid's splits
    comm::Grid2D grid(world, memory.placement, memory.overlap);
    tp2d::GPT gpt(config, ctx, seed, grid, memory);
    return run(gpt);
  }
  throw core::ConfigError("unknown layout '" + layout.substr(0, 40) + "'; choose serial, 1d or 2d");
}

}  // namespace

StepResult run_training_step(const std::string& layout, const model::GPTConfig& config, const core::Context& ctx,
                             comm::Communicator& world, const StepOptions& options, const int* inputs,
                             const int* targets) {
  return with_gpt(layout, config, ctx, world, options.seed, options.memory,
                  [&](auto& gpt) { return step(gpt, world, options, inputs, targets); });
}

StepResult run_forward_pass(const std::string& layout, const model::GPTConfig& config, const core::Context& ctx,
                            comm::Communicator& world, const StepOptions& options, const int* inputs,
                            const int* targets) {
  return with_gpt(layout, config, ctx, world, options.seed, options.memory,
                  [&](auto& gpt) { return forward(gpt, world, options, inputs, targets); });
}

std::unique_ptr<comm::MetaCommunicator> meta_world(const std::string& layout, int ranks, int rank,
                                                   comm::CommLedger& ledger, int data_parallel) {
  comm::SplitSizes splits;
  if (layout == "2d") {
    const int q = comm::Grid2D::side(ranks);
    splits = {{"row", q}, {"col", q}, {"world", ranks}};  // "world": a block placement's renumbered grid
  }
  if (data_parallel > 1) splits["model"] = ranks, splits["data"] = data_parallel;
  return comm::MetaCommunicator::world(ranks * data_parallel, rank, splits, ledger);
}

}  // namespace optimus::plan
