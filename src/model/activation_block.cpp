// The sequence-length check and the dropout of a site, for every stage.
#include "model/activation_block.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "comm/grid.h"
#include "core/errors.h"

namespace optimus::model {

void check_sequence_length(const GPTConfig& config, int T) {
  if (T > config.n_positions) {
    throw core::ConfigError("the sequence length " + std::to_string(T) + " exceeds the model's n_positions " +
                            std::to_string(config.n_positions));
  }
}

core::DropoutSpec dropout_spec(const GPTConfig& config, const RankSlice& mine, uint32_t seed, uint32_t step, bool train,
                               int layer, core::DropoutSite site) {
  core::DropoutSpec d;
  d.p = train ? config.dropout : 0.0f;
  d.key = core::dropout_key(seed, static_cast<uint32_t>(layer), site);
  d.step = step;
  const int64_t B = mine.B, T = mine.T, NH = config.n_head, C = config.n_embd;
  if (site == core::DropoutSite::attention_probs) {
    const int64_t dims[3] = {mine.Bl, mine.NHl, T * T}, offsets[3] = {mine.b0, mine.h0, 0}, global[3] = {B, NH, T * T};
    for (int k = 0; k < 3; ++k)
      d.block.dim[k] = dims[k], d.block.offset[k] = offsets[k], d.block.global_dim[k] = global[k];
  } else {
    d.block = core::GlobalBlock::matrix(mine.Nl, mine.Cl, mine.n0, mine.c0, B * T, C);
  }
  return d;
}

RankSlice place_in_batch(RankSlice local, const BatchSlice& slice) {
  if (slice.global == 0) return local;
  if (slice.b0 < 0 || slice.b0 + local.B > slice.global) {
    throw std::invalid_argument("a part of " + std::to_string(local.B) + " sequences at " + std::to_string(slice.b0) +
                                " does not lie inside a batch of " + std::to_string(slice.global));
  }
  local.b0 += slice.b0;
  local.n0 += slice.b0 * local.T;
  local.B = slice.global;
  return local;
}

Recompute parse_recompute(const std::string& name) {
  if (name == "none") return Recompute::none;
  if (name == "block") return Recompute::block;
  throw core::ConfigError("unknown --recompute '" + name.substr(0, 40) + "'; choose none or block");
}

std::string to_string(Recompute recompute) {
  return recompute == Recompute::block ? "block" : "none";
}

int working_sets(const GPTConfig& config, Recompute recompute) {
  return recompute == Recompute::block ? std::min(config.n_layer, 1) : config.n_layer;
}

}  // namespace optimus::model
