// Stage 2: the Megatron 1D GPT. Read it beside serial/gpt.cpp: the same forward and backward, with
// the weights split and four kinds of communication added — g after each row-parallel linear and
// after the embedding, f's all-reduce in backward where replicated activations entered a parallel
// region, the three all-reduces of the vocab-parallel loss, and one for the gradient norm.
#include "tp1d/gpt.h"

#include "model/vocab_parallel_loss.h"
#include "tp1d/layers.h"
#include "tp1d/mappings.h"
#include "tp1d/shard_1d.h"

namespace optimus::tp1d {

using core::Buffer;
using core::DropoutSite;
using core::MemoryCategory;
using core::Trans;

GPT::GPT(const model::GPTConfig& config, const core::Context& ctx, uint32_t seed, const comm::Grid1D& grid)
    : config_(config), ctx_(ctx), seed_(seed), grid_(grid), p_(grid.p()), r_(grid.r()) {
  config_.validate();
  check_divisible(config_, p_);
  const int p = p_, r = r_;
  params_ = model::ParamSet::create(
      config_, ctx_, [p, r](const model::ParamInfo& info) { return spec_1d(info, p, r); }, seed_);
  param_ = model::ModelParams::values(params_);
  grad_ = model::ModelParams::grads(params_);
}

model::SpecOfRank GPT::spec_of() const {
  const int p = p_;
  return [p](const model::ParamInfo& info, int rank) { return spec_1d(info, p, rank); };
}

void GPT::ensure_buffers(int B, int T) {
  if (acts_.B == B && acts_.T == T) return;
  acts_ = Activations{};
  scratch_ = BackwardScratch{};
  const int64_t N = int64_t{B} * T, C = config_.n_embd, Cp = C / p_, Fp = config_.ffn() / p_,
                Vp = vocab_part(config_, p_), NHp = config_.n_head / p_;
  auto act = [&](core::Shape s) {
    return Buffer(*ctx_.ledger, MemoryCategory::activations, std::move(s), ctx_.device);
  };
  auto tmp = [&](core::Shape s) { return Buffer(*ctx_.ledger, MemoryCategory::workspace, std::move(s), ctx_.device); };
  acts_.B = B, acts_.T = T;
  acts_.block = {.B = B, .T = T, .b0 = 0, .Bl = B, .c0 = 0, .Cl = C, .h0 = r_ * NHp, .NHl = NHp};
  acts_.inputs = core::IntBuffer(*ctx_.ledger, MemoryCategory::workspace, {B, T}, ctx_.device);
  acts_.targets = core::IntBuffer(*ctx_.ledger, MemoryCategory::workspace, {B, T}, ctx_.device);
  acts_.encoded = act({N, C});
  for (int l = 0; l < config_.n_layer; ++l) {
    BlockActivations b;
    b.ln1 = act({N, C}), b.ln1_mean = act({N}), b.ln1_rstd = act({N});
    b.qkv = act({N, 3 * Cp});
    b.att = act({B, NHp, T, T});
    b.atty = act({N, Cp}), b.attproj = act({N, C}), b.res1 = act({N, C});
    b.ln2 = act({N, C}), b.ln2_mean = act({N}), b.ln2_rstd = act({N});
    b.fch = act({N, Fp}), b.fch_gelu = act({N, Fp});
    b.fcproj = act({N, C}), b.res2 = act({N, C});
    acts_.blocks.push_back(std::move(b));
  }
  acts_.lnf = act({N, C}), acts_.lnf_mean = act({N}), acts_.lnf_rstd = act({N});
  acts_.logits = act({N, Vp});
  acts_.ce_max = act({N}), acts_.ce_sumexp = act({N}), acts_.ce_target = act({N}), acts_.losses = act({N});
  scratch_.d_res = tmp({N, C}), scratch_.d_branch = tmp({N, C}), scratch_.d_ln = tmp({N, C});
  scratch_.d_atty = tmp({N, Cp}), scratch_.d_qkv = tmp({N, 3 * Cp}), scratch_.d_att = tmp({B, NHp, T, T});
  scratch_.d_fch = tmp({N, Fp}), scratch_.d_fch_gelu = tmp({N, Fp}), scratch_.d_logits = tmp({N, Vp});
}

// Replicated activations drop the same (canonical) elements on every rank, exactly as the serial
// run does; the attention probabilities of this rank's heads are the block (B, NH/p, T*T) at head
// offset r·NH/p of the canonical (B, NH, T*T).
core::DropoutSpec GPT::dropout_spec(int layer, DropoutSite site) const {
  return model::dropout_spec(config_, acts_.block, seed_, step_, train_, layer, site);
}

// ---- forward ------------------------------------------------------------------------------------

float GPT::forward(const int* inputs, const int* targets, int B, int T, uint32_t step, bool train) {
  model::check_sequence_length(config_, T);
  ensure_buffers(B, T);
  step_ = step;
  train_ = train;
  const int N = B * T, C = config_.n_embd, V = config_.vocab_size, Vp = vocab_part(config_, p_), v0 = r_ * Vp;
  const float eps = config_.layer_norm_epsilon;
  const model::ModelParams& w = param_;  // w.wte (V/p, C): vocabulary rows [v0, v0 + V/p)
  core::copy_to_device(ctx_, acts_.inputs.data(), inputs, N);
  core::copy_to_device(ctx_, acts_.targets.data(), targets, N);

  // Vocab-parallel embedding: rows of tokens outside my vocabulary are zero; g sums the ranks.
  vocab_parallel_embedding_forward(ctx_, tp(), acts_.encoded.data(), acts_.inputs.data(), w.wte, N, C, v0, Vp);
  core::position_add_forward(ctx_, acts_.encoded.data(), w.wpe, B, T, C);
  core::dropout_forward(ctx_, acts_.encoded.data(), acts_.encoded.data(), dropout_spec(0, DropoutSite::embedding));

  const float* x = acts_.encoded.data();
  for (int l = 0; l < config_.n_layer; ++l) {
    block_forward(l, x);
    x = acts_.blocks[static_cast<size_t>(l)].res2.data();
  }

  // Final LayerNorm (replicated), f, my vocabulary's logits, vocab-parallel cross-entropy.
  core::layernorm_forward(ctx_, acts_.lnf.data(), acts_.lnf_mean.data(), acts_.lnf_rstd.data(), x, w.ln_f_w, w.ln_f_b,
                          N, C, eps);
  f_forward();
  core::matmul(ctx_, acts_.logits.data(), acts_.lnf.data(), w.wte, N, Vp, C, Trans::no, Trans::yes);
  model::vocab_parallel_cross_entropy_forward(ctx_, tp(), acts_.losses.data(), acts_.ce_max.data(),
                                              acts_.ce_sumexp.data(), acts_.ce_target.data(), acts_.logits.data(),
                                              acts_.targets.data(), N, Vp, v0, V);
  double sum = 0.0;
  core::sum(ctx_, &sum, acts_.losses.data(), N);  // every rank holds every token's loss
  return static_cast<float>(sum / N);
}

void GPT::block_forward(int l, const float* x) {
  BlockActivations& a = acts_.blocks[static_cast<size_t>(l)];
  const model::BlockParams& w = param_.blocks[static_cast<size_t>(l)];
  const int B = acts_.B, T = acts_.T, N = B * T, C = config_.n_embd, Cp = C / p_, Fp = config_.ffn() / p_,
            NHp = config_.n_head / p_;
  const float eps = config_.layer_norm_epsilon;

  // Attention: f → column-parallel c_attn (my heads) → local attention → row-parallel c_proj → g → bias.
  core::layernorm_forward(ctx_, a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), x, w.ln_1_w, w.ln_1_b, N, C, eps);
  column_parallel_linear_forward(ctx_, a.qkv.data(), a.ln1.data(), w.c_attn_w, w.c_attn_b, N, C, 3 * Cp);
  core::attention_forward(ctx_, a.atty.data(), a.att.data(), a.qkv.data(), B, T, Cp, NHp,
                          dropout_spec(l, DropoutSite::attention_probs));
  row_parallel_linear_forward(ctx_, tp(), a.attproj.data(), a.atty.data(), w.attn_proj_w, w.attn_proj_b, N, Cp, C);
  core::dropout_forward(ctx_, a.attproj.data(), a.attproj.data(), dropout_spec(l, DropoutSite::attn_residual));
  core::residual_forward(ctx_, a.res1.data(), x, a.attproj.data(), int64_t{N} * C);

