// Stage 3: the Optimus 2D GPT. Read it beside tp1d/gpt.cpp: the same forward and backward, with
// every activation a tile. The communication: SUMMA broadcasts and reduces in every linear and in
// the tied LM head; two row all-reduces per LayerNorm forward and one per backward; three row
// all-reduces in the loss and a column all-reduce for its global mean; the embedding's column
// reduce-scatter and all-gather; one column all-reduce of the 1-D parameters' gradients (a flat
// bucket); one world all-reduce for the gradient norm.
#include "tp2d/gpt.h"

#include <stdexcept>

#include "comm/scalar.h"
#include "core/errors.h"
#include "model/gradient_bucket.h"
#include "tp2d/layers.h"
#include "tp2d/shard_2d.h"
#include "tp2d/summa.h"

namespace optimus::tp2d {

using core::DropoutSite;

GPT::GPT(const model::GPTConfig& config, const core::Context& ctx, uint32_t seed, const comm::Grid2D& grid,
         const model::StageOptions& memory)
    : Stage(config, ctx, seed, memory), grid_(grid), q_(grid.q()), i_(grid.i()), j_(grid.j()) {
  if (memory.sequence_parallel)
    throw std::invalid_argument("tp2d::GPT: sequence parallelism is a mode of the 1D stage");
  if (grid.overlap() != memory.overlap) {
    throw std::invalid_argument(
        "tp2d::GPT: the grid's overlap and the stage options' differ; build the grid as "
        "comm::Grid2D(world, options.overlap)");
  }
  check_divisible_2d(config_, q_);
  Vb_ = vocab_block(config_, q_);
  const int q = q_, i = i_, j = j_;
  create_params([q, i, j](const model::ParamInfo& info) { return spec_2d(info, q, i, j); });
}

model::SpecOfRank GPT::spec_of() const {
  // `rank` counts the ranks of the communicator the grid was built on, placed as the grid's are.
  const int q = q_;
  return [q, placement = grid_.placement()](const model::ParamInfo& info, int rank) {
    const auto [i, j] = placement.position(rank, q);
    return spec_2d(info, q, i, j);
  };
}

// Batch block i (its B/q sequences, so rows [i·N/q, (i+1)·N/q)), C block j, head group j, vocabulary
// block j of the logits.
// Every tile then drops exactly the canonical elements the serial run drops (model::Stage::
// dropout_spec): an activation tile is rows [i·N/q, (i+1)·N/q) and columns [j·C/q, (j+1)·C/q) of
// the canonical (N, C); the attention probabilities of my (batch block, head group) are the block
// (B/q, NH/q, T*T) at offset (i·B/q, j·NH/q, 0) of the canonical (B, NH, T*T). (The original
// Optimus code drew the same mask on every tile, which correlates the tiles' dropout.)
model::LocalShapes GPT::local_shapes(int B, int T) const {
  const int64_t Bb = B / q_, Nb = Bb * T, Cb = config_.n_embd / q_, NHb = config_.n_head / q_;
  return {.mine = {.B = B,
                   .T = T,
                   .b0 = i_ * Bb,
                   .Bl = Bb,
                   .c0 = j_ * Cb,
                   .Cl = Cb,
                   .h0 = j_ * NHb,
                   .NHl = NHb,
                   .n0 = i_ * Nb,
                   .Nl = Nb},
          .Cr = Cb,
          .Fr = config_.ffn() / q_,
          .Vr = Vb_,
          .target_logits = true};
}

// ---- forward ------------------------------------------------------------------------------------

float GPT::forward(const int* inputs, const int* targets, int B, int T, uint32_t step, bool train,
                   const model::BatchSlice& slice) {
  model::check_sequence_length(config_, T);
  check_batch_divisible_2d(B, q_);
  const model::LocalShapes local = local_shapes(B, T);
  model::ensure_buffers(acts_, scratch_, ctx_, config_, recompute_, local);
  model::begin_forward(acts_, ctx_, local, inputs, targets, step, train, slice);  // my rows' targets
  const int N = B * T, Nb = N / q_, C = config_.n_embd, Cb = C / q_, V = Vb_ * q_;
  const float eps = config_.layer_norm_epsilon;
  const model::ModelParams& w = weights_;  // w.wte (Vb, Cb): vocabulary block i, C block j

  // Embedding: look up every token in my vocabulary block, reduce-scatter down the column (my rows).
  embedding_2d_forward(ctx_, grid_, acts_.encoded.data(), acts_.inputs.data(), w.wte, N, C, V);
  core::position_add_forward(ctx_, acts_.encoded.data(), w.wpe, B / q_, T, Cb);
  core::dropout_forward(ctx_, acts_.encoded.data(), acts_.encoded.data(), dropout_spec(0, DropoutSite::embedding));

  for (int l = 0; l < config_.n_layer; ++l) block_forward(l, residual(l));
  const float* x = residual(config_.n_layer);

  // Final LayerNorm (row statistics), tied LM head by SUMMA A·Bᵀ (logits of batch block i for
  // vocabulary block j), vocab-parallel cross-entropy along the row.
  layernorm_2d_forward(ctx_, grid_, acts_.lnf.data(), acts_.lnf_mean.data(), acts_.lnf_rstd.data(), x, w.ln_f_w,
                       w.ln_f_b, N, C, eps);
  summa_abt(ctx_, grid_, acts_.logits.data(), acts_.lnf.data(), w.wte, N, V, C);  // (N, V) = (N, C)·(V, C)ᵀ
  vocab_parallel_cross_entropy_2d(ctx_, grid_, acts_.losses.data(), acts_.ce_max.data(), acts_.ce_sumexp.data(),
                                  acts_.ce_target.data(), acts_.logits.data(), acts_.targets.data(), N, V,
                                  config_.vocab_size);
  // The loss is the mean over all B·T tokens of the global batch (not a mean of the blocks' means):
  // my rows' sum, summed down the column (the ranks of a row hold the same rows' losses).
  double sum = 0.0;
  core::sum(ctx_, &sum, acts_.losses.data(), Nb);
  sum = comm::all_reduce_scalar(grid_.col_comm(), ctx_, sum);
  return static_cast<float>(sum / static_cast<double>(acts_.batch_tokens()));
}

// One block, into outputs[l] (the same steps as serial::GPT's, each on tiles; each branch's
// output through scratch, as there).
void GPT::block_forward(int l, const float* x) {
  model::BlockActivations& a = acts_.working_set(l);
  float* out = acts_.outputs[static_cast<size_t>(l)].data();
  float* branch = acts_.branch.data();  // (Nb, Cb) scratch
  const model::BlockParams& w = weights_.blocks[static_cast<size_t>(l)];
  const int B = acts_.B, T = acts_.T, N = B * T, Nb = N / q_, C = config_.n_embd, Cb = C / q_, F = config_.ffn(),
            Fb = F / q_, NHb = config_.n_head / q_;
  const float eps = config_.layer_norm_epsilon;

  // Attention: LayerNorm → c_attn by SUMMA (head group j's Q, K, V for batch block i) → attention
  // on my (sequence, head) pairs, no communication → c_proj by SUMMA → bias → dropout → residual.
  layernorm_2d_forward(ctx_, grid_, a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), x, w.ln_1_w, w.ln_1_b, N, C,
                       eps);
  linear_2d_forward(ctx_, grid_, a.qkv.data(), a.ln1.data(), w.c_attn_w, w.c_attn_b, N, C, 3 * C);
  core::attention_forward(ctx_, a.atty.data(), a.att.data(), a.qkv.data(), B / q_, T, Cb, NHb,
                          dropout_spec(l, DropoutSite::attention_probs));
  linear_2d_forward(ctx_, grid_, branch, a.atty.data(), w.attn_proj_w, w.attn_proj_b, N, C, C);
  core::dropout_forward(ctx_, branch, branch, dropout_spec(l, DropoutSite::attn_residual));
  core::residual_forward(ctx_, a.res1.data(), x, branch, int64_t{Nb} * Cb);

