// How the 3D stage holds each canonical tensor on the q×q×q cube (tp3d/product.h names the pieces
// of a product's operands). Rank (i, j, k) holds:
//   c_attn.weight (C, 3C)   a standard product's W: rows piece j·q + i of C/q², head group k's Q, K
//                           and V columns (tp3d/attention.h)
//   c_fc.weight (C, F)      a standard W: rows piece j·q + i of C/q², columns block k of F/q
//   attn c_proj (C, C),     an exchanged W: rows piece k·q + i of C/q² (F/q²), columns block j
//   mlp c_proj (F, C)
//   wte (V, C)              the LM head's Wt (tp3d/vocabulary.h): rows piece k·q + i of ⌈V/q²⌉,
//                           columns block j
// and the 1-D parameters as the block of the columns of the activation they act on, replicated over
// the q² ranks that hold that block: over the ranks sharing j, the parameters on the residual
// stream (the LayerNorms' weights and biases, the projections' biases, wpe's columns block j);
// over those sharing k, the biases inside a branch (c_attn's head group k, c_fc's block k). One of
// the q² copies owns each (i = k = 0, or i = j = 0).
#pragma once

#include <string>

#include "model/config.h"
#include "model/params.h"
#include "model/shard.h"

namespace optimus::tp3d {

/// Throws core::ConfigError unless q divides NH and q² divides C (so also F = 4C and 3C), on
/// every rank alike. That q² divides the batch B is checked where the batch is known.
void check_divisible_3d(const model::GPTConfig& config, int q);

/// Throws core::ConfigError unless the q² row pieces of the cube can split a pass of B sequences
/// into whole sequences. `batch` names B in the message (default "the batch B"), `choose` says
/// what to change.
void check_batch_divisible_3d(int B, int q, const std::string& batch = "",
                              const std::string& choose = "choose --batch");

/// Which of the cube's indices picks the block of a replicated 1-D parameter (and wpe), the one
/// its q² copies share: j for the residual stream's, k for a branch's; none for the 2-D weights.
enum class SharedIndex { none, j, k };
SharedIndex shared_index(model::ParamKind kind);

/// The shard of `info` that rank (i, j, k) of the q-cube holds.
model::ShardSpec spec_3d(const model::ParamInfo& info, int q, int i, int j, int k);

}  // namespace optimus::tp3d
