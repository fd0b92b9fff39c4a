// Elementwise ops on the CPU: the residual add, scaling, and the sum of squares that gradient-norm clipping
// needs. Plain OpenMP loops; the sum of squares is accumulated in double, in a fixed order that does not depend on
// thread count. On a meta context the two sums are NaN: it holds no numbers to sum.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/cpu/vector_clones.h"
#include "core/cuda/cuda_ops.h"
#include "core/dispatch.h"
#include "core/ops.h"

namespace optimus::core {

// ---- costs (core/op_ledger.h's conventions) ----------------------------------------------------

namespace {

// `flops_each` per element of n, reading `inputs` arrays of n and writing one.
OpCost elementwise_cost(int64_t n, int64_t flops_each, int64_t inputs) {
  return {.kind = OpKind::elementwise,
          .flops = flops_each * n,
          .bytes_read = floats(inputs * n),
          .bytes_written = floats(n)};
}

// `flops_each` per element of x (n) into one double on the host.
OpCost host_sum_cost(int64_t n, int64_t flops_each) {
  return {.kind = OpKind::reduction,
          .flops = flops_each * n,
          .bytes_read = floats(n),
          .bytes_written = static_cast<int64_t>(sizeof(double))};
}

}  // namespace

OPTIMUS_VECTOR_CLONES void residual_forward(const Context& ctx, float* out, const float* a, const float* b, int64_t n) {
  OPTIMUS_DISPATCH(ctx, elementwise_cost(n, 1, 2), cuda::residual_forward(ctx, out, a, b, n));  // a + b
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < n; ++k) out[k] = a[k] + b[k];
}

void zero(const Context& ctx, float* x, int64_t n) {
  OPTIMUS_DISPATCH(ctx, elementwise_cost(n, 0, 0), cuda::zero(ctx, x, n));  // writes only
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < n; ++k) x[k] = 0.0f;
}

float* zeroed(const Context& ctx, Buffer& b) {
  zero(ctx, b.data(), b.numel());
  return b.data();
}

void scale(const Context& ctx, float* x, float s, int64_t n) {
  OPTIMUS_DISPATCH(ctx, elementwise_cost(n, 1, 1), cuda::scale(ctx, x, s, n));  // x · s
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < n; ++k) x[k] *= s;
}

namespace {

// Σ term(x[k]) in double over fixed-size chunks, summed in chunk order: the same double for any
// number of threads (so a resumed run clips its gradients exactly as the original did), and the
// order the CUDA kernels use.
template <typename Term>
double chunked_sum(const float* x, int64_t n, Term term) {
  constexpr int64_t kChunk = 1 << 14;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> partial(static_cast<size_t>(chunks));  // (chunks)
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    double s = 0.0;
    for (int64_t k = c * kChunk; k < std::min(n, (c + 1) * kChunk); ++k) s += term(static_cast<double>(x[k]));
    partial[static_cast<size_t>(c)] = s;
  }
  double total = 0.0;
  for (double s : partial) total += s;
  return total;
}

}  // namespace

void sum_squares(const Context& ctx, double* out, const float* x, int64_t n) {
  if (ctx.device == Device::meta) *out = std::numeric_limits<double>::quiet_NaN();
  OPTIMUS_DISPATCH(ctx, host_sum_cost(n, 2), cuda::sum_squares(ctx, out, x, n));  // a multiply-add each
  *out = chunked_sum(x, n, [](double v) { return v * v; });
}

void sum(const Context& ctx, double* out, const float* x, int64_t n) {
  if (ctx.device == Device::meta) *out = std::numeric_limits<double>::quiet_NaN();
  OPTIMUS_DISPATCH(ctx, host_sum_cost(n, 1), cuda::sum(ctx, out, x, n));  // an add each
  *out = chunked_sum(x, n, [](double v) { return v; });
}

}  // namespace optimus::core