  // MLP: LayerNorm → c_fc by SUMMA → GELU on my tile → c_proj by SUMMA → bias → dropout → residual.
  layernorm_2d_forward(ctx_, grid_, a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.res1.data(), w.ln_2_w,
                       w.ln_2_b, N, C, eps);
  linear_2d_forward(ctx_, grid_, a.fch.data(), a.ln2.data(), w.c_fc_w, w.c_fc_b, N, C, F);
  core::gelu_forward(ctx_, a.fch_gelu.data(), a.fch.data(), int64_t{Nb} * Fb);
  linear_2d_forward(ctx_, grid_, branch, a.fch_gelu.data(), w.mlp_proj_w, w.mlp_proj_b, N, F, C);
  core::dropout_forward(ctx_, branch, branch, dropout_spec(l, DropoutSite::mlp_residual));
  core::residual_forward(ctx_, out, a.res1.data(), branch, int64_t{Nb} * Cb);
}

// ---- backward -----------------------------------------------------------------------------------
// As in serial::GPT, every op adds into its gradient outputs; an activation gradient that one op
// makes is passed zeroed.

void GPT::backward() {
  const int B = acts_.B, T = acts_.T, N = B * T, Nb = N / q_, C = config_.n_embd, Cb = C / q_, V = Vb_ * q_;
  model::BackwardScratch& s = scratch_;
  const model::ModelParams &w = weights_, &dw = grads_;

  // Loss: my tile's share of (softmax − onehot) / N, from the full-row statistics; no communication.
  core::crossentropy_backward(ctx_, core::zeroed(ctx_, s.d_logits), acts_.logits.data(), acts_.ce_max.data(),
                              acts_.ce_sumexp.data(), acts_.targets.data(),
                              1.0f / static_cast<float>(acts_.batch_tokens()), Nb, Vb_, j_ * Vb_, config_.vocab_size);
  // LM head, the backward of A·Bᵀ: d_lnf = d_logits · wte (SUMMA A·B), dwte += d_logitsᵀ · lnf (SUMMA Aᵀ·B).
  summa_abt_backward(ctx_, grid_, core::zeroed(ctx_, s.d_ln), dw.wte, s.d_logits.data(), acts_.lnf.data(), w.wte, N, V,
                     C);
  layernorm_2d_backward(ctx_, grid_, {.dinp = core::zeroed(ctx_, s.d_res), .dweight = dw.ln_f_w, .dbias = dw.ln_f_b},
                        s.d_ln.data(), residual(config_.n_layer), w.ln_f_w, acts_.lnf_mean.data(),
                        acts_.lnf_rstd.data(), N, C);

  // With recomputation each block first reruns its forward (its SUMMA products and LayerNorm
  // all-reduces too) from its input, which refills the working set its backward reads.
  for (int l = config_.n_layer - 1; l >= 0; --l) {
    if (recompute_ == model::Recompute::block) block_forward(l, residual(l));
    block_backward(l, residual(l));
    block_ready(l);
  }

  // Embedding: all-gather the column's gradient rows, scatter-add those of my vocabulary block.
  core::dropout_backward(ctx_, core::zeroed(ctx_, s.d_branch), s.d_res.data(), dropout_spec(0, DropoutSite::embedding));
  embedding_2d_backward(ctx_, grid_, dw.wte, s.d_branch.data(), acts_.inputs.data(), N, C, V);
  core::position_add_backward(ctx_, dw.wpe, s.d_branch.data(), B / q_, T, Cb);
  all_ready();

  // The gradients of the column-replicated parameters, summed over the column's q row blocks in
  // one flat bucket: one call per step instead of one per tensor (about 13·L + 3 of them), after
  // the step's last part when the step accumulates several.
  if (acts_.last_part) model::sum_gradients(params_, ctx_, grid_.col_comm(), column_replicated);
}

