// 1D shard specs.
#include "tp1d/shard_1d.h"

#include <string>

#include "core/errors.h"

namespace optimus::tp1d {

using model::ParamKind;
using model::ShardSpec;

void check_divisible(const model::GPTConfig& c, int p) {
  model::require_widths_divide(c, p, "the 1D layout", "over " + std::to_string(p) + " ranks",
                               "run on a number of ranks that divides");
}

void check_tokens_divisible(int64_t tokens, int p, const std::string& choose) {
  if (tokens % p == 0) return;
  const std::string n = std::to_string(tokens), ps = std::to_string(p);
  throw core::ConfigError("sequence parallelism splits the B·T = " + n + " tokens of a batch over the p = " + ps +
                          " ranks, but " + n + " is not divisible by " + ps + "; " + choose +
                          " and --seq whose product is a multiple of " + ps);
}

int vocab_part(const model::GPTConfig& c, int p) {
  return static_cast<int>(model::padded_size(c.vocab_size, p) / p);
}

ShardSpec spec_1d(const model::ParamInfo& info, int p, int r) {
  switch (info.kind) {
    case ParamKind::token_embedding: {  // vocab rows, the last ranks' padded
      ShardSpec s = ShardSpec::whole(info.shape);
      s.dims.front() = model::padded_part(info.shape[0], p, r);
      return s;
    }
    case ParamKind::attn_proj_weight:  // rows of head group r
    case ParamKind::mlp_proj_weight:   // rows r of F
      return ShardSpec::block(info.shape, {p, 1}, {r, 0});
    case ParamKind::mlp_fc_weight:  // columns r of F
      return ShardSpec::block(info.shape, {1, p}, {0, r});
    case ParamKind::mlp_fc_bias:
      return ShardSpec::block(info.shape, {p}, {r});
    case ParamKind::attn_qkv_weight:
    case ParamKind::attn_qkv_bias: {  // head group r's Q, K and V columns
      ShardSpec s = ShardSpec::whole(info.shape);
      s.dims.back() = model::qkv_group_columns(info.shape[info.shape.rank() - 1], p, r);
      return s;
    }
    case ParamKind::position_embedding:
    case ParamKind::norm_weight:
    case ParamKind::norm_bias:
    case ParamKind::attn_proj_bias:
    case ParamKind::mlp_proj_bias: {
      ShardSpec s = ShardSpec::whole(info.shape);  // replicated; rank 0 counts it
      s.owner = r == 0;
      return s;
    }
  }
  return ShardSpec::whole(info.shape);
}

}  // namespace optimus::tp1d
