// Stage 2 (chapter 2): the GPT-2 model with Megatron's 1D tensor parallelism over p ranks.
// Weights are split (tp1d/shard_1d.h); activations (B*T, C) are replicated on every rank. Each
// attention and MLP branch is f → column-parallel linear → local work → row-parallel linear → g;
// the embedding and the loss are vocab-parallel. The code follows serial::GPT line by line, so a
// reader can hold the two side by side; every difference is a split or a collective.
// With sequence parallelism (Megatron's, chapter 5) the residual stream — the LayerNorms, the
// residual adds and their dropouts — is split too: rank r holds rows [r·N/p, (r+1)·N/p) of every
// (N, C) activation outside the parallel regions. f becomes an all-gather of those rows (and a
// reduce-scatter backward), g a reduce-scatter (and an all-gather backward); tp1d/mappings.h.
// With recomputation and without sequence parallelism, each block's input is kept split p ways (Megatron's
// distributed checkpoints) and all-gathered before the block is rerun.
#pragma once

#include <cstdint>
#include <vector>

#include "comm/grid.h"
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
#include "tp1d/mappings.h"

namespace optimus::tp1d {

/// Megatron's distributed checkpoints, with recomputation and without sequence parallelism: each
/// block's input is kept as this rank's 1/p of it, and Activations' encoded and outputs are not
/// allocated; the whole inputs and outputs of the blocks live in two buffers taken in turn
/// (whole[l % 2] is block l's input), and the backward pass all-gathers a block's input before
/// rerunning it. Only the 1D stage keeps them: its residual stream is replicated, so a rank can
/// keep 1/p of it and gather the rest again.
struct DistributedCheckpoints {
  std::vector<core::Buffer> pieces;  // L of (⌈Nl·C/p⌉): rank r's piece r of block l's input
  std::vector<core::Buffer> whole;   // 2 of (p·⌈Nl·C/p⌉), the first Nl·C being an (Nl, C)
};

class GPT final : public model::Stage {
 public:
  /// Collective-free: checks divisibility (ConfigError) and initialises this rank's shards from
  /// Philox, so the gathered model equals serial::GPT's under the same seed, bit for bit.
  /// memory chooses recomputation and sequence parallelism (chapter 5).
  GPT(const model::GPTConfig& config, const core::Context& ctx, uint32_t seed, const comm::Grid1D& grid,
      const model::StageOptions& memory = {});

  /// Forward pass on the global batch (every rank passes the same inputs and targets); returns the
  /// mean loss over the B*T tokens, the same on every rank. With sequence parallelism B·T must be
  /// a multiple of p (ConfigError).
  /// `slice`: the part of a larger batch these B sequences are (gradient accumulation); the
  /// returned loss is then their share of the larger batch's mean.
  float forward(const int* inputs, const int* targets, int B, int T, uint32_t step, bool train = true,
                const model::BatchSlice& slice = {}) override;
  void backward() override;
  /// Global-norm clipping; the norm counts every canonical element once (replicated tensors on
  /// rank 0 only), then one all-reduce of the squared sum.
  float clip_gradients(float max_norm) override;

  comm::Communicator& tp() const { return grid_.comm(); }
  /// The shard spec of any parameter on any rank of this layout (for gather).
  model::SpecOfRank spec_of() const override;

 private:
  model::LocalShapes local_shapes(int B, int T) const;  // what this rank holds of a batch (B, T)
  void allocate_checkpoints(int64_t Nl);
  float* residual(int l) const;  // model::Stage::residual, or the distributed checkpoints' buffers
  void keep_checkpoint(int l);
  void restore_checkpoint(int l);
  void embedding_forward(float* out, const float* wte, const float* wpe);
  void embedding_backward(float* dwte, float* dwpe);
  void block_forward(int l, const float* x, float* out);
  void block_backward(int l, const float* x);

  comm::Grid1D grid_;
  int p_, r_;
  Region region_;     // f and g over the p ranks, replicated or sequence parallel
  bool distributed_;  // distributed checkpoints: recomputation without sequence parallelism
  DistributedCheckpoints checkpoints_;
  // acts_ (model::Stage) has target_logits, and no encoded or outputs under distributed checkpoints.
};

}  // namespace optimus::tp1d