void GPT::block_backward(int l, const float* x) {
  model::BlockActivations& a = acts_.working_set(l);
  model::BackwardScratch& s = scratch_;
  const model::BlockParams &w = weights_.blocks[static_cast<size_t>(l)], &dw = grads_.blocks[static_cast<size_t>(l)];
  const int B = acts_.B, T = acts_.T, N = B * T, Nb = N / q_, C = config_.n_embd, Cb = C / q_, F = config_.ffn(),
            Fb = F / q_, NHb = config_.n_head / q_;

  // MLP branch, backwards: dropout, c_proj (SUMMA backward: A·Bᵀ for the input, Aᵀ·B for the
  // weight), GELU, c_fc, then LayerNorm's backward (one row all-reduce) into the residual stream.
  core::dropout_backward(ctx_, core::zeroed(ctx_, s.d_branch), s.d_res.data(),
                         dropout_spec(l, DropoutSite::mlp_residual));
  linear_2d_backward(ctx_, grid_,
                     {.dinp = core::zeroed(ctx_, s.d_fch_gelu), .dweight = dw.mlp_proj_w, .dbias = dw.mlp_proj_b},
                     s.d_branch.data(), a.fch_gelu.data(), w.mlp_proj_w, N, F, C);
  core::gelu_backward(ctx_, core::zeroed(ctx_, s.d_fch), a.fch.data(), s.d_fch_gelu.data(), int64_t{Nb} * Fb);
  linear_2d_backward(ctx_, grid_, {.dinp = core::zeroed(ctx_, s.d_ln), .dweight = dw.c_fc_w, .dbias = dw.c_fc_b},
                     s.d_fch.data(), a.ln2.data(), w.c_fc_w, N, C, F);
  layernorm_2d_backward(ctx_, grid_, {.dinp = s.d_res.data(), .dweight = dw.ln_2_w, .dbias = dw.ln_2_b}, s.d_ln.data(),
                        a.res1.data(), w.ln_2_w, a.ln2_mean.data(), a.ln2_rstd.data(), N, C);

  // Attention branch, backwards, the same pattern; attention's backward is local.
  core::dropout_backward(ctx_, core::zeroed(ctx_, s.d_branch), s.d_res.data(),
                         dropout_spec(l, DropoutSite::attn_residual));
  linear_2d_backward(ctx_, grid_,
                     {.dinp = core::zeroed(ctx_, s.d_atty), .dweight = dw.attn_proj_w, .dbias = dw.attn_proj_b},
                     s.d_branch.data(), a.atty.data(), w.attn_proj_w, N, C, C);
  core::attention_backward(ctx_, core::zeroed(ctx_, s.d_qkv), s.d_att.data(), s.d_atty.data(), a.qkv.data(),
                           a.att.data(), B / q_, T, Cb, NHb, dropout_spec(l, DropoutSite::attention_probs));
  linear_2d_backward(ctx_, grid_, {.dinp = core::zeroed(ctx_, s.d_ln), .dweight = dw.c_attn_w, .dbias = dw.c_attn_b},
                     s.d_qkv.data(), a.ln1.data(), w.c_attn_w, N, C, 3 * C);
  layernorm_2d_backward(ctx_, grid_, {.dinp = s.d_res.data(), .dweight = dw.ln_1_w, .dbias = dw.ln_1_b}, s.d_ln.data(),
                        x, w.ln_1_w, a.ln1_mean.data(), a.ln1_rstd.data(), N, C);
}

// The norm counts every canonical element once: column-replicated tensors on grid row 0 only,
// then one all-reduce over the world.
float GPT::clip_gradients(float max_norm) {
  return model::clip_grad_norm(params_, ctx_, &grid_.world(), max_norm);
}

}  // namespace optimus::tp2d
