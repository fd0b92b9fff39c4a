// L0 tests of the elementwise ops: GELU and the residual add against the float64
// reference and finite differences of it, scale, and the double-precision sum of squares (which
// must not depend on the thread count, so clipping is reproducible).
#include <omp.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/ops.h"
#include "unit/check.h"
#include "unit/reference_dense.h"

namespace {

using namespace optimus;
using testing::finite_difference;
using testing::random_normal;
using testing::rel_error;
using testing::to_double;
using testing::weighted_sum;

}  // namespace

TEST_CASE("gelu forward matches the float64 reference (tanh form)", "[ops]") {
  const auto ctx = core::cpu_context();
  const int n = 1000;
  const auto x = random_normal(n, 1, 3.0f);  // wide enough to reach both flat tails
  std::vector<float> out(n);
  core::gelu_forward(ctx, out.data(), x.data(), n);
  const auto want = testing::ref::gelu(to_double(x));
  const double err = rel_error(out, want);
  INFO(testing::ref::side_by_side(out, want));
  CAPTURE(err);
  CHECK(err <= 1e-5);
}

TEST_CASE("gelu backward matches finite differences of the float64 reference", "[ops]") {
  const auto ctx = core::cpu_context();
  const int n = 200;
  const auto x = random_normal(n, 2, 3.0f), w = random_normal(n, 3);
  std::vector<float> dinp(n, 0.0f);
  core::gelu_backward(ctx, dinp.data(), x.data(), w.data(), n);
  const auto want = finite_difference(
      [&](const auto& xd) { return weighted_sum(testing::ref::gelu(xd), to_double(w)); }, to_double(x));
  const double err = rel_error(dinp, want);
  INFO(testing::ref::side_by_side(dinp, want));
  CAPTURE(err);
  CHECK(err <= 1e-4);
}

TEST_CASE("gelu of inputs whose exp(-2u) passes float's range is finite: 0 far left, x far right", "[ops]") {
  // x = -10 gives -2u = 87.6 and x = -12 gives 136: exp of either is past 3.4e38. The file is
  // compiled with -ffast-math, whose vector expf need not return inf there; a training run met a
  // NaN from x = -10.5 this way.
  const auto ctx = core::cpu_context();
  std::vector<float> x;
  for (float v = 6.0f; v <= 60.0f; v += 0.25f) {  // from 6 the derivative is 0 or 1 to 1e-5
    x.push_back(-v);
    x.push_back(v);
  }
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> out(x.size()), dinp(x.size(), 0.0f), ones(x.size(), 1.0f);
  core::gelu_forward(ctx, out.data(), x.data(), n);
  core::gelu_backward(ctx, dinp.data(), x.data(), ones.data(), n);
  const auto want = testing::ref::gelu(to_double(x));
  for (size_t k = 0; k < x.size(); ++k) {
    CAPTURE(x[k], out[k], want[k], dinp[k]);
    CHECK(std::abs(out[k] - want[k]) <= 1e-6 * std::max(1.0, std::abs(want[k])));
    CHECK(std::abs(dinp[k] - (x[k] > 0 ? 1.0f : 0.0f)) <= 1e-5f);
  }
}

TEST_CASE("residual forward matches the float64 reference", "[ops]") {
  const auto ctx = core::cpu_context();
  const int n = 50;
  const auto a = random_normal(n, 4), b = random_normal(n, 5);
  std::vector<float> out(n);
  core::residual_forward(ctx, out.data(), a.data(), b.data(), n);
  const auto want = testing::ref::residual(to_double(a), to_double(b));
  const double err = rel_error(out, want);
  CAPTURE(err);
  CHECK(err <= 1e-5);
}

TEST_CASE("gelu backward accumulates: a second call doubles the gradient", "[ops]") {
  const auto ctx = core::cpu_context();
  const int n = 64;
  const auto x = random_normal(n, 7), dout = random_normal(n, 8);
  std::vector<float> dx(n, 0.0f);
  core::gelu_backward(ctx, dx.data(), x.data(), dout.data(), n);
  auto dx2 = dx;
  core::gelu_backward(ctx, dx2.data(), x.data(), dout.data(), n);
  for (int k = 0; k < n; ++k) CHECK(dx2[k] == Approx(2.0f * dx[k]));
}

TEST_CASE("zeroed sets a buffer to 0 and returns its data", "[ops]") {
  const auto ctx = core::cpu_context();
  core::Buffer b(*ctx.ledger, core::MemoryCategory::workspace, {3, 5});
  for (int64_t k = 0; k < b.numel(); ++k) b.data()[k] = 1.5f;
  CHECK(core::zeroed(ctx, b) == b.data());
  for (int64_t k = 0; k < b.numel(); ++k) CHECK(b.data()[k] == 0.0f);
}

TEST_CASE("scale multiplies every element", "[ops]") {
  const auto ctx = core::cpu_context();
  const int n = 33;
  auto x = random_normal(n, 9);
  std::vector<double> want = to_double(x);
  for (double& v : want) v *= -0.25;
  core::scale(ctx, x.data(), -0.25f, n);
  const double err = rel_error(x, want);
  CAPTURE(err);
  CHECK(err <= 1e-7);
}

TEST_CASE("sum_squares equals the float64 sum and does not depend on the thread count", "[ops]") {
  const auto ctx = core::cpu_context();
  const int64_t n = 100003;  // several of the op's fixed chunks, the last one partial
  const auto x = random_normal(n, 10);
  double want = 0.0;
  for (float v : x) want += static_cast<double>(v) * v;

  double got = -1.0;
  core::sum_squares(ctx, &got, x.data(), n);
  CAPTURE(got, want);
  CHECK(std::abs(got - want) <= 1e-12 * want);

  const int threads = omp_get_max_threads();
  double got_one_thread = -1.0, got_three_threads = -1.0;
  omp_set_num_threads(1);
  core::sum_squares(ctx, &got_one_thread, x.data(), n);
  omp_set_num_threads(3);
  core::sum_squares(ctx, &got_three_threads, x.data(), n);
  omp_set_num_threads(threads);
  CHECK(got_one_thread == got);
  CHECK(got_three_threads == got);
}
