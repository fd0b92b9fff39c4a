// LayerNorm on the CPU: two-pass statistics in float, eps from the caller.
// The op comes in pieces that work on a block of a row's columns; layernorm_forward/backward are
// those same pieces over the whole row (C_total = C). The 2D stage puts a row all-reduce between
// the pieces, so the serial and the 2D LayerNorm run the same arithmetic on every column.
// Each piece records its cost (op_ledger.h); layernorm_forward records through its pieces, while
// layernorm_backward, which a GPU runs as one fused kernel, records the sum of its pieces itself.
// A row's sums run in kLanes interleaved partial sums (lane_sum): a fixed order that the compiler
// turns into vector adds without being allowed to reorder a sum, and each piece is cloned for
// AVX-512 and AVX2 (core/cpu/vector_clones.h).
#include <algorithm>
#include <cmath>

#include "core/cpu/column_strips.h"
#include "core/cpu/vector_clones.h"
#include "core/cuda/cuda_ops.h"
#include "core/dispatch.h"
#include "core/ops.h"
#include "core/tensor.h"

namespace optimus::core {

// ---- costs (core/op_ledger.h's conventions), for a block (N, C) of rows ------------------------

namespace {

// A sum per row: one add per element.
OpCost partial_sum_cost(int64_t N, int64_t C) {
  return {.kind = OpKind::layernorm, .flops = N * C, .bytes_read = floats(N * C), .bytes_written = floats(N)};
}

// Per row the mean (a divide); per element a subtract, a multiply and an add.
OpCost partial_sqdev_cost(int64_t N, int64_t C) {
  return {
      .kind = OpKind::layernorm, .flops = N * (3 * C + 1), .bytes_read = floats(N * C + N), .bytes_written = floats(N)};
}

// Per row the mean (a divide) and rstd (divide, add, sqrt, reciprocal); per element
// (x - mean) · rstd · weight + bias: four.
OpCost normalize_cost(int64_t N, int64_t C) {
  return {.kind = OpKind::layernorm,
          .flops = N * (4 * C + 5),
          .bytes_read = floats(N * C + 2 * N + 2 * C),
          .bytes_written = floats(N * C + 2 * N)};
}

// Per element g = dout · weight, Σ g (an add), xhat = (x - mean) · rstd, Σ g · xhat (multiply-add): six.
OpCost backward_partial_cost(int64_t N, int64_t C) {
  return {.kind = OpKind::layernorm,
          .flops = N * 6 * C,
          .bytes_read = floats(2 * N * C + C + 2 * N),
          .bytes_written = floats(2 * N)};
}

// dinp: per row the two means (divides); per element xhat (two), dout · weight, the two subtracts,
// the multiply by mean_gx, by rstd, and the add into dinp: eight. dweight: xhat, the multiply by
// dout and the add: four per element. dbias: one add per element. A null gradient costs nothing.
OpCost backward_apply_cost(bool dinp, bool dweight, bool dbias, int64_t N, int64_t C) {
  const int64_t NC = N * C;
  return {.kind = OpKind::layernorm,
          .flops = (dinp ? N * (8 * C + 2) : 0) + (dweight ? 4 * NC : 0) + (dbias ? NC : 0),
          .bytes_read = floats(2 * NC + C + 4 * N + (dinp ? NC : 0) + (dweight ? C : 0) + (dbias ? C : 0)),
          .bytes_written = floats((dinp ? NC : 0) + (dweight ? C : 0) + (dbias ? C : 0))};
}

// Σ term(c) over c < C as kLanes partial sums, lane j summing c ≡ j (mod kLanes) in order, then
// the lanes added in order: the same order for every call, whatever the vector width.
constexpr int kLanes = 16;

template <typename Term>
inline float lane_sum(int C, const Term& term) {
  float lane[kLanes] = {};
  int c0 = 0;
  for (; c0 + kLanes <= C; c0 += kLanes) {
    for (int j = 0; j < kLanes; ++j) lane[j] += term(c0 + j);
  }
  for (int j = 0; c0 + j < C; ++j) lane[j] += term(c0 + j);
  float sum = 0.0f;
  for (int j = 0; j < kLanes; ++j) sum += lane[j];
  return sum;
}

}  // namespace

// ---- forward pieces --------------------------------------------------------------------------

OPTIMUS_VECTOR_CLONES void layernorm_partial_sum(const Context& ctx, float* sum, const float* inp, int N, int C) {
  OPTIMUS_DISPATCH(ctx, partial_sum_cost(N, C), cuda::layernorm_partial_sum(ctx, sum, inp, N, C));
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* x = inp + static_cast<int64_t>(n) * C;  // (C)
    sum[n] = lane_sum(C, [x](int c) { return x[c]; });
  }
}

