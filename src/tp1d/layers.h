// Megatron's parallel layers (chapter 2), each a forward and a backward function:
//   column-parallel linear: W (C, OC) split by columns; input replicated; output split by columns.
//   row-parallel linear:    W (C, OC) split by rows; input split by columns; output partial → g.
//   vocab-parallel embedding: wte split by vocabulary rows; each rank looks up its own tokens → g.
// Column then row needs a single all-reduce per branch (g forward, f backward): the column split's
// output is exactly the row split's input. Shapes: Cp, OCp are this rank's share (C/p, OC/p).
#pragma once

#include "comm/communicator.h"
#include "core/context.h"
#include "core/ops.h"

namespace optimus::tp1d {

/// out (N, OCp) = f(inp) (N, C) · w (C, OCp) + b (OCp): f is the identity forward.
void column_parallel_linear_forward(const core::Context& ctx, float* out, const float* inp, const float* w,
                                    const float* b, int N, int C, int OCp);
/// add_to: dweight, dbias += this rank's gradients; dinp (N, C) += the all-reduced (f backward)
/// input gradient. dinp must be zero on entry (core::zeroed): the all-reduce sums what it holds.
void column_parallel_linear_backward(const core::Context& ctx, comm::Communicator& tp, const core::LayerGrads& add_to,
                                     const float* dout, const float* inp, const float* w, int N, int C, int OCp);

/// out (N, OC) = g(inp (N, Cp) · w (Cp, OC)) + b (OC): partial products summed over ranks by g, the
/// bias added once after the sum.
void row_parallel_linear_forward(const core::Context& ctx, comm::Communicator& tp, float* out, const float* inp,
                                 const float* w, const float* b, int N, int Cp, int OC);
/// add_to: dinp (N, Cp), dweight (Cp, OC), dbias (OC) += gradients; g backward is the identity,
/// so no communication.
void row_parallel_linear_backward(const core::Context& ctx, const core::LayerGrads& add_to, const float* dout,
                                  const float* inp, const float* w, int N, int Cp, int OC);

/// out (N, C) = g(lookup of the tokens in my vocabulary rows [v0, v0 + Vp), zero for the others).
void vocab_parallel_embedding_forward(const core::Context& ctx, comm::Communicator& tp, float* out, const int* tokens,
                                      const float* wte, int N, int C, int v0, int Vp);
/// dwte (Vp, C) += the rows of dout whose tokens are mine (g backward is the identity).
void vocab_parallel_embedding_backward(const core::Context& ctx, float* dwte, const float* dout, const int* tokens,
                                       int N, int C, int v0, int Vp);

}  // namespace optimus::tp1d
