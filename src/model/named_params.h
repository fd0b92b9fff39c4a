// A model's tensors by name, resolved once: the pointers a stage's forward and backward passes read,
// in the way llm.c's ParameterTensors names its tensors. A stage resolves its ParamSet once, for
// the values and once for the gradients, and then writes `w.c_fc_w`, `dw.c_fc_w` where it would
// otherwise look a canonical name up at every use. Each pointer is this rank's shard of the tensor
// (model/shard.h), in the memory of the set's context; it lives as long as the ParamSet.
#pragma once

#include <vector>

#include "model/param_set.h"

namespace optimus::model {

/// One block's tensors, transformer.h.{l}.*; shapes are the canonical ones (a rank holds a shard).
struct BlockParams {
  float* ln_1_w = nullptr;       // ln_1.weight (C)
  float* ln_1_b = nullptr;       // ln_1.bias (C)
  float* c_attn_w = nullptr;     // attn.c_attn.weight (C, 3C), columns [Q | K | V]
  float* c_attn_b = nullptr;     // attn.c_attn.bias (3C)
  float* attn_proj_w = nullptr;  // attn.c_proj.weight (C, C)
  float* attn_proj_b = nullptr;  // attn.c_proj.bias (C)
  float* ln_2_w = nullptr;       // ln_2.weight (C)
  float* ln_2_b = nullptr;       // ln_2.bias (C)
  float* c_fc_w = nullptr;       // mlp.c_fc.weight (C, F)
  float* c_fc_b = nullptr;       // mlp.c_fc.bias (F)
  float* mlp_proj_w = nullptr;   // mlp.c_proj.weight (F, C)
  float* mlp_proj_b = nullptr;   // mlp.c_proj.bias (C)
};

/// The whole model's tensors, in the canonical order.
struct ModelParams {
  float* wte = nullptr;             // transformer.wte.weight (V, C), tied with the LM head
  float* wpe = nullptr;             // transformer.wpe.weight (T, C)
  std::vector<BlockParams> blocks;  // L of them
  float* ln_f_w = nullptr;          // transformer.ln_f.weight (C)
  float* ln_f_b = nullptr;          // transformer.ln_f.bias (C)

  /// The values of the set's tensors.
  static ModelParams values(ParamSet& set);
  /// The gradients of the set's tensors, named like their values.
  static ModelParams grads(ParamSet& set);
};

}  // namespace optimus::model
