// The first 3D layers, each a forward and a backward function, on the q×q×q cube of comm::Grid3D:
// a linear layer built on tp3d::product_3d, and LayerNorm. Activations are laid out as a
// product's X or Y (tp3d/product.h's table): rows cut into q² pieces, columns into q blocks, the
// column block chosen by one cube index — j for a standard product's input, k for its output.
// `o` says which: an activation read by a product in orientation o is its X, and a LayerNorm
// given o normalises an activation laid out that way. Sizes passed are the FULL sizes (N, C, OC).
// Communication is stated per call and per rank as the comm ledger counts it (an all-reduce: the
// size of its buffer; an all-gather or reduce-scatter: the whole block), floats of 4 bytes, on the
// lines of tp3d::lines(cube, o), named by role: `in` ("cube_row" when standard, "cube_depth" when
// exchanged), `out` (the other of those two) and `rows` ("cube_col").
// The 1-D parameters (linear biases, LN weight and bias) are the block of the columns of the
// activation they act on, replicated over the q² ranks that hold that block: a standard linear's
// bias over the ranks with the same k, a LayerNorm's weight and bias on a standard X over those
// with the same j (exchanged: the other way round). A backward here adds only THIS rank's rows'
// share of their gradients. Summing the shares over those q² ranks (along the two lines other than
// the one whose index picks the block) is the model's job, once per step, as in the 2D stage.
#pragma once

#include "comm/grid.h"
#include "core/context.h"
#include "core/ops.h"
#include "tp3d/product.h"

namespace optimus::tp3d {

/// out (N, C) = LayerNorm of inp (N, C) over each row's C columns. out, inp (N/q², C/q): the X
/// pieces of a product in orientation o, so a row's C columns lie on the q ranks of lines(cube,
/// o).in ("cube_row": standard, the columns split by j; "cube_depth": exchanged, by k); mean,
/// rstd (N/q²): my rows' statistics over the whole row; weight, bias (C/q): the block of my
/// columns (j, or k when exchanged). eps the model's layer_norm_epsilon. Two-pass like the serial
/// kernel: partial sums → all-reduce → partial squared deviations → all-reduce → normalise.
/// Communication: 2 all-reduces on `in` of (N/q²)·4 bytes. N must be a positive multiple of q² and
/// C of q, checked before any communication on every rank alike (core::ConfigError), here and in
/// the backward; the linear's sizes are checked by product_3d.
void layernorm_3d_forward(const core::Context& ctx, const comm::Grid3D& cube, float* out, float* mean, float* rstd,
                          const float* inp, const float* weight, const float* bias, int N, int C, float eps,
                          Orientation o = Orientation::standard);
/// add_to: dinp (N/q², C/q) += gradient; dweight, dbias (C/q) += my rows' share (see the file
/// comment). Σ g and Σ g·x̂ over the row travel together: ONE all-reduce on `in` of 2·(N/q²)·4
/// bytes. Scratch: 2·N/q² floats (communication).
void layernorm_3d_backward(const core::Context& ctx, const comm::Grid3D& cube, const core::LayerGrads& add_to,
                           const float* dout, const float* inp, const float* weight, const float* mean,
                           const float* rstd, int N, int C, Orientation o = Orientation::standard);

/// out (N, OC) = inp (N, C) · w (C, OC) + b (OC): product_3d(Y = out, X = inp, W = w) in
/// orientation o, pieces out (N/q², OC/q), inp (N/q², C/q), w (C/q², OC/q); b (OC/q): block k of
/// the bias (j when exchanged), the block of out's columns, added to each of my rows after the
/// product. b may be nullptr. Communication: that of product_3d(N, M = OC, K = C, o), no more.
/// Two linears in a row (the MLP's c_fc then c_proj) alternate o: standard then exchanged gives
/// the second one's out in the layout of the first one's inp.
void linear_3d_forward(const core::Context& ctx, const comm::Grid3D& cube, float* out, const float* inp, const float* w,
                       const float* b, int N, int C, int OC, Orientation o = Orientation::standard);
/// add_to: dinp (N/q², C/q) += dout · wᵀ, dweight (C/q², OC/q) += inpᵀ · dout (product_3d_backward),
/// dbias (OC/q) += column sums of dout over MY rows only (see the file comment). Any of them may be
/// nullptr. Communication: that of product_3d_backward(N, M = OC, K = C, o); dbias needs none here.
void linear_3d_backward(const core::Context& ctx, const comm::Grid3D& cube, const core::LayerGrads& add_to,
                        const float* dout, const float* inp, const float* w, int N, int C, int OC,
                        Orientation o = Orientation::standard);

}  // namespace optimus::tp3d
