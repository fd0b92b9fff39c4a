// L0 tests of the token and position embeddings: forward against the float64
// reference, backward against finite differences of it, and the vocab split the 1D and 2D stages
// rely on (blocks of vocab rows, zero for foreign tokens, summing to the whole lookup).
#include <catch2/catch.hpp>

#include <omp.h>

#include <vector>

#include "core/ops.h"
#include "unit/check.h"
#include "unit/reference_dense.h"
#include "unit/reference_loss.h"

using namespace optimus;
using namespace optimus::testing;

namespace {

// N > V, so tokens repeat and the scatter-add has to add several rows into one.
constexpr int kB = 3, kT = 5, kN = kB * kT, kC = 6, kV = 10;

}  // namespace

TEST_CASE("embedding forward equals the float64 lookup", "[ops]") {
  const core::Context ctx = core::cpu_context();
  const std::vector<int> tokens = random_ints(kN, kV, 1);    // (N)
  const std::vector<float> wte = random_normal(kV * kC, 2);  // (V, C)
  std::vector<float> out(kN * kC, -1.0f);                    // (N, C)
  core::embedding_forward(ctx, out.data(), tokens.data(), wte.data(), kN, kC, 0, kV);
  const std::vector<double> want = ref::embedding(tokens, to_double(wte), kC);
  const double err = rel_error(out, want);
  INFO(ref::side_by_side(out, want));
  CAPTURE(err);
  CHECK(err <= 1e-5);
}

TEST_CASE("embedding over 2 vocab blocks gives zero for foreign tokens and sums to the whole lookup", "[ops]") {
  const core::Context ctx = core::cpu_context();
  const std::vector<int> tokens = random_ints(kN, kV, 3);    // (N)
  const std::vector<float> wte = random_normal(kV * kC, 4);  // (V, C)
  std::vector<float> whole(kN * kC);                         // (N, C)
  core::embedding_forward(ctx, whole.data(), tokens.data(), wte.data(), kN, kC, 0, kV);

  const int Vl = kV / 2;
  std::vector<float> sum(kN * kC, 0.0f);  // (N, C): what the all-reduce over the vocab blocks gives
  for (int block = 0; block < 2; ++block) {
    const int v0 = block * Vl;
    std::vector<float> part(kN * kC, -1.0f);  // (N, C)
    core::embedding_forward(ctx, part.data(), tokens.data(), wte.data() + v0 * kC, kN, kC, v0, Vl);
    for (int n = 0; n < kN; ++n) {
      const bool mine = tokens[n] >= v0 && tokens[n] < v0 + Vl;
      for (int c = 0; c < kC; ++c) {
        INFO("block " << block << " token " << n << " = " << tokens[n] << " column " << c);
        if (!mine) CHECK(part[n * kC + c] == 0.0f);
        sum[n * kC + c] += part[n * kC + c];
      }
    }
  }
  CHECK(sum == whole);
}

TEST_CASE("embedding backward equals finite differences with respect to wte, and accumulates", "[ops]") {
  const core::Context ctx = core::cpu_context();
  const std::vector<int> tokens = random_ints(kN, kV, 5);      // (N)
  const std::vector<float> wte = random_normal(kV * kC, 6);    // (V, C)
  const std::vector<float> w = random_normal(kN * kC, 7);      // (N, C): L = Σ w · out
  const std::vector<float> dwte0 = random_normal(kV * kC, 8);  // (V, C): what was there before

  std::vector<float> dwte(dwte0);  // (V, C)
  core::embedding_backward(ctx, dwte.data(), w.data(), tokens.data(), kN, kC, 0, kV);
  std::vector<double> grad(kV * kC);
  for (size_t k = 0; k < grad.size(); ++k) grad[k] = static_cast<double>(dwte[k]) - dwte0[k];

  const std::vector<double> wd = to_double(w);
  const auto loss = [&](const std::vector<double>& x) { return weighted_sum(ref::embedding(tokens, x, kC), wd); };
  const std::vector<double> fd = finite_difference(loss, to_double(wte));
  const double err = rel_error(grad, fd);
  INFO(ref::side_by_side(grad, fd));
  CAPTURE(err);
  CHECK(err <= 1e-4);

  core::embedding_backward(ctx, nullptr, w.data(), tokens.data(), kN, kC, 0, kV);  // no gradient wanted: no-op
}