  // MLP: f → column-parallel c_fc (F/p columns) → GELU → row-parallel c_proj → g → bias.
  core::layernorm_forward(ctx_, a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.res1.data(), w.ln_2_w, w.ln_2_b,
                          N, C, eps);
  column_parallel_linear_forward(ctx_, a.fch.data(), a.ln2.data(), w.c_fc_w, w.c_fc_b, N, C, Fp);
  core::gelu_forward(ctx_, a.fch_gelu.data(), a.fch.data(), int64_t{N} * Fp);
  row_parallel_linear_forward(ctx_, tp(), a.fcproj.data(), a.fch_gelu.data(), w.mlp_proj_w, w.mlp_proj_b, N, Fp, C);
  core::dropout_forward(ctx_, a.fcproj.data(), a.fcproj.data(), dropout_spec(l, DropoutSite::mlp_residual));
  core::residual_forward(ctx_, a.res2.data(), a.res1.data(), a.fcproj.data(), int64_t{N} * C);
}

// ---- backward -----------------------------------------------------------------------------------
// As in serial::GPT, every op adds into its gradient outputs; an activation gradient that one op
// makes is passed zeroed.

void GPT::backward() {
  const int B = acts_.B, T = acts_.T, N = B * T, C = config_.n_embd, V = config_.vocab_size,
            Vp = vocab_part(config_, p_), v0 = r_ * Vp;
  BackwardScratch& s = scratch_;
  const model::ModelParams &w = param_, &dw = grad_;

  // Loss: my vocabulary columns' share of (softmax − onehot) / N, from the full-row statistics.
  core::crossentropy_backward(ctx_, core::zeroed(ctx_, s.d_logits), acts_.logits.data(), acts_.ce_max.data(),
                              acts_.ce_sumexp.data(), acts_.targets.data(), 1.0f / static_cast<float>(N), N, Vp, v0, V);
  // LM head: my partial d_lnf = d_logits · wte_mine; f's backward sums the ranks' partials.
  core::matmul_backward(ctx_, core::zeroed(ctx_, s.d_ln), dw.wte, s.d_logits.data(), acts_.lnf.data(), w.wte, N, Vp, C,
                        Trans::no, Trans::yes);
  f_backward(tp(), s.d_ln.data(), int64_t{N} * C);
  const float* x_last = config_.n_layer > 0 ? acts_.blocks.back().res2.data() : acts_.encoded.data();
  core::layernorm_backward(ctx_, {.dinp = core::zeroed(ctx_, s.d_res), .dweight = dw.ln_f_w, .dbias = dw.ln_f_b},
                           s.d_ln.data(), x_last, w.ln_f_w, acts_.lnf_mean.data(), acts_.lnf_rstd.data(), N, C);

  for (int l = config_.n_layer - 1; l >= 0; --l) {
    const float* x = l == 0 ? acts_.encoded.data() : acts_.blocks[static_cast<size_t>(l - 1)].res2.data();
    block_backward(l, x);
  }

  // Embedding: g's backward is the identity; scatter-add the rows of my vocabulary.
  core::dropout_backward(ctx_, core::zeroed(ctx_, s.d_branch), s.d_res.data(), dropout_spec(0, DropoutSite::embedding));
  vocab_parallel_embedding_backward(ctx_, dw.wte, s.d_branch.data(), acts_.inputs.data(), N, C, v0, Vp);
  core::position_add_backward(ctx_, dw.wpe, s.d_branch.data(), B, T, C);
}

