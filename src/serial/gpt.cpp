// Stage 1: the single-device GPT. The forward pass reads top to bottom in the order of the model;
// the backward pass walks it back. The residual stream's gradient lives in one buffer (d_res):
// each branch's backward adds into it, which is the chain rule of x + f(x).
#include "serial/gpt.h"

#include <stdexcept>

#include "core/ops.h"

namespace optimus::serial {

using core::DropoutSite;
using core::Trans;

GPT::GPT(const model::GPTConfig& config, const core::Context& ctx, uint32_t seed, const model::StageOptions& memory)
    : Stage(config, ctx, seed, memory) {
  if (memory.sequence_parallel)
    throw std::invalid_argument("serial::GPT: sequence parallelism is a mode of the 1D stage");
  create_params([](const model::ParamInfo& p) { return model::ShardSpec::whole(p.shape); });
}

// The whole batch: one device holds all of it, every row, column, head and vocabulary column.
model::LocalShapes GPT::local_shapes(int B, int T) const {
  const int64_t N = int64_t{B} * T, C = config_.n_embd;
  return {
      .mine = {.B = B, .T = T, .b0 = 0, .Bl = B, .c0 = 0, .Cl = C, .h0 = 0, .NHl = config_.n_head, .n0 = 0, .Nl = N},
      .Cr = C,
      .Fr = config_.ffn(),
      .Vr = config_.vocab_size};
}

// ---- forward ------------------------------------------------------------------------------------

float GPT::forward(const int* inputs, const int* targets, int B, int T, uint32_t step, bool train,
                   const model::BatchSlice& slice) {
  model::check_sequence_length(config_, T);
  const model::LocalShapes local = local_shapes(B, T);
  model::ensure_buffers(acts_, scratch_, ctx_, config_, recompute_, local);
  model::begin_forward(acts_, ctx_, local, inputs, targets, step, train, slice);
  const int N = B * T, C = config_.n_embd, V = config_.vocab_size;
  const float eps = config_.layer_norm_epsilon;
  const model::ModelParams& w = weights_;

  // Embedding: token rows plus position rows, then dropout (in place).
  core::embedding_forward(ctx_, acts_.encoded.data(), acts_.inputs.data(), w.wte, N, C, 0, V);
  core::position_add_forward(ctx_, acts_.encoded.data(), w.wpe, B, T, C);
  core::dropout_forward(ctx_, acts_.encoded.data(), acts_.encoded.data(), dropout_spec(0, DropoutSite::embedding));

  for (int l = 0; l < config_.n_layer; ++l) block_forward(l, residual(l));
  const float* x = residual(config_.n_layer);

  // Final LayerNorm, tied LM head (logits = lnf · wteᵀ), cross-entropy.
  core::layernorm_forward(ctx_, acts_.lnf.data(), acts_.lnf_mean.data(), acts_.lnf_rstd.data(), x, w.ln_f_w, w.ln_f_b,
                          N, C, eps);
  core::matmul(ctx_, acts_.logits.data(), acts_.lnf.data(), w.wte, N, V, C, Trans::no, Trans::yes);
  core::crossentropy_forward(ctx_, acts_.losses.data(), acts_.ce_max.data(), acts_.ce_sumexp.data(),
                             acts_.logits.data(), acts_.targets.data(), N, V, V);
  double sum = 0.0;
  core::sum(ctx_, &sum, acts_.losses.data(), N);  // in double, on the device; the result on the host
  return static_cast<float>(sum / static_cast<double>(acts_.batch_tokens()));
}

// One block: x → x + drop(c_proj(attn(ln_1(x)))) → + drop(mlp(ln_2(·))), into outputs[l]. Each
// branch's output goes through scratch: the backward pass reads neither it nor its dropout's
// output (the mask is regenerated from Philox), only what the residual add made of it.
void GPT::block_forward(int l, const float* x) {
  model::BlockActivations& a = acts_.working_set(l);
  float* out = acts_.outputs[static_cast<size_t>(l)].data();
  float* branch = acts_.branch.data();  // (N, C) scratch
  const model::BlockParams& w = weights_.blocks[static_cast<size_t>(l)];
  const int B = acts_.B, T = acts_.T, N = B * T, C = config_.n_embd, F = config_.ffn(), NH = config_.n_head;
  const float eps = config_.layer_norm_epsilon;

  core::layernorm_forward(ctx_, a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), x, w.ln_1_w, w.ln_1_b, N, C, eps);
  core::linear_forward(ctx_, a.qkv.data(), a.ln1.data(), w.c_attn_w, w.c_attn_b, N, C, 3 * C);
  core::attention_forward(ctx_, a.atty.data(), a.att.data(), a.qkv.data(), B, T, C, NH,
                          dropout_spec(l, DropoutSite::attention_probs));
  core::linear_forward(ctx_, branch, a.atty.data(), w.attn_proj_w, w.attn_proj_b, N, C, C);
  core::dropout_forward(ctx_, branch, branch, dropout_spec(l, DropoutSite::attn_residual));
  core::residual_forward(ctx_, a.res1.data(), x, branch, int64_t{N} * C);

