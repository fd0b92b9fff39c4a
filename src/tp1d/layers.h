// Megatron's parallel layers (chapter 2), each a forward and a backward function:
//   column-parallel linear: W (C, OC) split by columns; input replicated; output split by columns.
//   row-parallel linear:    W (C, OC) split by rows; input split by columns; output partial → g.
//   vocab-parallel embedding: wte split by vocabulary rows; each rank looks up its own tokens → g.
// Column then row needs a single all-reduce per branch (g forward, f backward): the column split's
// output is exactly the row split's input. Sizes passed are the FULL sizes (N, C, OC, V), as in
// tp2d/layers.h; each split one must be a multiple of p. The region (tp1d/mappings.h) carries the
// communicator and the mode: with sequence parallelism (chapter 5) the input of a column-parallel
// linear and the output of a row-parallel one are my rows (N/p, C) of the residual stream, and f
// and g become an all-gather and a reduce-scatter; the layers read the same either way.
#pragma once

#include "core/context.h"
#include "core/ops.h"
#include "tp1d/mappings.h"

namespace optimus::tp1d {

/// out (N, OC/p) = f(inp) · w (C, OC/p) + b (OC/p), inp my rows (region.rows(N), C).
void column_parallel_linear_forward(const core::Context& ctx, Region& region, float* out, const float* inp,
                                    const float* w, const float* b, int N, int C, int OC);
/// add_to: dweight, dbias += this rank's gradients; dinp (my rows, C) = f backward of my partial
/// input gradient. dinp must be zero on entry (core::zeroed), as every backward op's own input
/// gradient is: the all-reduce sums what it holds. With sequence parallelism inp is gathered again
/// (it was not kept whole) and the partial is summed in the region's buffer.
void column_parallel_linear_backward(const core::Context& ctx, Region& region, const core::LayerGrads& add_to,
                                     const float* dout, const float* inp, const float* w, int N, int C, int OC);

/// out (my rows, OC) = g(inp (N, C/p) · w (C/p, OC)) + b (OC): partial products summed over ranks
/// by g, the bias added once after the sum.
void row_parallel_linear_forward(const core::Context& ctx, Region& region, float* out, const float* inp, const float* w,
                                 const float* b, int N, int C, int OC);
/// add_to: dinp (N, C/p), dweight (C/p, OC), dbias (OC) += gradients from g backward of dout (my
/// rows, OC): dout itself, or every rank's rows gathered, so dbias is whole.
void row_parallel_linear_backward(const core::Context& ctx, Region& region, const core::LayerGrads& add_to,
                                  const float* dout, const float* inp, const float* w, int N, int C, int OC);

/// out (N, C) = g(lookup of the tokens in my vocabulary rows [r·V/p, (r+1)·V/p), zero for the others).
/// (The 1D stage's embedding adds the positions around this g itself: tp1d/gpt.cpp.)
void vocab_parallel_embedding_forward(const core::Context& ctx, comm::Communicator& tp, float* out, const int* tokens,
                                      const float* wte, int N, int C, int V);
/// dwte (V/p, C) += the rows of dout (N, C) whose tokens are mine (g backward is the identity).
void vocab_parallel_embedding_backward(const core::Context& ctx, comm::Communicator& tp, float* dwte, const float* dout,
                                       const int* tokens, int N, int C, int V);

}  // namespace optimus::tp1d
