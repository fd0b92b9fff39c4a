// Row-major matrix products on cuBLAS, which is column-major: the one place that does the operand
// swap. A row-major (r, c) matrix with row stride ld is, to cuBLAS, its (c, r) transpose with the
// same ld, so C = op(A)·op(B) in row-major is Cᵀ = op(B)ᵀ·op(A)ᵀ in column-major: call cuBLAS
// with B and A swapped, N and M swapped, and the same transpose flags. Used by matmul.cu and, for
// a batch of heads at once, attention.cu.
#pragma once

#include <cstdint>

#include "core/ops.h"

namespace optimus::core::cuda {

/// For each of `batch` products p: C_p (M, N) = alpha · op(A_p) · op(B_p) + beta · C_p, row-major,
/// with leading dimensions lda, ldb, ldc and X_p = x + p · stride_x. batch = 1 is one product.
void gemm(const Context& ctx, float* c, int ldc, int64_t stride_c, const float* a, int lda, int64_t stride_a,
          const float* b, int ldb, int64_t stride_b, int M, int N, int K, Trans ta, Trans tb, float alpha, float beta,
          int batch);

}  // namespace optimus::core::cuda
