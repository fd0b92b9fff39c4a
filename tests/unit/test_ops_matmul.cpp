// L0 tests of the matrix products: matmul in its four transpose cases and on strided
// blocks, the Conv1D linear layer and the bias add, each forward against the float64 reference and
// each backward against finite differences of it, plus the rule that backward ops accumulate.
#include <catch2/catch.hpp>
#include <omp.h>

#include <vector>

#include "core/ops.h"
#include "unit/check.h"
#include "unit/reference_dense.h"

namespace {

using namespace optimus;
using core::Trans;
using testing::finite_difference;
using testing::random_normal;
using testing::rel_error;
using testing::to_double;
using testing::weighted_sum;

const Trans kBoth[] = {Trans::no, Trans::yes};
bool yes(Trans t) {
  return t == Trans::yes;
}

}  // namespace

TEST_CASE("matmul matches the float64 reference in all four transpose cases", "[ops]") {
  const auto ctx = core::cpu_context();
  const int M = 7, N = 5, K = 3;
  for (Trans ta : kBoth) {
    for (Trans tb : kBoth) {
      CAPTURE(yes(ta), yes(tb));
      const auto a = random_normal(M * K, 1), b = random_normal(K * N, 2);
      std::vector<float> c(M * N, -1.0f);  // beta = 0 must overwrite, whatever c held
      core::matmul(ctx, c.data(), a.data(), b.data(), M, N, K, ta, tb);
      const auto want = testing::ref::matmul(to_double(a), to_double(b), M, N, K, yes(ta), yes(tb));
      const double err = rel_error(c, want);
      INFO(testing::ref::side_by_side(c, want));
      CAPTURE(err);
      CHECK(err <= 1e-5);
    }
  }
}

TEST_CASE("matmul with alpha and beta gives alpha times the product plus beta times c", "[ops]") {
  const auto ctx = core::cpu_context();
  const int M = 4, N = 6, K = 5;
  const auto a = random_normal(M * K, 3), b = random_normal(N * K, 4);
  auto c = random_normal(M * N, 5);
  auto want = testing::ref::matmul(to_double(a), to_double(b), M, N, K, false, true);
  for (size_t k = 0; k < want.size(); ++k) want[k] = 0.5 * want[k] + 2.0 * c[k];
  core::matmul(ctx, c.data(), a.data(), b.data(), M, N, K, Trans::no, Trans::yes, 0.5f, 2.0f);
  const double err = rel_error(c, want);
  INFO(testing::ref::side_by_side(c, want));
  CAPTURE(err);
  CHECK(err <= 1e-5);
}

TEST_CASE("matmul_strided on blocks of larger matrices matches the float64 reference and touches nothing else",
          "[ops]") {
  const auto ctx = core::cpu_context();
  // a: columns [2, 2+K) of an (M, 9) matrix; b stored transposed: columns [1, 1+K) of an (N, 8)
  // matrix; c: columns [3, 3+N) of an (M, 11) matrix (like one head's columns of qkv).
  const int M = 6, N = 4, K = 5, lda = 9, ldb = 8, ldc = 11;
  const auto A = random_normal(M * lda, 6), Bm = random_normal(N * ldb, 7);
  const auto C0 = random_normal(M * ldc, 8);
  std::vector<double> a(M * K), b(N * K);
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k) a[m * K + k] = A[m * lda + 2 + k];
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k) b[n * K + k] = Bm[n * ldb + 1 + k];
  const auto prod = testing::ref::matmul(a, b, M, N, K, false, true);
  std::vector<double> want = to_double(C0);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) want[m * ldc + 3 + n] += prod[m * N + n];  // beta = 1

  auto c = C0;
  core::matmul_strided(ctx, c.data() + 3, ldc, A.data() + 2, lda, Bm.data() + 1, ldb, M, N, K, Trans::no, Trans::yes,
                       1.0f, 1.0f);
  const double err = rel_error(c, want);
  INFO(testing::ref::side_by_side(c, want));
  CAPTURE(err);
  CHECK(err <= 1e-5);
  for (int m = 0; m < M; ++m)
    for (int j = 0; j < ldc; ++j)
      if (j < 3 || j >= 3 + N) CHECK(c[m * ldc + j] == C0[m * ldc + j]);
}

