// What every stage does the same way with the batch it runs on: the sequence-length check, and the
// dropout of each site. A stage describes once which block of the canonical activations it holds
// (ActivationBlock); dropout_spec turns that into each site's DropoutSpec, whose counters are the
// canonical indices, so the serial, 1D and 2D runs drop exactly the same elements.
#pragma once

#include <cstdint>

#include "core/ops.h"
#include "model/config.h"

namespace optimus::model {

/// ConfigError when a batch's sequence length T exceeds the model's n_positions (wpe has that many rows).
void check_sequence_length(const GPTConfig& config, int T);

/// Which part of a batch's canonical activations a rank holds: of the B sequences of T tokens, the
/// sequences [b0, b0 + Bl), so the rows [b0·T, (b0 + Bl)·T) of every (B·T, C) activation, and its
/// columns [c0, c0 + Cl); of the attention probabilities (B, NH, T, T), those sequences' heads
/// [h0, h0 + NHl). Serial holds everything; 1D all rows and columns and its head group; 2D batch
/// block i, C block j and head group j.
struct ActivationBlock {
  int64_t B = 0, T = 0;     // the whole batch
  int64_t b0 = 0, Bl = 0;   // my sequences
  int64_t c0 = 0, Cl = 0;   // my hidden columns, of C
  int64_t h0 = 0, NHl = 0;  // my heads, of NH
};

/// The dropout of `site` in `layer` on the rank's block: on its (Bl·T, Cl) tile of a (B·T, C)
/// activation, or on its (Bl, NHl, T·T) block of the attention probabilities. The mask is keyed
/// by (seed, layer, site) and counted by step; p is the config's dropout when training, else 0.
core::DropoutSpec dropout_spec(const GPTConfig& config, const ActivationBlock& block, uint32_t seed, uint32_t step,
                               bool train, int layer, core::DropoutSite site);

}  // namespace optimus::model