  core::layernorm_forward(ctx_, a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.res1.data(), w.ln_2_w, w.ln_2_b,
                          N, C, eps);
  core::linear_forward(ctx_, a.fch.data(), a.ln2.data(), w.c_fc_w, w.c_fc_b, N, C, F);
  core::gelu_forward(ctx_, a.fch_gelu.data(), a.fch.data(), int64_t{N} * F);
  core::linear_forward(ctx_, branch, a.fch_gelu.data(), w.mlp_proj_w, w.mlp_proj_b, N, F, C);
  core::dropout_forward(ctx_, branch, branch, dropout_spec(l, DropoutSite::mlp_residual));
  core::residual_forward(ctx_, out, a.res1.data(), branch, int64_t{N} * C);
}

// ---- backward -----------------------------------------------------------------------------------
// Every op adds into its gradient outputs: the parameters' gradients (zeroed once a step by the
// caller) collect from every use, and an activation gradient that one op makes is passed zeroed.

void GPT::backward() {
  const int B = acts_.B, T = acts_.T, N = B * T, C = config_.n_embd, V = config_.vocab_size;
  model::BackwardScratch& s = scratch_;
  const model::ModelParams &w = weights_, &dw = grads_;

  // Loss: the mean over the batch's tokens (the step's, when this pass is a part of it), so each
  // token's loss has gradient 1/N.
  core::crossentropy_backward(ctx_, core::zeroed(ctx_, s.d_logits), acts_.logits.data(), acts_.ce_max.data(),
                              acts_.ce_sumexp.data(), acts_.targets.data(),
                              1.0f / static_cast<float>(acts_.batch_tokens()), N, V, 0, V);
  // LM head: d_lnf = d_logits · wte; dwte += d_logitsᵀ · lnf (the first of wte's two gradients).
  core::matmul_backward(ctx_, core::zeroed(ctx_, s.d_ln), dw.wte, s.d_logits.data(), acts_.lnf.data(), w.wte, N, V, C,
                        Trans::no, Trans::yes);
  core::layernorm_backward(ctx_, {.dinp = core::zeroed(ctx_, s.d_res), .dweight = dw.ln_f_w, .dbias = dw.ln_f_b},
                           s.d_ln.data(), residual(config_.n_layer), w.ln_f_w, acts_.lnf_mean.data(),
                           acts_.lnf_rstd.data(), N, C);

  // With recomputation each block first reruns its forward from its input (rewriting its output
  // with the same values), which refills the working set its backward reads.
  for (int l = config_.n_layer - 1; l >= 0; --l) {
    if (recompute_ == model::Recompute::block) block_forward(l, residual(l));
    block_backward(l, residual(l));
    block_ready(l);
  }

  // Embedding: through its dropout, then scatter-add into wte (its second gradient) and wpe.
  core::dropout_backward(ctx_, core::zeroed(ctx_, s.d_branch), s.d_res.data(), dropout_spec(0, DropoutSite::embedding));
  core::embedding_backward(ctx_, dw.wte, s.d_branch.data(), acts_.inputs.data(), N, C, 0, V);
  core::position_add_backward(ctx_, dw.wpe, s.d_branch.data(), B, T, C);
  all_ready();
}