TEST_CASE("matmul backward matches finite differences of the float64 reference in all four transpose cases", "[ops]") {
  const auto ctx = core::cpu_context();
  const int M = 5, N = 3, K = 4;
  for (Trans ta : kBoth) {
    for (Trans tb : kBoth) {
      CAPTURE(yes(ta), yes(tb));
      const auto a = random_normal(M * K, 9), b = random_normal(K * N, 10), w = random_normal(M * N, 11);
      const auto ad = to_double(a), bd = to_double(b), wd = to_double(w);
      std::vector<float> da(M * K, 0.0f), db(K * N, 0.0f);
      core::matmul_backward(ctx, da.data(), db.data(), w.data(), a.data(), b.data(), M, N, K, ta, tb);

      const auto want_da = finite_difference(
          [&](const auto& x) { return weighted_sum(testing::ref::matmul(x, bd, M, N, K, yes(ta), yes(tb)), wd); }, ad);
      const auto want_db = finite_difference(
          [&](const auto& x) { return weighted_sum(testing::ref::matmul(ad, x, M, N, K, yes(ta), yes(tb)), wd); }, bd);
      const double err_a = rel_error(da, want_da), err_b = rel_error(db, want_db);
      INFO("da\n" << testing::ref::side_by_side(da, want_da) << "db\n" << testing::ref::side_by_side(db, want_db));
      CAPTURE(err_a, err_b);
      CHECK(err_a <= 1e-4);
      CHECK(err_b <= 1e-4);
    }
  }
}

TEST_CASE("matmul and its backward on one, two and three threads: the products in pieces, each within 1e-5 of float64, "
          "and the backward on two threads has the bits of one",
          "[ops]") {
  // Sizes past sgemm's blocks (K > 256), cut into pieces of rows that are not all alike.
  const auto ctx = core::cpu_context();
  const int M = 300, N = 200, K = 420;
  const int threads = omp_get_max_threads();
  for (Trans ta : kBoth) {
    for (Trans tb : kBoth) {
      CAPTURE(yes(ta), yes(tb));
      const auto a = random_normal(M * K, 12), b = random_normal(K * N, 13), dc = random_normal(M * N, 14);
      const auto want_c = testing::ref::matmul(to_double(a), to_double(b), M, N, K, yes(ta), yes(tb));
      std::vector<float> one_da(M * K, 0.0f), one_db(K * N, 0.0f);
      for (int t : {1, 2, 3}) {
        CAPTURE(t);
        omp_set_num_threads(t);
        std::vector<float> c(M * N, 0.0f), da(M * K, 0.0f), db(K * N, 0.0f);
        core::matmul(ctx, c.data(), a.data(), b.data(), M, N, K, ta, tb);
        core::matmul_backward(ctx, da.data(), db.data(), dc.data(), a.data(), b.data(), M, N, K, ta, tb);
        CHECK(rel_error(c, want_c) <= 1e-5);
        if (t == 1) one_da = da, one_db = db;
        if (t == 2) CHECK((da == one_da && db == one_db));
      }
    }
  }
  omp_set_num_threads(threads);
}

TEST_CASE("linear forward matches the float64 reference, with and without bias", "[ops]") {
  const auto ctx = core::cpu_context();
  const int N = 6, C = 5, OC = 7;
  const auto inp = random_normal(N * C, 12), weight = random_normal(C * OC, 13), bias = random_normal(OC, 14);
  for (bool with_bias : {true, false}) {
    CAPTURE(with_bias);
    std::vector<float> out(N * OC, -1.0f);
    core::linear_forward(ctx, out.data(), inp.data(), weight.data(), with_bias ? bias.data() : nullptr, N, C, OC);
    const auto want = testing::ref::linear(to_double(inp), to_double(weight),
                                           with_bias ? to_double(bias) : std::vector<double>{}, N, C, OC);
    const double err = rel_error(out, want);
    INFO(testing::ref::side_by_side(out, want));
    CAPTURE(err);
    CHECK(err <= 1e-5);
  }
}

TEST_CASE("linear backward matches finite differences of the float64 reference, with and without bias", "[ops]") {
  const auto ctx = core::cpu_context();
  const int N = 4, C = 5, OC = 3;
  const auto inp = random_normal(N * C, 15), weight = random_normal(C * OC, 16), bias = random_normal(OC, 17);
  const auto w = random_normal(N * OC, 18);
  const auto xd = to_double(inp), wtd = to_double(weight), bd = to_double(bias), wd = to_double(w);
  for (bool with_bias : {true, false}) {
    CAPTURE(with_bias);
    const std::vector<double> b_used = with_bias ? bd : std::vector<double>{};
    std::vector<float> dinp(N * C, 0.0f), dweight(C * OC, 0.0f), dbias(OC, 0.0f);
    core::linear_backward(ctx,
                          {.dinp = dinp.data(), .dweight = dweight.data(), .dbias = with_bias ? dbias.data() : nullptr},
                          w.data(), inp.data(), weight.data(), N, C, OC);
    auto loss = [&](const std::vector<double>& x, const std::vector<double>& W, const std::vector<double>& b) {
      return weighted_sum(testing::ref::linear(x, W, b, N, C, OC), wd);
    };
    const auto want_dinp = finite_difference([&](const auto& x) { return loss(x, wtd, b_used); }, xd);
    const auto want_dweight = finite_difference([&](const auto& W) { return loss(xd, W, b_used); }, wtd);
    const double err_inp = rel_error(dinp, want_dinp), err_weight = rel_error(dweight, want_dweight);
    INFO("dinp\n" << testing::ref::side_by_side(dinp, want_dinp));
    CAPTURE(err_inp, err_weight);
    CHECK(err_inp <= 1e-4);
    CHECK(err_weight <= 1e-4);
    if (with_bias) {
      const auto want_dbias = finite_difference([&](const auto& b) { return loss(xd, wtd, b); }, bd);
      const double err_bias = rel_error(dbias, want_dbias);
      CAPTURE(err_bias);
      CHECK(err_bias <= 1e-4);
    } else {
      CHECK(dbias == std::vector<float>(OC, 0.0f));  // a null dbias is not written
    }
  }
}

