// Causal self-attention on the GPU: the CPU op's steps (core/cpu/attention.cpp)
// for a whole sequence b at a time: its NH heads are one strided-batched cuBLAS product each
// (head h's q, k, v sit HS columns after head h-1's in qkv), scores = q·kᵀ/√HS, a causal softmax
// kernel (one block per row), Philox dropout on the probabilities with the canonical indices of
// the (B, NH, T*T) block, out = att·v. Backward recomputes the mask, as on the CPU.
#include <cmath>
#include <stdexcept>

#include "core/cuda/common.cuh"
#include "core/cuda/cuda_ops.h"
#include "core/cuda/dropout.cuh"
#include "core/cuda/gemm.h"

namespace optimus::core::cuda {

namespace {

// The (1, NH, T*T) piece of the (B, NH, T*T) dropout block that belongs to sequence b: the same
// canonical indices as the CPU's per-(b, h) pieces, NH of them side by side.
DropoutSpec sequence_dropout(const DropoutSpec& drop, int b) {
  DropoutSpec spec = drop;
  spec.block.dim[0] = 1;
  spec.block.offset[0] += b;
  return spec;
}

// In place on rows of (T, T) score matrices, one block per row r (t = r % T):
// row[s] = exp(row[s] - max) / Σ_{s' ≤ t} exp(row[s'] - max) for s ≤ t, and 0 for s > t.
__global__ void causal_softmax_kernel(float* att, int T) {
  const int64_t r = blockIdx.x;
  const int t = static_cast<int>(r % T);
  float* row = att + r * T;  // (T)
  float maxval = -INFINITY;
  for (int s = threadIdx.x; s <= t; s += blockDim.x) maxval = fmaxf(maxval, row[s]);
  maxval = block_reduce(maxval, MaxOp{});
  float sum = 0.0f;
  for (int s = threadIdx.x; s <= t; s += blockDim.x) {
    row[s] = expf(row[s] - maxval);
    sum += row[s];
  }
  sum = block_reduce(sum, SumOp{});
  const float inv = 1.0f / sum;
  for (int s = threadIdx.x; s < T; s += blockDim.x) row[s] = s <= t ? row[s] * inv : 0.0f;
}

// In place on rows of datt: d(scores)[t, s] = att[t, s] (datt[t, s] - Σ_{s' ≤ t} att[t, s'] datt[t, s'])
// for s ≤ t, and 0 for s > t.
__global__ void causal_softmax_backward_kernel(float* datt, const float* att, int T) {
  const int64_t r = blockIdx.x;
  const int t = static_cast<int>(r % T);
  float* drow = datt + r * T;      // (T)
  const float* row = att + r * T;  // (T)
  float dot = 0.0f;
  for (int s = threadIdx.x; s <= t; s += blockDim.x) dot += row[s] * drow[s];
  dot = block_reduce(dot, SumOp{});
  for (int s = threadIdx.x; s < T; s += blockDim.x) drow[s] = s <= t ? row[s] * (drow[s] - dot) : 0.0f;
}

void launch_softmax(const Context& ctx, float* att, int rows, int T) {
  if (rows == 0) return;
  causal_softmax_kernel<<<rows, kBlock, 0, stream_of(ctx)>>>(att, T);
  OPTIMUS_CUDA_LAUNCH_CHECK();
}

void launch_softmax_backward(const Context& ctx, float* datt, const float* att, int rows, int T) {
  if (rows == 0) return;
  causal_softmax_backward_kernel<<<rows, kBlock, 0, stream_of(ctx)>>>(datt, att, T);
  OPTIMUS_CUDA_LAUNCH_CHECK();
}

}  // namespace

void attention_forward(const Context& ctx, float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                       const DropoutSpec& drop) {
  if (B == 0 || T == 0 || NH == 0) return;
  const int HS = C / NH;
  const int C3 = 3 * C;
  const int64_t TT = static_cast<int64_t>(T) * T;
  const float score_scale = 1.0f / std::sqrt(static_cast<float>(HS));
  // One sequence's dropped probabilities (NH, T, T), reused by every b (the stream orders the uses).
  DeviceScratch dropped(ctx, drop.p > 0.0f ? static_cast<size_t>(NH * TT) * sizeof(float) : 0);

  for (int b = 0; b < B; ++b) {
    const float* q = qkv + static_cast<int64_t>(b) * T * C3;  // head h: (T, HS) at column h*HS, row stride 3C
    const float* k = q + C;                                   // likewise
    const float* v = q + 2 * C;                               // likewise
    float* a = att + static_cast<int64_t>(b) * NH * TT;       // (NH, T, T)
    float* y = out + static_cast<int64_t>(b) * T * C;         // head h: (T, HS) at column h*HS, row stride C

    // a_h (T, T) = score_scale · q_h · k_hᵀ, for the NH heads at once
    gemm(ctx, a, T, TT, q, C3, HS, k, C3, HS, T, T, HS, Trans::no, Trans::yes, score_scale, 0.0f, NH);
    launch_softmax(ctx, a, NH * T, T);
    const float* a_used = a;  // what multiplies v: the probabilities after dropout
    if (drop.p > 0.0f) {
      launch_dropout_forward(ctx, dropped.as<float>(), a, sequence_dropout(drop, b));
      a_used = dropped.as<float>();
    }
    // y_h (T, HS) = a_used_h (T, T) · v_h (T, HS)
    gemm(ctx, y, C, HS, a_used, T, TT, v, C3, HS, T, HS, T, Trans::no, Trans::no, 1.0f, 0.0f, NH);
  }
}

void attention_backward(const Context& ctx, float* dqkv, float* datt, const float* dout, const float* qkv,
                        const float* att, int B, int T, int C, int NH, const DropoutSpec& drop) {
  if (dqkv == nullptr) return;
  if (B == 0 || T == 0 || NH == 0) return;
  const int HS = C / NH;
  const int C3 = 3 * C;
  const int64_t TT = static_cast<int64_t>(T) * T;
  const float score_scale = 1.0f / std::sqrt(static_cast<float>(HS));
  DeviceScratch dropped(ctx, drop.p > 0.0f ? static_cast<size_t>(NH * TT) * sizeof(float) : 0);  // (NH, T, T)

  for (int b = 0; b < B; ++b) {
    const int64_t offset = static_cast<int64_t>(b) * T * C3;
    const float* q = qkv + offset;                             // head h: (T, HS) at column h*HS, row stride 3C
    const float* k = q + C;                                    // likewise
    const float* v = q + 2 * C;                                // likewise
    float* dq = dqkv + offset;                                 // likewise
    float* dk = dq + C;                                        // likewise
    float* dv = dq + 2 * C;                                    // likewise
    const float* dy = dout + static_cast<int64_t>(b) * T * C;  // head h: (T, HS) at column h*HS, row stride C
    const float* a = att + static_cast<int64_t>(b) * NH * TT;  // (NH, T, T)
    float* da = datt + static_cast<int64_t>(b) * NH * TT;      // (NH, T, T)

    // out = a_used · v, a_used = dropout(a): dv += a_usedᵀ · dy, d(a_used) = dy · vᵀ.
    const float* a_used = a;
    if (drop.p > 0.0f) {
      launch_dropout_forward(ctx, dropped.as<float>(), a, sequence_dropout(drop, b));
      a_used = dropped.as<float>();
    }
    gemm(ctx, dv, C3, HS, a_used, T, TT, dy, C, HS, T, HS, T, Trans::yes, Trans::no, 1.0f, 1.0f, NH);
    gemm(ctx, da, T, TT, dy, C, HS, v, C3, HS, T, T, HS, Trans::no, Trans::yes, 1.0f, 0.0f, NH);
    // da = d(a_used) · mask / (1 - p): the CPU's zero-then-dropout_backward, done in place.
    if (drop.p > 0.0f) launch_dropout_forward(ctx, da, da, sequence_dropout(drop, b));
    launch_softmax_backward(ctx, da, a, NH * T, T);  // da: gradient of the probabilities -> of the scores
    // scores = score_scale · q · kᵀ: dq += score_scale · da · k, dk += score_scale · daᵀ · q
    gemm(ctx, dq, C3, HS, da, T, TT, k, C3, HS, T, HS, T, Trans::no, Trans::no, score_scale, 1.0f, NH);
    gemm(ctx, dk, C3, HS, da, T, TT, q, C3, HS, T, HS, T, Trans::yes, Trans::no, score_scale, 1.0f, NH);
  }
}

}  // namespace optimus::core::cuda
