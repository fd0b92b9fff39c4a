// The 3D layers over the vocabulary, on the q×q×q cube of comm::Grid3D: the token embedding, the
// tied LM head and the vocabulary-parallel cross-entropy. wte (V, C) is one tensor for the first
// and the second, so its pieces are cut for the LM head, a product_3d_abt in the standard
// orientation with Wt = wte: rank (i, j, k) holds the vocabulary rows piece k·q + i of q² pieces
// of ⌈V/q²⌉ rows (V padded to Vp = q²·⌈V/q²⌉ with zero rows, so V need not be divisible by q²) and
// the C columns block j. The residual stream is a standard product's X (rows piece i·q + k of
// N/q², columns block j), which the embedding writes and the LM head reads; the logits are its Y
// (rows piece i·q + j, the vocabulary block k of Vp/q), so the q ranks of a row's vocabulary are
// one depth line. Sizes passed are the FULL ones (N, C, Vp), floats of 4 bytes; communication is
// stated per call and per rank as the comm ledger counts it (an all-gather or reduce-scatter: the
// whole block; an all-reduce: its buffer).
#pragma once

#include "comm/grid.h"
#include "core/context.h"
#include "model/config.h"

namespace optimus::tp3d {

/// ⌈V/q²⌉, the vocabulary rows of a rank's wte piece; the padded vocabulary is q² times it.
int vocab_piece(const model::GPTConfig& config, int q);

/// out (N/q², C/q): the token embeddings of my rows (piece i·q + k) and columns (block j). tokens
/// (N): the whole batch, the same on every rank; wte (Vp/q², C/q): my piece. Every rank looks up all
/// N tokens in its vocabulary piece (zero rows for the others) into an (N, C/q) scratch; the q²
/// ranks sharing j hold every piece between them, so a reduce-scatter down the column (over i,
/// rows block i of N/q) then one along the depth (over k, piece k of that block) sums the pieces
/// and leaves rows piece i·q + k here. Adding zeros is exact: each row is one rank's lookup.
/// Communication: 1 reduce-scatter on "cube_col" of N·(C/q)·4 bytes and 1 on "cube_depth" of
/// (N/q)·(C/q)·4 bytes. Scratch: N·C/q + (N/q)·(C/q) floats.
void embedding_3d_forward(const core::Context& ctx, const comm::Grid3D& cube, float* out, const int* tokens,
                          const float* wte, int N, int C, int Vp);
/// dwte (Vp/q², C/q) += the rows of the gradient whose tokens are in my vocabulary piece: the
/// forward's adjoint, dout (N/q², C/q) all-gathered along the depth then down the column into
/// (N, C/q), then scattered-added. Communication: 1 all-gather on "cube_depth" of (N/q)·(C/q)·4
/// bytes and 1 on "cube_col" of N·(C/q)·4 bytes.
void embedding_3d_backward(const core::Context& ctx, const comm::Grid3D& cube, float* dwte, const float* dout,
                           const int* tokens, int N, int C, int Vp);

/// losses, maxes, sumexp (N/q²) of my rows (the logits' piece i·q + j) from the logits (N/q², Vp/q)
/// of the vocabulary block k (columns [k·Vp/q, (k+1)·Vp/q)); targets (N/q²) are my rows' targets;
/// ids ≥ V_real are padding. target_logit (N/q²) is scratch. A depth line holds the whole
/// vocabulary of my rows: communication, 3 all-reduces on "cube_depth" of (N/q²)·4 bytes. The
/// backward needs none: core::crossentropy_backward on my block, v0 = k·Vp/q.
void vocab_parallel_cross_entropy_3d(const core::Context& ctx, const comm::Grid3D& cube, float* losses, float* maxes,
                                     float* sumexp, float* target_logit, const float* logits, const int* targets, int N,
                                     int Vp, int V_real);

}  // namespace optimus::tp3d
