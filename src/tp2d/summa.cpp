// SUMMA over the q×q grid (chapter 3): the three products, each followed by its backward, which is
// two calls of the other products with beta = 1 (so gradients accumulate without extra scratch).
#include "tp2d/summa.h"

#include <stdexcept>
#include <string>

#include "core/ops.h"
#include "core/tensor.h"

namespace optimus::tp2d {

using core::Trans;

namespace {

// Every rank sees the same sizes, so every rank throws alike and nobody waits in a collective.
void check_sizes(const char* op, const comm::Grid2D& grid, int M, int N, int K) {
  const int q = grid.q();
  for (int n : {M, N, K}) {
    if (n <= 0 || n % q != 0) {
      throw std::invalid_argument(std::string(op) + ": M, N, K must be positive multiples of q = " + std::to_string(q) +
                                  ", got M = " + std::to_string(M) + ", N = " + std::to_string(N) +
                                  ", K = " + std::to_string(K) + "; pad the matrices or choose another grid");
    }
  }
}

core::Buffer comm_buffer(const core::Context& ctx, int64_t rows, int64_t cols) {
  return core::Buffer(*ctx.ledger, core::MemoryCategory::communication, {rows, cols}, ctx.device);
}

// The block a broadcast sends: the root's own block (a broadcast only reads the root's buffer, so
// the const_cast writes nothing), everybody else's receive buffer.
float* broadcast_source(bool is_root, const float* own_block, float* receive) {
  return is_root ? const_cast<float*>(own_block) : receive;
}

}  // namespace

// ---- C = A·B ------------------------------------------------------------------------------------

void summa_ab(const core::Context& ctx, const comm::Grid2D& grid, float* C, const float* A, const float* B, int M,
              int N, int K, float beta) {
  check_sizes("summa_ab", grid, M, N, K);
  const int q = grid.q(), Mb = M / q, Nb = N / q, Kb = K / q;
  core::Buffer a_recv = comm_buffer(ctx, Mb, Kb);  // (M/q, K/q): A_it
  core::Buffer b_recv = comm_buffer(ctx, Kb, Nb);  // (K/q, N/q): B_tj
  if (beta == 0.0f) {
    core::zero(ctx, C, int64_t{Mb} * Nb);
  } else if (beta != 1.0f) {
    core::scale(ctx, C, beta, int64_t{Mb} * Nb);
  }
  for (int t = 0; t < q; ++t) {
    float* a_it = broadcast_source(grid.j() == t, A, a_recv.data());
    float* b_tj = broadcast_source(grid.i() == t, B, b_recv.data());
    grid.row_comm().broadcast(a_it, int64_t{Mb} * Kb, t);
    grid.col_comm().broadcast(b_tj, int64_t{Kb} * Nb, t);
    core::matmul(ctx, C, a_it, b_tj, Mb, Nb, Kb, Trans::no, Trans::no, 1.0f, 1.0f);  // C_ij += A_it·B_tj
  }
}

void summa_ab_backward(const core::Context& ctx, const comm::Grid2D& grid, float* dA, float* dB, const float* dC,
                       const float* A, const float* B, int M, int N, int K) {
  if (dA != nullptr) summa_abt(ctx, grid, dA, dC, B, M, K, N, 1.0f);  // (M, K) += (M, N)·(K, N)ᵀ
  if (dB != nullptr) summa_atb(ctx, grid, dB, A, dC, K, N, M, 1.0f);  // (K, N) += (M, K)ᵀ·(M, N)
}

// ---- C = A·Bᵀ -----------------------------------------------------------------------------------

void summa_abt(const core::Context& ctx, const comm::Grid2D& grid, float* C, const float* A, const float* B, int M,
               int N, int K, float beta) {
  check_sizes("summa_abt", grid, M, N, K);
  const int q = grid.q(), Mb = M / q, Nb = N / q, Kb = K / q;
  core::Buffer b_recv = comm_buffer(ctx, Nb, Kb);   // (N/q, K/q): B_tj
  core::Buffer partial = comm_buffer(ctx, Mb, Nb);  // (M/q, N/q): P = A_ij·B_tjᵀ
  for (int t = 0; t < q; ++t) {
    float* b_tj = broadcast_source(grid.i() == t, B, b_recv.data());
    grid.col_comm().broadcast(b_tj, int64_t{Nb} * Kb, t);
    // Column t keeps the sum as C_it, so it computes its own share straight into C (with beta,
    // which then counts once); the others reduce from scratch.
    const bool keeps = grid.j() == t;
    float* p = keeps ? C : partial.data();
    core::matmul(ctx, p, A, b_tj, Mb, Nb, Kb, Trans::no, Trans::yes, 1.0f, keeps ? beta : 0.0f);
    grid.row_comm().reduce(p, int64_t{Mb} * Nb, t);
  }
}

void summa_abt_backward(const core::Context& ctx, const comm::Grid2D& grid, float* dA, float* dB, const float* dC,
                        const float* A, const float* B, int M, int N, int K) {
  if (dA != nullptr) summa_ab(ctx, grid, dA, dC, B, M, K, N, 1.0f);   // (M, K) += (M, N)·(N, K)
  if (dB != nullptr) summa_atb(ctx, grid, dB, dC, A, N, K, M, 1.0f);  // (N, K) += (M, N)ᵀ·(M, K)
}

// ---- C = Aᵀ·B -----------------------------------------------------------------------------------

void summa_atb(const core::Context& ctx, const comm::Grid2D& grid, float* C, const float* A, const float* B, int M,
               int N, int K, float beta) {
  check_sizes("summa_atb", grid, M, N, K);
  const int q = grid.q(), Mb = M / q, Nb = N / q, Kb = K / q;
  core::Buffer a_recv = comm_buffer(ctx, Kb, Mb);   // (K/q, M/q): A_it
  core::Buffer partial = comm_buffer(ctx, Mb, Nb);  // (M/q, N/q): P = A_itᵀ·B_ij
  for (int t = 0; t < q; ++t) {
    float* a_it = broadcast_source(grid.j() == t, A, a_recv.data());
    grid.row_comm().broadcast(a_it, int64_t{Kb} * Mb, t);
    // Row t keeps the sum as C_tj (see summa_abt).
    const bool keeps = grid.i() == t;
    float* p = keeps ? C : partial.data();
    core::matmul(ctx, p, a_it, B, Mb, Nb, Kb, Trans::yes, Trans::no, 1.0f, keeps ? beta : 0.0f);
    grid.col_comm().reduce(p, int64_t{Mb} * Nb, t);
  }
}

void summa_atb_backward(const core::Context& ctx, const comm::Grid2D& grid, float* dA, float* dB, const float* dC,
                        const float* A, const float* B, int M, int N, int K) {
  if (dA != nullptr) summa_abt(ctx, grid, dA, B, dC, K, M, N, 1.0f);  // (K, M) += (K, N)·(M, N)ᵀ
  if (dB != nullptr) summa_ab(ctx, grid, dB, A, dC, K, N, M, 1.0f);   // (K, N) += (K, M)·(M, N)
}

}  // namespace optimus::tp2d
