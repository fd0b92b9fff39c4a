// Stage 2: the Megatron 1D GPT. Read it beside serial/gpt.cpp: the same forward and backward, with
// the weights split and four kinds of communication added — g after each row-parallel linear and
// after the embedding, f's all-reduce in backward where replicated activations entered a parallel
// region, the three all-reduces of the vocab-parallel loss, and one for the gradient norm.
#include "tp1d/gpt.h"

#include <cmath>

#include "comm/scalar.h"
#include "core/errors.h"
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
  core::DropoutSpec d;
  d.p = train_ ? config_.dropout : 0.0f;
  d.key = core::dropout_key(seed_, static_cast<uint32_t>(layer), site);
  d.step = step_;
  const int64_t B = acts_.B, T = acts_.T, NH = config_.n_head, NHp = NH / p_;
  if (site == DropoutSite::attention_probs) {
    const int64_t dims[3] = {B, NHp, T * T}, offsets[3] = {0, r_ * NHp, 0}, global[3] = {B, NH, T * T};
    for (int k = 0; k < 3; ++k)
      d.block.dim[k] = dims[k], d.block.offset[k] = offsets[k], d.block.global_dim[k] = global[k];
  } else {
    d.block = core::GlobalBlock::matrix(B * T, config_.n_embd, 0, 0, B * T, config_.n_embd);
  }
  return d;
}

// ---- forward ------------------------------------------------------------------------------------

float GPT::forward(const int* inputs, const int* targets, int B, int T, uint32_t step, bool train) {
  if (T > config_.n_positions) {
    throw core::ConfigError("the sequence length " + std::to_string(T) + " exceeds the model's n_positions " +
                            std::to_string(config_.n_positions));
  }
  ensure_buffers(B, T);
  step_ = step;
  train_ = train;
  const int N = B * T, C = config_.n_embd, V = config_.vocab_size, Vp = vocab_part(config_, p_), v0 = r_ * Vp;
  core::copy_to_device(ctx_, acts_.inputs.data(), inputs, N);
  core::copy_to_device(ctx_, acts_.targets.data(), targets, N);
  const float* wte = params_.value("transformer.wte.weight");  // (V/p, C): vocabulary rows [v0, v0 + V/p)

  // Vocab-parallel embedding: rows of tokens outside my vocabulary are zero; g sums the ranks.
  vocab_parallel_embedding_forward(ctx_, tp(), acts_.encoded.data(), acts_.inputs.data(), wte, N, C, v0, Vp);
  core::position_add_forward(ctx_, acts_.encoded.data(), params_.value("transformer.wpe.weight"), B, T, C);
  core::dropout_forward(ctx_, acts_.encoded.data(), acts_.encoded.data(), dropout_spec(0, DropoutSite::embedding));

  const float* x = acts_.encoded.data();
  for (int l = 0; l < config_.n_layer; ++l) {
    block_forward(l, x);
    x = acts_.blocks[static_cast<size_t>(l)].res2.data();
  }

  // Final LayerNorm (replicated), f, my vocabulary's logits, vocab-parallel cross-entropy.
  core::layernorm_forward(ctx_, acts_.lnf.data(), acts_.lnf_mean.data(), acts_.lnf_rstd.data(), x,
                          params_.value("transformer.ln_f.weight"), params_.value("transformer.ln_f.bias"), N, C,
                          config_.layer_norm_epsilon);
  f_forward();
  core::matmul(ctx_, acts_.logits.data(), acts_.lnf.data(), wte, N, Vp, C, Trans::no, Trans::yes);
  model::vocab_parallel_cross_entropy_forward(ctx_, tp(), acts_.losses.data(), acts_.ce_max.data(),
                                              acts_.ce_sumexp.data(), acts_.ce_target.data(), acts_.logits.data(),
                                              acts_.targets.data(), N, Vp, v0, V);
  double sum = 0.0;
  core::sum(ctx_, &sum, acts_.losses.data(), N);  // every rank holds every token's loss
  return static_cast<float>(sum / N);
}

