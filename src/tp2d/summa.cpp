// SUMMA over the q×q grid (chapter 3): the three products, each followed by its backward, which is
// two calls of the other products with beta = 1 (so gradients accumulate without extra scratch).
// Every transfer is started (Communicator::start_*) and waited for; the grid's overlap only moves
// the waits (chapter 6), so a product computes the same sums in the same order either way.
#include "tp2d/summa.h"

#include <algorithm>
#include <array>
#include <initializer_list>
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

// `slots` blocks of (rows, cols), one per step whose transfer may be in flight at once.
core::Buffer comm_buffer(const core::Context& ctx, int slots, int64_t rows, int64_t cols) {
  return core::Buffer(*ctx.ledger, core::MemoryCategory::communication, {slots, rows, cols}, ctx.device);
}

// Without overlap one block of each kind; with it two, so step t + 1's transfer has a block of its
// own while step t's product reads the other.
int slots(const comm::Grid2D& grid) {
  return grid.overlap() ? 2 : 1;
}

// The block a broadcast sends: the root's own block (a broadcast only reads the root's buffer, so
// the const_cast writes nothing), everybody else's receive buffer.
float* broadcast_source(bool is_root, const float* own_block, float* receive) {
  return is_root ? const_cast<float*>(own_block) : receive;
}

// C (M, N) = op(A)·op(B) + beta·C, computed in row panels of C on the CPU, with the transfers in
// flight polled between panels: Open MPI moves a started transfer only inside MPI calls, so these
// polls are what move it while this rank multiplies. Both modes compute the same panels, so the
// sums are the same with and without overlap. (On a GPU the transfers have a stream of their own:
// one call. The meta device records the CPU's panels, so a plan counts the ops a CPU run does.)
// A is (M, K), or (K, M) when ta; B is (K, N), or (N, K) when tb.
void block_product(const core::Context& ctx, float* C, const float* A, const float* B, int M, int N, int K, Trans ta,
                   Trans tb, float beta, std::initializer_list<std::array<comm::Request, 2>*> in_flight) {
  constexpr int kPanelRows = 64, kMaxPanels = 8;
  const int panels = ctx.device != core::Device::cuda ? std::clamp(M / kPanelRows, 1, kMaxPanels) : 1;
  const int lda = ta == Trans::no ? K : M, ldb = tb == Trans::no ? N : K;
  for (int k = 0; k < panels; ++k) {
    const int m0 = k * M / panels, m1 = (k + 1) * M / panels;
    const float* a = ta == Trans::no ? A + int64_t{m0} * K : A + m0;
    core::matmul_strided(ctx, C + int64_t{m0} * N, N, a, lda, B, ldb, m1 - m0, N, K, ta, tb, 1.0f, beta);
    for (auto* requests : in_flight) {
      for (auto& r : *requests) r.done();
    }
  }
}

}  // namespace

// ---- C = A·B ------------------------------------------------------------------------------------