TEST_CASE("embedding backward over 2 vocab blocks fills exactly its rows of the whole gradient", "[ops]") {
  const core::Context ctx = core::cpu_context();
  const std::vector<int> tokens = random_ints(kN, kV, 9);      // (N)
  const std::vector<float> dout = random_normal(kN * kC, 10);  // (N, C)
  std::vector<float> whole(kV * kC, 0.0f);                     // (V, C)
  core::embedding_backward(ctx, whole.data(), dout.data(), tokens.data(), kN, kC, 0, kV);

  const int Vl = kV / 2;
  for (int block = 0; block < 2; ++block) {
    const int v0 = block * Vl;
    std::vector<float> part(Vl * kC, 0.0f);  // (Vl, C)
    core::embedding_backward(ctx, part.data(), dout.data(), tokens.data(), kN, kC, v0, Vl);
    INFO("block " << block);
    CHECK(part == std::vector<float>(whole.begin() + v0 * kC, whole.begin() + (v0 + Vl) * kC));
  }
}

TEST_CASE("position add forward equals the float64 broadcast add", "[ops]") {
  const core::Context ctx = core::cpu_context();
  const std::vector<float> x = random_normal(kN * kC, 11);    // (B, T, C)
  const std::vector<float> wpe = random_normal(kT * kC, 12);  // (T, C)
  std::vector<float> out(x);                                  // (B, T, C)
  core::position_add_forward(ctx, out.data(), wpe.data(), kB, kT, kC);
  const std::vector<double> want = ref::position_add(to_double(x), to_double(wpe), kB, kT, kC);
  const double err = rel_error(out, want);
  INFO(ref::side_by_side(out, want));
  CAPTURE(err);
  CHECK(err <= 1e-5);
}

TEST_CASE("position add backward equals finite differences with respect to wpe, and accumulates", "[ops]") {
  const core::Context ctx = core::cpu_context();
  const std::vector<float> x = random_normal(kN * kC, 13);      // (B, T, C)
  const std::vector<float> wpe = random_normal(kT * kC, 14);    // (T, C)
  const std::vector<float> w = random_normal(kN * kC, 15);      // (B, T, C): L = Σ w · out
  const std::vector<float> dwpe0 = random_normal(kT * kC, 16);  // (T, C)

  std::vector<float> dwpe(dwpe0);  // (T, C)
  core::position_add_backward(ctx, dwpe.data(), w.data(), kB, kT, kC);
  std::vector<double> grad(kT * kC);
  for (size_t k = 0; k < grad.size(); ++k) grad[k] = static_cast<double>(dwpe[k]) - dwpe0[k];

  const std::vector<double> xd = to_double(x), wd = to_double(w);
  const auto loss = [&](const std::vector<double>& p) {
    return weighted_sum(ref::position_add(xd, p, kB, kT, kC), wd);
  };
  const std::vector<double> fd = finite_difference(loss, to_double(wpe));
  const double err = rel_error(grad, fd);
  INFO(ref::side_by_side(grad, fd));
  CAPTURE(err);
  CHECK(err <= 1e-4);

  core::position_add_backward(ctx, nullptr, w.data(), kB, kT, kC);  // no gradient wanted: no-op
}

TEST_CASE("embedding backward gives the same bits with 1 thread and with 3", "[ops]") {
  // Wider than one column chunk, with repeated tokens, so threads really do split the work.
  const core::Context ctx = core::cpu_context();
  const int N = 50, C = 200, V = 10;
  const std::vector<int> tokens = random_ints(N, V, 17);     // (N)
  const std::vector<float> dout = random_normal(N * C, 18);  // (N, C)
  const auto run = [&](int threads) {
    std::vector<float> dwte(V * C, 0.0f);  // (V, C)
    omp_set_num_threads(threads);
    core::embedding_backward(ctx, dwte.data(), dout.data(), tokens.data(), N, C, 0, V);
    return dwte;
  };
  const int threads = omp_get_max_threads();
  const std::vector<float> one = run(1), three = run(3);
  omp_set_num_threads(threads);
  CHECK(one == three);
}
