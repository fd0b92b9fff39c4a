// GELU on the CPU: GPT-2's tanh form (gelu_new). This file is compiled with -ffast-math
// (src/CMakeLists.txt): that lets GCC call glibc's vector expf (libmvec) inside the `omp simd`
// loops, about 4x faster than one expf per element; GELU was a tenth of a training step. Each pass
// is cloned for AVX-512 and AVX2 (core/cpu/vector_clones.h), which halves its time again on a CPU
// with AVX-512 (chapter 1's block timings).
#include <algorithm>
#include <cmath>

#include "core/cpu/vector_clones.h"
#include "core/cuda/cuda_ops.h"
#include "core/dispatch.h"
#include "core/ops.h"

namespace optimus::core {

namespace {

constexpr float kGeluScale = 0.7978845608028654f;  // √(2/π)
constexpr float kGeluCube = 0.044715f;

// Per element, counted on the code below (op_ledger.h's conventions). Forward: u = scale·(x +
// cube·x³) is five, x / (1 + exp(-2u)) four: nine. Backward: u five; s = 1 / (1 + exp(-2u)) four;
// du = scale·(1 + 3·cube·x²) four; s + 2x·s·(e·s)·du six (e·s = 1 - s); times dout and the add
// into dinp two: twenty-one. Each reads its inputs (x; x and dout, and dinp it adds into) and writes one array.
OpCost gelu_forward_cost(int64_t n) {
  return {.kind = OpKind::elementwise, .flops = 9 * n, .bytes_read = floats(n), .bytes_written = floats(n)};
}
OpCost gelu_backward_cost(int64_t n) {
  return {.kind = OpKind::elementwise, .flops = 21 * n, .bytes_read = floats(3 * n), .bytes_written = floats(n)};
}

}  // namespace

// exp(-2u), its argument capped at 80 (exp(80) ≈ 5.5e34). Past about 88 expf overflows, and under
// -ffast-math its vector form need not return inf there: it returned NaN, which ended a training
// run on BPE tokens. At the cap sigmoid(2u) is 1.8e-35 where the exact value is smaller still,
// the same 0 to float's precision in x · sigmoid(2u) and its derivative.
inline float exp_minus_2u(float u) {
  return std::exp(std::min(-2.0f * u, 80.0f));
}

// 0.5 (1 + tanh(u)) = sigmoid(2u), so GELU is x · sigmoid(2u): one expf instead of tanhf, which
// is several times slower in glibc, and no cancellation in 1 + tanh(u) for negative x.
OPTIMUS_VECTOR_CLONES void gelu_forward(const Context& ctx, float* out, const float* inp, int64_t n) {
  OPTIMUS_DISPATCH(ctx, gelu_forward_cost(n), cuda::gelu_forward(ctx, out, inp, n));
#pragma omp parallel for simd schedule(static)
  for (int64_t k = 0; k < n; ++k) {
    const float x = inp[k];
    const float u = kGeluScale * (x + kGeluCube * x * x * x);
    out[k] = x / (1.0f + exp_minus_2u(u));
  }
}

OPTIMUS_VECTOR_CLONES void gelu_backward(const Context& ctx, float* dinp, const float* inp, const float* dout,
                                         int64_t n) {
  OPTIMUS_DISPATCH(ctx, gelu_backward_cost(n), cuda::gelu_backward(ctx, dinp, inp, dout, n));
#pragma omp parallel for simd schedule(static)
  for (int64_t k = 0; k < n; ++k) {
    const float x = inp[k];
    const float u = kGeluScale * (x + kGeluCube * x * x * x);
    const float e = exp_minus_2u(u);
    const float s = 1.0f / (1.0f + e);  // sigmoid(2u) = 0.5 (1 + tanh(u))
    const float du = kGeluScale * (1.0f + 3.0f * kGeluCube * x * x);
    // d/dx [x s] = s + x s' with s' = 2 s (1 - s) du; 1 - s = e s, without 1 - s's cancellation.
    dinp[k] += (s + 2.0f * x * s * (e * s) * du) * dout[k];
  }
}

}  // namespace optimus::core
