// Stage 1 (chapter 1): the GPT-2 model on one device, built only from the core's ops.
// forward() runs embedding → L blocks → ln_f → tied LM head → mean cross-entropy and keeps the
// activations; backward() walks the same path in reverse, accumulating into the parameters'
// gradients. Activations are allocated once per batch shape through the ledger, on the context's
// device: the same code runs on the CPU and on a GPU (chapter 1's GPU section). With recomputation
// (chapter 5) the forward pass keeps only each block's output, and the backward pass reruns a
// block's forward into one shared working set just before that block's backward.
#pragma once

#include <cstdint>
#include <vector>

#include "core/context.h"
#include "core/ops.h"
#include "core/tensor.h"
#include "model/activation_block.h"
#include "model/activations.h"
#include "model/config.h"
#include "model/gather.h"
#include "model/gradient_listener.h"
#include "model/model.h"
#include "model/named_params.h"
#include "model/param_set.h"
#include "model/stage.h"

namespace optimus::serial {

class GPT final : public model::Stage {
 public:
  /// A freshly initialised model (Philox under `seed`, keyed by canonical indices, so every layout
  /// draws the same weights). Dropout masks also use `seed`.
  /// memory.recompute chooses what the forward pass keeps; sequence parallelism is a 1D mode
  /// (ConfigError here).
  GPT(const model::GPTConfig& config, const core::Context& ctx, uint32_t seed, const model::StageOptions& memory = {});

  /// Runs the forward pass on inputs and targets (B, T), host memory, and returns the mean loss
  /// over the B*T tokens. `step` keys the dropout masks; `train` = false turns dropout off (evaluation).
  /// `slice`: the part of a larger batch these B sequences are (gradient accumulation); the
  /// returned loss is then their share of the larger batch's mean.
  float forward(const int* inputs, const int* targets, int B, int T, uint32_t step, bool train = true,
                const model::BatchSlice& slice = {}) override;
  /// Accumulates the gradient of the last forward's mean loss into params().grad. Call zero_grads first.
  void backward() override;

  /// Clips the gradients to a global norm of max_norm as torch.nn.utils.clip_grad_norm_ does
  /// (max_norm <= 0: no clipping) and returns the norm before clipping.
  float clip_gradients(float max_norm) override;

  /// Every tensor whole, on the one rank there is (for gather, like the parallel stages).
  model::SpecOfRank spec_of() const override {
    return [](const model::ParamInfo& info, int) { return model::ShardSpec::whole(info.shape); };
  }

 private:
  model::LocalShapes local_shapes(int B, int T) const;  // what this rank holds of a batch (B, T)
  void block_forward(int l, const float* x);
  void block_backward(int l, const float* x);
};

}  // namespace optimus::serial
