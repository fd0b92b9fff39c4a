// Softmax cross-entropy on the CPU, built from vocab-parallel pieces (chapter 01).
// loss_n = log Σ_v exp(logit_nv) − logit_n,target = log(sumexp) + max − target_logit, and each of
// max, sumexp and target_logit is a reduction over the vocabulary. The pieces compute them over a
// block of columns [v0, v0 + Vl); the serial composite runs them over all columns, and the 1D/2D
// stages all-reduce each one between the same pieces, so the full logits are never gathered.
// Columns with a global id >= V_real are padding (V rounded up to divide the ranks) and are skipped.
// The pieces record their costs; crossentropy_forward records through them.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/cuda/cuda_ops.h"
#include "core/dispatch.h"
#include "core/ops.h"

namespace optimus::core {

namespace {

/// How many of the local columns [v0, v0 + Vl) are real vocabulary (they come first).
int real_columns(int Vl, int v0, int V_real) {
  return std::clamp(V_real - v0, 0, Vl);
}

// ---- costs (op_ledger.h's conventions) on N rows of R = real_columns(...) logits ---------------
// max: a compare per logit. sumexp: subtract, exp, add per logit. target: one logit looked up per
// row (no FLOP). losses: subtract, log, add per row. backward: per row 1 / sumexp, per logit
// subtract, exp, multiply, subtract the one-hot, multiply by dloss, add into dlogits: six.

OpCost ce_cost(int64_t flops, int64_t read, int64_t written) {
  return {.kind = OpKind::crossentropy, .flops = flops, .bytes_read = read, .bytes_written = written};
}
OpCost partial_max_cost(int64_t N, int64_t R) {
  return ce_cost(N * R, floats(N * R), floats(N));
}
OpCost partial_sumexp_cost(int64_t N, int64_t R) {
  return ce_cost(3 * N * R, floats(N * R + N), floats(N));
}
OpCost partial_target_cost(int64_t N) {
  return ce_cost(0, ints(N) + floats(N), floats(N));
}
OpCost losses_cost(int64_t N) {
  return ce_cost(3 * N, floats(3 * N), floats(N));
}
OpCost backward_cost(int64_t N, int64_t R) {
  return ce_cost(N * (6 * R + 1), ints(N) + floats(2 * N * R + 2 * N), floats(N * R));
}

}  // namespace

void crossentropy_partial_max(const Context& ctx, float* maxes, const float* logits, int N, int Vl, int v0,
                              int V_real) {
  OPTIMUS_DISPATCH(ctx, partial_max_cost(N, real_columns(Vl, v0, V_real)),
                   cuda::crossentropy_partial_max(ctx, maxes, logits, N, Vl, v0, V_real));
  const int V_here = real_columns(Vl, v0, V_real);
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* logits_n = logits + static_cast<int64_t>(n) * Vl;  // (Vl)
    float m = -std::numeric_limits<float>::infinity();
    for (int v = 0; v < V_here; ++v) m = std::max(m, logits_n[v]);
    maxes[n] = m;
  }
}

void crossentropy_partial_sumexp(const Context& ctx, float* sumexp, const float* logits, const float* maxes, int N,
                                 int Vl, int v0, int V_real) {
  OPTIMUS_DISPATCH(ctx, partial_sumexp_cost(N, real_columns(Vl, v0, V_real)),
                   cuda::crossentropy_partial_sumexp(ctx, sumexp, logits, maxes, N, Vl, v0, V_real));
  const int V_here = real_columns(Vl, v0, V_real);
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* logits_n = logits + static_cast<int64_t>(n) * Vl;  // (Vl)
    // Tens of thousands of terms in (0, 1]: a double accumulator keeps the sum accurate to float precision.
    double s = 0.0;
    for (int v = 0; v < V_here; ++v) s += std::exp(static_cast<double>(logits_n[v] - maxes[n]));
    sumexp[n] = static_cast<float>(s);
  }
}

void crossentropy_partial_target(const Context& ctx, float* target_logit, const float* logits, const int* targets,
                                 int N, int Vl, int v0) {
  OPTIMUS_DISPATCH(ctx, partial_target_cost(N),
                   cuda::crossentropy_partial_target(ctx, target_logit, logits, targets, N, Vl, v0));
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const int v = targets[n] - v0;
    // Zero elsewhere, so summing the pieces over the ranks gives the target logit exactly.
    target_logit[n] = (v >= 0 && v < Vl) ? logits[static_cast<int64_t>(n) * Vl + v] : 0.0f;
  }
}

void crossentropy_losses(const Context& ctx, float* losses, const float* maxes, const float* sumexp,
                         const float* target_logit, int N) {
  OPTIMUS_DISPATCH(ctx, losses_cost(N), cuda::crossentropy_losses(ctx, losses, maxes, sumexp, target_logit, N));
  // max − target first: when the logits are large, adding the small log(sumexp) to max alone
  // would round away its low digits. Element by element, so losses may alias any input
  // (crossentropy_forward relies on that).
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) losses[n] = (maxes[n] - target_logit[n]) + std::log(sumexp[n]);
}

void crossentropy_forward(const Context& ctx, float* losses, float* maxes, float* sumexp, const float* logits,
                          const int* targets, int N, int V, int V_real) {
  // The same pieces a vocab-parallel rank runs, over all V columns and with nothing to all-reduce.
  // losses holds the target logits until the last piece turns them into losses.
  crossentropy_partial_max(ctx, maxes, logits, N, V, 0, V_real);
  crossentropy_partial_sumexp(ctx, sumexp, logits, maxes, N, V, 0, V_real);
  crossentropy_partial_target(ctx, losses, logits, targets, N, V, 0);
  crossentropy_losses(ctx, losses, maxes, sumexp, losses, N);
}

void crossentropy_backward(const Context& ctx, float* dlogits, const float* logits, const float* maxes,
                           const float* sumexp, const int* targets, float dloss, int N, int Vl, int v0, int V_real) {
  if (dlogits == nullptr) return;  // nothing asked, nothing done or recorded (on every device)
  OPTIMUS_DISPATCH(ctx, backward_cost(N, real_columns(Vl, v0, V_real)),
                   cuda::crossentropy_backward(ctx, dlogits, logits, maxes, sumexp, targets, dloss, N, Vl, v0, V_real));
  const int V_here = real_columns(Vl, v0, V_real);
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* logits_n = logits + static_cast<int64_t>(n) * Vl;  // (Vl)
    float* dlogits_n = dlogits + static_cast<int64_t>(n) * Vl;      // (Vl)
    const float inv_sumexp = 1.0f / sumexp[n];
    const int target = targets[n] - v0;
    for (int v = 0; v < V_here; ++v) {
      const float prob = std::exp(logits_n[v] - maxes[n]) * inv_sumexp;
      dlogits_n[v] += dloss * (prob - (v == target ? 1.0f : 0.0f));
    }
  }
}

}  // namespace optimus::core
