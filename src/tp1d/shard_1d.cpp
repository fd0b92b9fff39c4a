// 1D shard specs.
#include "tp1d/shard_1d.h"

#include <string>

#include "core/errors.h"

namespace optimus::tp1d {

using model::ParamKind;
using model::Segment;
using model::ShardSpec;

void check_divisible(const model::GPTConfig& c, int p) {
  auto need = [&](const char* what, const char* flag, int value) {
    if (value % p != 0) {
      throw core::ConfigError(std::string("the 1D layout splits ") + what + " over " + std::to_string(p) +
                              " ranks, but " + std::to_string(value) + " is not divisible by " + std::to_string(p) +
                              "; choose " + flag + " a multiple of " + std::to_string(p) + " or run on fewer ranks");
    }
  };
  need("the heads", "--heads", c.n_head);
  need("the embedding width", "--embd", c.n_embd);
  need("the MLP width 4C", "--embd", c.ffn());
  need("the vocabulary", "a vocabulary size", c.vocab_size);
}

ShardSpec spec_1d(const model::ParamInfo& info, int p, int r) {
  switch (info.kind) {
    case ParamKind::token_embedding:  // vocab rows
    case ParamKind::attn_proj_weight:  // rows of head group r
    case ParamKind::mlp_proj_weight:   // rows r of F
      return ShardSpec::block(info.shape, {p, 1}, {r, 0});
    case ParamKind::mlp_fc_weight:  // columns r of F
      return ShardSpec::block(info.shape, {1, p}, {0, r});
    case ParamKind::mlp_fc_bias:
      return ShardSpec::block(info.shape, {p}, {r});
    case ParamKind::attn_qkv_weight:
    case ParamKind::attn_qkv_bias: {
      // Head group r's Q columns, then its K columns, then its V columns.
      const int64_t width = info.shape[info.shape.rank() - 1] / 3;  // C
      const int64_t group = width / p;
      std::vector<Segment> cols;
      for (int part = 0; part < 3; ++part) cols.push_back({part * width + r * group, group});
      ShardSpec s = ShardSpec::whole(info.shape);
      s.dims.back() = cols;
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
