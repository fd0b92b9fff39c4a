// The sequence-length check and the dropout of a site, for every stage.
#include "model/activation_block.h"

#include <string>

#include "core/errors.h"

namespace optimus::model {

void check_sequence_length(const GPTConfig& config, int T) {
  if (T > config.n_positions) {
    throw core::ConfigError("the sequence length " + std::to_string(T) + " exceeds the model's n_positions " +
                            std::to_string(config.n_positions));
  }
}

core::DropoutSpec dropout_spec(const GPTConfig& config, const ActivationBlock& block, uint32_t seed, uint32_t step,
                               bool train, int layer, core::DropoutSite site) {
  core::DropoutSpec d;
  d.p = train ? config.dropout : 0.0f;
  d.key = core::dropout_key(seed, static_cast<uint32_t>(layer), site);
  d.step = step;
  const int64_t B = block.B, T = block.T, NH = config.n_head, C = config.n_embd;
  if (site == core::DropoutSite::attention_probs) {
    const int64_t dims[3] = {block.Bl, block.NHl, T * T}, offsets[3] = {block.b0, block.h0, 0},
                  global[3] = {B, NH, T * T};
    for (int k = 0; k < 3; ++k)
      d.block.dim[k] = dims[k], d.block.offset[k] = offsets[k], d.block.global_dim[k] = global[k];
  } else {
    d.block = core::GlobalBlock::matrix(block.Bl * T, block.Cl, block.b0 * T, block.c0, B * T, C);
  }
  return d;
}

}  // namespace optimus::model
