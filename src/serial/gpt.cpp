// Stage 1: the single-device GPT. The forward pass reads top to bottom in the order of the model;
// the backward pass walks it back. The residual stream's gradient lives in one buffer (d_res):
// each branch's backward adds into it, which is the chain rule of x + f(x).
#include "serial/gpt.h"

#include <cmath>

#include "core/errors.h"
#include "core/ops.h"

namespace optimus::serial {

using core::Buffer;
using core::DropoutSite;
using core::MemoryCategory;
using core::Trans;

GPT::GPT(const model::GPTConfig& config, const core::Context& ctx, uint32_t seed)
    : config_(config), ctx_(ctx), seed_(seed) {
  config_.validate();
  params_ = model::ParamSet::create(
      config_, ctx_, [](const model::ParamInfo& p) { return model::ShardSpec::whole(p.shape); }, seed_);
}

// Activation and scratch buffers for batch shape (B, T), allocated once and kept while it lasts.
void GPT::ensure_buffers(int B, int T) {
  if (acts_.B == B && acts_.T == T) return;
  acts_ = Activations{};
  scratch_ = BackwardScratch{};
  const int64_t N = int64_t{B} * T, C = config_.n_embd, F = config_.ffn(), V = config_.vocab_size, NH = config_.n_head;
  auto act = [&](core::Shape s) {
    return Buffer(*ctx_.ledger, MemoryCategory::activations, std::move(s), ctx_.device);
  };
  auto tmp = [&](core::Shape s) { return Buffer(*ctx_.ledger, MemoryCategory::workspace, std::move(s), ctx_.device); };
  acts_.B = B, acts_.T = T;
  // The token ids are the step's input, recorded as workspace (the activation formulas count floats).
  acts_.inputs = core::IntBuffer(*ctx_.ledger, MemoryCategory::workspace, {B, T}, ctx_.device);
  acts_.targets = core::IntBuffer(*ctx_.ledger, MemoryCategory::workspace, {B, T}, ctx_.device);
  acts_.encoded = act({N, C});
  for (int l = 0; l < config_.n_layer; ++l) {
    BlockActivations b;
    b.ln1 = act({N, C}), b.ln1_mean = act({N}), b.ln1_rstd = act({N});
    b.qkv = act({N, 3 * C});
    b.att = act({B, NH, T, T});
    b.atty = act({N, C}), b.attproj = act({N, C}), b.res1 = act({N, C});
    b.ln2 = act({N, C}), b.ln2_mean = act({N}), b.ln2_rstd = act({N});
    b.fch = act({N, F}), b.fch_gelu = act({N, F});
    b.fcproj = act({N, C}), b.res2 = act({N, C});
    acts_.blocks.push_back(std::move(b));
  }
  acts_.lnf = act({N, C}), acts_.lnf_mean = act({N}), acts_.lnf_rstd = act({N});
  acts_.logits = act({N, V});
  acts_.ce_max = act({N}), acts_.ce_sumexp = act({N}), acts_.losses = act({N});
  scratch_.d_res = tmp({N, C}), scratch_.d_branch = tmp({N, C}), scratch_.d_ln = tmp({N, C});
  scratch_.d_atty = tmp({N, C}), scratch_.d_qkv = tmp({N, 3 * C}), scratch_.d_att = tmp({B, NH, T, T});
  scratch_.d_fch = tmp({N, F}), scratch_.d_fch_gelu = tmp({N, F}), scratch_.d_logits = tmp({N, V});
}

// The dropout of one site: on the whole (B*T, C) activation, or on the (B, NH, T*T) probabilities.
core::DropoutSpec GPT::dropout_spec(int layer, DropoutSite site) const {
  core::DropoutSpec d;
  d.p = train_ ? config_.dropout : 0.0f;
  d.key = core::dropout_key(seed_, static_cast<uint32_t>(layer), site);
  d.step = step_;
  const int64_t B = acts_.B, T = acts_.T;
  if (site == DropoutSite::attention_probs) {
    const int64_t dims[3] = {B, config_.n_head, T * T};
    for (int k = 0; k < 3; ++k) d.block.dim[k] = d.block.global_dim[k] = dims[k];
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
  const int N = B * T, C = config_.n_embd, V = config_.vocab_size;
  core::copy_to_device(ctx_, acts_.inputs.data(), inputs, N);
  core::copy_to_device(ctx_, acts_.targets.data(), targets, N);
  float* wte = params_.value("transformer.wte.weight");

  // Embedding: token rows plus position rows, then dropout (in place).
  core::embedding_forward(ctx_, acts_.encoded.data(), acts_.inputs.data(), wte, N, C, 0, V);
  core::position_add_forward(ctx_, acts_.encoded.data(), params_.value("transformer.wpe.weight"), B, T, C);
  core::dropout_forward(ctx_, acts_.encoded.data(), acts_.encoded.data(), dropout_spec(0, DropoutSite::embedding));

  const float* x = acts_.encoded.data();
  for (int l = 0; l < config_.n_layer; ++l) {
    block_forward(l, x);
    x = acts_.blocks[static_cast<size_t>(l)].res2.data();
  }

  // Final LayerNorm, tied LM head (logits = lnf · wteᵀ), cross-entropy.
  core::layernorm_forward(ctx_, acts_.lnf.data(), acts_.lnf_mean.data(), acts_.lnf_rstd.data(), x,
                          params_.value("transformer.ln_f.weight"), params_.value("transformer.ln_f.bias"), N, C,
                          config_.layer_norm_epsilon);
  core::matmul(ctx_, acts_.logits.data(), acts_.lnf.data(), wte, N, V, C, Trans::no, Trans::yes);
  core::crossentropy_forward(ctx_, acts_.losses.data(), acts_.ce_max.data(), acts_.ce_sumexp.data(),
                             acts_.logits.data(), acts_.targets.data(), N, V, V);
  double sum = 0.0;
  core::sum(ctx_, &sum, acts_.losses.data(), N);  // in double, on the device; the result on the host
  return static_cast<float>(sum / N);
}

// One block: x → x + drop(c_proj(attn(ln_1(x)))) → + drop(mlp(ln_2(·))).
void GPT::block_forward(int l, const float* x) {
  BlockActivations& a = acts_.blocks[static_cast<size_t>(l)];
  const int B = acts_.B, T = acts_.T, N = B * T, C = config_.n_embd, F = config_.ffn(), NH = config_.n_head;
  const std::string h = "transformer.h." + std::to_string(l) + ".";

  core::layernorm_forward(ctx_, a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), x, params_.value(h + "ln_1.weight"),
                          params_.value(h + "ln_1.bias"), N, C, config_.layer_norm_epsilon);
  core::linear_forward(ctx_, a.qkv.data(), a.ln1.data(), params_.value(h + "attn.c_attn.weight"),
                       params_.value(h + "attn.c_attn.bias"), N, C, 3 * C);
  core::attention_forward(ctx_, a.atty.data(), a.att.data(), a.qkv.data(), B, T, C, NH,
                          dropout_spec(l, DropoutSite::attention_probs));
  core::linear_forward(ctx_, a.attproj.data(), a.atty.data(), params_.value(h + "attn.c_proj.weight"),
                       params_.value(h + "attn.c_proj.bias"), N, C, C);
  core::dropout_forward(ctx_, a.attproj.data(), a.attproj.data(), dropout_spec(l, DropoutSite::attn_residual));
  core::residual_forward(ctx_, a.res1.data(), x, a.attproj.data(), int64_t{N} * C);

  core::layernorm_forward(ctx_, a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.res1.data(),
                          params_.value(h + "ln_2.weight"), params_.value(h + "ln_2.bias"), N, C,
                          config_.layer_norm_epsilon);
  core::linear_forward(ctx_, a.fch.data(), a.ln2.data(), params_.value(h + "mlp.c_fc.weight"),
                       params_.value(h + "mlp.c_fc.bias"), N, C, F);
  core::gelu_forward(ctx_, a.fch_gelu.data(), a.fch.data(), int64_t{N} * F);
  core::linear_forward(ctx_, a.fcproj.data(), a.fch_gelu.data(), params_.value(h + "mlp.c_proj.weight"),
                       params_.value(h + "mlp.c_proj.bias"), N, F, C);
  core::dropout_forward(ctx_, a.fcproj.data(), a.fcproj.data(), dropout_spec(l, DropoutSite::mlp_residual));
  core::residual_forward(ctx_, a.res2.data(), a.res1.data(), a.fcproj.data(), int64_t{N} * C);
}

// ---- backward -----------------------------------------------------------------------------------

void GPT::backward() {
  const int B = acts_.B, T = acts_.T, N = B * T, C = config_.n_embd, V = config_.vocab_size;
  BackwardScratch& s = scratch_;
  float* wte = params_.value("transformer.wte.weight");
  float* dwte = params_.grad("transformer.wte.weight");

  // Loss: the mean over N tokens, so each token's loss has gradient 1/N.
  core::zero(ctx_, s.d_logits.data(), s.d_logits.numel());
  core::crossentropy_backward(ctx_, s.d_logits.data(), acts_.logits.data(), acts_.ce_max.data(), acts_.ce_sumexp.data(),
                              acts_.targets.data(), 1.0f / static_cast<float>(N), N, V, 0, V);
  // LM head: d_lnf = d_logits · wte; dwte += d_logitsᵀ · lnf (the first of wte's two gradients).
  core::zero(ctx_, s.d_ln.data(), s.d_ln.numel());
  core::matmul_backward(ctx_, s.d_ln.data(), dwte, s.d_logits.data(), acts_.lnf.data(), wte, N, V, C, Trans::no,
                        Trans::yes);
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

  // Embedding: through its dropout, then scatter-add into wte (its second gradient) and wpe.
  core::zero(ctx_, s.d_branch.data(), s.d_branch.numel());
  core::dropout_backward(ctx_, s.d_branch.data(), s.d_res.data(), dropout_spec(0, DropoutSite::embedding));
  core::embedding_backward(ctx_, dwte, s.d_branch.data(), acts_.inputs.data(), N, C, 0, V);
  core::position_add_backward(ctx_, params_.grad("transformer.wpe.weight"), s.d_branch.data(), B, T, C);
}

// On entry s.d_res = dL/d(block output); on exit s.d_res = dL/dx (the block's input).
void GPT::block_backward(int l, const float* x) {
  BlockActivations& a = acts_.blocks[static_cast<size_t>(l)];
  BackwardScratch& s = scratch_;
  const int B = acts_.B, T = acts_.T, N = B * T, C = config_.n_embd, F = config_.ffn(), NH = config_.n_head;
  const std::string h = "transformer.h." + std::to_string(l) + ".";

  // MLP branch: res2 = res1 + drop(c_proj(gelu(c_fc(ln_2(res1))))). d_res already is dL/dres1's
  // identity part; the branch adds the rest through ln_2.
  core::zero(ctx_, s.d_branch.data(), s.d_branch.numel());
  core::dropout_backward(ctx_, s.d_branch.data(), s.d_res.data(), dropout_spec(l, DropoutSite::mlp_residual));
  core::zero(ctx_, s.d_fch_gelu.data(), s.d_fch_gelu.numel());
  core::linear_backward(ctx_, s.d_fch_gelu.data(), params_.grad(h + "mlp.c_proj.weight"),
                        params_.grad(h + "mlp.c_proj.bias"), s.d_branch.data(), a.fch_gelu.data(),
                        params_.value(h + "mlp.c_proj.weight"), N, F, C);
  core::zero(ctx_, s.d_fch.data(), s.d_fch.numel());
  core::gelu_backward(ctx_, s.d_fch.data(), a.fch.data(), s.d_fch_gelu.data(), int64_t{N} * F);
  core::zero(ctx_, s.d_ln.data(), s.d_ln.numel());
  core::linear_backward(ctx_, s.d_ln.data(), params_.grad(h + "mlp.c_fc.weight"), params_.grad(h + "mlp.c_fc.bias"),
                        s.d_fch.data(), a.ln2.data(), params_.value(h + "mlp.c_fc.weight"), N, C, F);
  core::layernorm_backward(ctx_, s.d_res.data(), params_.grad(h + "ln_2.weight"), params_.grad(h + "ln_2.bias"),
                           s.d_ln.data(), a.res1.data(), params_.value(h + "ln_2.weight"), a.ln2_mean.data(),
                           a.ln2_rstd.data(), N, C);

  // Attention branch: res1 = x + drop(c_proj(attention(c_attn(ln_1(x))))).
  core::zero(ctx_, s.d_branch.data(), s.d_branch.numel());
  core::dropout_backward(ctx_, s.d_branch.data(), s.d_res.data(), dropout_spec(l, DropoutSite::attn_residual));
  core::zero(ctx_, s.d_atty.data(), s.d_atty.numel());
  core::linear_backward(ctx_, s.d_atty.data(), params_.grad(h + "attn.c_proj.weight"),
                        params_.grad(h + "attn.c_proj.bias"), s.d_branch.data(), a.atty.data(),
                        params_.value(h + "attn.c_proj.weight"), N, C, C);
  core::zero(ctx_, s.d_qkv.data(), s.d_qkv.numel());
  core::attention_backward(ctx_, s.d_qkv.data(), s.d_att.data(), s.d_atty.data(), a.qkv.data(), a.att.data(), B, T, C,
                           NH, dropout_spec(l, DropoutSite::attention_probs));
  core::zero(ctx_, s.d_ln.data(), s.d_ln.numel());
  core::linear_backward(ctx_, s.d_ln.data(), params_.grad(h + "attn.c_attn.weight"),
                        params_.grad(h + "attn.c_attn.bias"), s.d_qkv.data(), a.ln1.data(),
                        params_.value(h + "attn.c_attn.weight"), N, C, 3 * C);
  core::layernorm_backward(ctx_, s.d_res.data(), params_.grad(h + "ln_1.weight"), params_.grad(h + "ln_1.bias"),
                           s.d_ln.data(), x, params_.value(h + "ln_1.weight"), a.ln1_mean.data(), a.ln1_rstd.data(), N,
                           C);
}

float GPT::clip_gradients(float max_norm) {
  const double norm = std::sqrt(params_.owned_grad_sum_squares(ctx_));
  if (max_norm > 0.0f) {
    // torch.nn.utils.clip_grad_norm_: scale by max_norm / (norm + 1e-6) when that is below 1.
    const double coef = static_cast<double>(max_norm) / (norm + 1e-6);
    if (coef < 1.0) params_.scale_grads(ctx_, static_cast<float>(coef));
  }
  return static_cast<float>(norm);
}

}  // namespace optimus::serial
