// LayerNorm on the GPU: the same pieces as core/cpu/layernorm.cpp, in the same
// two-pass float arithmetic, one block per row for the row statistics (a block reduction replaces
// the CPU's left-to-right sum, so the last bits may differ) and 32-column strips for the parameter
// gradients. layernorm_forward is the three forward pieces (core/cpu/layernorm.cpp dispatches them
// one by one); layernorm_backward fuses the row sums with dinp, which needs no (N) scratch.
#include "core/cuda/common.cuh"
#include "core/cuda/cuda_ops.h"

namespace optimus::core::cuda {

namespace {

// ---- forward pieces: one block per row n -----------------------------------------------------

// sum[n] = Σ_c inp[n, c]
__global__ void partial_sum_kernel(float* sum, const float* inp, int C) {
  const int64_t n = blockIdx.x;
  const float* x = inp + n * C;  // (C)
  float s = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) s += x[c];
  s = block_reduce(s, SumOp{});
  if (threadIdx.x == 0) sum[n] = s;
}

// sqdev[n] = Σ_c (inp[n, c] - sum[n] / C_total)²
__global__ void partial_sqdev_kernel(float* sqdev, const float* inp, const float* sum, int C, int C_total) {
  const int64_t n = blockIdx.x;
  const float* x = inp + n * C;  // (C)
  const float m = sum[n] / static_cast<float>(C_total);
  float s = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const float d = x[c] - m;
    s += d * d;
  }
  s = block_reduce(s, SumOp{});
  if (threadIdx.x == 0) sqdev[n] = s;
}

// mean = sum / C_total, rstd = 1 / √(sqdev / C_total + eps), out = (inp - mean) · rstd · weight + bias
__global__ void normalize_kernel(float* out, float* mean, float* rstd, const float* inp, const float* sum,
                                 const float* sqdev, const float* weight, const float* bias, int C, int C_total,
                                 float eps) {
  const int64_t n = blockIdx.x;
  const float m = sum[n] / static_cast<float>(C_total);
  const float r = 1.0f / sqrtf(sqdev[n] / static_cast<float>(C_total) + eps);
  // mean may alias sum and rstd sqdev: every thread has read both before thread 0 overwrites them.
  __syncthreads();
  if (threadIdx.x == 0) {
    mean[n] = m;
    rstd[n] = r;
  }
  const float* x = inp + n * C;  // (C)
  float* y = out + n * C;        // (C)
  for (int c = threadIdx.x; c < C; c += blockDim.x) y[c] = (x[c] - m) * r * weight[c] + bias[c];
}

// ---- backward pieces ---------------------------------------------------------------------------

// With g = dout · weight and xhat = (inp - mean) · rstd, this block's row sums Σ_c g and Σ_c g · xhat.
__device__ void row_sums(float* sum_g, float* sum_gx, const float* dy, const float* x, const float* weight,
                         float mean_n, float rstd_n, int C) {
  float sg = 0.0f, sgx = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const float g = dy[c] * weight[c];
    sg += g;
    sgx += g * (x[c] - mean_n) * rstd_n;
  }
  *sum_g = block_reduce(sg, SumOp{});
  *sum_gx = block_reduce(sgx, SumOp{});
}

// dx += rstd · (g - Σg / C_total - xhat · Σg·xhat / C_total) along this block's row.
__device__ void apply_row(float* dx, const float* dy, const float* x, const float* weight, float mean_n, float rstd_n,
                          float sum_g, float sum_gx, int C, int C_total) {
  const float mean_g = sum_g / static_cast<float>(C_total);
  const float mean_gx = sum_gx / static_cast<float>(C_total);
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const float xhat = (x[c] - mean_n) * rstd_n;
    dx[c] += rstd_n * (dy[c] * weight[c] - mean_g - xhat * mean_gx);
  }
}

__global__ void backward_partial_kernel(float* sum_g, float* sum_gx, const float* dout, const float* inp,
                                        const float* weight, const float* mean, const float* rstd, int C) {
  const int64_t n = blockIdx.x;
  float sg, sgx;
  row_sums(&sg, &sgx, dout + n * C, inp + n * C, weight, mean[n], rstd[n], C);
  if (threadIdx.x == 0) {
    sum_g[n] = sg;
    sum_gx[n] = sgx;
  }
}

__global__ void backward_apply_kernel(float* dinp, const float* dout, const float* inp, const float* weight,
                                      const float* mean, const float* rstd, const float* sum_g, const float* sum_gx,
                                      int C, int C_total) {
  const int64_t n = blockIdx.x;
  apply_row(dinp + n * C, dout + n * C, inp + n * C, weight, mean[n], rstd[n], sum_g[n], sum_gx[n], C, C_total);
}

// The whole-row backward (C_total = C) in one pass per row: the sums stay in the block.
__global__ void backward_fused_kernel(float* dinp, const float* dout, const float* inp, const float* weight,
                                      const float* mean, const float* rstd, int C) {
  const int64_t n = blockIdx.x;
  float sg, sgx;
  row_sums(&sg, &sgx, dout + n * C, inp + n * C, weight, mean[n], rstd[n], C);
  apply_row(dinp + n * C, dout + n * C, inp + n * C, weight, mean[n], rstd[n], sg, sgx, C, C);
}

