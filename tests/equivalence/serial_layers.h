// The serial references of the layer tests (L2): one layer's (or the attention sub-layer's)
// forward and backward on the full tensors, with the serial core ops, which every rank computes
// (the tensors are small) before comparing its own piece of each result.
#pragma once

#include <vector>

#include "core/context.h"
#include "core/ops.h"

namespace equivalence {

/// LayerNorm's forward of inp (N, C) and its backward from dout (N, C), gradients from zero.
struct SerialLayerNorm {
  std::vector<float> out, mean, rstd, dinp, dweight, dbias;  // (N, C), (N), (N), (N, C), (C), (C)
};
inline SerialLayerNorm serial_layernorm(const std::vector<float>& inp, const std::vector<float>& weight,
                                        const std::vector<float>& bias, const std::vector<float>& dout, int N, int C,
                                        float eps) {
  const auto ctx = optimus::core::cpu_context();
  SerialLayerNorm r{std::vector<float>(inp.size()),       std::vector<float>(N),       std::vector<float>(N),
                    std::vector<float>(inp.size(), 0.0f), std::vector<float>(C, 0.0f), std::vector<float>(C, 0.0f)};
  optimus::core::layernorm_forward(ctx, r.out.data(), r.mean.data(), r.rstd.data(), inp.data(), weight.data(),
                                   bias.data(), N, C, eps);
  optimus::core::layernorm_backward(ctx, {.dinp = r.dinp.data(), .dweight = r.dweight.data(), .dbias = r.dbias.data()},
                                    dout.data(), inp.data(), weight.data(), r.mean.data(), r.rstd.data(), N, C);
  return r;
}

/// The linear layer out = inp (N, C) · weight (C, OC) + bias (OC) and its backward from dout
/// (N, OC), gradients from zero.
struct SerialLinear {
  std::vector<float> out, dinp, dweight, dbias;  // (N, OC), (N, C), (C, OC), (OC)
};
inline SerialLinear serial_linear(const std::vector<float>& inp, const std::vector<float>& weight,
                                  const std::vector<float>& bias, const std::vector<float>& dout, int N, int C,
                                  int OC) {
  const auto ctx = optimus::core::cpu_context();
  SerialLinear r{std::vector<float>(static_cast<size_t>(N) * OC), std::vector<float>(inp.size(), 0.0f),
                 std::vector<float>(weight.size(), 0.0f), std::vector<float>(OC, 0.0f)};
  optimus::core::linear_forward(ctx, r.out.data(), inp.data(), weight.data(), bias.data(), N, C, OC);
  optimus::core::linear_backward(ctx, {.dinp = r.dinp.data(), .dweight = r.dweight.data(), .dbias = r.dbias.data()},
                                 dout.data(), inp.data(), weight.data(), N, C, OC);
  return r;
}

/// The MLP out = gelu(x (N, C) · w_fc (C, F) + b_fc) · w_proj (F, C) + b_proj and its backward
/// from dy (N, C), gradients from zero.
struct SerialMLP {
  std::vector<float> out, dinp, dw_fc, db_fc, dw_proj, db_proj;  // (N, C), (N, C), (C, F), (F), (F, C), (C)
};
inline SerialMLP serial_mlp(const std::vector<float>& x, const std::vector<float>& w_fc, const std::vector<float>& b_fc,
                            const std::vector<float>& w_proj, const std::vector<float>& b_proj,
                            const std::vector<float>& dy, int N, int C, int F) {
  namespace core = optimus::core;
  const auto ctx = core::cpu_context();
  const int64_t NF = int64_t{N} * F;
  std::vector<float> h(static_cast<size_t>(NF)), hg(h.size()), dhg(h.size(), 0.0f), dh(h.size(), 0.0f);  // (N, F)
  SerialMLP r{
      std::vector<float>(x.size()), std::vector<float>(x.size(), 0.0f),      std::vector<float>(w_fc.size(), 0.0f),
      std::vector<float>(F, 0.0f),  std::vector<float>(w_proj.size(), 0.0f), std::vector<float>(C, 0.0f)};
  core::linear_forward(ctx, h.data(), x.data(), w_fc.data(), b_fc.data(), N, C, F);
  core::gelu_forward(ctx, hg.data(), h.data(), NF);
  core::linear_forward(ctx, r.out.data(), hg.data(), w_proj.data(), b_proj.data(), N, F, C);
  core::linear_backward(ctx, {.dinp = dhg.data(), .dweight = r.dw_proj.data(), .dbias = r.db_proj.data()}, dy.data(),
                        hg.data(), w_proj.data(), N, F, C);
  core::gelu_backward(ctx, dh.data(), h.data(), dhg.data(), NF);
  core::linear_backward(ctx, {.dinp = r.dinp.data(), .dweight = r.dw_fc.data(), .dbias = r.db_fc.data()}, dh.data(),
                        x.data(), w_fc.data(), N, C, F);
  return r;
}

/// The attention sub-layer's parameters (ln_1, c_attn, c_proj), or their gradients.
struct AttentionParams {
  std::vector<float> ln_w, ln_b, w_attn, b_attn, w_proj, b_proj;  // (C), (C), (C, 3C), (3C), (C, C), (C)
};

/// Zeros of p's sizes: gradients to accumulate into.
inline AttentionParams zeros_like(const AttentionParams& p) {
  const auto zeros = [](const std::vector<float>& v) { return std::vector<float>(v.size(), 0.0f); };
  return {zeros(p.ln_w), zeros(p.ln_b), zeros(p.w_attn), zeros(p.b_attn), zeros(p.w_proj), zeros(p.b_proj)};
}

/// The attention sub-layer with its residual, out = x + c_proj(attention(c_attn(LayerNorm(x)))),
/// on x (B·T, C), and its backward from dy (B·T, C), gradients from zero. drop: the whole
/// (B, NH, T·T) block of the attention probabilities. (A parallel test holds its pieces in the
/// same struct.)
struct AttentionResult {
  std::vector<float> out, dinp;  // (N, C), (N, C)
  AttentionParams grads;
};
inline AttentionResult serial_attention(const std::vector<float>& x, const AttentionParams& p,
                                        const std::vector<float>& dy, int B, int T, int C, int NH, float eps,
                                        const optimus::core::DropoutSpec& drop) {
  namespace core = optimus::core;
  const auto ctx = core::cpu_context();
  const int N = B * T;
  const size_t NC = static_cast<size_t>(N) * C;
  std::vector<float> ln(NC), mean(N), rstd(N), qkv(3 * NC), att(static_cast<size_t>(B) * NH * T * T), atty(NC);
  AttentionResult r{std::vector<float>(NC), dy, zeros_like(p)};  // dy reaches x whole through the residual
  core::layernorm_forward(ctx, ln.data(), mean.data(), rstd.data(), x.data(), p.ln_w.data(), p.ln_b.data(), N, C, eps);
  core::linear_forward(ctx, qkv.data(), ln.data(), p.w_attn.data(), p.b_attn.data(), N, C, 3 * C);
  core::attention_forward(ctx, atty.data(), att.data(), qkv.data(), B, T, C, NH, drop);
  core::linear_forward(ctx, r.out.data(), atty.data(), p.w_proj.data(), p.b_proj.data(), N, C, C);
  core::residual_forward(ctx, r.out.data(), r.out.data(), x.data(), static_cast<int64_t>(NC));

  std::vector<float> d_atty(NC, 0.0f), d_qkv(3 * NC, 0.0f), d_att(att.size()), d_ln(NC, 0.0f);
  AttentionParams& g = r.grads;
  core::linear_backward(ctx, {.dinp = d_atty.data(), .dweight = g.w_proj.data(), .dbias = g.b_proj.data()}, dy.data(),
                        atty.data(), p.w_proj.data(), N, C, C);
  core::attention_backward(ctx, d_qkv.data(), d_att.data(), d_atty.data(), qkv.data(), att.data(), B, T, C, NH, drop);
  core::linear_backward(ctx, {.dinp = d_ln.data(), .dweight = g.w_attn.data(), .dbias = g.b_attn.data()}, d_qkv.data(),
                        ln.data(), p.w_attn.data(), N, C, 3 * C);
  core::layernorm_backward(ctx, {.dinp = r.dinp.data(), .dweight = g.ln_w.data(), .dbias = g.ln_b.data()}, d_ln.data(),
                           x.data(), p.ln_w.data(), mean.data(), rstd.data(), N, C);
  return r;
}

}  // namespace equivalence
