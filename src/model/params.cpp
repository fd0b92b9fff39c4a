// The canonical parameter list and its initial values.
#include "model/params.h"

#include <algorithm>
#include <cmath>

#include "core/philox.h"

namespace optimus::model {

std::vector<ParamInfo> canonical_parameters(const GPTConfig& cfg) {
  const int64_t V = cfg.vocab_size, T = cfg.n_positions, C = cfg.n_embd, F = cfg.ffn();
  const float w_std = 0.02f;
  const float proj_std = 0.02f / std::sqrt(2.0f * static_cast<float>(cfg.n_layer));
  std::vector<ParamInfo> list;
  auto add = [&](std::string name, core::Shape shape, ParamKind kind, int layer, InitRule init, float std) {
    ParamInfo p;
    p.index = static_cast<int>(list.size());
    p.name = std::move(name);
    p.shape = std::move(shape);
    p.kind = kind;
    p.layer = layer;
    p.init = init;
    p.std = std;
    list.push_back(std::move(p));
  };
  add("transformer.wte.weight", {V, C}, ParamKind::token_embedding, -1, InitRule::normal, w_std);
  add("transformer.wpe.weight", {T, C}, ParamKind::position_embedding, -1, InitRule::normal, 0.01f);
  for (int l = 0; l < cfg.n_layer; ++l) {
    const std::string h = "transformer.h." + std::to_string(l) + ".";
    add(h + "ln_1.weight", {C}, ParamKind::norm_weight, l, InitRule::ones, 0.0f);
    add(h + "ln_1.bias", {C}, ParamKind::norm_bias, l, InitRule::zeros, 0.0f);
    add(h + "attn.c_attn.weight", {C, 3 * C}, ParamKind::attn_qkv_weight, l, InitRule::normal, w_std);
    add(h + "attn.c_attn.bias", {3 * C}, ParamKind::attn_qkv_bias, l, InitRule::zeros, 0.0f);
    add(h + "attn.c_proj.weight", {C, C}, ParamKind::attn_proj_weight, l, InitRule::normal, proj_std);
    add(h + "attn.c_proj.bias", {C}, ParamKind::attn_proj_bias, l, InitRule::zeros, 0.0f);
    add(h + "ln_2.weight", {C}, ParamKind::norm_weight, l, InitRule::ones, 0.0f);
    add(h + "ln_2.bias", {C}, ParamKind::norm_bias, l, InitRule::zeros, 0.0f);
    add(h + "mlp.c_fc.weight", {C, F}, ParamKind::mlp_fc_weight, l, InitRule::normal, w_std);
    add(h + "mlp.c_fc.bias", {F}, ParamKind::mlp_fc_bias, l, InitRule::zeros, 0.0f);
    add(h + "mlp.c_proj.weight", {F, C}, ParamKind::mlp_proj_weight, l, InitRule::normal, proj_std);
    add(h + "mlp.c_proj.bias", {C}, ParamKind::mlp_proj_bias, l, InitRule::zeros, 0.0f);
  }
  add("transformer.ln_f.weight", {C}, ParamKind::norm_weight, -1, InitRule::ones, 0.0f);
  add("transformer.ln_f.bias", {C}, ParamKind::norm_bias, -1, InitRule::zeros, 0.0f);
  return list;
}

float initial_value(const ParamInfo& info, uint32_t seed, int64_t index) {
  switch (info.init) {
    case InitRule::zeros:
      return 0.0f;
    case InitRule::ones:
      return 1.0f;
    case InitRule::normal:
      return info.std *
             core::philox_normal(core::init_key(seed, static_cast<uint32_t>(info.index)), static_cast<uint64_t>(index));
  }
  return 0.0f;
}

void initial_values(float* values, const ParamInfo& info, uint32_t seed, int64_t first, int64_t n) {
  if (info.init != InitRule::normal) {
    std::fill_n(values, n, info.init == InitRule::ones ? 1.0f : 0.0f);
    return;
  }
  if (n <= 0) return;
  const core::PhiloxKey key = core::init_key(seed, static_cast<uint32_t>(info.index));
  int64_t k = 0;
  if (first % 2 == 1) {  // the run starts on the sine branch of a pair
    values[k++] = info.std * core::philox_normal_pair(key, static_cast<uint64_t>(first / 2)).odd;
  }
  // Whole pairs (first + k is even), a block at a time: the block's Philox calls first (a loop the
  // compiler vectorises), then their Box-Muller transforms.
  constexpr int64_t kBlock = 64;
  r123::Philox4x32::ctr_type words[kBlock];
  while (k + 1 < n) {
    const int64_t pairs = std::min(kBlock, (n - k) / 2);
    const auto pair0 = static_cast<uint64_t>((first + k) / 2);
    for (int64_t i = 0; i < pairs; ++i) words[i] = core::philox(key, pair0 + static_cast<uint64_t>(i));
    for (int64_t i = 0; i < pairs; ++i, k += 2) {
      const core::NormalPair p = core::box_muller(words[i]);
      values[k] = info.std * p.even;
      values[k + 1] = info.std * p.odd;
    }
  }
  if (k < n) values[k] = info.std * core::philox_normal_pair(key, static_cast<uint64_t>((first + k) / 2)).even;
}

}  // namespace optimus::model
