// The serial references of the layer tests (L2): one layer's forward and backward on the full
// tensors, with the serial core ops, which every rank computes (the tensors are small) before
// comparing its own piece of each result.
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

}  // namespace equivalence