// dweight (C) += Σ_n dout · xhat, dbias (C) += Σ_n dout. As bias_add_backward (matmul.cu): a block
// owns 32 columns, its 32 thread rows take every 32nd row, and the partial sums are added in order.
constexpr int kColumns = 32;
constexpr int kRowGroups = 32;

__global__ void param_grads_kernel(float* dweight, float* dbias, const float* dout, const float* inp, const float* mean,
                                   const float* rstd, int N, int C) {
  __shared__ float partial_w[kRowGroups][kColumns];  // (row groups, columns)
  __shared__ float partial_b[kRowGroups][kColumns];  // (row groups, columns)
  const int c = blockIdx.x * kColumns + threadIdx.x;
  float dw = 0.0f, db = 0.0f;
  if (c < C) {
    for (int n = threadIdx.y; n < N; n += kRowGroups) {
      const int64_t k = static_cast<int64_t>(n) * C + c;
      dw += dout[k] * (inp[k] - mean[n]) * rstd[n];
      db += dout[k];
    }
  }
  partial_w[threadIdx.y][threadIdx.x] = dw;
  partial_b[threadIdx.y][threadIdx.x] = db;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    float total_w = 0.0f, total_b = 0.0f;
    for (int g = 0; g < kRowGroups; ++g) {
      total_w += partial_w[g][threadIdx.x];
      total_b += partial_b[g][threadIdx.x];
    }
    if (dweight != nullptr) dweight[c] += total_w;
    if (dbias != nullptr) dbias[c] += total_b;
  }
}

void launch_param_grads(const Context& ctx, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* mean, const float* rstd, int N, int C) {
  if ((dweight == nullptr && dbias == nullptr) || C == 0) return;
  const dim3 block(kColumns, kRowGroups);
  const unsigned int blocks = static_cast<unsigned int>((C + kColumns - 1) / kColumns);
  param_grads_kernel<<<blocks, block, 0, stream_of(ctx)>>>(dweight, dbias, dout, inp, mean, rstd, N, C);
  OPTIMUS_CUDA_LAUNCH_CHECK();
}

}  // namespace

void layernorm_partial_sum(const Context& ctx, float* sum, const float* inp, int N, int C) {
  if (N == 0) return;
  partial_sum_kernel<<<N, kBlock, 0, stream_of(ctx)>>>(sum, inp, C);
  OPTIMUS_CUDA_LAUNCH_CHECK();
}

void layernorm_partial_sqdev(const Context& ctx, float* sqdev, const float* inp, const float* sum, int N, int C,
                             int C_total) {
  if (N == 0) return;
  partial_sqdev_kernel<<<N, kBlock, 0, stream_of(ctx)>>>(sqdev, inp, sum, C, C_total);
  OPTIMUS_CUDA_LAUNCH_CHECK();
}

void layernorm_normalize(const Context& ctx, float* out, float* mean, float* rstd, const float* inp, const float* sum,
                         const float* sqdev, const float* weight, const float* bias, int N, int C, int C_total,
                         float eps) {
  if (N == 0) return;
  normalize_kernel<<<N, kBlock, 0, stream_of(ctx)>>>(out, mean, rstd, inp, sum, sqdev, weight, bias, C, C_total, eps);
  OPTIMUS_CUDA_LAUNCH_CHECK();
}

void layernorm_backward_partial(const Context& ctx, float* sum_g, float* sum_gx, const float* dout, const float* inp,
                                const float* weight, const float* mean, const float* rstd, int N, int C) {
  if (N == 0) return;
  backward_partial_kernel<<<N, kBlock, 0, stream_of(ctx)>>>(sum_g, sum_gx, dout, inp, weight, mean, rstd, C);
  OPTIMUS_CUDA_LAUNCH_CHECK();
}

void layernorm_backward_apply(const Context& ctx, const LayerGrads& add_to, const float* dout, const float* inp,
                              const float* weight, const float* mean, const float* rstd, const float* sum_g,
                              const float* sum_gx, int N, int C, int C_total) {
  if (add_to.dinp != nullptr && N > 0) {
    backward_apply_kernel<<<N, kBlock, 0, stream_of(ctx)>>>(add_to.dinp, dout, inp, weight, mean, rstd, sum_g, sum_gx,
                                                            C, C_total);
    OPTIMUS_CUDA_LAUNCH_CHECK();
  }
  launch_param_grads(ctx, add_to.dweight, add_to.dbias, dout, inp, mean, rstd, N, C);
}

void layernorm_backward(const Context& ctx, const LayerGrads& add_to, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C) {
  if (add_to.dinp != nullptr && N > 0) {
    backward_fused_kernel<<<N, kBlock, 0, stream_of(ctx)>>>(add_to.dinp, dout, inp, weight, mean, rstd, C);
    OPTIMUS_CUDA_LAUNCH_CHECK();
  }
  launch_param_grads(ctx, add_to.dweight, add_to.dbias, dout, inp, mean, rstd, N, C);
}

}  // namespace optimus::core::cuda
