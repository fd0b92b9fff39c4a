// What every stage's GPT is to the code that trains, evaluates, checkpoints and plans it: a forward
// pass, a backward pass, clipping, the parameters and how they are sharded. The four stages
// (serial::GPT, tp1d::GPT, tp2d::GPT, tp3d::GPT) implement it, each with its own layout of the same
// canonical model; the trainer, the benchmark and the planner are written once against it. This and
// comm::Communicator are the project's class hierarchies (besides the one-method callback
// model::GradientListener); the CPU/CUDA split is dispatch on the context's device, not a hierarchy.
#pragma once

#include <cstdint>

#include "core/context.h"
#include "model/activation_block.h"
#include "model/config.h"
#include "model/gather.h"
#include "model/gradient_listener.h"
#include "model/param_set.h"

namespace optimus::model {

class Model {
 public:
  virtual ~Model() = default;

  /// Runs the forward pass on the global batch (B sequences of T token ids each for inputs and
  /// targets, host memory, the same on every rank of the stage) and returns the mean loss over its
  /// B·T tokens, the same on every rank. `step` keys the dropout masks; `train` = false turns
  /// dropout off (evaluation). `slice`: the part of a larger batch these B sequences are (gradient
  /// accumulation); the returned loss is then their share of the larger batch's mean.
  virtual float forward(const int* inputs, const int* targets, int B, int T, uint32_t step, bool train = true,
                        const BatchSlice& slice = {}) = 0;
  /// Adds the gradient of the last forward pass's loss to params()'s gradients (zero them first).
  virtual void backward() = 0;
  /// Clips the gradients to a global norm of max_norm (0 or less: no clipping), as
  /// torch.nn.utils.clip_grad_norm_ does, and returns the norm before clipping, the same on every rank.
  virtual float clip_gradients(float max_norm) = 0;
  /// Tells `listener` (nullptr: nobody) as the backward pass of a step's last part completes the
  /// parameters' gradients, block by block (model/gradient_listener.h): data parallelism listens.
  virtual void set_gradient_listener(GradientListener* listener) = 0;

  /// This rank's shards of the parameters, their gradients alongside.
  virtual ParamSet& params() = 0;
  virtual const ParamSet& params() const = 0;
  virtual const GPTConfig& config() const = 0;
  /// Where the model's memory and ops are: the CPU, a GPU, or the meta device.
  virtual const core::Context& context() const = 0;
  /// The shard spec of any parameter on any rank of this layout (for gather and checkpoints).
  virtual SpecOfRank spec_of() const = 0;
};

}  // namespace optimus::model
