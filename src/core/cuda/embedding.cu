// Token and position embeddings on the GPU (chapter 01; the vocab range [v0, v0 + Vl) is for
// chapters 2 and 3). The lookups are elementwise. The scatter-add of the token embedding's backward
// avoids atomics (their order, and so the rounding, would change from run to run): each thread
// owns one column of a bucket of vocab rows and adds the tokens that fall in its bucket in order
// n = 0, 1, ..., exactly the CPU's order, so dwte is bitwise the CPU's. Position backward
// likewise sums over b in order.
#include <algorithm>

#include "core/cuda/common.cuh"
#include "core/cuda/cuda_ops.h"

namespace optimus::core::cuda {

namespace {

// out[n, c] = wte[tokens[n] - v0, c] if the token is in [v0, v0 + Vl), else 0
__global__ void embedding_forward_kernel(float* out, const int* tokens, const float* wte, int64_t n_total, int C,
                                         int v0, int Vl) {
  for (int64_t k = grid_first(); k < n_total; k += grid_stride()) {
    const int64_t n = k / C;
    const int c = static_cast<int>(k % C);
    const int row = tokens[n] - v0;
    out[k] = (row >= 0 && row < Vl) ? wte[static_cast<int64_t>(row) * C + c] : 0.0f;
  }
}

// Block (x, y) owns columns [x·kBlock, (x+1)·kBlock) of the vocab rows [y·rows, (y+1)·rows):
// dwte[row, c] += dout[n, c] for every n whose token row is in that bucket, in order of n.
__global__ void embedding_backward_kernel(float* dwte, const float* dout, const int* tokens, int N, int C, int v0,
                                          int Vl, int bucket_rows) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  const int row0 = blockIdx.y * bucket_rows;
  const int row1 = min(Vl, row0 + bucket_rows);
  if (c >= C) return;
  for (int n = 0; n < N; ++n) {
    const int row = tokens[n] - v0;
    if (row < row0 || row >= row1) continue;
    dwte[static_cast<int64_t>(row) * C + c] += dout[static_cast<int64_t>(n) * C + c];
  }
}

// out[b, t, c] += wpe[t, c]: element k of out is element k % (T·C) of wpe
__global__ void position_add_forward_kernel(float* out, const float* wpe, int64_t n_total, int64_t TC) {
  for (int64_t k = grid_first(); k < n_total; k += grid_stride()) out[k] += wpe[k % TC];
}

// dwpe[t, c] += dout[b, t, c] for b = 0, 1, ..., B-1 in order (the CPU's order)
__global__ void position_add_backward_kernel(float* dwpe, const float* dout, int B, int64_t TC) {
  for (int64_t k = grid_first(); k < TC; k += grid_stride()) {
    float acc = dwpe[k];
    for (int b = 0; b < B; ++b) acc += dout[b * TC + k];
    dwpe[k] = acc;
  }
}

}  // namespace

void embedding_forward(const Context& ctx, float* out, const int* tokens, const float* wte, int N, int C, int v0,
                       int Vl) {
  const int64_t n_total = static_cast<int64_t>(N) * C;
  if (n_total == 0) return;
  embedding_forward_kernel<<<blocks_for(n_total), kBlock, 0, stream_of(ctx)>>>(out, tokens, wte, n_total, C, v0, Vl);
  OPTIMUS_CUDA_LAUNCH_CHECK();
}

void embedding_backward(const Context& ctx, float* dwte, const float* dout, const int* tokens, int N, int C, int v0,
                        int Vl) {
  if (dwte == nullptr || N == 0 || C == 0 || Vl <= 0) return;
  // Buckets of 512 rows: V = 50304 gives ~100 buckets × C columns of threads, each scanning the N
  // token ids (cached reads) and adding only its own rows. gridDim.y is at most 65535.
  const int bucket_rows = std::max(512, (Vl + 65534) / 65535);
  const dim3 grid(static_cast<unsigned int>((C + kBlock - 1) / kBlock),
                  static_cast<unsigned int>((Vl + bucket_rows - 1) / bucket_rows));
  embedding_backward_kernel<<<grid, kBlock, 0, stream_of(ctx)>>>(dwte, dout, tokens, N, C, v0, Vl, bucket_rows);
  OPTIMUS_CUDA_LAUNCH_CHECK();
}

void position_add_forward(const Context& ctx, float* out, const float* wpe, int B, int T, int C) {
  const int64_t TC = static_cast<int64_t>(T) * C;
  const int64_t n_total = B * TC;
  if (n_total == 0) return;
  position_add_forward_kernel<<<blocks_for(n_total), kBlock, 0, stream_of(ctx)>>>(out, wpe, n_total, TC);
  OPTIMUS_CUDA_LAUNCH_CHECK();
}

void position_add_backward(const Context& ctx, float* dwpe, const float* dout, int B, int T, int C) {
  const int64_t TC = static_cast<int64_t>(T) * C;
  if (dwpe == nullptr || TC == 0) return;
  position_add_backward_kernel<<<blocks_for(TC), kBlock, 0, stream_of(ctx)>>>(dwpe, dout, B, TC);
  OPTIMUS_CUDA_LAUNCH_CHECK();
}

}  // namespace optimus::core::cuda
