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
#include "model/config.h"
#include "model/gather.h"
#include "model/gradient_listener.h"
#include "model/model.h"
#include "model/named_params.h"
#include "model/param_set.h"

namespace optimus::tp1d {

/// What one block's forward computes and its backward reads (its output is kept apart, in
/// Activations::outputs). N = B*T; Cp = C/p, Fp = F/p, NHp = NH/p (this rank's share); Nl = N
/// rows of the residual stream, replicated, or N/p with sequence parallelism.
struct BlockActivations {
  core::Buffer ln1, ln1_mean, ln1_rstd;  // (Nl, C), (Nl), (Nl)
  core::Buffer qkv;                      // (N, 3Cp) this rank's heads' Q | K | V
  core::Buffer att;                      // (B, NHp, T, T)
  core::Buffer atty;                     // (N, Cp)
  core::Buffer res1;                     // (Nl, C)
  core::Buffer ln2, ln2_mean, ln2_rstd;  // (Nl, C), (Nl), (Nl)
  core::Buffer fch, fch_gelu;            // (N, Fp)
};

struct Activations {
  int B = 0, T = 0;
  model::ActivationBlock block;          // every column; of the heads, this rank's NH/p; rows [n0, n0 + Nl)
  core::IntBuffer inputs, targets;       // (B, T) every rank holds the whole batch
  core::Buffer encoded;                  // (Nl, C)
  std::vector<BlockActivations> blocks;  // L working sets, or 1 with recomputation (working_set)
  std::vector<core::Buffer> outputs;     // L of (Nl, C): block l's output, block l+1's input
  // Megatron's distributed checkpoints, with recomputation and without sequence parallelism: each
  // block's input is kept as this rank's 1/p of it, and encoded and outputs are not allocated;
  // the whole inputs and outputs of the blocks live in two buffers taken in turn (whole[l % 2] is
  // block l's input), and the backward pass all-gathers a block's input before rerunning it.
  std::vector<core::Buffer> checkpoints;              // L of (⌈Nl·C/p⌉): rank r's piece r of block l's input
  std::vector<core::Buffer> whole;                    // 2 of (p·⌈Nl·C/p⌉), the first Nl·C being an (Nl, C)
  core::Buffer branch;                                // (Nl, C) workspace, not kept: a branch's output (g, bias,
                                                      // dropout) until the residual add reads it
  core::Buffer lnf, lnf_mean, lnf_rstd;               // (Nl, C), (Nl), (Nl)
  core::Buffer logits;                                // (N, Vp) this rank's vocabulary columns, Vp = ⌈V/p⌉
  core::Buffer ce_max, ce_sumexp, ce_target, losses;  // (N) each, full-row values after the all-reduces
};

struct BackwardScratch {
  core::Buffer d_res, d_branch, d_ln;  // (Nl, C)
  core::Buffer d_atty;                 // (N, Cp)
  core::Buffer d_qkv;                  // (N, 3Cp)
  core::Buffer d_att;                  // (B, NHp, T, T)
  core::Buffer d_fch, d_fch_gelu;      // (N, Fp)
  core::Buffer d_logits;               // (N, Vp)
  // With sequence parallelism only: the receive buffer of an all-gather (every rank's rows, the
  // whole input of a parallel region or the whole gradient of its output), and the send buffer of
  // a reduce-scatter (this rank's partial sum over all rows).
  core::Buffer gathered, partial;  // (N, C) each
};

class GPT final : public model::Model {
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
  /// Tells `listener` (nullptr: nobody) as the backward pass of a step's last part completes the
  /// parameters' gradients, block by block (model/gradient_listener.h): data parallelism listens.
  void set_gradient_listener(model::GradientListener* listener) override { listener_ = listener; }

  model::ParamSet& params() override { return params_; }
  const model::ParamSet& params() const override { return params_; }
  const model::GPTConfig& config() const override { return config_; }
  const Activations& activations() const { return acts_; }
  const core::Context& context() const override { return ctx_; }
  comm::Communicator& tp() const { return grid_.comm(); }
  /// The shard spec of any parameter on any rank of this layout (for gather).
  model::SpecOfRank spec_of() const override;

 private:
  void ensure_buffers(int B, int T);
  model::ActivationBlock block_of(int B, int T) const;                    // this rank's block of a batch of B
  int64_t batch_tokens() const { return acts_.block.B * acts_.block.T; }  // the step's tokens
  core::DropoutSpec dropout_spec(int layer, core::DropoutSite site) const;
  BlockActivations& working_set(int l);
  float* residual(int l);
  void keep_checkpoint(int l);
  void restore_checkpoint(int l);
  void embedding_forward(float* out, const float* wte, const float* wpe);
  void embedding_backward(float* dwte, float* dwpe);
  void block_forward(int l, const float* x, float* out);
  void block_backward(int l, const float* x);
  // A column-parallel linear from my rows of the residual stream, a row-parallel one back to
  // them: f and g, or with sequence parallelism their all-gather / reduce-scatter forms.
  void column_parallel_forward(float* out, const float* inp, const float* w, const float* b, int OCp);
  void column_parallel_backward(const core::LayerGrads& add_to, const float* dout, const float* inp, const float* w,
                                int OCp);
  void row_parallel_forward(float* out, const float* inp, const float* w, const float* b, int Kp);
  void row_parallel_backward(const core::LayerGrads& add_to, const float* dout, const float* inp, const float* w,
                             int Kp);

  model::GPTConfig config_;
  core::Context ctx_;
  uint32_t seed_;
  comm::Grid1D grid_;
  int p_, r_;
  model::Recompute recompute_;
  bool sp_;           // sequence parallelism
  bool distributed_;  // distributed checkpoints: recomputation without sequence parallelism
  model::ParamSet params_;
  model::ModelParams param_;  // params_'s values by name
  model::ModelParams grad_;   // params_'s gradients by name
  Activations acts_;
  BackwardScratch scratch_;
  uint32_t step_ = 0;
  bool train_ = true;
  bool last_part_ = true;  // the forward's BatchSlice::last: backward sums the gradients computed apart
  model::GradientListener* listener_ = nullptr;
};

}  // namespace optimus::tp1d
