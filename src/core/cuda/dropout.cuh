// Philox dropout on the device: the keep decision of local element k of a block is
// dropout_keep(key, canonical index of k, step, p) from core/philox.h, the same function the CPU
// runs, so the GPU drops exactly the elements the CPU drops. Shared by dropout.cu and attention.cu.
#pragma once

#include <cstdint>

#include "core/ops.h"
#include "core/philox.h"

namespace optimus::core::cuda {

/// GlobalBlock::global_index (core/cpu/dropout.cpp) on the device: local (a, b, c) of the
/// (dim0, dim1, dim2) block is canonical (offset0 + a, offset1 + b, offset2 + c).
__device__ inline int64_t global_index(const GlobalBlock& g, int64_t k) {
  const int64_t c = k % g.dim[2];
  const int64_t b = (k / g.dim[2]) % g.dim[1];
  const int64_t a = k / (g.dim[2] * g.dim[1]);
  return ((g.offset[0] + a) * g.global_dim[1] + (g.offset[1] + b)) * g.global_dim[2] + (g.offset[2] + c);
}

/// out (n) = keep ? inp / (1 - p) : 0 over spec.block, n = spec.block.numel(), out may be inp;
/// queued on the context's stream. Requires spec.p > 0.
void launch_dropout_forward(const Context& ctx, float* out, const float* inp, const DropoutSpec& spec);

}  // namespace optimus::core::cuda
