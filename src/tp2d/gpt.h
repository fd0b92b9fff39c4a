// Stage 3 (chapter 3): the GPT-2 model with Optimus's 2D tensor parallelism over a q×q grid.
// Weights AND activations are split (tp2d/shard_2d.h): rank (i, j) holds the (N/q, C/q) tile of
// every activation — the B/q sequences of batch block i, the C/q hidden columns of block j — and
// block (i, j) of every weight. Every linear is a SUMMA product (tp2d/summa.h), LayerNorm and the
// loss all-reduce along the grid's row, attention is local to (batch block i, head group j), the
// embedding reduce-scatters down the column. The code follows tp1d::GPT and serial::GPT line by
// line; every difference is a tile instead of a whole matrix, or a row or column collective.
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

namespace optimus::tp2d {

class GPT final : public model::Stage {
 public:
  /// Collective-free: checks divisibility (ConfigError) and initialises this rank's shards from
  /// Philox, so the gathered model equals serial::GPT's under the same seed, bit for bit.
  /// memory.recompute chooses what the forward pass keeps (chapter 5); sequence parallelism is a
  /// 1D mode (ConfigError here). memory.overlap must be the grid's (Grid2D::overlap), which is what
  /// SUMMA reads (std::invalid_argument otherwise).
  GPT(const model::GPTConfig& config, const core::Context& ctx, uint32_t seed, const comm::Grid2D& grid,
      const model::StageOptions& memory = {});

  /// Forward pass on the global batch (every rank passes the same inputs and targets); returns the
  /// mean loss over all B*T tokens, the same on every rank. B must be a multiple of q (ConfigError).
  /// `slice`: the part of a larger batch these B sequences are (gradient accumulation); the
  /// returned loss is then their share of the larger batch's mean.
  float forward(const int* inputs, const int* targets, int B, int T, uint32_t step, bool train = true,
                const model::BatchSlice& slice = {}) override;
  /// Backward pass, ending with the one column all-reduce of the 1-D parameters' gradients, so
  /// that afterwards every gradient is the whole gradient of its shard.
  void backward() override;
  /// Global-norm clipping; the norm counts every canonical element once (column-replicated tensors
  /// on grid row 0 only), then one all-reduce over the world of the squared sum.
  float clip_gradients(float max_norm) override;

  const comm::Grid2D& grid() const { return grid_; }
  /// The shard spec of any parameter on any rank of this layout (for gather), the ranks numbered as
  /// in the communicator the grid was built on: placement.position(rank) is that rank's (i, j).
  model::SpecOfRank spec_of() const override;

 private:
  model::LocalShapes local_shapes(int B, int T) const;  // what this rank holds of a batch (B, T)
  void block_forward(int l, const float* x);
  void block_backward(int l, const float* x);

  const comm::Grid2D& grid_;
  int q_, i_, j_;
  int Vb_;  // vocabulary rows of a block (and logit columns of a rank): ⌈V/q⌉
  // acts_ (model::Stage) has target_logits; its targets are my B/q sequences'.
};

}  // namespace optimus::tp2d
