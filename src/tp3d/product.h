// The 3D matrix product (Agarwal et al. 1995; Bian et al., arXiv 2105.14450), the foundation of a
// 3D tensor-parallel stage: Y = X·W over the q×q×q cube of comm::Grid3D, each operand cut into
// q³ pieces, and its backward beside it. Forward: all-gather X's block along the depth, all-gather
// W's block down the column, one local product, reduce-scatter the partial Y along the row. The
// backward is its adjoint: each all-gather becomes a reduce-scatter and each reduce-scatter an
// all-gather, on the same communicator.
#pragma once

#include "comm/grid.h"
#include "core/context.h"

namespace optimus::tp3d {

// Y (N, M) = X (N, K) · W (K, M). Cut X into q×q blocks X_ij (N/q, K/q), W into W_jk (K/q, M/q)
// and Y into Y_ik (N/q, M/q); then Y_ik = Σ_j X_ij·W_jk: rank (i, j, k) makes the j-th term, and
// the q terms of Y_ik sit on the q ranks (i, ·, k), one row_comm. Each block is needed by the q
// ranks of one line of the cube and is cut into q row pieces over that line (piece t on the rank
// whose index along the line is t), so every rank holds 1/q³ of every operand:
//
//   operand  its block, held by the line   rows of the rank's piece   columns of the piece
//   X        X_ij, depth_comm (i, j, ·)     block i·q + k of N/q²      block j of K/q
//   W        W_jk, col_comm   (·, j, k)     block j·q + i of K/q²      block k of M/q
//   Y        Y_ik, row_comm   (i, ·, k)     block i·q + j of N/q²      block k of M/q
//
// A piece is contiguous and row-major, and the q pieces of a block, stacked in the line's order,
// are the block: an all-gather along the line assembles it, a reduce-scatter cuts a sum of it.
// So, naming each index by the communicator it runs along: X's rows are split by i (cube_col) then
// k (cube_depth), its columns by j (cube_row); W's rows by j then i, its columns by k; Y's rows by
// i then j, its columns by k. Y is laid out as X with j and k exchanged: a product that takes Y as
// its input reduces over k instead of j.
//
// Orientation::exchanged is the same product with j and k trading places everywhere above: X's
// rows split by i then j, its columns by k (the layout a standard product gives Y), W's rows by k
// then i and its columns by j, Y's rows by i then k and its columns by j (the layout a standard
// product reads X in); the sum runs along depth_comm and X's block is gathered along row_comm.
// So consecutive products alternate standard, exchanged, standard, ..., each reading its input in
// the layout the one before wrote it (Colossal-AI's 3D layers swap their input and output groups
// after each linear for the same reason).
//
// Sizes N, M, K are the FULL matrices'. N and K must be positive multiples of q² and M of q,
// checked before any communication, on every rank alike (core::ConfigError, one sentence each).
// Scratch (the gathered blocks, the partial products, a reduced piece) is allocated per call on
// *ctx.ledger under MemoryCategory::communication. Communication is counted as the comm ledger
// counts it (comm_ledger.h: an all-gather or reduce-scatter records the size of the whole block,
// q pieces), per call and per rank, floats of 4 bytes.

/// Which of j and k splits X's columns, the index the product sums over (see above).
enum class Orientation {
  standard,   // j: X's columns along row_comm, Y's along depth_comm; the table above
  exchanged,  // k: X's columns along depth_comm, Y's along row_comm
};

/// The cube's lines as a product in one orientation uses them, named by what their index splits.
struct Lines {
  comm::Communicator& in;    // X's columns (the sum's terms): row_comm, exchanged depth_comm
  comm::Communicator& out;   // Y's columns, and X's rows after i: depth_comm, exchanged row_comm
  comm::Communicator& rows;  // i, which splits X's and Y's rows first: col_comm in both
};
Lines lines(const comm::Grid3D& cube, Orientation o);

/// Y (N/q², M/q) = this rank's piece of X·W, from its pieces X (N/q², K/q) and W (K/q², M/q).
/// Communication: one all-gather on "cube_depth" of (N/q)(K/q)·4 bytes, one all-gather on
/// "cube_col" of (K/q)(M/q)·4 bytes, one reduce-scatter on "cube_row" of (N/q)(M/q)·4 bytes.
/// Scratch: X_ij, W_jk and the partial Y_ik.
/// In orientation `o` exchanged, the pieces are the exchanged ones, and "cube_row" and "cube_depth"
/// trade places in that communication.
void product_3d(const core::Context& ctx, const comm::Grid3D& cube, float* Y, const float* X, const float* W, int N,
                int M, int K, Orientation o = Orientation::standard);

/// dX (N/q², K/q) += this rank's piece of dY·Wᵀ;  dW (K/q², M/q) += its piece of Xᵀ·dY; from the
/// pieces dY (N/q², M/q), X and W of product_3d. Like every backward op it accumulates;
/// nullptr = not needed. The blocks X_ij and W_jk are gathered again rather than kept from the
/// forward pass, so between the two passes a rank holds only its own pieces (1/q³ of each operand).
/// Communication, both gradients: one all-gather of dY_ik on "cube_row" ((N/q)(M/q)·4 bytes);
/// for dX one all-gather of W_jk on "cube_col" ((K/q)(M/q)·4) and one reduce-scatter on
/// "cube_depth" ((N/q)(K/q)·4); for dW one all-gather of X_ij on "cube_depth" ((N/q)(K/q)·4) and
/// one reduce-scatter on "cube_col" ((K/q)(M/q)·4).
/// Exchanged: "cube_row" and "cube_depth" trade places, as in the forward pass.
void product_3d_backward(const core::Context& ctx, const comm::Grid3D& cube, float* dX, float* dW, const float* dY,
                         const float* X, const float* W, int N, int M, int K, Orientation o = Orientation::standard);

/// The same product with W given transposed: Y (N, M) = X (N, K) · Wtᵀ for Wt (M, K), the tied LM
/// head's logits = lnf · wteᵀ with wte (V, C) as the model stores it. Wt's block (Wt)_kj = (W_jk)ᵀ
/// (M/q, K/q) lies on the line (·, j, k) as W_jk does and is cut into q row pieces by i, so rank
/// (i, j, k) holds Wt's rows block k·q + i of M/q² and its columns block j of K/q (exchanged: rows
/// block j·q + i, columns block k). X and Y are as in product_3d, and the local product is
/// X_ij · (Wt)_kjᵀ, with no transposed copy. N and M must be positive multiples of q² (Wt's rows are
/// cut into q² pieces) and K of q, checked first. Communication: that of product_3d(N, M, K, o).
void product_3d_abt(const core::Context& ctx, const comm::Grid3D& cube, float* Y, const float* X, const float* Wt,
                    int N, int M, int K, Orientation o = Orientation::standard);

/// dX (N/q², K/q) += this rank's piece of dY·Wt; dWt (M/q², K/q) += its piece of dYᵀ·X; from the
/// pieces of product_3d_abt. Accumulates; nullptr = not needed. Communication: that of
/// product_3d_backward(N, M, K, o).
void product_3d_abt_backward(const core::Context& ctx, const comm::Grid3D& cube, float* dX, float* dWt, const float* dY,
                             const float* X, const float* Wt, int N, int M, int K,
                             Orientation o = Orientation::standard);

}  // namespace optimus::tp3d