void GPT::block_backward(int l, const float* x) {
  BlockActivations& a = acts_.blocks[static_cast<size_t>(l)];
  BackwardScratch& s = scratch_;
  const model::BlockParams &w = param_.blocks[static_cast<size_t>(l)], &dw = grad_.blocks[static_cast<size_t>(l)];
  const int B = acts_.B, T = acts_.T, N = B * T, C = config_.n_embd, Cp = C / p_, Fp = config_.ffn() / p_,
            NHp = config_.n_head / p_;

  // MLP branch, backwards: dropout, the row-parallel c_proj (its g is the identity), GELU, the
  // column-parallel c_fc, whose f all-reduces the partial d_ln2 before LayerNorm's backward.
  core::dropout_backward(ctx_, core::zeroed(ctx_, s.d_branch), s.d_res.data(),
                         dropout_spec(l, DropoutSite::mlp_residual));
  row_parallel_linear_backward(
      ctx_, {.dinp = core::zeroed(ctx_, s.d_fch_gelu), .dweight = dw.mlp_proj_w, .dbias = dw.mlp_proj_b},
      s.d_branch.data(), a.fch_gelu.data(), w.mlp_proj_w, N, Fp, C);
  core::gelu_backward(ctx_, core::zeroed(ctx_, s.d_fch), a.fch.data(), s.d_fch_gelu.data(), int64_t{N} * Fp);
  column_parallel_linear_backward(ctx_, tp(),
                                  {.dinp = core::zeroed(ctx_, s.d_ln), .dweight = dw.c_fc_w, .dbias = dw.c_fc_b},
                                  s.d_fch.data(), a.ln2.data(), w.c_fc_w, N, C, Fp);
  core::layernorm_backward(ctx_, {.dinp = s.d_res.data(), .dweight = dw.ln_2_w, .dbias = dw.ln_2_b}, s.d_ln.data(),
                           a.res1.data(), w.ln_2_w, a.ln2_mean.data(), a.ln2_rstd.data(), N, C);

  // Attention branch, backwards, the same pattern.
  core::dropout_backward(ctx_, core::zeroed(ctx_, s.d_branch), s.d_res.data(),
                         dropout_spec(l, DropoutSite::attn_residual));
  row_parallel_linear_backward(
      ctx_, {.dinp = core::zeroed(ctx_, s.d_atty), .dweight = dw.attn_proj_w, .dbias = dw.attn_proj_b},
      s.d_branch.data(), a.atty.data(), w.attn_proj_w, N, Cp, C);
  core::attention_backward(ctx_, core::zeroed(ctx_, s.d_qkv), s.d_att.data(), s.d_atty.data(), a.qkv.data(),
                           a.att.data(), B, T, Cp, NHp, dropout_spec(l, DropoutSite::attention_probs));
  column_parallel_linear_backward(ctx_, tp(),
                                  {.dinp = core::zeroed(ctx_, s.d_ln), .dweight = dw.c_attn_w, .dbias = dw.c_attn_b},
                                  s.d_qkv.data(), a.ln1.data(), w.c_attn_w, N, C, 3 * Cp);
  core::layernorm_backward(ctx_, {.dinp = s.d_res.data(), .dweight = dw.ln_1_w, .dbias = dw.ln_1_b}, s.d_ln.data(), x,
                           w.ln_1_w, a.ln1_mean.data(), a.ln1_rstd.data(), N, C);
}

// The norm counts every canonical element once: replicated tensors on rank 0 only, then one
// all-reduce over the p ranks.
float GPT::clip_gradients(float max_norm) {
  return model::clip_grad_norm(params_, ctx_, &tp(), max_norm);
}

}  // namespace optimus::tp1d
