// Elementwise ops on the CPU (DESIGN §4, §9): GELU (GPT-2's tanh form, gelu_new), the residual
// add, scaling, and the sum of squares that gradient-norm clipping needs. Plain OpenMP loops; the
// sum of squares is accumulated in double, in a fixed order that does not depend on thread count.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/dispatch.h"
#include "core/ops.h"

namespace optimus::core {

namespace {

constexpr float kGeluScale = 0.7978845608028654f;  // √(2/π)
constexpr float kGeluCube = 0.044715f;

}  // namespace

// 0.5 (1 + tanh(u)) = sigmoid(2u), so GELU is x · sigmoid(2u): one expf instead of tanhf, which
// is several times slower in glibc, and no cancellation in 1 + tanh(u) for negative x.
void gelu_forward(const Context& ctx, float* out, const float* inp, int64_t n) {
  OPTIMUS_CPU_OP(ctx);
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < n; ++k) {
    const float x = inp[k];
    const float u = kGeluScale * (x + kGeluCube * x * x * x);
    out[k] = x / (1.0f + std::exp(-2.0f * u));
  }
}

void gelu_backward(const Context& ctx, float* dinp, const float* inp, const float* dout, int64_t n) {
  OPTIMUS_CPU_OP(ctx);
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < n; ++k) {
    const float x = inp[k];
    const float u = kGeluScale * (x + kGeluCube * x * x * x);
    const float s = 1.0f / (1.0f + std::exp(-2.0f * u));  // sigmoid(2u) = 0.5 (1 + tanh(u))
    const float du = kGeluScale * (1.0f + 3.0f * kGeluCube * x * x);
    // d/dx [x s] = s + x s' with s' = 2 s (1 - s) du.
    dinp[k] += (s + 2.0f * x * s * (1.0f - s) * du) * dout[k];
  }
}

void residual_forward(const Context& ctx, float* out, const float* a, const float* b, int64_t n) {
  OPTIMUS_CPU_OP(ctx);
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < n; ++k) out[k] = a[k] + b[k];
}

void residual_backward(const Context& ctx, float* da, float* db, const float* dout, int64_t n) {
  OPTIMUS_CPU_OP(ctx);
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < n; ++k) {
    if (da != nullptr) da[k] += dout[k];
    if (db != nullptr) db[k] += dout[k];
  }
}

void scale(const Context& ctx, float* x, float s, int64_t n) {
  OPTIMUS_CPU_OP(ctx);
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < n; ++k) x[k] *= s;
}

void sum_squares(const Context& ctx, double* out, const float* x, int64_t n) {
  OPTIMUS_CPU_OP(ctx);
  // Fixed-size chunks summed in chunk order: the same double for any number of threads, so a
  // resumed run clips its gradients exactly as the original did.
  constexpr int64_t kChunk = 1 << 14;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> partial(static_cast<size_t>(chunks));  // (chunks)
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    double s = 0.0;
    for (int64_t k = c * kChunk; k < std::min(n, (c + 1) * kChunk); ++k) s += static_cast<double>(x[k]) * x[k];
    partial[static_cast<size_t>(c)] = s;
  }
  double total = 0.0;
  for (double s : partial) total += s;
  *out = total;
}

}  // namespace optimus::core
