// Philox dropout on the CPU: the mask of an element is a pure function of
// (seed, stream, step, canonical index), so every layout drops the same elements, and backward
// recomputes the mask instead of storing it.
#include <algorithm>

#include "core/cpu/vector_clones.h"
#include "core/cuda/cuda_ops.h"
#include "core/dispatch.h"
#include "core/ops.h"

namespace optimus::core {

namespace {

// Per element (op_ledger.h's conventions; the mask's Philox work is integer, not counted): forward
// multiplies a kept element by 1 / (1 - p), one FLOP, none when p = 0 (a copy); backward multiplies
// and adds into dinp, two, or only the add when p = 0. Bytes as the formula: inp read, out written;
// dout and dinp read, dinp written.
OpCost dropout_forward_cost(const DropoutSpec& spec) {
  const int64_t n = spec.block.numel();
  return {
      .kind = OpKind::elementwise, .flops = spec.p > 0.0f ? n : 0, .bytes_read = floats(n), .bytes_written = floats(n)};
}
OpCost dropout_backward_cost(const DropoutSpec& spec) {
  const int64_t n = spec.block.numel();
  return {.kind = OpKind::elementwise,
          .flops = spec.p > 0.0f ? 2 * n : n,
          .bytes_read = floats(2 * n),
          .bytes_written = floats(n)};
}

// dinp (n) += dout (n): dropout's backward when it drops nothing, in one vector loop.
OPTIMUS_VECTOR_CLONES void add_into(float* dinp, const float* dout, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t k = 0; k < n; ++k) dinp[k] += dout[k];
}

}  // namespace

GlobalBlock GlobalBlock::whole(int64_t n) {
  return matrix(n, 1, 0, 0, n, 1);
}

GlobalBlock GlobalBlock::matrix(int64_t rows, int64_t cols, int64_t row0, int64_t col0, int64_t total_rows,
                                int64_t total_cols) {
  GlobalBlock b;
  b.dim[0] = rows;
  b.dim[1] = cols;
  b.dim[2] = 1;
  b.offset[0] = row0;
  b.offset[1] = col0;
  b.offset[2] = 0;
  b.global_dim[0] = total_rows;
  b.global_dim[1] = total_cols;
  b.global_dim[2] = 1;
  return b;
}

int64_t GlobalBlock::global_index(int64_t k) const {
  const int64_t c = k % dim[2];
  const int64_t b = (k / dim[2]) % dim[1];
  const int64_t a = k / (dim[2] * dim[1]);
  return ((offset[0] + a) * global_dim[1] + (offset[1] + b)) * global_dim[2] + (offset[2] + c);
}

void dropout_forward(const Context& ctx, float* out, const float* inp, const DropoutSpec& spec) {
  OPTIMUS_DISPATCH(ctx, dropout_forward_cost(spec), cuda::dropout_forward(ctx, out, inp, spec));
  const int64_t n = spec.block.numel();
  if (spec.p == 0.0f) {
    if (out != inp) std::copy(inp, inp + n, out);
    return;
  }
  const float keep_scale = 1.0f / (1.0f - spec.p);
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < n; ++k) {
    const bool keep = dropout_keep(spec.key, static_cast<uint64_t>(spec.block.global_index(k)), spec.step, spec.p);
    out[k] = keep ? inp[k] * keep_scale : 0.0f;
  }
}

void dropout_backward(const Context& ctx, float* dinp, const float* dout, const DropoutSpec& spec) {
  if (dinp == nullptr) return;  // nothing asked, nothing done or recorded (on every device)
  OPTIMUS_DISPATCH(ctx, dropout_backward_cost(spec), cuda::dropout_backward(ctx, dinp, dout, spec));
  const int64_t n = spec.block.numel();
  if (spec.p == 0.0f) {
    add_into(dinp, dout, n);
    return;
  }
  const float keep_scale = 1.0f / (1.0f - spec.p);
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < n; ++k) {
    const bool keep = dropout_keep(spec.key, static_cast<uint64_t>(spec.block.global_index(k)), spec.step, spec.p);
    if (keep) dinp[k] += dout[k] * keep_scale;
  }
}

}  // namespace optimus::core
