// Stage 2 (chapter 2): the GPT-2 model with Megatron's 1D tensor parallelism over p ranks.
// Weights are split (tp1d/shard_1d.h); activations (B*T, C) are replicated on every rank. Each
// attention and MLP branch is f → column-parallel linear → local work → row-parallel linear → g;
// the embedding and the loss are vocab-parallel. The code follows serial::GPT line by line, so a
// reader can hold the two side by side; every difference is a split or a collective.
#pragma once

#include <cstdint>
#include <vector>

#include "comm/grid.h"
#include "core/context.h"
#include "core/ops.h"
#include "core/tensor.h"
#include "model/activation_block.h"
#include "model/config.h"
#include "model/gather.h"
#include "model/named_params.h"
#include "model/param_set.h"

namespace optimus::tp1d {

/// What one block keeps for backward. N = B*T; Cp = C/p, Fp = F/p, NHp = NH/p (this rank's share).
struct BlockActivations {
  core::Buffer ln1, ln1_mean, ln1_rstd;  // (N, C), (N), (N) replicated
  core::Buffer qkv;                      // (N, 3Cp) this rank's heads' Q | K | V
  core::Buffer att;                      // (B, NHp, T, T)
  core::Buffer atty;                     // (N, Cp)
  core::Buffer attproj;                  // (N, C) after g, bias and dropout: replicated
  core::Buffer res1;                     // (N, C)
  core::Buffer ln2, ln2_mean, ln2_rstd;  // (N, C), (N), (N)
  core::Buffer fch, fch_gelu;            // (N, Fp)
  core::Buffer fcproj;                   // (N, C) after g, bias and dropout
  core::Buffer res2;                     // (N, C)
};

struct Activations {
  int B = 0, T = 0;
  model::ActivationBlock block;     // every row and column; of the heads, this rank's NH/p
  core::IntBuffer inputs, targets;  // (B, T) every rank holds the whole batch
  core::Buffer encoded;             // (N, C)
  std::vector<BlockActivations> blocks;
  core::Buffer lnf, lnf_mean, lnf_rstd;               // (N, C), (N), (N)
  core::Buffer logits;                                // (N, Vp) this rank's vocabulary columns, Vp = ⌈V/p⌉
  core::Buffer ce_max, ce_sumexp, ce_target, losses;  // (N) each, full-row values after the all-reduces
};

struct BackwardScratch {
  core::Buffer d_res, d_branch, d_ln;  // (N, C)
  core::Buffer d_atty;                 // (N, Cp)
  core::Buffer d_qkv;                  // (N, 3Cp)
  core::Buffer d_att;                  // (B, NHp, T, T)
  core::Buffer d_fch, d_fch_gelu;      // (N, Fp)
  core::Buffer d_logits;               // (N, Vp)
};

class GPT {
 public:
  /// Collective-free: checks divisibility (ConfigError) and initialises this rank's shards from
  /// Philox, so the gathered model equals serial::GPT's under the same seed, bit for bit.
  GPT(const model::GPTConfig& config, const core::Context& ctx, uint32_t seed, const comm::Grid1D& grid);

  /// Forward pass on the global batch (every rank passes the same inputs and targets); returns the
  /// mean loss over the B*T tokens, the same on every rank.
  float forward(const int* inputs, const int* targets, int B, int T, uint32_t step, bool train = true);
  void backward();
  /// Global-norm clipping; the norm counts every canonical element once (replicated tensors on
  /// rank 0 only), then one all-reduce of the squared sum.
  float clip_gradients(float max_norm);

  model::ParamSet& params() { return params_; }
  const model::ParamSet& params() const { return params_; }
  const model::GPTConfig& config() const { return config_; }
  const Activations& activations() const { return acts_; }
  const core::Context& context() const { return ctx_; }
  comm::Communicator& tp() const { return grid_.comm(); }
  /// The shard spec of any parameter on any rank of this layout (for gather).
  model::SpecOfRank spec_of() const;

 private:
  void ensure_buffers(int B, int T);
  core::DropoutSpec dropout_spec(int layer, core::DropoutSite site) const;
  void block_forward(int l, const float* x);
  void block_backward(int l, const float* x);

  model::GPTConfig config_;
  core::Context ctx_;
  uint32_t seed_;
  comm::Grid1D grid_;
  int p_, r_;
  model::ParamSet params_;
  model::ModelParams param_;  // params_'s values by name
  model::ModelParams grad_;   // params_'s gradients by name
  Activations acts_;
  BackwardScratch scratch_;
  uint32_t step_ = 0;
  bool train_ = true;
};

}  // namespace optimus::tp1d
