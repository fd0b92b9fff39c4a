// Stage 4 (chapter 7): the GPT-2 model with 3D tensor parallelism over a q×q×q cube. Every weight
// and every activation is cut into q³ pieces (tp3d/shard_3d.h): the residual stream as a standard
// product's X — rank (i, j, k) holds the N/q² rows of piece i·q + k (B/q² whole sequences) and the
// C/q columns of block j — and every linear is a 3D product (tp3d/product.h), c_attn and c_fc
// standard, the two projections exchanged, so each branch returns to the residual stream's layout.
// LayerNorm all-reduces along the row, attention is local to (sequences, head group), the loss
// all-reduces along the depth, the embedding reduce-scatters down the column and along the depth.
// The code follows tp2d::GPT line by line; every difference is a cube piece instead of a tile, a
// 3D product instead of SUMMA, or a line of the cube instead of a row or column of the grid.
#pragma once

#include <cstdint>

#include "comm/grid.h"
#include "core/context.h"
#include "model/activations.h"
#include "model/config.h"
#include "model/stage.h"

namespace optimus::tp3d {

class GPT final : public model::Stage {
 public:
  /// Collective-free: checks divisibility (ConfigError) and initialises this rank's shards from
  /// Philox, so the gathered model equals serial::GPT's under the same seed, bit for bit.
  /// memory.recompute chooses what the forward pass keeps; sequence parallelism (a 1D mode) is
  /// std::invalid_argument here, and overlap changes nothing in the stage (it hides 2D's SUMMA and
  /// data parallelism's sums, which wrap any stage).
  GPT(const model::GPTConfig& config, const core::Context& ctx, uint32_t seed, const comm::Grid3D& cube,
      const model::StageOptions& memory = {});

  /// Forward pass on the global batch (every rank passes the same inputs and targets); returns the
  /// mean loss over all B·T tokens, the same on every rank. B must be a multiple of q² (ConfigError).
  float forward(const int* inputs, const int* targets, int B, int T, uint32_t step, bool train = true,
                const model::BatchSlice& slice = {}) override;
  /// Backward pass, ending with the sums of the replicated 1-D parameters' gradients over their q²
  /// copies (three flat buckets), so that afterwards every gradient is the whole gradient of its shard.
  void backward() override;
  /// Global-norm clipping; the norm counts every canonical element once (a replicated tensor on its
  /// owner only), then one all-reduce over the world of the squared sum.
  float clip_gradients(float max_norm) override;

  const comm::Grid3D& cube() const { return cube_; }
  /// The shard spec of any parameter on any rank of the communicator the cube was built on:
  /// placement.position(rank) is that rank's (i, j, k).
  model::SpecOfRank spec_of() const override;

 private:
  model::LocalShapes local_shapes(int B, int T) const;  // what this rank holds of a batch (B, T)
  void block_forward(int l, const float* x);
  void block_backward(int l, const float* x);

  const comm::Grid3D& cube_;
  int q_, i_, j_, k_;
  int Vp_;  // the padded vocabulary q²·⌈V/q²⌉: wte's rows, the logits' columns
};

}  // namespace optimus::tp3d