void GPT::block_forward(int l, const float* x) {
  BlockActivations& a = acts_.blocks[static_cast<size_t>(l)];
  const int B = acts_.B, T = acts_.T, N = B * T, C = config_.n_embd, Cp = C / p_, Fp = config_.ffn() / p_,
            NHp = config_.n_head / p_;
  const std::string h = "transformer.h." + std::to_string(l) + ".";

  // Attention: f → column-parallel c_attn (my heads) → local attention → row-parallel c_proj → g → bias.
  core::layernorm_forward(ctx_, a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), x, params_.value(h + "ln_1.weight"),
                          params_.value(h + "ln_1.bias"), N, C, config_.layer_norm_epsilon);
  column_parallel_linear_forward(ctx_, a.qkv.data(), a.ln1.data(), params_.value(h + "attn.c_attn.weight"),
                                 params_.value(h + "attn.c_attn.bias"), N, C, 3 * Cp);
  core::attention_forward(ctx_, a.atty.data(), a.att.data(), a.qkv.data(), B, T, Cp, NHp,
                          dropout_spec(l, DropoutSite::attention_probs));
  row_parallel_linear_forward(ctx_, tp(), a.attproj.data(), a.atty.data(), params_.value(h + "attn.c_proj.weight"),
                              params_.value(h + "attn.c_proj.bias"), N, Cp, C);
  core::dropout_forward(ctx_, a.attproj.data(), a.attproj.data(), dropout_spec(l, DropoutSite::attn_residual));
  core::residual_forward(ctx_, a.res1.data(), x, a.attproj.data(), int64_t{N} * C);

  // MLP: f → column-parallel c_fc (F/p columns) → GELU → row-parallel c_proj → g → bias.
  core::layernorm_forward(ctx_, a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.res1.data(),
                          params_.value(h + "ln_2.weight"), params_.value(h + "ln_2.bias"), N, C,
                          config_.layer_norm_epsilon);
  column_parallel_linear_forward(ctx_, a.fch.data(), a.ln2.data(), params_.value(h + "mlp.c_fc.weight"),
                                 params_.value(h + "mlp.c_fc.bias"), N, C, Fp);
  core::gelu_forward(ctx_, a.fch_gelu.data(), a.fch.data(), int64_t{N} * Fp);
  row_parallel_linear_forward(ctx_, tp(), a.fcproj.data(), a.fch_gelu.data(), params_.value(h + "mlp.c_proj.weight"),
                              params_.value(h + "mlp.c_proj.bias"), N, Fp, C);
  core::dropout_forward(ctx_, a.fcproj.data(), a.fcproj.data(), dropout_spec(l, DropoutSite::mlp_residual));
  core::residual_forward(ctx_, a.res2.data(), a.res1.data(), a.fcproj.data(), int64_t{N} * C);
}

// ---- backward -----------------------------------------------------------------------------------

void GPT::backward() {
  const int B = acts_.B, T = acts_.T, N = B * T, C = config_.n_embd, V = config_.vocab_size,
            Vp = vocab_part(config_, p_), v0 = r_ * Vp;
  BackwardScratch& s = scratch_;
  float* wte = params_.value("transformer.wte.weight");
  float* dwte = params_.grad("transformer.wte.weight");

  // Loss: my vocabulary columns' share of (softmax − onehot) / N, from the full-row statistics.
  core::zero(ctx_, s.d_logits.data(), s.d_logits.numel());
  core::crossentropy_backward(ctx_, s.d_logits.data(), acts_.logits.data(), acts_.ce_max.data(), acts_.ce_sumexp.data(),
                              acts_.targets.data(), 1.0f / static_cast<float>(N), N, Vp, v0, V);
  // LM head: my partial d_lnf = d_logits · wte_mine; f's backward sums the ranks' partials.
  core::zero(ctx_, s.d_ln.data(), s.d_ln.numel());
  core::matmul_backward(ctx_, s.d_ln.data(), dwte, s.d_logits.data(), acts_.lnf.data(), wte, N, Vp, C, Trans::no,
                        Trans::yes);
  f_backward(tp(), s.d_ln.data(), int64_t{N} * C);
  const float* x_last = config_.n_layer > 0 ? acts_.blocks.back().res2.data() : acts_.encoded.data();
  core::zero(ctx_, s.d_res.data(), s.d_res.numel());
  core::layernorm_backward(ctx_, s.d_res.data(), params_.grad("transformer.ln_f.weight"),
                           params_.grad("transformer.ln_f.bias"), s.d_ln.data(), x_last,
                           params_.value("transformer.ln_f.weight"), acts_.lnf_mean.data(), acts_.lnf_rstd.data(), N,
                           C);

  for (int l = config_.n_layer - 1; l >= 0; --l) {
    const float* x = l == 0 ? acts_.encoded.data() : acts_.blocks[static_cast<size_t>(l - 1)].res2.data();
    block_backward(l, x);
  }

  // Embedding: g's backward is the identity; scatter-add the rows of my vocabulary.
  core::zero(ctx_, s.d_branch.data(), s.d_branch.numel());
  core::dropout_backward(ctx_, s.d_branch.data(), s.d_res.data(), dropout_spec(0, DropoutSite::embedding));
  vocab_parallel_embedding_backward(ctx_, dwte, s.d_branch.data(), acts_.inputs.data(), N, C, v0, Vp);
  core::position_add_backward(ctx_, params_.grad("transformer.wpe.weight"), s.d_branch.data(), B, T, C);
}

