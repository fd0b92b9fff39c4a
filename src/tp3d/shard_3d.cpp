// 3D shard specs.
#include "tp3d/shard_3d.h"

#include <vector>

#include "core/errors.h"
#include "tp3d/attention.h"

namespace optimus::tp3d {

using model::ParamKind;
using model::ShardSpec;

void check_divisible_3d(const model::GPTConfig& c, int q) {
  const std::string qs = std::to_string(q);
  model::require_widths_divide(c, q, "the 3D layout", "over a cube side of q = " + qs,
                               "run on q×q×q ranks with q dividing");
  const int q2 = q * q;
  if (c.n_embd % q2 == 0) return;
  throw core::ConfigError("the 3D layout cuts the embedding width into q² = " + std::to_string(q2) +
                          " row pieces of a weight, but " + std::to_string(c.n_embd) + " is not divisible by " +
                          std::to_string(q2) + "; use a model with --embd a multiple of " + std::to_string(q2) +
                          ", or another cube");
}

void check_batch_divisible_3d(int B, int q, const std::string& batch, const std::string& choose) {
  const int q2 = q * q;
  if (B % q2 == 0) return;
  const std::string qs = std::to_string(q2);
  throw core::ConfigError("the 3D layout splits the batch into the q² = " + qs +
                          " row pieces of the cube's activations, but " +
                          (batch.empty() ? "the batch " + std::to_string(B) : batch) + " is not divisible by " + qs +
                          "; " + choose + " a multiple of " + qs);
}

SharedIndex shared_index(ParamKind kind) {
  switch (kind) {
    case ParamKind::position_embedding:
    case ParamKind::norm_weight:
    case ParamKind::norm_bias:
    case ParamKind::attn_proj_bias:
    case ParamKind::mlp_proj_bias:
      return SharedIndex::j;
    case ParamKind::attn_qkv_bias:
    case ParamKind::mlp_fc_bias:
      return SharedIndex::k;
    default:
      return SharedIndex::none;
  }
}

ShardSpec spec_3d(const model::ParamInfo& info, int q, int i, int j, int k) {
  const int64_t q2 = int64_t{q} * q;
  switch (info.kind) {
    case ParamKind::token_embedding: {  // (vocabulary piece k·q + i, padded; C block j)
      ShardSpec s = ShardSpec::block(info.shape, {1, q}, {0, j});
      s.dims.front() = model::padded_part(info.shape[0], q2, k * q + i);
      return s;
    }
    case ParamKind::attn_qkv_weight:
    case ParamKind::attn_qkv_bias:
      return qkv_spec_3d(info.shape, q, i, j, k);
    case ParamKind::mlp_fc_weight:  // standard W: (C piece j·q + i, F block k)
      return ShardSpec::block(info.shape, {q2, q}, {j * q + i, k});
    case ParamKind::attn_proj_weight:  // exchanged W: (C or F piece k·q + i, C block j)
    case ParamKind::mlp_proj_weight:
      return ShardSpec::block(info.shape, {q2, q}, {k * q + i, j});
    case ParamKind::mlp_fc_bias: {  // F block k, replicated over (i, j)
      ShardSpec s = ShardSpec::block(info.shape, {q}, {k});
      s.owner = i == 0 && j == 0;
      return s;
    }
    case ParamKind::position_embedding:  // (T, C): C block j
    case ParamKind::norm_weight:
    case ParamKind::norm_bias:
    case ParamKind::attn_proj_bias:
    case ParamKind::mlp_proj_bias: {  // the last dimension's block j, replicated over (i, k)
      std::vector<int64_t> parts(static_cast<size_t>(info.shape.rank()), 1), index(parts.size(), 0);
      parts.back() = q, index.back() = j;
      ShardSpec s = ShardSpec::block(info.shape, parts, index);
      s.owner = i == 0 && k == 0;
      return s;
    }
  }
  return ShardSpec::whole(info.shape);
}

}  // namespace optimus::tp3d
