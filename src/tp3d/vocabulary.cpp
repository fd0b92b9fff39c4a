// The 3D embedding and loss: core ops on this rank's vocabulary piece or block, and the collectives
// along the lines of the cube that hold the other pieces.
#include "tp3d/vocabulary.h"

#include "core/ops.h"
#include "core/tensor.h"
#include "model/shard.h"
#include "model/vocab_parallel_loss.h"

namespace optimus::tp3d {

namespace {

core::Buffer comm_buffer(const core::Context& ctx, int64_t rows, int64_t cols) {
  return core::Buffer(*ctx.ledger, core::MemoryCategory::communication, {rows, cols}, ctx.device);
}

}  // namespace

int vocab_piece(const model::GPTConfig& config, int q) {
  const int64_t pieces = int64_t{q} * q;
  return static_cast<int>(model::padded_size(config.vocab_size, pieces) / pieces);
}

void embedding_3d_forward(const core::Context& ctx, const comm::Grid3D& cube, float* out, const int* tokens,
                          const float* wte, int N, int C, int Vp) {
  const int q = cube.q(), Nb = N / q, Cb = C / q, Vl = Vp / (q * q);
  core::Buffer all_rows = comm_buffer(ctx, N, Cb);  // (N, C/q): every token, my vocabulary piece only
  core::embedding_forward(ctx, all_rows.data(), tokens, wte, N, Cb, (cube.k() * q + cube.i()) * Vl, Vl);
  core::Buffer block = comm_buffer(ctx, Nb, Cb);  // (N/q, C/q): rows block i, summed over i
  cube.col_comm().reduce_scatter(block.data(), all_rows.data(), int64_t{Nb} * Cb);
  cube.depth_comm().reduce_scatter(out, block.data(), int64_t{Nb / q} * Cb);  // summed over k; piece k
}

void embedding_3d_backward(const core::Context& ctx, const comm::Grid3D& cube, float* dwte, const float* dout,
                           const int* tokens, int N, int C, int Vp) {
  const int q = cube.q(), Nb = N / q, Cb = C / q, Vl = Vp / (q * q);
  core::Buffer block = comm_buffer(ctx, Nb, Cb);  // (N/q, C/q): rows block i
  cube.depth_comm().all_gather(block.data(), dout, int64_t{Nb / q} * Cb);
  core::Buffer all_rows = comm_buffer(ctx, N, Cb);  // (N, C/q): the gradient of every row, columns j
  cube.col_comm().all_gather(all_rows.data(), block.data(), int64_t{Nb} * Cb);
  core::embedding_backward(ctx, dwte, all_rows.data(), tokens, N, Cb, (cube.k() * q + cube.i()) * Vl, Vl);
}

void vocab_parallel_cross_entropy_3d(const core::Context& ctx, const comm::Grid3D& cube, float* losses, float* maxes,
                                     float* sumexp, float* target_logit, const float* logits, const int* targets, int N,
                                     int Vp, int V_real) {
  // The depth line holds the whole vocabulary of my rows: chapter 2's loss, along depth_comm.
  const int q = cube.q(), Nr = N / (q * q), Vb = Vp / q;
  model::vocab_parallel_cross_entropy_forward(ctx, cube.depth_comm(), losses, maxes, sumexp, target_logit, logits,
                                              targets, Nr, Vb, cube.k() * Vb, V_real);
}

}  // namespace optimus::tp3d
