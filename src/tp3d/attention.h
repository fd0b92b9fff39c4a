// The middle of the 3D attention sub-layer, on the q×q×q cube of comm::Grid3D: causal
// self-attention of each rank's (sequences, head group), with no communication, between c_attn
// (a standard tp3d::linear_3d, C → 3C) and c_proj (an exchanged one, C → C). The sub-layer runs
//
//   x (standard X) → layernorm_3d(standard) → c_attn, standard: qkv (standard Y)
//     → attention_3d: out (standard Y = exchanged X) → c_proj, exchanged: y (standard X) → + x
//
// so its output comes back in the residual stream's layout and the residual add is local.
//
// Why attention is local. qkv is c_attn's Y: rank (i, j, k) holds its row piece i·q + j of N/q²
// (N = B·T) and its column block k of 3C/q. (a) B is a multiple of q², so the row piece is whole
// sequences: B/q² of them, from b0 = (i·q + j)·B/q². (b) c_attn's columns are grouped by heads:
// its weight's and bias's column block k is not the plain block k of the canonical [Q | K | V]
// (for q = 3, block 0 would be all of Q) but head group k's Q columns, then its K columns, then
// its V columns — model::qkv_group_columns(3C, q, k), the columns a 1D rank or a 2D grid column
// holds for its head group; qkv_spec_3d below — so the column block k of qkv is [Q_k | K_k | V_k],
// NH/q whole heads from h0 = k·NH/q. NH must be a multiple of q. Each rank then attends over its
// own (sequence, head) pairs with core::attention_*, and writes out (N/q², C/q): those heads side
// by side, which are the canonical columns [k·C/q, (k+1)·C/q) of the (N, C) attention output
// (heads are contiguous), rows as qkv's. That is an exchanged product's X, so c_proj runs
// exchanged with a plain (unpermuted) weight piece.
#pragma once

#include "comm/grid.h"
#include "core/context.h"
#include "core/ops.h"
#include "model/shard.h"

namespace optimus::tp3d {

/// The (sequence, head) pairs whose attention rank (i, j, k) computes: sequences [b0, b0 + Bl)
/// with Bl = B/q², b0 = (i·q + j)·Bl (qkv's row piece), heads [h0, h0 + NHl) with NHl = NH/q,
/// h0 = k·NHl (qkv's column block). Its attention probabilities are the block (Bl, NHl, T·T) at
/// (b0, h0, 0) of the canonical (B, NH, T·T): the block a dropout spec must name.
struct AttentionPairs {
  int b0 = 0, Bl = 0;
  int h0 = 0, NHl = 0;
};
AttentionPairs attention_pairs_3d(const comm::Grid3D& cube, int B, int NH);

/// The shard of c_attn's weight (C, 3C) or bias (3C) (the canonical shape says which) that rank
/// (i, j, k) of a q-cube holds: the standard linear_3d's pieces with the columns grouped by heads
/// (see above). The weight: rows block j·q + i of C/q² (W's row piece), columns head group k's
/// Q, K and V columns. The bias: those columns, replicated over the q² ranks sharing k; the one
/// with i = j = 0 owns it.
model::ShardSpec qkv_spec_3d(const core::Shape& canonical, int q, int i, int j, int k);

/// out (N/q², C/q) = causal self-attention of my pairs: qkv (N/q², 3C/q), c_attn's standard Y
/// piece, [Q_k | K_k | V_k]; att (Bl, NHl, T, T) its probabilities before dropout, kept for the
/// backward. Sizes are the FULL ones: B sequences of T tokens, width C, NH heads. drop: the
/// attention-probability dropout; with p > 0 its block must be my pairs' (attention_pairs_3d; when
/// the pass is a part of a larger batch, its sequences sit that part's offset further down), else
/// std::invalid_argument. B must be a positive multiple of q² and NH of q, checked first on
/// every rank alike (core::ConfigError, one sentence). Communication: none.
void attention_3d_forward(const core::Context& ctx, const comm::Grid3D& cube, float* out, float* att, const float* qkv,
                          int B, int T, int C, int NH, const core::DropoutSpec& drop);
/// dqkv (N/q², 3C/q) += the gradient of my pairs' q, k and v from dout (N/q², C/q). datt
/// (Bl, NHl, T, T) is scratch the caller provides. The same checks; communication: none.
void attention_3d_backward(const core::Context& ctx, const comm::Grid3D& cube, float* dqkv, float* datt,
                           const float* dout, const float* qkv, const float* att, int B, int T, int C, int NH,
                           const core::DropoutSpec& drop);

}  // namespace optimus::tp3d