// On entry s.d_res = dL/d(block output); on exit s.d_res = dL/dx (the block's input).
void GPT::block_backward(int l, const float* x) {
  model::BlockActivations& a = acts_.working_set(l);
  model::BackwardScratch& s = scratch_;
  const model::BlockParams &w = weights_.blocks[static_cast<size_t>(l)], &dw = grads_.blocks[static_cast<size_t>(l)];
  const int B = acts_.B, T = acts_.T, N = B * T, C = config_.n_embd, F = config_.ffn(), NH = config_.n_head;

  // MLP branch: res2 = res1 + drop(c_proj(gelu(c_fc(ln_2(res1))))). d_res already is dL/dres1's
  // identity part; the branch adds the rest through ln_2.
  core::dropout_backward(ctx_, core::zeroed(ctx_, s.d_branch), s.d_res.data(),
                         dropout_spec(l, DropoutSite::mlp_residual));
  core::linear_backward(ctx_,
                        {.dinp = core::zeroed(ctx_, s.d_fch_gelu), .dweight = dw.mlp_proj_w, .dbias = dw.mlp_proj_b},
                        s.d_branch.data(), a.fch_gelu.data(), w.mlp_proj_w, N, F, C);
  core::gelu_backward(ctx_, core::zeroed(ctx_, s.d_fch), a.fch.data(), s.d_fch_gelu.data(), int64_t{N} * F);
  core::linear_backward(ctx_, {.dinp = core::zeroed(ctx_, s.d_ln), .dweight = dw.c_fc_w, .dbias = dw.c_fc_b},
                        s.d_fch.data(), a.ln2.data(), w.c_fc_w, N, C, F);
  core::layernorm_backward(ctx_, {.dinp = s.d_res.data(), .dweight = dw.ln_2_w, .dbias = dw.ln_2_b}, s.d_ln.data(),
                           a.res1.data(), w.ln_2_w, a.ln2_mean.data(), a.ln2_rstd.data(), N, C);

  // Attention branch: res1 = x + drop(c_proj(attention(c_attn(ln_1(x))))).
  core::dropout_backward(ctx_, core::zeroed(ctx_, s.d_branch), s.d_res.data(),
                         dropout_spec(l, DropoutSite::attn_residual));
  core::linear_backward(ctx_,
                        {.dinp = core::zeroed(ctx_, s.d_atty), .dweight = dw.attn_proj_w, .dbias = dw.attn_proj_b},
                        s.d_branch.data(), a.atty.data(), w.attn_proj_w, N, C, C);
  core::attention_backward(ctx_, core::zeroed(ctx_, s.d_qkv), s.d_att.data(), s.d_atty.data(), a.qkv.data(),
                           a.att.data(), B, T, C, NH, dropout_spec(l, DropoutSite::attention_probs));
  core::linear_backward(ctx_, {.dinp = core::zeroed(ctx_, s.d_ln), .dweight = dw.c_attn_w, .dbias = dw.c_attn_b},
                        s.d_qkv.data(), a.ln1.data(), w.c_attn_w, N, C, 3 * C);
  core::layernorm_backward(ctx_, {.dinp = s.d_res.data(), .dweight = dw.ln_1_w, .dbias = dw.ln_1_b}, s.d_ln.data(), x,
                           w.ln_1_w, a.ln1_mean.data(), a.ln1_rstd.data(), N, C);
}

float GPT::clip_gradients(float max_norm) {
  return model::clip_grad_norm(params_, ctx_, nullptr, max_norm);
}

}  // namespace optimus::serial
