// Stage 4: the 3D GPT. Read it beside tp2d/gpt.cpp: the same forward and backward, with every
// activation a cube piece. The communication: each linear's 3D product (two all-gathers and a
// reduce-scatter forward, three all-gathers and two reduce-scatters backward) and the tied LM
// head's; two row all-reduces per LayerNorm forward and one per backward; three depth all-reduces
// in the loss and a row and a column all-reduce for its global mean; the embedding's column and
// depth reduce-scatters and all-gathers; the replicated 1-D parameters' gradients summed in three
// flat buckets (column, then depth or row); one world all-reduce for the gradient norm.
#include "tp3d/gpt.h"

#include <stdexcept>

#include "comm/scalar.h"
#include "core/ops.h"
#include "model/gradient_bucket.h"
#include "tp3d/attention.h"
#include "tp3d/layers.h"
#include "tp3d/product.h"
#include "tp3d/shard_3d.h"
#include "tp3d/vocabulary.h"

namespace optimus::tp3d {

using core::DropoutSite;
using Orientation::exchanged;

GPT::GPT(const model::GPTConfig& config, const core::Context& ctx, uint32_t seed, const comm::Grid3D& cube,
         const model::StageOptions& memory)
    : Stage(config, ctx, seed, memory), cube_(cube), q_(cube.q()), i_(cube.i()), j_(cube.j()), k_(cube.k()) {
  if (memory.sequence_parallel)
    throw std::invalid_argument("tp3d::GPT: sequence parallelism is a mode of the 1D stage");
  check_divisible_3d(config_, q_);
  Vp_ = vocab_piece(config_, q_) * q_ * q_;
  const int q = q_, i = i_, j = j_, k = k_;
  create_params([q, i, j, k](const model::ParamInfo& info) { return spec_3d(info, q, i, j, k); });
}

model::SpecOfRank GPT::spec_of() const {
  // `rank` counts the ranks of the communicator the cube was built on, placed as the cube's are.
  const int q = q_;
  return [q, placement = cube_.placement()](const model::ParamInfo& info, int rank) {
    const auto [i, j, k] = placement.position(rank, q);
    return spec_3d(info, q, i, j, k);
  };
}

// The residual stream: rows piece i·q + k, C block j. Inside a branch (qkv, atty, fch) and the
// logits: rows piece i·q + j — the sequences my attention and my loss run on — head group k,
// column block k, vocabulary block k. The dropout of the residual stream drops its canonical
// elements, that of the attention probabilities the block (B/q², NH/q, T·T) at (b0, h0, 0).
model::LocalShapes GPT::local_shapes(int B, int T) const {
  const int64_t q2 = int64_t{q_} * q_, Bl = B / q2, Nl = Bl * T, Cl = config_.n_embd / q_, NHl = config_.n_head / q_;
  return {.mine = {.B = B,
                   .T = T,
                   .b0 = (i_ * q_ + j_) * Bl,
                   .Bl = Bl,
                   .c0 = j_ * Cl,
                   .Cl = Cl,
                   .h0 = k_ * NHl,
                   .NHl = NHl,
                   .n0 = (i_ * q_ + k_) * Nl,
                   .Nl = Nl},
          .Cr = Cl,
          .Fr = config_.ffn() / q_,
          .Vr = Vp_ / q_,
          .target_logits = true};
}

// ---- forward ------------------------------------------------------------------------------------

float GPT::forward(const int* inputs, const int* targets, int B, int T, uint32_t step, bool train,
                   const model::BatchSlice& slice) {
  model::check_sequence_length(config_, T);
  check_batch_divisible_3d(B, q_);
  const model::LocalShapes local = local_shapes(B, T);
  model::ensure_buffers(acts_, scratch_, ctx_, config_, recompute_, local);
  model::begin_forward(acts_, ctx_, local, inputs, targets, step, train, slice);  // my sequences' targets
  const int N = B * T, Nl = N / (q_ * q_), C = config_.n_embd, Cl = C / q_;
  const float eps = config_.layer_norm_epsilon;
  const model::ModelParams& w = weights_;  // w.wte (Vp/q², C/q): vocabulary piece k·q + i, C block j

  // Embedding: look up every token in my vocabulary piece, reduce-scatter over the column and the
  // depth (my rows); positions of my whole sequences.
  embedding_3d_forward(ctx_, cube_, acts_.encoded.data(), acts_.inputs.data(), w.wte, N, C, Vp_);
  core::position_add_forward(ctx_, acts_.encoded.data(), w.wpe, Nl / T, T, Cl);
  core::dropout_forward(ctx_, acts_.encoded.data(), acts_.encoded.data(), dropout_spec(0, DropoutSite::embedding));

  for (int l = 0; l < config_.n_layer; ++l) block_forward(l, residual(l));
  const float* x = residual(config_.n_layer);

  // Final LayerNorm, tied LM head (X·wteᵀ as a 3D product: the logits of my sequences for
  // vocabulary block k), vocab-parallel cross-entropy along the depth.
  layernorm_3d_forward(ctx_, cube_, acts_.lnf.data(), acts_.lnf_mean.data(), acts_.lnf_rstd.data(), x, w.ln_f_w,
                       w.ln_f_b, N, C, eps);
  product_3d_abt(ctx_, cube_, acts_.logits.data(), acts_.lnf.data(), w.wte, N, Vp_, C);  // (N, Vp) = (N, C)·(Vp, C)ᵀ
  vocab_parallel_cross_entropy_3d(ctx_, cube_, acts_.losses.data(), acts_.ce_max.data(), acts_.ce_sumexp.data(),
                                  acts_.ce_target.data(), acts_.logits.data(), acts_.targets.data(), N, Vp_,
                                  config_.vocab_size);
  // The mean over all B·T tokens: my rows' sum, summed over the q² row pieces i·q + j (along the
  // row, then down the column; the depth line's ranks hold the same rows' losses).
  double sum = 0.0;
  core::sum(ctx_, &sum, acts_.losses.data(), Nl);
  sum = comm::all_reduce_scalar(cube_.row_comm(), ctx_, sum);
  sum = comm::all_reduce_scalar(cube_.col_comm(), ctx_, sum);
  return static_cast<float>(sum / static_cast<double>(acts_.batch_tokens()));
}

// One block, into outputs[l] (the same steps as tp2d::GPT's, each on cube pieces).
void GPT::block_forward(int l, const float* x) {
  model::BlockActivations& a = acts_.working_set(l);
  float* out = acts_.outputs[static_cast<size_t>(l)].data();
  float* branch = acts_.branch.data();  // (N/q², C/q) scratch
  const model::BlockParams& w = weights_.blocks[static_cast<size_t>(l)];
  const int B = acts_.B, T = acts_.T, N = B * T, Nl = N / (q_ * q_), C = config_.n_embd, Cl = C / q_, F = config_.ffn(),
            Fl = F / q_, NH = config_.n_head;
  const float eps = config_.layer_norm_epsilon;

  // Attention: LayerNorm → c_attn, standard (head group k's Q, K, V of sequences piece i·q + j) →
  // attention on my (sequence, head) pairs, no communication → c_proj, exchanged (back to the
  // residual stream's layout) → bias → dropout → residual.
  layernorm_3d_forward(ctx_, cube_, a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), x, w.ln_1_w, w.ln_1_b, N, C,
                       eps);
  linear_3d_forward(ctx_, cube_, a.qkv.data(), a.ln1.data(), w.c_attn_w, w.c_attn_b, N, C, 3 * C);
  attention_3d_forward(ctx_, cube_, a.atty.data(), a.att.data(), a.qkv.data(), B, T, C, NH,
                       dropout_spec(l, DropoutSite::attention_probs));
  linear_3d_forward(ctx_, cube_, branch, a.atty.data(), w.attn_proj_w, w.attn_proj_b, N, C, C, exchanged);
  core::dropout_forward(ctx_, branch, branch, dropout_spec(l, DropoutSite::attn_residual));
  core::residual_forward(ctx_, a.res1.data(), x, branch, int64_t{Nl} * Cl);

