// Optimus's 2D layers (chapter 3), each a forward and a backward function. Activations
// (N, C) are blocked: rank (i, j) holds the N/q rows of batch block i (B/q whole sequences, so
// rows [i·N/q, (i+1)·N/q)) and the C/q columns of block j. Sizes passed are the FULL sizes (N, C,
// OC, V), as in summa.h; each must be a multiple of q.
// Communication is stated per call and per rank as the comm ledger counts it (bytes = the size of
// the call's result buffer on this rank), floats of 4 bytes, on "row" (row_comm) or "col" (col_comm).
// The 1-D parameters (LN weight and bias, linear biases) are column j's slice, replicated down
// column j; a backward here adds only THIS rank's rows' share of their gradients. Summing the
// shares over the column is one all-reduce per step for all of them together (one flat bucket),
// done by the model, not by these layers.
#pragma once

#include "comm/grid.h"
#include "core/context.h"
#include "core/ops.h"

namespace optimus::tp2d {

/// out, inp (N/q, C/q); mean, rstd (N/q): the statistics of my rows over the WHOLE row of C
/// columns; weight, bias (C/q): column j's slice; eps the model's layer_norm_epsilon. Two-pass like
/// the serial kernel: partial sums → all-reduce → partial squared deviations → all-reduce → normalise.
/// Communication: 2 all-reduces on "row" of (N/q)·4 bytes.
void layernorm_2d_forward(const core::Context& ctx, const comm::Grid2D& grid, float* out, float* mean, float* rstd,
                          const float* inp, const float* weight, const float* bias, int N, int C, float eps);
/// add_to: dinp (N/q, C/q) += gradient; dweight, dbias (C/q) += my rows' share (see the file
/// comment). Σ g and Σ g·x̂ over the row travel together: ONE all-reduce on "row" of 2·(N/q)·4
/// bytes. Scratch: 2·N/q floats (communication).
void layernorm_2d_backward(const core::Context& ctx, const comm::Grid2D& grid, const core::LayerGrads& add_to,
                           const float* dout, const float* inp, const float* weight, const float* mean,
                           const float* rstd, int N, int C);

/// out (N, OC) = inp (N, C) · w (C, OC) + b (OC), all blocked: out (N/q, OC/q), inp (N/q, C/q),
/// w (C/q, OC/q) block (i, j), b (OC/q) column j's slice, added to each of my rows after SUMMA.
/// b may be nullptr. Communication: that of summa_ab(M = N, N = OC, K = C).
void linear_2d_forward(const core::Context& ctx, const comm::Grid2D& grid, float* out, const float* inp, const float* w,
                       const float* b, int N, int C, int OC);
/// add_to: dinp (N/q, C/q) += dout · wᵀ (summa_abt), dweight (C/q, OC/q) += inpᵀ · dout
/// (summa_atb), dbias (OC/q) += column sums of dout over MY rows only (see the file comment). Any
/// of them may be nullptr. Communication: that of summa_ab_backward; dbias needs none here.
void linear_2d_backward(const core::Context& ctx, const comm::Grid2D& grid, const core::LayerGrads& add_to,
                        const float* dout, const float* inp, const float* w, int N, int C, int OC);

/// out (N/q, C/q): the token embeddings of my rows and columns. tokens (N): the WHOLE batch, the
/// same on every rank; wte (V/q, C/q): block (vocabulary block i, C block j). Each rank looks up
/// all N tokens in its vocabulary block (zero for the others) into an (N, C/q) scratch; a
/// reduce-scatter down the column sums the q vocabulary blocks and leaves batch block i here.
/// Communication: 1 reduce-scatter on "col" of N·(C/q)·4 bytes. Scratch: N·C/q floats.
void embedding_2d_forward(const core::Context& ctx, const comm::Grid2D& grid, float* out, const int* tokens,
                          const float* wte, int N, int C, int V);
/// dwte (V/q, C/q) += the rows of the gradient whose tokens are in my vocabulary block: the (N/q,
/// C/q) dout of every row of the column is all-gathered into (N, C/q), then scattered-added.
/// Communication: 1 all-gather on "col" of N·(C/q)·4 bytes. Scratch: N·C/q floats.
void embedding_2d_backward(const core::Context& ctx, const comm::Grid2D& grid, float* dwte, const float* dout,
                           const int* tokens, int N, int C, int V);

/// losses, maxes, sumexp (N/q) of my rows from the logits block (N/q, V/q) of batch block i and
/// vocabulary block j (columns [j·V/q, (j+1)·V/q)); targets (N/q) are my rows' targets; ids ≥
/// V_real are padding. target_logit (N/q) is scratch. The row of the grid holds the whole
/// vocabulary of my rows: Communication: 3 all-reduces on "row" of (N/q)·4 bytes (max, Σexp,
/// target logit). The backward needs none: core::crossentropy_backward on the block, with
/// v0 = j·V/q and the maxes and sumexp returned here.
void vocab_parallel_cross_entropy_2d(const core::Context& ctx, const comm::Grid2D& grid, float* losses, float* maxes,
                                     float* sumexp, float* target_logit, const float* logits, const int* targets, int N,
                                     int V, int V_real);

}  // namespace optimus::tp2d
