// SUMMA, the three matrix products of Optimus 2D (chapter 3): C = A·B, C = A·Bᵀ and
// C = Aᵀ·B over the q×q grid, each with its backward beside it — and each backward is made of the
// other two products, so these three functions are all the matrix communication of stage 3.
// Every operand is 2D-blocked: rank (i, j) holds block (i, j) of A, B and C, row-major, contiguous.
#pragma once

#include "comm/grid.h"
#include "core/context.h"

namespace optimus::tp2d {

// Rules that hold for all six functions:
//   - sizes M, N, K are the FULL matrices' sizes; each must be a positive multiple of q (else
//     std::invalid_argument, on every rank alike, before any communication);
//   - like core::matmul, a product writes C = product + beta·C (beta = 0: C is only written);
//   - like every backward op, a backward ACCUMULATES (+=) into dA and dB; nullptr = not needed;
//   - scratch for the broadcast and reduce buffers is allocated per call on *ctx.ledger under
//     MemoryCategory::communication; the sizes are given with each product, and double when the
//     grid overlaps (grid.overlap()): then step t + 1's broadcasts are started before step t's
//     product and step t's reduce is waited for only when its block is next needed, so each kind
//     of block needs two. The transfers, products and sums are the same either way; only the
//     waits move, and the results are bitwise the same. On the CPU each block product runs in
//     row panels (at most 8, of at least 64 rows), polling the transfers in flight between
//     panels: Open MPI moves a started transfer only inside MPI calls.
// Communication is counted as the comm ledger counts it (comm_ledger.h: bytes of a call = the
// size of its result buffer on this rank, root or not), per call and per rank, floats of 4 bytes.

/// C (M, N) = A (M, K) · B (K, N).   Blocks: A_ij (M/q, K/q), B_ij (K/q, N/q), C_ij (M/q, N/q).
/// For t = 0..q−1: broadcast A_it along the row from column t, broadcast B_tj down the column from
/// row t, C_ij += A_it · B_tj.
/// Communication: q broadcasts on "row" of (M/q)(K/q)·4 bytes, q broadcasts on "col" of
/// (K/q)(N/q)·4 bytes. Scratch: one A block and one B block.
void summa_ab(const core::Context& ctx, const comm::Grid2D& grid, float* C, const float* A, const float* B, int M,
              int N, int K, float beta = 0.0f);
/// dA (M, K) += dC · Bᵀ (summa_abt);  dB (K, N) += Aᵀ · dC (summa_atb).
void summa_ab_backward(const core::Context& ctx, const comm::Grid2D& grid, float* dA, float* dB, const float* dC,
                       const float* A, const float* B, int M, int N, int K);

/// C (M, N) = A (M, K) · Bᵀ, B stored (N, K).   Blocks: A_ij (M/q, K/q), B_ij (N/q, K/q), C_ij (M/q, N/q).
/// For t = 0..q−1: broadcast B_tj down the column from row t; P = A_ij · B_tjᵀ (M/q, N/q); reduce P
/// (sum) along the row to column t, which keeps it as C_it.
/// Communication: q broadcasts on "col" of (N/q)(K/q)·4 bytes, q reduces on "row" of (M/q)(N/q)·4
/// bytes. Scratch: one B block and one P (M/q, N/q).
void summa_abt(const core::Context& ctx, const comm::Grid2D& grid, float* C, const float* A, const float* B, int M,
               int N, int K, float beta = 0.0f);
/// dA (M, K) += dC · B (summa_ab);  dB (N, K) += dCᵀ · A (summa_atb).
void summa_abt_backward(const core::Context& ctx, const comm::Grid2D& grid, float* dA, float* dB, const float* dC,
                        const float* A, const float* B, int M, int N, int K);

/// C (M, N) = Aᵀ · B, A stored (K, M), B (K, N).   Blocks: A_ij (K/q, M/q), B_ij (K/q, N/q), C_ij (M/q, N/q).
/// For t = 0..q−1: broadcast A_it along the row from column t; P = A_itᵀ · B_ij (M/q, N/q); reduce P
/// (sum) along the column to row t, which keeps it as C_tj.
/// Communication: q broadcasts on "row" of (K/q)(M/q)·4 bytes, q reduces on "col" of (M/q)(N/q)·4
/// bytes. Scratch: one A block and one P (M/q, N/q).
void summa_atb(const core::Context& ctx, const comm::Grid2D& grid, float* C, const float* A, const float* B, int M,
               int N, int K, float beta = 0.0f);
/// dA (K, M) += B · dCᵀ (summa_abt);  dB (K, N) += A · dC (summa_ab).
void summa_atb_backward(const core::Context& ctx, const comm::Grid2D& grid, float* dA, float* dB, const float* dC,
                        const float* A, const float* B, int M, int N, int K);

}  // namespace optimus::tp2d