  // MLP: LayerNorm → c_fc, standard → GELU on my piece → c_proj, exchanged → bias → dropout → residual.
  layernorm_3d_forward(ctx_, cube_, a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.res1.data(), w.ln_2_w,
                       w.ln_2_b, N, C, eps);
  linear_3d_forward(ctx_, cube_, a.fch.data(), a.ln2.data(), w.c_fc_w, w.c_fc_b, N, C, F);
  core::gelu_forward(ctx_, a.fch_gelu.data(), a.fch.data(), int64_t{Nl} * Fl);
  linear_3d_forward(ctx_, cube_, branch, a.fch_gelu.data(), w.mlp_proj_w, w.mlp_proj_b, N, F, C, exchanged);
  core::dropout_forward(ctx_, branch, branch, dropout_spec(l, DropoutSite::mlp_residual));
  core::residual_forward(ctx_, out, a.res1.data(), branch, int64_t{Nl} * Cl);
}

// ---- backward -----------------------------------------------------------------------------------
// As in serial::GPT, every op adds into its gradient outputs; an activation gradient that one op
// makes is passed zeroed.

void GPT::backward() {
  const int B = acts_.B, T = acts_.T, N = B * T, Nl = N / (q_ * q_), C = config_.n_embd, Cl = C / q_, Vb = Vp_ / q_;
  model::BackwardScratch& s = scratch_;
  const model::ModelParams &w = weights_, &dw = grads_;

  // Loss: my block's share of (softmax − onehot) / N, from the full-row statistics; no communication.
  core::crossentropy_backward(ctx_, core::zeroed(ctx_, s.d_logits), acts_.logits.data(), acts_.ce_max.data(),
                              acts_.ce_sumexp.data(), acts_.targets.data(),
                              1.0f / static_cast<float>(acts_.batch_tokens()), Nl, Vb, k_ * Vb, config_.vocab_size);
  // LM head, the backward of X·wteᵀ: d_lnf = d_logits · wte, dwte += d_logitsᵀ · lnf.
  product_3d_abt_backward(ctx_, cube_, core::zeroed(ctx_, s.d_ln), dw.wte, s.d_logits.data(), acts_.lnf.data(), w.wte,
                          N, Vp_, C);
  layernorm_3d_backward(ctx_, cube_, {.dinp = core::zeroed(ctx_, s.d_res), .dweight = dw.ln_f_w, .dbias = dw.ln_f_b},
                        s.d_ln.data(), residual(config_.n_layer), w.ln_f_w, acts_.lnf_mean.data(),
                        acts_.lnf_rstd.data(), N, C);

  for (int l = config_.n_layer - 1; l >= 0; --l) {
    if (recompute_ == model::Recompute::block) block_forward(l, residual(l));
    block_backward(l, residual(l));
    block_ready(l);
  }

  // Embedding: all-gather the gradient rows along the depth and down the column, scatter-add those
  // of my vocabulary piece.
  core::dropout_backward(ctx_, core::zeroed(ctx_, s.d_branch), s.d_res.data(), dropout_spec(0, DropoutSite::embedding));
  embedding_3d_backward(ctx_, cube_, dw.wte, s.d_branch.data(), acts_.inputs.data(), N, C, Vp_);
  core::position_add_backward(ctx_, dw.wpe, s.d_branch.data(), Nl / T, T, Cl);
  all_ready();

  // The gradients of the replicated parameters, summed over their q² copies: all of them down the
  // column (over i), then the residual stream's along the depth (over k) and the branches' along
  // the row (over j); after the step's last part when the step accumulates several.
  if (acts_.last_part) {
    model::sum_gradients(params_, ctx_, cube_.col_comm(),
                         [](model::ParamKind kind) { return shared_index(kind) != SharedIndex::none; });
    model::sum_gradients(params_, ctx_, cube_.depth_comm(),
                         [](model::ParamKind kind) { return shared_index(kind) == SharedIndex::j; });
    model::sum_gradients(params_, ctx_, cube_.row_comm(),
                         [](model::ParamKind kind) { return shared_index(kind) == SharedIndex::k; });
  }
}