void summa_ab(const core::Context& ctx, const comm::Grid2D& grid, float* C, const float* A, const float* B, int M,
              int N, int K, float beta) {
  check_sizes("summa_ab", grid, M, N, K);
  const int q = grid.q(), Mb = M / q, Nb = N / q, Kb = K / q, S = slots(grid);
  core::Buffer a_recv = comm_buffer(ctx, S, Mb, Kb);  // S × (M/q, K/q): A_it
  core::Buffer b_recv = comm_buffer(ctx, S, Kb, Nb);  // S × (K/q, N/q): B_tj
  if (beta == 0.0f) {
    core::zero(ctx, C, int64_t{Mb} * Nb);
  } else if (beta != 1.0f) {
    core::scale(ctx, C, beta, int64_t{Mb} * Nb);
  }
  std::array<float*, 2> a_it{}, b_tj{};  // step t's operands, in slot t % S
  std::array<comm::Request, 2> a_sent, b_sent;
  auto start = [&](int t) {  // broadcast A_it along the row from column t, B_tj down the column from row t
    const int s = t % S;
    a_it[s] = broadcast_source(grid.j() == t, A, a_recv.data() + int64_t{s} * Mb * Kb);
    b_tj[s] = broadcast_source(grid.i() == t, B, b_recv.data() + int64_t{s} * Kb * Nb);
    a_sent[s] = grid.row_comm().start_broadcast(a_it[s], int64_t{Mb} * Kb, t);
    b_sent[s] = grid.col_comm().start_broadcast(b_tj[s], int64_t{Kb} * Nb, t);
  };
  start(0);
  for (int t = 0; t < q; ++t) {
    const int s = t % S;
    a_sent[s].wait();
    b_sent[s].wait();
    if (grid.overlap() && t + 1 < q) start(t + 1);  // moves while this step multiplies
    block_product(ctx, C, a_it[s], b_tj[s], Mb, Nb, Kb, Trans::no, Trans::no, 1.0f,
                  {&a_sent, &b_sent});  // C_ij += A_it·B_tj
    if (!grid.overlap() && t + 1 < q) start(t + 1);
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
  const int q = grid.q(), Mb = M / q, Nb = N / q, Kb = K / q, S = slots(grid);
  core::Buffer b_recv = comm_buffer(ctx, S, Nb, Kb);   // S × (N/q, K/q): B_tj
  core::Buffer partial = comm_buffer(ctx, S, Mb, Nb);  // S × (M/q, N/q): P = A_ij·B_tjᵀ
  std::array<float*, 2> b_tj{};
  std::array<comm::Request, 2> b_sent, p_sent;
  auto start = [&](int t) {  // broadcast B_tj down the column from row t
    const int s = t % S;
    b_tj[s] = broadcast_source(grid.i() == t, B, b_recv.data() + int64_t{s} * Nb * Kb);
    b_sent[s] = grid.col_comm().start_broadcast(b_tj[s], int64_t{Nb} * Kb, t);
  };
  start(0);
  for (int t = 0; t < q; ++t) {
    const int s = t % S;
    b_sent[s].wait();
    if (grid.overlap() && t + 1 < q) start(t + 1);
    p_sent[s].wait();  // step t − S's partial has left slot s
    // Column t keeps the sum as C_it, so it computes its own share straight into C (with beta,
    // which then counts once); the others reduce from scratch.
    const bool keeps = grid.j() == t;
    float* p = keeps ? C : partial.data() + int64_t{s} * Mb * Nb;
    block_product(ctx, p, A, b_tj[s], Mb, Nb, Kb, Trans::no, Trans::yes, keeps ? beta : 0.0f, {&b_sent, &p_sent});
    p_sent[s] = grid.row_comm().start_reduce(p, int64_t{Mb} * Nb, t);
    if (!grid.overlap()) {
      p_sent[s].wait();
      if (t + 1 < q) start(t + 1);
    }
  }
  for (auto& r : p_sent) r.wait();
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
  const int q = grid.q(), Mb = M / q, Nb = N / q, Kb = K / q, S = slots(grid);
  core::Buffer a_recv = comm_buffer(ctx, S, Kb, Mb);   // S × (K/q, M/q): A_it
  core::Buffer partial = comm_buffer(ctx, S, Mb, Nb);  // S × (M/q, N/q): P = A_itᵀ·B_ij
  std::array<float*, 2> a_it{};
  std::array<comm::Request, 2> a_sent, p_sent;
  auto start = [&](int t) {  // broadcast A_it along the row from column t
    const int s = t % S;
    a_it[s] = broadcast_source(grid.j() == t, A, a_recv.data() + int64_t{s} * Kb * Mb);
    a_sent[s] = grid.row_comm().start_broadcast(a_it[s], int64_t{Kb} * Mb, t);
  };
  start(0);
  for (int t = 0; t < q; ++t) {
    const int s = t % S;
    a_sent[s].wait();
    if (grid.overlap() && t + 1 < q) start(t + 1);
    p_sent[s].wait();
    // Row t keeps the sum as C_tj (see summa_abt).
    const bool keeps = grid.i() == t;
    float* p = keeps ? C : partial.data() + int64_t{s} * Mb * Nb;
    block_product(ctx, p, a_it[s], B, Mb, Nb, Kb, Trans::yes, Trans::no, keeps ? beta : 0.0f, {&a_sent, &p_sent});
    p_sent[s] = grid.col_comm().start_reduce(p, int64_t{Mb} * Nb, t);
    if (!grid.overlap()) {
      p_sent[s].wait();
      if (t + 1 < q) start(t + 1);
    }
  }
  for (auto& r : p_sent) r.wait();
}

void summa_atb_backward(const core::Context& ctx, const comm::Grid2D& grid, float* dA, float* dB, const float* dC,
                        const float* A, const float* B, int M, int N, int K) {
  if (dA != nullptr) summa_abt(ctx, grid, dA, B, dC, K, M, N, 1.0f);  // (K, M) += (K, N)·(M, N)ᵀ
  if (dB != nullptr) summa_ab(ctx, grid, dB, A, dC, K, N, M, 1.0f);   // (K, N) += (K, M)·(M, N)
}

}  // namespace optimus::tp2d