OPTIMUS_VECTOR_CLONES void layernorm_partial_sqdev(const Context& ctx, float* sqdev, const float* inp, const float* sum,
                                                   int N, int C, int C_total) {
  OPTIMUS_DISPATCH(ctx, partial_sqdev_cost(N, C), cuda::layernorm_partial_sqdev(ctx, sqdev, inp, sum, N, C, C_total));
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* x = inp + static_cast<int64_t>(n) * C;  // (C)
    const float m = sum[n] / static_cast<float>(C_total);
    sqdev[n] = lane_sum(C, [x, m](int c) { return (x[c] - m) * (x[c] - m); });
  }
}

OPTIMUS_VECTOR_CLONES void layernorm_normalize(const Context& ctx, float* out, float* mean, float* rstd,
                                               const float* inp, const float* sum, const float* sqdev,
                                               const float* weight, const float* bias, int N, int C, int C_total,
                                               float eps) {
  OPTIMUS_DISPATCH(ctx, normalize_cost(N, C),
                   cuda::layernorm_normalize(ctx, out, mean, rstd, inp, sum, sqdev, weight, bias, N, C, C_total, eps));
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    // Read both statistics before writing either: mean may alias sum and rstd may alias sqdev.
    const float m = sum[n] / static_cast<float>(C_total);
    const float r = 1.0f / std::sqrt(sqdev[n] / static_cast<float>(C_total) + eps);
    mean[n] = m;
    rstd[n] = r;
    const float* x = inp + static_cast<int64_t>(n) * C;  // (C)
    float* y = out + static_cast<int64_t>(n) * C;        // (C)
    for (int c = 0; c < C; ++c) y[c] = (x[c] - m) * r * weight[c] + bias[c];
  }
}

// ---- backward pieces -------------------------------------------------------------------------

OPTIMUS_VECTOR_CLONES void layernorm_backward_partial(const Context& ctx, float* sum_g, float* sum_gx,
                                                      const float* dout, const float* inp, const float* weight,
                                                      const float* mean, const float* rstd, int N, int C) {
  OPTIMUS_DISPATCH(ctx, backward_partial_cost(N, C),
                   cuda::layernorm_backward_partial(ctx, sum_g, sum_gx, dout, inp, weight, mean, rstd, N, C));
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* x = inp + static_cast<int64_t>(n) * C;    // (C)
    const float* dy = dout + static_cast<int64_t>(n) * C;  // (C)
    const float m = mean[n], r = rstd[n];
    sum_g[n] = lane_sum(C, [dy, weight](int c) { return dy[c] * weight[c]; });
    sum_gx[n] = lane_sum(C, [dy, weight, x, m, r](int c) { return dy[c] * weight[c] * (x[c] - m) * r; });
  }
}