TEST_CASE("bias_add forward matches the float64 reference and its backward matches finite differences", "[ops]") {
  const auto ctx = core::cpu_context();
  const int N = 37, OC = 21;  // OC is not a multiple of the 16-column strips the backward uses
  const auto out0 = random_normal(N * OC, 19), bias = random_normal(OC, 20), w = random_normal(N * OC, 21);
  auto out = out0;
  core::bias_add_forward(ctx, out.data(), bias.data(), N, OC);
  const auto want = testing::ref::bias_add(to_double(out0), to_double(bias), N, OC);
  const double err = rel_error(out, want);
  INFO(testing::ref::side_by_side(out, want));
  CAPTURE(err);
  CHECK(err <= 1e-5);

  std::vector<float> dbias(OC, 0.0f);
  core::bias_add_backward(ctx, dbias.data(), w.data(), N, OC);
  const auto want_dbias = finite_difference(
      [&](const auto& b) { return weighted_sum(testing::ref::bias_add(to_double(out0), b, N, OC), to_double(w)); },
      to_double(bias));
  const double err_bias = rel_error(dbias, want_dbias);
  INFO(testing::ref::side_by_side(dbias, want_dbias));
  CAPTURE(err_bias);
  CHECK(err_bias <= 1e-4);
}

TEST_CASE("matmul, linear and bias backward accumulate: a second call doubles the gradient", "[ops]") {
  const auto ctx = core::cpu_context();
  const int M = 4, N = 3, K = 5;
  const auto a = random_normal(M * K, 22), b = random_normal(K * N, 23), dc = random_normal(M * N, 24);
  std::vector<float> da1(M * K, 0.0f), db1(K * N, 0.0f), dbias1(N, 0.0f);
  core::linear_backward(ctx, {.dinp = da1.data(), .dweight = db1.data(), .dbias = dbias1.data()}, dc.data(), a.data(),
                        b.data(), M, K, N);
  auto da2 = da1, db2 = db1, dbias2 = dbias1;
  core::linear_backward(ctx, {.dinp = da2.data(), .dweight = db2.data(), .dbias = dbias2.data()}, dc.data(), a.data(),
                        b.data(), M, K, N);
  for (size_t k = 0; k < da1.size(); ++k) CHECK(da2[k] == Approx(2.0f * da1[k]));
  for (size_t k = 0; k < db1.size(); ++k) CHECK(db2[k] == Approx(2.0f * db1[k]));
  for (size_t k = 0; k < dbias1.size(); ++k) CHECK(dbias2[k] == Approx(2.0f * dbias1[k]));

  // matmul_backward with one null output computes the other alone, and still accumulates.
  for (Trans ta : kBoth) {
    for (Trans tb : kBoth) {
      CAPTURE(yes(ta), yes(tb));
      std::vector<float> da(M * K, 0.0f), db(K * N, 0.0f);
      core::matmul_backward(ctx, da.data(), nullptr, dc.data(), a.data(), b.data(), M, N, K, ta, tb);
      core::matmul_backward(ctx, nullptr, db.data(), dc.data(), a.data(), b.data(), M, N, K, ta, tb);
      auto da_twice = da, db_twice = db;
      core::matmul_backward(ctx, da_twice.data(), db_twice.data(), dc.data(), a.data(), b.data(), M, N, K, ta, tb);
      for (size_t k = 0; k < da.size(); ++k) CHECK(da_twice[k] == Approx(2.0f * da[k]));
      for (size_t k = 0; k < db.size(); ++k) CHECK(db_twice[k] == Approx(2.0f * db[k]));
    }
  }
}