void GPT::block_backward(int l, const float* x) {
  model::BlockActivations& a = acts_.working_set(l);
  model::BackwardScratch& s = scratch_;
  const model::BlockParams &w = weights_.blocks[static_cast<size_t>(l)], &dw = grads_.blocks[static_cast<size_t>(l)];
  const int B = acts_.B, T = acts_.T, N = B * T, Nl = N / (q_ * q_), C = config_.n_embd, F = config_.ffn(), Fl = F / q_,
            NH = config_.n_head;

  // MLP branch, backwards: dropout, c_proj (exchanged), GELU, c_fc (standard), LayerNorm's backward
  // (one row all-reduce) into the residual stream.
  core::dropout_backward(ctx_, core::zeroed(ctx_, s.d_branch), s.d_res.data(),
                         dropout_spec(l, DropoutSite::mlp_residual));
  linear_3d_backward(ctx_, cube_,
                     {.dinp = core::zeroed(ctx_, s.d_fch_gelu), .dweight = dw.mlp_proj_w, .dbias = dw.mlp_proj_b},
                     s.d_branch.data(), a.fch_gelu.data(), w.mlp_proj_w, N, F, C, exchanged);
  core::gelu_backward(ctx_, core::zeroed(ctx_, s.d_fch), a.fch.data(), s.d_fch_gelu.data(), int64_t{Nl} * Fl);
  linear_3d_backward(ctx_, cube_, {.dinp = core::zeroed(ctx_, s.d_ln), .dweight = dw.c_fc_w, .dbias = dw.c_fc_b},
                     s.d_fch.data(), a.ln2.data(), w.c_fc_w, N, C, F);
  layernorm_3d_backward(ctx_, cube_, {.dinp = s.d_res.data(), .dweight = dw.ln_2_w, .dbias = dw.ln_2_b}, s.d_ln.data(),
                        a.res1.data(), w.ln_2_w, a.ln2_mean.data(), a.ln2_rstd.data(), N, C);

  // Attention branch, backwards, the same pattern; attention's backward is local.
  core::dropout_backward(ctx_, core::zeroed(ctx_, s.d_branch), s.d_res.data(),
                         dropout_spec(l, DropoutSite::attn_residual));
  linear_3d_backward(ctx_, cube_,
                     {.dinp = core::zeroed(ctx_, s.d_atty), .dweight = dw.attn_proj_w, .dbias = dw.attn_proj_b},
                     s.d_branch.data(), a.atty.data(), w.attn_proj_w, N, C, C, exchanged);
  attention_3d_backward(ctx_, cube_, core::zeroed(ctx_, s.d_qkv), s.d_att.data(), s.d_atty.data(), a.qkv.data(),
                        a.att.data(), B, T, C, NH, dropout_spec(l, DropoutSite::attention_probs));
  linear_3d_backward(ctx_, cube_, {.dinp = core::zeroed(ctx_, s.d_ln), .dweight = dw.c_attn_w, .dbias = dw.c_attn_b},
                     s.d_qkv.data(), a.ln1.data(), w.c_attn_w, N, C, 3 * C);
  layernorm_3d_backward(ctx_, cube_, {.dinp = s.d_res.data(), .dweight = dw.ln_1_w, .dbias = dw.ln_1_b}, s.d_ln.data(),
                        x, w.ln_1_w, a.ln1_mean.data(), a.ln1_rstd.data(), N, C);
}

// The norm counts every canonical element once (replicated tensors on their owner only), then one
// all-reduce over the world.
float GPT::clip_gradients(float max_norm) {
  return model::clip_grad_norm(params_, ctx_, &cube_.world(), max_norm);
}

}  // namespace optimus::tp3d