void GPT::block_backward(int l, const float* x) {
  BlockActivations& a = acts_.blocks[static_cast<size_t>(l)];
  BackwardScratch& s = scratch_;
  const int B = acts_.B, T = acts_.T, N = B * T, C = config_.n_embd, Cp = C / p_, Fp = config_.ffn() / p_,
            NHp = config_.n_head / p_;
  const std::string h = "transformer.h." + std::to_string(l) + ".";

  // MLP branch, backwards: dropout, the row-parallel c_proj (its g is the identity), GELU, the
  // column-parallel c_fc, whose f all-reduces the partial d_ln2 before LayerNorm's backward.
  core::zero(ctx_, s.d_branch.data(), s.d_branch.numel());
  core::dropout_backward(ctx_, s.d_branch.data(), s.d_res.data(), dropout_spec(l, DropoutSite::mlp_residual));
  core::zero(ctx_, s.d_fch_gelu.data(), s.d_fch_gelu.numel());
  row_parallel_linear_backward(ctx_, s.d_fch_gelu.data(), params_.grad(h + "mlp.c_proj.weight"),
                               params_.grad(h + "mlp.c_proj.bias"), s.d_branch.data(), a.fch_gelu.data(),
                               params_.value(h + "mlp.c_proj.weight"), N, Fp, C);
  core::zero(ctx_, s.d_fch.data(), s.d_fch.numel());
  core::gelu_backward(ctx_, s.d_fch.data(), a.fch.data(), s.d_fch_gelu.data(), int64_t{N} * Fp);
  core::zero(ctx_, s.d_ln.data(), s.d_ln.numel());
  column_parallel_linear_backward(ctx_, tp(), s.d_ln.data(), params_.grad(h + "mlp.c_fc.weight"),
                                  params_.grad(h + "mlp.c_fc.bias"), s.d_fch.data(), a.ln2.data(),
                                  params_.value(h + "mlp.c_fc.weight"), N, C, Fp);
  core::layernorm_backward(ctx_, s.d_res.data(), params_.grad(h + "ln_2.weight"), params_.grad(h + "ln_2.bias"),
                           s.d_ln.data(), a.res1.data(), params_.value(h + "ln_2.weight"), a.ln2_mean.data(),
                           a.ln2_rstd.data(), N, C);

  // Attention branch, backwards, the same pattern.
  core::zero(ctx_, s.d_branch.data(), s.d_branch.numel());
  core::dropout_backward(ctx_, s.d_branch.data(), s.d_res.data(), dropout_spec(l, DropoutSite::attn_residual));
  core::zero(ctx_, s.d_atty.data(), s.d_atty.numel());
  row_parallel_linear_backward(ctx_, s.d_atty.data(), params_.grad(h + "attn.c_proj.weight"),
                               params_.grad(h + "attn.c_proj.bias"), s.d_branch.data(), a.atty.data(),
                               params_.value(h + "attn.c_proj.weight"), N, Cp, C);
  core::zero(ctx_, s.d_qkv.data(), s.d_qkv.numel());
  core::attention_backward(ctx_, s.d_qkv.data(), s.d_att.data(), s.d_atty.data(), a.qkv.data(), a.att.data(), B, T, Cp,
                           NHp, dropout_spec(l, DropoutSite::attention_probs));
  core::zero(ctx_, s.d_ln.data(), s.d_ln.numel());
  column_parallel_linear_backward(ctx_, tp(), s.d_ln.data(), params_.grad(h + "attn.c_attn.weight"),
                                  params_.grad(h + "attn.c_attn.bias"), s.d_qkv.data(), a.ln1.data(),
                                  params_.value(h + "attn.c_attn.weight"), N, C, 3 * Cp);
  core::layernorm_backward(ctx_, s.d_res.data(), params_.grad(h + "ln_1.weight"), params_.grad(h + "ln_1.bias"),
                           s.d_ln.data(), x, params_.value(h + "ln_1.weight"), a.ln1_mean.data(), a.ln1_rstd.data(), N,
                           C);
}

float GPT::clip_gradients(float max_norm) {
  double sumsq = params_.owned_grad_sum_squares(ctx_);  // replicated tensors: rank 0's copy only
  sumsq = comm::all_reduce_scalar(tp(), ctx_, sumsq);
  const double norm = std::sqrt(sumsq);
  if (max_norm > 0.0f) {
    const double coef = static_cast<double>(max_norm) / (norm + 1e-6);
    if (coef < 1.0) params_.scale_grads(ctx_, static_cast<float>(coef));
  }
  return static_cast<float>(norm);
}

}  // namespace optimus::tp1d
