// Softmax cross-entropy on the GPU, the vocab-parallel pieces of core/cpu/crossentropy.cpp:
// max, sum of exponentials (accumulated in double, as on the CPU) and target
// logit over the local columns [v0, v0 + Vl), one block per row; the losses per row; and the
// gradient, elementwise. Columns with a global id >= V_real are padding and take no part.
#include <algorithm>

#include "core/cuda/common.cuh"
#include "core/cuda/cuda_ops.h"

namespace optimus::core::cuda {

namespace {

/// How many of the local columns [v0, v0 + Vl) are real vocabulary (they come first).
int real_columns(int Vl, int v0, int V_real) {
  return std::clamp(V_real - v0, 0, Vl);
}

// maxes[n] = max over v < V_here of logits[n, v] (-inf if V_here = 0)
__global__ void partial_max_kernel(float* maxes, const float* logits, int Vl, int V_here) {
  const int64_t n = blockIdx.x;
  const float* row = logits + n * Vl;  // (Vl)
  float m = -INFINITY;
  for (int v = threadIdx.x; v < V_here; v += blockDim.x) m = fmaxf(m, row[v]);
  m = block_reduce(m, MaxOp{});
  if (threadIdx.x == 0) maxes[n] = m;
}

// sumexp[n] = Σ_{v < V_here} exp(logits[n, v] - maxes[n]), the terms and the sum in double
__global__ void partial_sumexp_kernel(float* sumexp, const float* logits, const float* maxes, int Vl, int V_here) {
  const int64_t n = blockIdx.x;
  const float* row = logits + n * Vl;  // (Vl)
  const float m = maxes[n];
  double s = 0.0;
  for (int v = threadIdx.x; v < V_here; v += blockDim.x) s += exp(static_cast<double>(row[v] - m));
  s = block_reduce(s, SumOp{});
  if (threadIdx.x == 0) sumexp[n] = static_cast<float>(s);
}

// target_logit[n] = logits[n, targets[n] - v0] if that column is local, else 0
__global__ void partial_target_kernel(float* target_logit, const float* logits, const int* targets, int N, int Vl,
                                      int v0) {
  for (int64_t n = grid_first(); n < N; n += grid_stride()) {
    const int v = targets[n] - v0;
    target_logit[n] = (v >= 0 && v < Vl) ? logits[n * Vl + v] : 0.0f;
  }
}

// losses[n] = (maxes[n] - target_logit[n]) + log(sumexp[n]); losses may alias any input
__global__ void losses_kernel(float* losses, const float* maxes, const float* sumexp, const float* target_logit,
                              int N) {
  for (int64_t n = grid_first(); n < N; n += grid_stride()) {
    losses[n] = (maxes[n] - target_logit[n]) + logf(sumexp[n]);
  }
}

// dlogits[n, v] += dloss · (exp(logits[n, v] - maxes[n]) / sumexp[n] - [v = target]) for v < V_here
__global__ void backward_kernel(float* dlogits, const float* logits, const float* maxes, const float* sumexp,
                                const int* targets, float dloss, int64_t n_total, int Vl, int v0, int V_here) {
  for (int64_t k = grid_first(); k < n_total; k += grid_stride()) {
    const int64_t n = k / Vl;
    const int v = static_cast<int>(k % Vl);
    if (v >= V_here) continue;
    const float inv_sumexp = 1.0f / sumexp[n];
    const float prob = expf(logits[k] - maxes[n]) * inv_sumexp;
    dlogits[k] += dloss * (prob - (v == targets[n] - v0 ? 1.0f : 0.0f));
  }
}

}  // namespace

void crossentropy_partial_max(const Context& ctx, float* maxes, const float* logits, int N, int Vl, int v0,
                              int V_real) {
  if (N == 0) return;
  partial_max_kernel<<<N, kBlock, 0, stream_of(ctx)>>>(maxes, logits, Vl, real_columns(Vl, v0, V_real));
  OPTIMUS_CUDA_LAUNCH_CHECK();
}

void crossentropy_partial_sumexp(const Context& ctx, float* sumexp, const float* logits, const float* maxes, int N,
                                 int Vl, int v0, int V_real) {
  if (N == 0) return;
  partial_sumexp_kernel<<<N, kBlock, 0, stream_of(ctx)>>>(sumexp, logits, maxes, Vl, real_columns(Vl, v0, V_real));
  OPTIMUS_CUDA_LAUNCH_CHECK();
}

void crossentropy_partial_target(const Context& ctx, float* target_logit, const float* logits, const int* targets,
                                 int N, int Vl, int v0) {
  if (N == 0) return;
  partial_target_kernel<<<blocks_for(N), kBlock, 0, stream_of(ctx)>>>(target_logit, logits, targets, N, Vl, v0);
  OPTIMUS_CUDA_LAUNCH_CHECK();
}

void crossentropy_losses(const Context& ctx, float* losses, const float* maxes, const float* sumexp,
                         const float* target_logit, int N) {
  if (N == 0) return;
  losses_kernel<<<blocks_for(N), kBlock, 0, stream_of(ctx)>>>(losses, maxes, sumexp, target_logit, N);
  OPTIMUS_CUDA_LAUNCH_CHECK();
}

void crossentropy_backward(const Context& ctx, float* dlogits, const float* logits, const float* maxes,
                           const float* sumexp, const int* targets, float dloss, int N, int Vl, int v0, int V_real) {
  const int64_t n_total = static_cast<int64_t>(N) * Vl;
  if (dlogits == nullptr || n_total == 0) return;
  backward_kernel<<<blocks_for(n_total), kBlock, 0, stream_of(ctx)>>>(dlogits, logits, maxes, sumexp, targets, dloss,
                                                                      n_total, Vl, v0, real_columns(Vl, v0, V_real));
  OPTIMUS_CUDA_LAUNCH_CHECK();
}

}  // namespace optimus::core::cuda