OPTIMUS_VECTOR_CLONES void layernorm_backward_apply(const Context& ctx, const LayerGrads& add_to, const float* dout,
                                                    const float* inp, const float* weight, const float* mean,
                                                    const float* rstd, const float* sum_g, const float* sum_gx, int N,
                                                    int C, int C_total) {
  float *dinp = add_to.dinp, *dweight = add_to.dweight, *dbias = add_to.dbias;
  OPTIMUS_DISPATCH(
      ctx, backward_apply_cost(dinp != nullptr, dweight != nullptr, dbias != nullptr, N, C),
      cuda::layernorm_backward_apply(ctx, add_to, dout, inp, weight, mean, rstd, sum_g, sum_gx, N, C, C_total));
  if (dinp != nullptr) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; ++n) {
      const float* x = inp + static_cast<int64_t>(n) * C;    // (C)
      const float* dy = dout + static_cast<int64_t>(n) * C;  // (C)
      float* dx = dinp + static_cast<int64_t>(n) * C;        // (C)
      const float mean_g = sum_g[n] / static_cast<float>(C_total);
      const float mean_gx = sum_gx[n] / static_cast<float>(C_total);
      for (int c = 0; c < C; ++c) {
        const float xhat = (x[c] - mean[n]) * rstd[n];
        dx[c] += rstd[n] * (dy[c] * weight[c] - mean_g - xhat * mean_gx);
      }
    }
  }
  if (dweight == nullptr && dbias == nullptr) return;
  // dweight and dbias are sums over rows, column by column.
  for_each_column_strip(C, [&](int c0, int width) {
    float dw[kStrip] = {}, db[kStrip] = {};
    for (int n = 0; n < N; ++n) {
      const float* x = inp + static_cast<int64_t>(n) * C + c0;    // (width) of row n
      const float* dy = dout + static_cast<int64_t>(n) * C + c0;  // (width) of row n
      for (int c = 0; c < width; ++c) {
        dw[c] += dy[c] * (x[c] - mean[n]) * rstd[n];
        db[c] += dy[c];
      }
    }
    for (int c = 0; c < width; ++c) {
      if (dweight != nullptr) dweight[c0 + c] += dw[c];
      if (dbias != nullptr) dbias[c0 + c] += db[c];
    }
  });
}

// ---- the serial composites: the pieces over whole rows ----------------------------------------

void layernorm_forward(const Context& ctx, float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int N, int C, float eps) {
  // mean (N) holds the row sums and rstd (N) the squared deviations until normalize turns them
  // into the statistics (it allows that aliasing), so the composite needs no scratch.
  layernorm_partial_sum(ctx, mean, inp, N, C);
  layernorm_partial_sqdev(ctx, rstd, inp, mean, N, C, C);
  layernorm_normalize(ctx, out, mean, rstd, inp, mean, rstd, weight, bias, N, C, C, eps);
}

void layernorm_backward(const Context& ctx, const LayerGrads& add_to, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C) {
  float *dinp = add_to.dinp, *dweight = add_to.dweight, *dbias = add_to.dbias;
  const OpStopwatch stopwatch =
      record_op(ctx, backward_partial_cost(N, C) +
                         backward_apply_cost(dinp != nullptr, dweight != nullptr, dbias != nullptr, N, C));
  OPTIMUS_DISPATCH_CUDA(ctx, cuda::layernorm_backward(ctx, add_to, dout, inp, weight, mean, rstd, N, C));
  // The pieces on the CPU, unrecorded (the cost is recorded above). On meta the scratch is recorded
  // as on the CPU and the pieces return at once.
  const Context pieces = unrecorded(ctx);
  Buffer sums(*ctx.ledger, MemoryCategory::workspace, {2, N}, ctx.device);  // (2, N): Σg and Σg·xhat per row
  float* sum_g = sums.data();
  float* sum_gx = sums.data() + N;
  layernorm_backward_partial(pieces, sum_g, sum_gx, dout, inp, weight, mean, rstd, N, C);
  layernorm_backward_apply(pieces, add_to, dout, inp, weight, mean, rstd, sum_g, sum_gx, N, C, C);
}

}  // namespace optimus::core
