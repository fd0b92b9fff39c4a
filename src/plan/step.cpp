// One training step, for a layout chosen by name; and the meta world each layout needs.
#include "plan/step.h"

#include "comm/grid.h"
#include "core/errors.h"
#include "serial/gpt.h"
#include "tp1d/gpt.h"
#include "tp2d/gpt.h"
#include "tp2d/shard_2d.h"
#include "train/optimizer.h"

namespace optimus::plan {

namespace {

// The trainer's step (train/trainer.cpp), without its checks and reports.
template <typename Model>
StepResult step(Model& gpt, const StepOptions& o, const int* inputs, const int* targets) {
  train::AdamW optimizer(gpt.params(), gpt.context(), train::AdamWOptions{});
  gpt.params().zero_grads();
  StepResult result;
  result.loss = gpt.forward(inputs, targets, o.B, o.T, /*step=*/0);
  gpt.backward();
  result.norm = gpt.clip_gradients(o.grad_clip);
  optimizer.update(gpt.params(), o.lr);
  result.after_step = *gpt.context().ledger;
  return result;
}

}  // namespace

StepResult run_training_step(const std::string& layout, const model::GPTConfig& config, const core::Context& ctx,
                             comm::Communicator& world, const StepOptions& options, const int* inputs,
                             const int* targets) {
  if (layout == "serial") {
    if (world.size() != 1) {
      throw core::ConfigError("the serial layout runs on 1 rank, not " + std::to_string(world.size()));
    }
    serial::GPT gpt(config, ctx, options.seed);
    return step(gpt, options, inputs, targets);
  }
  if (layout == "1d") {
    comm::Grid1D grid(world);
    tp1d::GPT gpt(config, ctx, options.seed, grid);
    return step(gpt, options, inputs, targets);
  }
  if (layout == "2d") {
    tp2d::check_divisible_2d(config, comm::Grid2D::side(world.size()));  // before the grid's splits
    comm::Grid2D grid(world);
    tp2d::GPT gpt(config, ctx, options.seed, grid);
    return step(gpt, options, inputs, targets);
  }
  throw core::ConfigError("unknown layout '" + layout.substr(0, 40) + "'; choose serial, 1d or 2d");
}

std::unique_ptr<comm::MetaCommunicator> meta_world(const std::string& layout, int ranks, int rank,
                                                   comm::CommLedger& ledger) {
  comm::SplitSizes splits;
  if (layout == "2d") {
    const int q = comm::Grid2D::side(ranks);
    splits = {{"row", q}, {"col", q}};
  }
  return comm::MetaCommunicator::world(ranks, rank, splits, ledger);
}

}  // namespace optimus::plan
