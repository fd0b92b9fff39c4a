// Optimus's 2D layers: core ops, SUMMA, and the row or column collective between the pieces.
#include "tp2d/layers.h"

#include "core/ops.h"
#include "core/tensor.h"
#include "model/split_layernorm.h"
#include "model/vocab_parallel_loss.h"
#include "tp2d/summa.h"

namespace optimus::tp2d {

namespace {

core::Buffer comm_buffer(const core::Context& ctx, int64_t rows, int64_t cols) {
  return core::Buffer(*ctx.ledger, core::MemoryCategory::communication, {rows, cols}, ctx.device);
}

}  // namespace

// ---- LayerNorm ----------------------------------------------------------------------------------

void layernorm_2d_forward(const core::Context& ctx, const comm::Grid2D& grid, float* out, float* mean, float* rstd,
                          const float* inp, const float* weight, const float* bias, int N, int C, float eps) {
  // The row of the grid holds the whole width of my rows.
  model::split_layernorm_forward(ctx, grid.row_comm(), out, mean, rstd, inp, weight, bias, N / grid.q(), C / grid.q(),
                                 C, eps);
}

void layernorm_2d_backward(const core::Context& ctx, const comm::Grid2D& grid, const core::LayerGrads& add_to,
                           const float* dout, const float* inp, const float* weight, const float* mean,
                           const float* rstd, int N, int C) {
  model::split_layernorm_backward(ctx, grid.row_comm(), add_to, dout, inp, weight, mean, rstd, N / grid.q(),
                                  C / grid.q(), C);
}

// ---- linear -------------------------------------------------------------------------------------

void linear_2d_forward(const core::Context& ctx, const comm::Grid2D& grid, float* out, const float* inp, const float* w,
                       const float* b, int N, int C, int OC) {
  summa_ab(ctx, grid, out, inp, w, N, OC, C);  // (N, OC) = (N, C)·(C, OC)
  if (b != nullptr) core::bias_add_forward(ctx, out, b, N / grid.q(), OC / grid.q());
}

void linear_2d_backward(const core::Context& ctx, const comm::Grid2D& grid, const core::LayerGrads& add_to,
                        const float* dout, const float* inp, const float* w, int N, int C, int OC) {
  if (add_to.dbias != nullptr)
    core::bias_add_backward(ctx, add_to.dbias, dout, N / grid.q(), OC / grid.q());  // my rows
  summa_ab_backward(ctx, grid, add_to.dinp, add_to.dweight, dout, inp, w, N, OC, C);
}

// ---- embedding ----------------------------------------------------------------------------------

void embedding_2d_forward(const core::Context& ctx, const comm::Grid2D& grid, float* out, const int* tokens,
                          const float* wte, int N, int C, int V) {
  const int q = grid.q(), Nb = N / q, Cb = C / q, Vb = V / q;
  core::Buffer all_rows = comm_buffer(ctx, N, Cb);  // (N, C/q): every token, my vocabulary block only
  core::embedding_forward(ctx, all_rows.data(), tokens, wte, N, Cb, grid.i() * Vb, Vb);
  // Sequences are contiguous rows, so batch block k is rows [k·N/q, (k+1)·N/q): block k of the
  // reduce-scatter goes to row k of the grid.
  grid.col_comm().reduce_scatter(out, all_rows.data(), int64_t{Nb} * Cb);
}

void embedding_2d_backward(const core::Context& ctx, const comm::Grid2D& grid, float* dwte, const float* dout,
                           const int* tokens, int N, int C, int V) {
  const int q = grid.q(), Nb = N / q, Cb = C / q, Vb = V / q;
  core::Buffer all_rows = comm_buffer(ctx, N, Cb);  // (N, C/q): the gradient of every row of column j
  grid.col_comm().all_gather(all_rows.data(), dout, int64_t{Nb} * Cb);
  core::embedding_backward(ctx, dwte, all_rows.data(), tokens, N, Cb, grid.i() * Vb, Vb);
}

// ---- cross-entropy ------------------------------------------------------------------------------

void vocab_parallel_cross_entropy_2d(const core::Context& ctx, const comm::Grid2D& grid, float* losses, float* maxes,
                                     float* sumexp, float* target_logit, const float* logits, const int* targets, int N,
                                     int V, int V_real) {
  // The row of the grid holds the whole vocabulary of my rows: chapter 2's loss, along row_comm.
  const int Nb = N / grid.q(), Vb = V / grid.q();
  model::vocab_parallel_cross_entropy_forward(ctx, grid.row_comm(), losses, maxes, sumexp, target_logit, logits,
                                              targets, Nb, Vb, grid.j() * Vb, V_real);
}

}  // namespace optimus::tp2d
