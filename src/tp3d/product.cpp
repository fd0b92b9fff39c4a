// The 3D product over the q×q×q cube (tp3d/product.h has the layout of every operand): each pass
// gathers the blocks its one local product reads, along the lines of the cube that hold them, and
// reduce-scatters the partial result along the line whose ranks hold the other terms of its sum.
#include "tp3d/product.h"

#include <string>

#include "core/ops.h"
#include "core/tensor.h"
#include "tp3d/shared.h"

namespace optimus::tp3d {

using core::Trans;

namespace {

void check_sizes(const comm::Grid3D& cube, int N, int M, int K) {
  const int q = cube.q();
  const std::string who = "the 3D product";
  check_multiple(who, "N (the rows of X and Y)", N, q * q, "q²", "they are cut into q² row pieces");
  check_multiple(who, "K (the columns of X, the rows of W)", K, q * q, "q²", "W's rows are cut into q² row pieces");
  check_multiple(who, "M (the columns of W and Y)", M, q, "q", "they are cut into q column blocks");
}

// The same for Y = X·Wtᵀ, whose Wt (M, K) is cut into q² row pieces and q column blocks.
void check_sizes_abt(const comm::Grid3D& cube, int N, int M, int K) {
  const int q = cube.q();
  const std::string who = "the 3D product X·Wtᵀ";
  check_multiple(who, "N (the rows of X and Y)", N, q * q, "q²", "they are cut into q² row pieces");
  check_multiple(who, "M (the rows of Wt, the columns of Y)", M, q * q, "q²", "Wt's rows are cut into q² row pieces");
  check_multiple(who, "K (the columns of X and Wt)", K, q, "q", "they are cut into q column blocks");
}

core::Buffer scratch(const core::Context& ctx, int64_t rows, int64_t cols) {
  return core::Buffer(*ctx.ledger, core::MemoryCategory::communication, {rows, cols}, ctx.device);
}

// The block (q·rows, cols) whose row pieces (rows, cols) the q ranks of `line` hold, stacked in
// the line's order.
core::Buffer gather_block(const core::Context& ctx, comm::Communicator& line, const float* piece, int64_t rows,
                          int64_t cols) {
  core::Buffer block = scratch(ctx, line.size() * rows, cols);
  line.all_gather(block.data(), piece, rows * cols);
  return block;
}

// piece (rows, cols) += row piece line.rank() of the sum over `line` of each rank's partial (q·rows, cols).
void reduce_scatter_add(const core::Context& ctx, comm::Communicator& line, float* piece, const float* partial,
                        int64_t rows, int64_t cols) {
  core::Buffer sum = scratch(ctx, rows, cols);
  line.reduce_scatter(sum.data(), partial, rows * cols);
  core::residual_forward(ctx, piece, piece, sum.data(), rows * cols);  // element-wise, so out may be an input
}

}  // namespace

Lines lines(const comm::Grid3D& cube, Orientation o) {
  if (o == Orientation::standard) return {cube.row_comm(), cube.depth_comm(), cube.col_comm()};
  return {cube.depth_comm(), cube.row_comm(), cube.col_comm()};
}

namespace {

// The forward pass of Y = X·op(W): op(W) = W, given as its pieces W_jk (K/q², M/q) (tw = no), or
// W = Wtᵀ, given as Wt's pieces (M/q², K/q) (tw = yes). Blocks are named as in the standard
// orientation (in = row: j, out = depth: k, rows = col: i).
void forward(const core::Context& ctx, const comm::Grid3D& cube, float* Y, const float* X, const float* W, int N, int M,
             int K, Orientation o, Trans tw) {
  const int q = cube.q(), Nb = N / q, Mb = M / q, Kb = K / q;
  const Lines line = lines(cube, o);
  const core::Buffer X_ij = gather_block(ctx, line.out, X, Nb / q, Kb);                     // (N/q, K/q)
  const core::Buffer W_jk = tw == Trans::no ? gather_block(ctx, line.rows, W, Kb / q, Mb)   // (K/q, M/q)
                                            : gather_block(ctx, line.rows, W, Mb / q, Kb);  // its transpose
  core::Buffer partial = scratch(ctx, Nb, Mb);  // (N/q, M/q): X_ij·W_jk, term j of Y_ik
  core::matmul(ctx, partial.data(), X_ij.data(), W_jk.data(), Nb, Mb, Kb, Trans::no, tw);
  line.in.reduce_scatter(Y, partial.data(), int64_t{Nb / q} * Mb);  // Σ over j; piece j of Y_ik
}

// Its backward, the adjoints; dW is stored as W is (W_jk's pieces, or Wt's).
void backward(const core::Context& ctx, const comm::Grid3D& cube, float* dX, float* dW, const float* dY, const float* X,
              const float* W, int N, int M, int K, Orientation o, Trans tw) {
  if (dX == nullptr && dW == nullptr) return;
  const int q = cube.q(), Nb = N / q, Mb = M / q, Kb = K / q;
  const Lines line = lines(cube, o);
  // The adjoint of the forward's reduce-scatter along `in`: every term of Y_ik has all of dY_ik.
  const core::Buffer dY_ik = gather_block(ctx, line.in, dY, Nb / q, Mb);  // (N/q, M/q)
  if (dX != nullptr) {  // dX_ij = Σ_k dY_ik·W_jkᵀ; the adjoint of gathering X_ij along `out`
    const core::Buffer W_jk = tw == Trans::no ? gather_block(ctx, line.rows, W, Kb / q, Mb)   // again
                                              : gather_block(ctx, line.rows, W, Mb / q, Kb);  // Wt_kj
    core::Buffer partial = scratch(ctx, Nb, Kb);                                              // (N/q, K/q), term k
    core::matmul(ctx, partial.data(), dY_ik.data(), W_jk.data(), Nb, Kb, Mb, Trans::no,
                 tw == Trans::no ? Trans::yes : Trans::no);
    reduce_scatter_add(ctx, line.out, dX, partial.data(), Nb / q, Kb);  // Σ over k; piece k
  }
  if (dW != nullptr) {  // dW_jk = Σ_i X_ijᵀ·dY_ik; the adjoint of gathering W_jk along `rows`
    const core::Buffer X_ij = gather_block(ctx, line.out, X, Nb / q, Kb);  // (N/q, K/q), again
    if (tw == Trans::no) {
      core::Buffer partial = scratch(ctx, Kb, Mb);  // (K/q, M/q) = (N/q, K/q)ᵀ·(N/q, M/q), term i
      core::matmul(ctx, partial.data(), X_ij.data(), dY_ik.data(), Kb, Mb, Nb, Trans::yes, Trans::no);
      reduce_scatter_add(ctx, line.rows, dW, partial.data(), Kb / q, Mb);  // Σ over i; piece i
    } else {
      core::Buffer partial = scratch(ctx, Mb, Kb);  // its transpose, (M/q, K/q) = (N/q, M/q)ᵀ·(N/q, K/q)
      core::matmul(ctx, partial.data(), dY_ik.data(), X_ij.data(), Mb, Kb, Nb, Trans::yes, Trans::no);
      reduce_scatter_add(ctx, line.rows, dW, partial.data(), Mb / q, Kb);
    }
  }
}

}  // namespace

void product_3d(const core::Context& ctx, const comm::Grid3D& cube, float* Y, const float* X, const float* W, int N,
                int M, int K, Orientation o) {
  check_sizes(cube, N, M, K);
  forward(ctx, cube, Y, X, W, N, M, K, o, Trans::no);
}

void product_3d_backward(const core::Context& ctx, const comm::Grid3D& cube, float* dX, float* dW, const float* dY,
                         const float* X, const float* W, int N, int M, int K, Orientation o) {
  check_sizes(cube, N, M, K);
  backward(ctx, cube, dX, dW, dY, X, W, N, M, K, o, Trans::no);
}

void product_3d_abt(const core::Context& ctx, const comm::Grid3D& cube, float* Y, const float* X, const float* Wt,
                    int N, int M, int K, Orientation o) {
  check_sizes_abt(cube, N, M, K);
  forward(ctx, cube, Y, X, Wt, N, M, K, o, Trans::yes);
}

void product_3d_abt_backward(const core::Context& ctx, const comm::Grid3D& cube, float* dX, float* dWt, const float* dY,
                             const float* X, const float* Wt, int N, int M, int K, Orientation o) {
  check_sizes_abt(cube, N, M, K);
  backward(ctx, cube, dX, dWt, dY, X, Wt, N, M, K, o, Trans::yes);
}

}  // namespace optimus::tp3d
