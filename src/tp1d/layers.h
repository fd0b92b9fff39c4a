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

// Sequence parallel forms (chapter 5): the input of a column-parallel linear and the output of a
// row-parallel one are this rank's rows (N/p, C) of the residual stream; f and g become f_sp and
// g_sp (tp1d/mappings.h). `gathered` and `partial` are (N, C) communication buffers.

/// out (N, OCp) = f_sp(inp (N/p, C)) · w (C, OCp) + b: gathered (N, C) receives every rank's rows.
void column_parallel_linear_forward_sp(const core::Context& ctx, comm::Communicator& tp, float* out, float* gathered,
                                       const float* inp, const float* w, const float* b, int N, int C, int OCp);
/// The input was not kept whole: gathered receives it again for dweight, dbias += this rank's
/// gradients; partial (N, C), zero on entry, gets my partial input gradient, and add_to.dinp (N/p, C) is overwritten
/// with my rows of its sum over ranks (f_sp backward).
void column_parallel_linear_backward_sp(const core::Context& ctx, comm::Communicator& tp,
                                        const core::LayerGrads& add_to, float* gathered, float* partial,
                                        const float* dout, const float* inp, const float* w, int N, int C, int OCp);
/// out (N/p, OC) = my rows of g_sp(inp (N, Cp) · w (Cp, OC)) + b: partial (N, OC) holds my partial
/// product, the bias is added to my rows after the sum.
void row_parallel_linear_forward_sp(const core::Context& ctx, comm::Communicator& tp, float* out, float* partial,
                                    const float* inp, const float* w, const float* b, int N, int Cp, int OC);
/// gathered (N, OC) = every rank's rows of dout (N/p, OC) (g_sp backward); then add_to += the
/// gradients from the whole dout, as row_parallel_linear_backward does, so dbias is whole.
void row_parallel_linear_backward_sp(const core::Context& ctx, comm::Communicator& tp, const core::LayerGrads& add_to,
                                     float* gathered, const float* dout, const float* inp, const float* w, int N,
                                     int Cp, int OC);

/// out (N, C) = g(lookup of the tokens in my vocabulary rows [v0, v0 + Vp), zero for the others).
void vocab_parallel_embedding_forward(const core::Context& ctx, comm::Communicator& tp, float* out, const int* tokens,
                                      const float* wte, int N, int C, int v0, int Vp);
/// dwte (Vp, C) += the rows of dout whose tokens are mine (g backward is the identity).
void vocab_parallel_embedding_backward(const core::Context& ctx, float* dwte, const float* dout, const int* tokens,
                                       int N, int C, int v0, int Vp);

}  // namespace optimus::tp1d
