// 2D shard specs.
#include "tp2d/shard_2d.h"

#include <string>
#include <vector>

#include "core/errors.h"

namespace optimus::tp2d {

using model::ParamKind;
using model::Segment;
using model::ShardSpec;

void check_divisible_2d(const model::GPTConfig& c, int q) {
  model::require_widths_divide(c, q, "the 2D layout", "over a grid side of q = " + std::to_string(q),
                               "run on q×q ranks with q dividing");
}

void check_batch_divisible_2d(int B, int q, const std::string& batch, const std::string& choose) {
  if (B % q == 0) return;
  const std::string qs = std::to_string(q);
  throw core::ConfigError("the 2D layout splits the batch over the q = " + qs + " rows of the grid, but " +
                          (batch.empty() ? "the batch " + std::to_string(B) : batch) + " is not divisible by " + qs +
                          "; " + choose + " a multiple of " + qs);
}

int vocab_block(const model::GPTConfig& c, int q) {
  return static_cast<int>(model::padded_size(c.vocab_size, q) / q);
}

bool column_replicated(ParamKind kind) {
  switch (kind) {
    case ParamKind::position_embedding:
    case ParamKind::norm_weight:
    case ParamKind::norm_bias:
    case ParamKind::attn_qkv_bias:
    case ParamKind::attn_proj_bias:
    case ParamKind::mlp_fc_bias:
    case ParamKind::mlp_proj_bias:
      return true;
    default:
      return false;
  }
}

namespace {

// The elements of `info` that rank (i, j) holds (who owns a replicated copy is spec_2d's).
ShardSpec block_2d(const model::ParamInfo& info, int q, int i, int j) {
  switch (info.kind) {
    case ParamKind::token_embedding: {  // (vocab block i, padded; C block j)
      ShardSpec s = ShardSpec::block(info.shape, {1, q}, {0, j});
      s.dims.front() = model::padded_part(info.shape[0], q, i);
      return s;
    }
    case ParamKind::attn_proj_weight:  // (C block i, C block j)
    case ParamKind::mlp_fc_weight:     // (C block i, F block j)
    case ParamKind::mlp_proj_weight:   // (F block i, C block j)
      return ShardSpec::block(info.shape, {q, q}, {i, j});
    case ParamKind::attn_qkv_weight:
    case ParamKind::attn_qkv_bias: {  // columns: head group j's Q, K and V columns
      ShardSpec s = ShardSpec::whole(info.shape);
      s.dims.back() = model::qkv_group_columns(info.shape[info.shape.rank() - 1], q, j);
      if (info.kind == ParamKind::attn_qkv_weight) {
        const int64_t rows = info.shape[0] / q;  // rows: C block i
        s.dims.front() = {Segment{i * rows, rows}};
      }
      return s;
    }
    case ParamKind::position_embedding:  // (T, C): C block j
    case ParamKind::norm_weight:
    case ParamKind::norm_bias:
    case ParamKind::attn_proj_bias:
    case ParamKind::mlp_fc_bias:  // F block j
    case ParamKind::mlp_proj_bias: {
      // The last dimension's block j.
      std::vector<int64_t> parts(static_cast<size_t>(info.shape.rank()), 1), index(parts.size(), 0);
      parts.back() = q, index.back() = j;
      return ShardSpec::block(info.shape, parts, index);
    }
  }
  return ShardSpec::whole(info.shape);
}

}  // namespace

ShardSpec spec_2d(const model::ParamInfo& info, int q, int i, int j) {
  ShardSpec s = block_2d(info, q, i, j);
  if (column_replicated(info.kind)) s.owner = i == 0;  // replicated down column j; row 0 counts it
  return s;
}

}  // namespace optimus::tp2d
