// ModelParams: each canonical name looked up once in a ParamSet.
#include "model/named_params.h"

#include <algorithm>
#include <string>

namespace optimus::model {

namespace {

// `data` picks the values or the gradients of a ParamTensor.
template <typename Data>
ModelParams resolve(ParamSet& set, Data data) {
  auto get = [&](const std::string& name) { return data(set.at(name)); };
  ModelParams m;
  m.wte = get("transformer.wte.weight");
  m.wpe = get("transformer.wpe.weight");
  int L = 0;
  for (const ParamTensor& t : set.tensors) L = std::max(L, t.info.layer + 1);
  for (int l = 0; l < L; ++l) {
    const std::string h = "transformer.h." + std::to_string(l) + ".";
    BlockParams b;
    b.ln_1_w = get(h + "ln_1.weight"), b.ln_1_b = get(h + "ln_1.bias");
    b.c_attn_w = get(h + "attn.c_attn.weight"), b.c_attn_b = get(h + "attn.c_attn.bias");
    b.attn_proj_w = get(h + "attn.c_proj.weight"), b.attn_proj_b = get(h + "attn.c_proj.bias");
    b.ln_2_w = get(h + "ln_2.weight"), b.ln_2_b = get(h + "ln_2.bias");
    b.c_fc_w = get(h + "mlp.c_fc.weight"), b.c_fc_b = get(h + "mlp.c_fc.bias");
    b.mlp_proj_w = get(h + "mlp.c_proj.weight"), b.mlp_proj_b = get(h + "mlp.c_proj.bias");
    m.blocks.push_back(b);
  }
  m.ln_f_w = get("transformer.ln_f.weight");
  m.ln_f_b = get("transformer.ln_f.bias");
  return m;
}

}  // namespace

ModelParams ModelParams::values(ParamSet& set) {
  return resolve(set, [](const ParamTensor& t) { return t.value.data(); });
}

ModelParams ModelParams::grads(ParamSet& set) {
  return resolve(set, [](const ParamTensor& t) { return t.grad.data(); });
}

}  // namespace optimus::model
