// Vocab-parallel softmax cross-entropy (chapter 2; chapter 3 uses it along the grid's
// rows, so it lives here, below both stages): each rank holds the logits of its
// vocabulary columns and never sees the others. Three all-reduces of N numbers each — the row max,
// the sum of exponentials, the target's logit — give every rank the full-row loss. The pieces are
// the same core ops the serial loss is made of.
#pragma once

#include "comm/communicator.h"
#include "core/context.h"

namespace optimus::model {

/// losses (N), maxes (N), sumexp (N) from logits (N, Vl) holding vocabulary columns [v0, v0 + Vl).
/// target_logit (N) is scratch. Collective over `group` (the ranks that share the rows).
void vocab_parallel_cross_entropy_forward(const core::Context& ctx, comm::Communicator& group, float* losses,
                                          float* maxes, float* sumexp, float* target_logit, const float* logits,
                                          const int* targets, int N, int Vl, int v0, int V_real);

}  // namespace optimus::model
