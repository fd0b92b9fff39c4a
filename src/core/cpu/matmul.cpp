// Matrix products on the CPU: matmul with transposes, the GPT-2 Conv1D linear layer and
// the bias add, all on OpenBLAS's sgemm — never a hand-written GEMM on the readable path.
// Every backward is itself a matmul with beta = 1, which is how the "backward ops accumulate" rule
// of ops.h costs nothing here. Only matmul_strided and the bias ops record a cost (op_ledger.h):
// matmul, matmul_backward and linear_* are made of them and record through them, except a CPU
// backward that runs its two products at once, which records them itself. The products run on our
// OpenMP threads, each cut into pieces of rows, one single-threaded sgemm a piece (run_products).
#include <cblas.h>
#include <omp.h>

#include <algorithm>

#include "core/cpu/column_strips.h"
#include "core/cpu/single_threaded_blas.h"
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

// One product c (M, N) = alpha · op(a) · op(b) + beta · c on strided operands (matmul_strided's).
struct Product {
  float* c;
  int ldc;
  const float* a;
  int lda;
  const float* b;
  int ldb;
  int M, N, K;
  Trans ta, tb;
  float alpha, beta;
};

void sgemm(const Product& p) {
  cblas_sgemm(CblasRowMajor, to_cblas(p.ta), to_cblas(p.tb), p.M, p.N, p.K, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta,
              p.c, p.ldc);
}

// c (M, N) = alpha · op(a) · op(b) + beta · c with its operands stored contiguously: a is (M, K) or
// (K, M), b is (K, N) or (N, K), and each row stride is its stored width.
Product contiguous(float* c, const float* a, const float* b, int M, int N, int K, Trans ta, Trans tb, float alpha,
                   float beta) {
  return {c, N, a, ta == Trans::no ? K : M, b, tb == Trans::no ? N : K, M, N, K, ta, tb, alpha, beta};
}

// Rows [m0, m0 + rows) of c and the rows of op(a) that make them (columns of a stored transposed).
Product rows_of(const Product& p, int m0, int rows) {
  Product piece = p;
  piece.c += int64_t{m0} * p.ldc;
  piece.a += p.ta == Trans::no ? int64_t{m0} * p.lda : m0;
  piece.M = rows;
  return piece;
}

// The row pieces a product is cut into: a whole number of sgemm's 16-row tiles each.
int row_piece(int M, int pieces) {
  return (M + pieces * 16 - 1) / (pieces * 16) * 16;
}

// Runs independent products on the OpenMP threads, each product cut into pieces of its output
// rows, each piece a single-threaded sgemm on one thread: a product gets threads / products pieces
// (at least one). No thread waits for another inside a piece, as OpenBLAS's own threads do inside
// one product. The cut moves sgemm's blocking, so a product's last bits depend on how many pieces
// it is cut into (as they do on OpenBLAS's thread count): a backward's two products on two threads
// are one piece each, the bits of one thread. Inside a parallel region (attention's loop over
// heads) each product is one sgemm on the calling thread.
void run_products(std::initializer_list<Product> products) {
  const int count = static_cast<int>(products.size());
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (threads == 1) {
    for (const Product& p : products) sgemm(p);
    return;
  }
  const int pieces = std::max(1, threads / count);
  SingleThreadedBlas one_blas_thread;
#pragma omp parallel for schedule(static) num_threads(std::min(threads, count * pieces))
  for (int task = 0; task < count * pieces; ++task) {
    const Product& p = products.begin()[task % count];
    const int rows = row_piece(p.M, pieces);
    const int m0 = task / count * rows;
    if (m0 < p.M) sgemm(rows_of(p, m0, std::min(rows, p.M - m0)));
  }
}

}  // namespace

void matmul_strided(const Context& ctx, float* c, int ldc, const float* a, int lda, const float* b, int ldb, int M,
                    int N, int K, Trans ta, Trans tb, float alpha, float beta) {
  OPTIMUS_DISPATCH(ctx, matmul_cost(M, N, K, beta != 0.0f),
                   cuda::matmul_strided(ctx, c, ldc, a, lda, b, ldb, M, N, K, ta, tb, alpha, beta));
  run_products({Product{c, ldc, a, lda, b, ldb, M, N, K, ta, tb, alpha, beta}});
}

void matmul(const Context& ctx, float* c, const float* a, const float* b, int M, int N, int K, Trans ta, Trans tb,
            float alpha, float beta) {
  const Product p = contiguous(c, a, b, M, N, K, ta, tb, alpha, beta);
  matmul_strided(ctx, p.c, p.ldc, p.a, p.lda, p.b, p.ldb, M, N, K, ta, tb, alpha, beta);
}

// With A = op(a) (M, K), Bm = op(b) (K, N) and C = A·Bm: dA = dC·Bmᵀ and dBm = Aᵀ·dC. When a is
// stored transposed, its gradient is dAᵀ = Bm·dCᵀ, and likewise for b, so each of the four cases
// is one sgemm whose operands are a, b, dc with the right flags. On the CPU, when both are asked
// for, the two products run at once (run_products), their costs recorded as the two products'.
void matmul_backward(const Context& ctx, float* da, float* db, const float* dc, const float* a, const float* b, int M,
                     int N, int K, Trans ta, Trans tb) {
  const Trans flip_a = ta == Trans::no ? Trans::yes : Trans::no;
  const Trans flip_b = tb == Trans::no ? Trans::yes : Trans::no;
  // Each adds into its gradient (alpha = beta = 1): da (M, K) += dc · op(b)ᵀ, or da (K, M) += op(b) · dcᵀ
  // when a is stored transposed; db (K, N) += op(a)ᵀ · dc, or db (N, K) += dcᵀ · op(a).
  const Product grad_a = ta == Trans::no ? contiguous(da, dc, b, M, K, N, Trans::no, flip_b, 1.0f, 1.0f)
                                         : contiguous(da, b, dc, K, M, N, tb, Trans::yes, 1.0f, 1.0f);
  const Product grad_b = tb == Trans::no ? contiguous(db, a, dc, K, N, M, flip_a, Trans::no, 1.0f, 1.0f)
                                         : contiguous(db, dc, a, N, K, M, Trans::yes, ta, 1.0f, 1.0f);
  if (da != nullptr && db != nullptr && ctx.device == Device::cpu) {
    const OpStopwatch stopwatch = record_op(ctx, matmul_cost(grad_a.M, grad_a.N, grad_a.K, true));
    if (ctx.ops != nullptr) ctx.ops->record(matmul_cost(grad_b.M, grad_b.N, grad_b.K, true));
    run_products({grad_a, grad_b});
    return;
  }
  for (const Product& p : {grad_a, grad_b}) {
    if (p.c == nullptr) continue;
    matmul_strided(ctx, p.c, p.ldc, p.a, p.lda, p.b, p.ldb, p.M, p.N, p.K, p.ta, p.tb, p.alpha, p.beta);
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
