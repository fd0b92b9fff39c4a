// Matrix products on the CPU: matmul with transposes, the GPT-2 Conv1D linear layer and
// the bias add, all on OpenBLAS's sgemm — never a hand-written GEMM on the readable path.
// Every backward is itself a matmul with beta = 1, which is how the "backward ops accumulate" rule
// of ops.h costs nothing here. Only matmul_strided and the bias ops record a cost (op_ledger.h):
// matmul, matmul_backward and linear_* are made of them and record through them.
#include <cblas.h>

#include <algorithm>

#include "core/cpu/column_strips.h"
#include "core/cpu/vector_clones.h"
#include "core/cuda/cuda_ops.h"
#include "core/dispatch.h"
#include "core/ops.h"

namespace optimus::core {

namespace {

CBLAS_TRANSPOSE to_cblas(Trans t) {
  return t == Trans::yes ? CblasTrans : CblasNoTrans;
}

// ---- costs (core/op_ledger.h's conventions) ----------------------------------------------------

// 2·M·N·K: M·N dot products of length K, a multiply and an add per term. c is read too when
// beta != 0 (the product adds into it).
OpCost matmul_cost(int64_t M, int64_t N, int64_t K, bool reads_c) {
  return {.kind = OpKind::matmul,
          .flops = 2 * M * N * K,
          .bytes_read = floats(M * K + K * N + (reads_c ? M * N : 0)),
          .bytes_written = floats(M * N),
          .min_dim = std::min({M, N, K})};
}

// One add per element of out (N, OC), which it reads and writes, and bias (OC) read.
OpCost bias_add_forward_cost(int64_t N, int64_t OC) {
  return {
      .kind = OpKind::elementwise, .flops = N * OC, .bytes_read = floats(N * OC + OC), .bytes_written = floats(N * OC)};
}

// One add per element of dout (N, OC), summed into dbias (OC), which is read and written.
OpCost bias_add_backward_cost(int64_t N, int64_t OC) {
  return {.kind = OpKind::reduction, .flops = N * OC, .bytes_read = floats(N * OC + OC), .bytes_written = floats(OC)};
}

}  // namespace

void matmul_strided(const Context& ctx, float* c, int ldc, const float* a, int lda, const float* b, int ldb, int M,
                    int N, int K, Trans ta, Trans tb, float alpha, float beta) {
  OPTIMUS_DISPATCH(ctx, matmul_cost(M, N, K, beta != 0.0f),
                   cuda::matmul_strided(ctx, c, ldc, a, lda, b, ldb, M, N, K, ta, tb, alpha, beta));
  cblas_sgemm(CblasRowMajor, to_cblas(ta), to_cblas(tb), M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
}

void matmul(const Context& ctx, float* c, const float* a, const float* b, int M, int N, int K, Trans ta, Trans tb,
            float alpha, float beta) {
  // Row strides of the stored matrices: a is (M, K) or (K, M), b is (K, N) or (N, K).
  const int lda = ta == Trans::no ? K : M;
  const int ldb = tb == Trans::no ? N : K;
  matmul_strided(ctx, c, N, a, lda, b, ldb, M, N, K, ta, tb, alpha, beta);
}

// With A = op(a) (M, K), Bm = op(b) (K, N) and C = A·Bm: dA = dC·Bmᵀ and dBm = Aᵀ·dC. When a is
// stored transposed, its gradient is dAᵀ = Bm·dCᵀ, and likewise for b, so each of the four cases
// is one sgemm whose operands are a, b, dc with the right flags.
void matmul_backward(const Context& ctx, float* da, float* db, const float* dc, const float* a, const float* b, int M,
                     int N, int K, Trans ta, Trans tb) {
  const Trans flip_a = ta == Trans::no ? Trans::yes : Trans::no;
  const Trans flip_b = tb == Trans::no ? Trans::yes : Trans::no;
  if (da != nullptr) {
    if (ta == Trans::no) {
      matmul(ctx, da, dc, b, M, K, N, Trans::no, flip_b, 1.0f, 1.0f);  // da (M, K) += dc · op(b)ᵀ
    } else {
      matmul(ctx, da, b, dc, K, M, N, tb, Trans::yes, 1.0f, 1.0f);  // da (K, M) += op(b) · dcᵀ
    }
  }
  if (db != nullptr) {
    if (tb == Trans::no) {
      matmul(ctx, db, a, dc, K, N, M, flip_a, Trans::no, 1.0f, 1.0f);  // db (K, N) += op(a)ᵀ · dc
    } else {
      matmul(ctx, db, dc, a, N, K, M, Trans::yes, ta, 1.0f, 1.0f);  // db (N, K) += dcᵀ · op(a)
    }
  }
}

void linear_forward(const Context& ctx, float* out, const float* inp, const float* weight, const float* bias, int N,
                    int C, int OC) {
  // out (N, OC) = inp (N, C) · weight (C, OC); the bias is added after the product, the same order
  // the parallel stages use when they add it after a reduction.
  matmul(ctx, out, inp, weight, N, OC, C, Trans::no, Trans::no);
  if (bias != nullptr) bias_add_forward(ctx, out, bias, N, OC);
}

void linear_backward(const Context& ctx, const LayerGrads& add_to, const float* dout, const float* inp,
                     const float* weight, int N, int C, int OC) {
  matmul_backward(ctx, add_to.dinp, add_to.dweight, dout, inp, weight, N, OC, C, Trans::no, Trans::no);
  if (add_to.dbias != nullptr) bias_add_backward(ctx, add_to.dbias, dout, N, OC);
}

OPTIMUS_VECTOR_CLONES void bias_add_forward(const Context& ctx, float* out, const float* bias, int N, int OC) {
  OPTIMUS_DISPATCH(ctx, bias_add_forward_cost(N, OC), cuda::bias_add_forward(ctx, out, bias, N, OC));
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    float* row = out + static_cast<int64_t>(n) * OC;  // (OC)
    for (int o = 0; o < OC; ++o) row[o] += bias[o];
  }
}

OPTIMUS_VECTOR_CLONES void bias_add_backward(const Context& ctx, float* dbias, const float* dout, int N, int OC) {
  OPTIMUS_DISPATCH(ctx, bias_add_backward_cost(N, OC), cuda::bias_add_backward(ctx, dbias, dout, N, OC));
  for_each_column_strip(OC, [&](int o0, int width) {
    float acc[kStrip] = {};
    for (int n = 0; n < N; ++n) {
      const float* row = dout + static_cast<int64_t>(n) * OC + o0;  // (width) of row n
      for (int o = 0; o < width; ++o) acc[o] += row[o];
    }
    for (int o = 0; o < width; ++o) dbias[o0 + o] += acc[o];
  });
}

}  // namespace optimus::core
