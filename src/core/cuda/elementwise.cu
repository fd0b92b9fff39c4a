// Elementwise ops on the GPU: GELU, the residual add, zero, scale, and the two
// reductions into a host double (sum of squares for gradient clipping, the plain sum for a
// stage's loss). One grid-stride kernel per op with 64-bit indices. The reductions use the CPU's
// own chunking (2^14 elements per chunk, each summed in order in double, then the chunks in
// order), so they give the same double as core/cpu/elementwise.cpp, bit for bit.
#include "core/cuda/common.cuh"
#include "core/cuda/cuda_ops.h"

namespace optimus::core::cuda {

namespace {

constexpr float kGeluScale = 0.7978845608028654f;  // √(2/π)
constexpr float kGeluCube = 0.044715f;

// exp(-2u) with its argument capped at 80, as on the CPU (where fast math needs the cap).
__device__ inline float exp_minus_2u(float u) { return expf(fminf(-2.0f * u, 80.0f)); }

// out = x · sigmoid(2u), u = √(2/π)(x + 0.044715 x³): GPT-2's 0.5 x (1 + tanh(u)), as on the CPU.
__global__ void gelu_forward_kernel(float* out, const float* inp, int64_t n) {
  for (int64_t k = grid_first(); k < n; k += grid_stride()) {
    const float x = inp[k];
    const float u = kGeluScale * (x + kGeluCube * x * x * x);
    out[k] = x / (1.0f + exp_minus_2u(u));
  }
}

// dinp += (s + 2 x s (1 - s) du/dx) · dout, s = sigmoid(2u), du/dx = √(2/π)(1 + 3 · 0.044715 x²),
// with 1 - s as e s (e = exp(-2u)), as on the CPU.
__global__ void gelu_backward_kernel(float* dinp, const float* inp, const float* dout, int64_t n) {
  for (int64_t k = grid_first(); k < n; k += grid_stride()) {
    const float x = inp[k];
    const float u = kGeluScale * (x + kGeluCube * x * x * x);
    const float e = exp_minus_2u(u);
    const float s = 1.0f / (1.0f + e);
    const float du = kGeluScale * (1.0f + 3.0f * kGeluCube * x * x);
    dinp[k] += (s + 2.0f * x * s * (e * s) * du) * dout[k];
  }
}

// out = a + b (out may be a or b)
__global__ void residual_forward_kernel(float* out, const float* a, const float* b, int64_t n) {
  for (int64_t k = grid_first(); k < n; k += grid_stride()) out[k] = a[k] + b[k];
}

// x *= s
__global__ void scale_kernel(float* x, float s, int64_t n) {
  for (int64_t k = grid_first(); k < n; k += grid_stride()) x[k] *= s;
}

// partial[c] = Σ_{k in chunk c} x[k] (or x[k]²), in double, in index order, as one OpenMP iteration
// is on the CPU. (float · float is exact in double, so a fused multiply-add rounds the same as the
// CPU's multiply, then add.) One warp per chunk: its 32 lanes stage the chunk through shared memory
// kTile floats at a time, reading neighbouring addresses together, and lane 0 adds them in order.
// (One thread walking its chunk alone left the GPU waiting on one load at a time.)
constexpr int64_t kChunk = 1 << 14;
constexpr int kWarpsPerBlock = kBlock / 32, kTile = 256;

template <bool kSquare>
__global__ void chunk_sums_kernel(double* partial, const float* x, int64_t n, int64_t chunks) {
  __shared__ float tile[kWarpsPerBlock][kTile];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t c = int64_t{blockIdx.x} * kWarpsPerBlock + warp;
  if (c >= chunks) return;  // the whole warp: it meets only __syncwarp below
  const int64_t begin = c * kChunk, end = begin + kChunk < n ? begin + kChunk : n;
  double s = 0.0;
  for (int64_t base = begin; base < end; base += kTile) {
    const int m = end - base < kTile ? static_cast<int>(end - base) : kTile;
    for (int k = lane; k < m; k += 32) tile[warp][k] = x[base + k];
    __syncwarp();
    if (lane == 0) {
      for (int k = 0; k < m; ++k) {
        const double v = tile[warp][k];
        s += kSquare ? v * v : v;
      }
    }
    __syncwarp();  // the tile is read before the next one overwrites it
  }
  if (lane == 0) partial[c] = s;
}

// *total = Σ_c partial[c] in order, by one thread.
__global__ void sum_in_order_kernel(double* total, const double* partial, int64_t chunks) {
  double s = 0.0;
  for (int64_t c = 0; c < chunks; ++c) s += partial[c];
  *total = s;
}

template <bool kSquare>
void sum_to_host(const Context& ctx, double* out, const float* x, int64_t n) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  DeviceScratch scratch(ctx, static_cast<size_t>(chunks + 1) * sizeof(double));  // (chunks) partials, then the total
  double* partial = scratch.as<double>();
  double* total = partial + chunks;
  if (chunks > 0) {
    const auto blocks = static_cast<unsigned>((chunks + kWarpsPerBlock - 1) / kWarpsPerBlock);
    chunk_sums_kernel<kSquare><<<blocks, kBlock, 0, stream_of(ctx)>>>(partial, x, n, chunks);
    OPTIMUS_CUDA_LAUNCH_CHECK();
  }
  sum_in_order_kernel<<<1, 1, 0, stream_of(ctx)>>>(total, partial, chunks);
  OPTIMUS_CUDA_LAUNCH_CHECK();
  cuda::copy_bytes_to_host(ctx, out, total, sizeof(double));  // waits for the stream
}

}  // namespace

void gelu_forward(const Context& ctx, float* out, const float* inp, int64_t n) {
  if (n == 0) return;
  gelu_forward_kernel<<<blocks_for(n), kBlock, 0, stream_of(ctx)>>>(out, inp, n);
  OPTIMUS_CUDA_LAUNCH_CHECK();
}

void gelu_backward(const Context& ctx, float* dinp, const float* inp, const float* dout, int64_t n) {
  if (dinp == nullptr || n == 0) return;
  gelu_backward_kernel<<<blocks_for(n), kBlock, 0, stream_of(ctx)>>>(dinp, inp, dout, n);
  OPTIMUS_CUDA_LAUNCH_CHECK();
}

void residual_forward(const Context& ctx, float* out, const float* a, const float* b, int64_t n) {
  if (n == 0) return;
  residual_forward_kernel<<<blocks_for(n), kBlock, 0, stream_of(ctx)>>>(out, a, b, n);
  OPTIMUS_CUDA_LAUNCH_CHECK();
}

void zero(const Context& ctx, float* x, int64_t n) {
  // The float 0.0f is all zero bits.
  if (n == 0) return;
  OPTIMUS_CUDA_CHECK(cudaMemsetAsync(x, 0, static_cast<size_t>(n) * sizeof(float), stream_of(ctx)));
}

void scale(const Context& ctx, float* x, float s, int64_t n) {
  if (n == 0) return;
  scale_kernel<<<blocks_for(n), kBlock, 0, stream_of(ctx)>>>(x, s, n);
  OPTIMUS_CUDA_LAUNCH_CHECK();
}

void sum_squares(const Context& ctx, double* out, const float* x, int64_t n) {
  sum_to_host<true>(ctx, out, x, n);
}

void sum(const Context& ctx, double* out, const float* x, int64_t n) {
  sum_to_host<false>(ctx, out, x, n);
}

}  // namespace optimus::core::cuda
