// The canonical parameter list: every tensor of the model by its Hugging Face GPT-2
// name, its canonical shape and its initialisation rule, in one fixed order. The position in this
// list is the parameter's index, which keys its Philox stream: that is how every layout draws the
// same initial weights. Stages hold shards of these tensors (model/shard.h).
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "model/config.h"

namespace optimus::model {

enum class InitRule { normal, zeros, ones };

/// Where a new model's parameter values come from: drawn from Philox under the seed (a fresh
/// model), or loaded from a checkpoint right after the model is built; until then they are unset
/// (drawing them first would be work thrown away: 124M Philox draws for GPT-2 small).
enum class InitialValues { drawn, loaded };

/// How a parameter is used, which decides weight decay (2-D weights only) and how stages shard it.
enum class ParamKind {
  token_embedding,     // wte (V, C), tied with the LM head
  position_embedding,  // wpe (T, C)
  norm_weight,         // ln_*.weight (C)
  norm_bias,           // ln_*.bias (C)
  attn_qkv_weight,     // c_attn.weight (C, 3C), columns [Q | K | V]
  attn_qkv_bias,       // c_attn.bias (3C)
  attn_proj_weight,    // attn.c_proj.weight (C, C)
  attn_proj_bias,      // attn.c_proj.bias (C)
  mlp_fc_weight,       // mlp.c_fc.weight (C, F)
  mlp_fc_bias,         // mlp.c_fc.bias (F)
  mlp_proj_weight,     // mlp.c_proj.weight (F, C)
  mlp_proj_bias,       // mlp.c_proj.bias (C)
};

struct ParamInfo {
  int index = 0;      // position in the canonical list; keys the Philox init stream
  std::string name;   // e.g. "transformer.h.0.attn.c_attn.weight"
  core::Shape shape;  // canonical shape
  ParamKind kind = ParamKind::norm_weight;
  int layer = -1;  // block index, -1 for wte, wpe, ln_f
  InitRule init = InitRule::zeros;
  float std = 0.0f;  // for InitRule::normal

  bool is_matrix() const { return shape.rank() == 2; }  // gets weight decay
};

/// The canonical list for a configuration: wte, wpe, then per block ln_1, attn.c_attn, attn.c_proj,
/// ln_2, mlp.c_fc, mlp.c_proj (weight before bias), then ln_f. GPT-2 initialisation: weights
/// N(0, 0.02), the two residual projections N(0, 0.02/√(2L)), wpe N(0, 0.01), biases 0, LN weights 1.
std::vector<ParamInfo> canonical_parameters(const GPTConfig& config);

/// The canonical value of element `index` (flat, row-major in the canonical shape) of a parameter,
/// drawn from philox under init_key(seed, info.index). Independent of any layout.
float initial_value(const ParamInfo& info, uint32_t seed, int64_t index);
/// values[k] = initial_value(info, seed, first + k) for k in [0, n): a run of side-by-side canonical
/// elements, the same floats, drawn a pair per Philox call (core::philox_normal_pair).
void initial_values(float* values, const ParamInfo& info, uint32_t seed, int64_t first, int64_t n);

}  // namespace optimus::model
