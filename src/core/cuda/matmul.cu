// Matrix products on the GPU: cuBLAS sgemm in float32 (the context's handle runs
// CUBLAS_DEFAULT_MATH: no TF32 unless asked for), and the bias add and its backward as kernels.
// matmul, matmul_backward and the linear layer are compositions of these in core/cpu/matmul.cpp,
// which dispatch here piece by piece, so the GPU runs the same sequence of products as the CPU.
#include <cublas_v2.h>

#include <algorithm>

#include "core/cuda/common.cuh"
#include "core/cuda/cuda_ops.h"
#include "core/cuda/gemm.h"

namespace optimus::core::cuda {

namespace {

cublasOperation_t to_cublas(Trans t) {
  return t == Trans::yes ? CUBLAS_OP_T : CUBLAS_OP_N;
}

// out (N, OC) += bias (OC) on every row: element k is in column k % OC.
__global__ void bias_add_forward_kernel(float* out, const float* bias, int64_t n, int OC) {
  for (int64_t k = grid_first(); k < n; k += grid_stride()) out[k] += bias[k % OC];
}

// dbias (OC) += Σ_n dout[n, :]. A block owns 32 columns (threadIdx.x) and its 32 rows of threads
// (threadIdx.y) take every 32nd row, so each warp reads 32 consecutive floats of one row; the 32
// partial sums of a column are then added in row-group order: the same result on every run.
constexpr int kColumns = 32;
constexpr int kRowGroups = 32;

__global__ void bias_add_backward_kernel(float* dbias, const float* dout, int N, int OC) {
  __shared__ float partial[kRowGroups][kColumns];  // (row groups, columns)
  const int o = blockIdx.x * kColumns + threadIdx.x;
  float acc = 0.0f;
  if (o < OC) {
    for (int n = threadIdx.y; n < N; n += kRowGroups) acc += dout[static_cast<int64_t>(n) * OC + o];
  }
  partial[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && o < OC) {
    float total = 0.0f;
    for (int g = 0; g < kRowGroups; ++g) total += partial[g][threadIdx.x];
    dbias[o] += total;
  }
}

}  // namespace

void gemm(const Context& ctx, float* c, int ldc, int64_t stride_c, const float* a, int lda, int64_t stride_a,
          const float* b, int ldb, int64_t stride_b, int M, int N, int K, Trans ta, Trans tb, float alpha, float beta,
          int batch) {
  if (M == 0 || N == 0 || batch == 0) return;
  if (K == 0) {
    // Nothing is read from a or b; cuBLAS still wants leading dimensions of at least 1.
    lda = std::max(lda, 1);
    ldb = std::max(ldb, 1);
  }
  // Column-major: Cᵀ (N, M) = op(B)ᵀ (N, K) · op(A)ᵀ (K, M); the flags carry over unchanged.
  if (batch == 1) {
    OPTIMUS_CUDA_CHECK(
        cublasSgemm(cublas_of(ctx), to_cublas(tb), to_cublas(ta), N, M, K, &alpha, b, ldb, a, lda, &beta, c, ldc));
  } else {
    OPTIMUS_CUDA_CHECK(cublasSgemmStridedBatched(cublas_of(ctx), to_cublas(tb), to_cublas(ta), N, M, K, &alpha, b, ldb,
                                                 stride_b, a, lda, stride_a, &beta, c, ldc, stride_c, batch));
  }
}

void matmul_strided(const Context& ctx, float* c, int ldc, const float* a, int lda, const float* b, int ldb, int M,
                    int N, int K, Trans ta, Trans tb, float alpha, float beta) {
  gemm(ctx, c, ldc, 0, a, lda, 0, b, ldb, 0, M, N, K, ta, tb, alpha, beta, 1);
}

void bias_add_forward(const Context& ctx, float* out, const float* bias, int N, int OC) {
  const int64_t n = static_cast<int64_t>(N) * OC;
  if (n == 0) return;
  bias_add_forward_kernel<<<blocks_for(n), kBlock, 0, stream_of(ctx)>>>(out, bias, n, OC);
  OPTIMUS_CUDA_LAUNCH_CHECK();
}

void bias_add_backward(const Context& ctx, float* dbias, const float* dout, int N, int OC) {
  if (dbias == nullptr || OC == 0) return;
  const dim3 block(kColumns, kRowGroups);
  const unsigned int blocks = static_cast<unsigned int>((OC + kColumns - 1) / kColumns);
  bias_add_backward_kernel<<<blocks, block, 0, stream_of(ctx)>>>(dbias, dout, N, OC);
  OPTIMUS_CUDA_LAUNCH_CHECK();
}

}  // namespace optimus::core::cuda
