// Token and position embeddings on the CPU (chapter 01; the vocab split is chapter 2's and 3's).
// The lookup takes a vocab range [v0, v0 + Vl) so one op serves every stage: the serial model
// passes the whole vocabulary, a vocab-parallel rank its block of rows, and tokens outside the
// block give zero rows, which the all-reduce (1D) or reduce-scatter (2D) then fills in.
#include <algorithm>

#include "core/cuda/cuda_ops.h"
#include "core/dispatch.h"
#include "core/ops.h"

namespace optimus::core {

namespace {

// Costs (op_ledger.h's conventions), from sizes only: every token counts as if its row were in
// the block. The lookup moves rows (no FLOP): N ids and N rows of C read, (N, C) written. The
// scatter-add adds each row of dout into a row of dwte: N·C adds, dout's and those rows read.
OpCost embedding_forward_cost(int64_t N, int64_t C) {
  return {.kind = OpKind::embedding, .flops = 0, .bytes_read = ints(N) + floats(N * C), .bytes_written = floats(N * C)};
}
OpCost embedding_backward_cost(int64_t N, int64_t C) {
  return {.kind = OpKind::embedding,
          .flops = N * C,
          .bytes_read = ints(N) + floats(2 * N * C),
          .bytes_written = floats(N * C)};
}
// One add per element of out (B, T, C), which is read and written, and wpe (T, C) read.
OpCost position_add_forward_cost(int64_t B, int64_t T, int64_t C) {
  return {.kind = OpKind::embedding,
          .flops = B * T * C,
          .bytes_read = floats(B * T * C + T * C),
          .bytes_written = floats(B * T * C)};
}
// One add per element of dout (B, T, C), summed into dwpe (T, C), which is read and written.
OpCost position_add_backward_cost(int64_t B, int64_t T, int64_t C) {
  return {.kind = OpKind::embedding,
          .flops = B * T * C,
          .bytes_read = floats(B * T * C + T * C),
          .bytes_written = floats(T * C)};
}

}  // namespace

void embedding_forward(const Context& ctx, float* out, const int* tokens, const float* wte, int N, int C, int v0,
                       int Vl) {
  OPTIMUS_DISPATCH(ctx, embedding_forward_cost(N, C), cuda::embedding_forward(ctx, out, tokens, wte, N, C, v0, Vl));
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    float* out_n = out + static_cast<int64_t>(n) * C;  // (C)
    const int row = tokens[n] - v0;
    if (row >= 0 && row < Vl) {
      const float* wte_row = wte + static_cast<int64_t>(row) * C;  // (C)
      std::copy(wte_row, wte_row + C, out_n);
    } else {
      std::fill(out_n, out_n + C, 0.0f);
    }
  }
}

void embedding_backward(const Context& ctx, float* dwte, const float* dout, const int* tokens, int N, int C, int v0,
                        int Vl) {
  if (dwte == nullptr) return;  // nothing asked, nothing done or recorded (on every device)
  OPTIMUS_DISPATCH(ctx, embedding_backward_cost(N, C), cuda::embedding_backward(ctx, dwte, dout, tokens, N, C, v0, Vl));
  // A token may occur many times, so threads split the columns, not the tokens: no two threads
  // touch one element, and every element sums its tokens in order n = 0, 1, ..., whatever the
  // thread count, which keeps the result bitwise reproducible.
  constexpr int kColumnChunk = 64;
  const int chunks = (C + kColumnChunk - 1) / kColumnChunk;
#pragma omp parallel for schedule(static)
  for (int chunk = 0; chunk < chunks; ++chunk) {
    const int c0 = chunk * kColumnChunk;
    const int c1 = std::min(C, c0 + kColumnChunk);
    for (int n = 0; n < N; ++n) {
      const int row = tokens[n] - v0;
      if (row < 0 || row >= Vl) continue;
      const float* dout_n = dout + static_cast<int64_t>(n) * C;  // (C)
      float* dwte_row = dwte + static_cast<int64_t>(row) * C;    // (C)
      for (int c = c0; c < c1; ++c) dwte_row[c] += dout_n[c];
    }
  }
}

void position_add_forward(const Context& ctx, float* out, const float* wpe, int B, int T, int C) {
  OPTIMUS_DISPATCH(ctx, position_add_forward_cost(B, T, C), cuda::position_add_forward(ctx, out, wpe, B, T, C));
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      float* out_bt = out + (static_cast<int64_t>(b) * T + t) * C;  // (C)
      const float* wpe_t = wpe + static_cast<int64_t>(t) * C;       // (C)
      for (int c = 0; c < C; ++c) out_bt[c] += wpe_t[c];
    }
  }
}

void position_add_backward(const Context& ctx, float* dwpe, const float* dout, int B, int T, int C) {
  if (dwpe == nullptr) return;  // nothing asked, nothing done or recorded (on every device)
  OPTIMUS_DISPATCH(ctx, position_add_backward_cost(B, T, C), cuda::position_add_backward(ctx, dwpe, dout, B, T, C));
  // Each position t owns its row of dwpe, so threads split positions and sum over b in order.
#pragma omp parallel for schedule(static)
  for (int t = 0; t < T; ++t) {
    float* dwpe_t = dwpe + static_cast<int64_t>(t) * C;  // (C)
    for (int b = 0; b < B; ++b) {
      const float* dout_bt = dout + (static_cast<int64_t>(b) * T + t) * C;  // (C)
      for (int c = 0; c < C; ++c) dwpe_t[c] += dout_bt[c];
    }
  }
}

}  // namespace optimus::core
