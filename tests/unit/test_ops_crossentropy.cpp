// L0 tests of softmax cross-entropy: the serial composite against the float64
// reference, backward against finite differences of the mean loss, and the vocab-parallel pieces
// over 2 and 3 vocab blocks, combined by hand the way the stages' all-reduces combine them.
// The vocabulary is padded (V_real < V) with large logits in the padding, which must not count.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/ops.h"
#include "unit/check.h"
#include "unit/reference_dense.h"
#include "unit/reference_loss.h"

using namespace optimus;
using namespace optimus::testing;

namespace {

constexpr int kN = 8, kV = 18;

/// logits (N, V): N(0, 2) on the real columns, 30 on the padding ones, which would dominate the
/// softmax if they leaked in.
std::vector<float> padded_logits(int V_real, uint32_t salt) {
  std::vector<float> logits = random_normal(kN * kV, salt, 2.0f);
  for (int n = 0; n < kN; ++n)
    for (int v = V_real; v < kV; ++v) logits[n * kV + v] = 30.0f;
  return logits;
}

/// Columns [v0, v0 + Vl) of an (N, V) matrix, as a contiguous (N, Vl) block: what a rank holds.
std::vector<float> column_block(const std::vector<float>& x, int v0, int Vl) {
  std::vector<float> block(kN * Vl);
  for (int n = 0; n < kN; ++n)
    for (int v = 0; v < Vl; ++v) block[n * Vl + v] = x[n * kV + v0 + v];
  return block;
}

}  // namespace

TEST_CASE("cross-entropy forward equals the float64 softmax loss and ignores padded vocab", "[ops]") {
  const core::Context ctx = core::cpu_context();
  const int V_real = GENERATE(18, 16, 11);
  CAPTURE(V_real);
  const std::vector<float> logits = padded_logits(V_real, 20);   // (N, V)
  const std::vector<int> targets = random_ints(kN, V_real, 21);  // (N)
  std::vector<float> losses(kN), maxes(kN), sumexp(kN);          // (N) each
  core::crossentropy_forward(ctx, losses.data(), maxes.data(), sumexp.data(), logits.data(), targets.data(), kN, kV,
                             V_real);

  const std::vector<double> want = ref::crossentropy_losses(to_double(logits), targets, kV, V_real);
  const double err = rel_error(losses, want);
  INFO(ref::side_by_side(losses, want));
  CAPTURE(err);
  CHECK(err <= 1e-5);
  for (int n = 0; n < kN; ++n) {
    INFO("row " << n);
    CHECK(maxes[n] == *std::max_element(logits.begin() + n * kV, logits.begin() + n * kV + V_real));
  }
}

TEST_CASE("cross-entropy of equal logits is log of the real vocabulary size, whatever their offset", "[ops]") {
  // softmax of V_real equal logits is 1/V_real everywhere, so every loss is log(16) = 2.7725887;
  // the offset 1000 would overflow exp() without the max subtraction.
  const core::Context ctx = core::cpu_context();
  const int V_real = 16;
  const float offset = GENERATE(0.0f, 1000.0f, -1000.0f);
  CAPTURE(offset);
  std::vector<float> logits(kN * kV, offset);  // (N, V)
  for (int n = 0; n < kN; ++n)
    for (int v = V_real; v < kV; ++v) logits[n * kV + v] = offset + 50.0f;
  const std::vector<int> targets = random_ints(kN, V_real, 22);  // (N)
  std::vector<float> losses(kN), maxes(kN), sumexp(kN);          // (N) each
  core::crossentropy_forward(ctx, losses.data(), maxes.data(), sumexp.data(), logits.data(), targets.data(), kN, kV,
                             V_real);
  for (int n = 0; n < kN; ++n) {
    INFO("row " << n);
    CHECK(sumexp[n] == 16.0f);
    CHECK(losses[n] == Approx(2.7725887).epsilon(1e-6));
  }
}

TEST_CASE("cross-entropy backward equals finite differences of the mean loss, zero on padding, and accumulates",
          "[ops]") {
  const core::Context ctx = core::cpu_context();
  const int V_real = GENERATE(18, 16, 11);
  CAPTURE(V_real);
  const std::vector<float> logits = padded_logits(V_real, 23);     // (N, V)
  const std::vector<int> targets = random_ints(kN, V_real, 24);    // (N)
  const std::vector<float> dlogits0 = random_normal(kN * kV, 25);  // (N, V): what was there before
  std::vector<float> losses(kN), maxes(kN), sumexp(kN);            // (N) each
  core::crossentropy_forward(ctx, losses.data(), maxes.data(), sumexp.data(), logits.data(), targets.data(), kN, kV,
                             V_real);

  std::vector<float> dlogits(dlogits0);  // (N, V)
  core::crossentropy_backward(ctx, dlogits.data(), logits.data(), maxes.data(), sumexp.data(), targets.data(),
                              1.0f / kN, kN, kV, 0, V_real);
  std::vector<double> grad(kN * kV);  // (N, V)
  for (size_t k = 0; k < grad.size(); ++k) grad[k] = static_cast<double>(dlogits[k]) - dlogits0[k];

  const auto loss = [&](const std::vector<double>& x) { return ref::crossentropy_mean(x, targets, kV, V_real); };
  const std::vector<double> fd = finite_difference(loss, to_double(logits));
  const double err = rel_error(grad, fd);
  INFO(ref::side_by_side(grad, fd));
  CAPTURE(err);
  CHECK(err <= 1e-4);
  for (int n = 0; n < kN; ++n) {
    for (int v = V_real; v < kV; ++v) {
      INFO("row " << n << " padding column " << v);
      CHECK(dlogits[n * kV + v] == dlogits0[n * kV + v]);
    }
  }

  core::crossentropy_backward(ctx, nullptr, logits.data(), maxes.data(), sumexp.data(), targets.data(), 1.0f / kN, kN,
                              kV, 0, V_real);  // no gradient wanted: no-op
}

TEST_CASE("vocab-parallel cross-entropy pieces over 2 and 3 blocks, all-reduced by hand, equal the serial loss",
          "[ops]") {
  const core::Context ctx = core::cpu_context();
  const int blocks = GENERATE(2, 3);
  const int V_real = GENERATE(18, 16, 11);  // with 3 blocks and V_real = 11 the last block is all padding
  CAPTURE(blocks, V_real);
  const std::vector<float> logits = padded_logits(V_real, 26);   // (N, V)
  const std::vector<int> targets = random_ints(kN, V_real, 27);  // (N)

  std::vector<float> losses(kN), maxes(kN), sumexp(kN);  // (N) each: the serial run
  core::crossentropy_forward(ctx, losses.data(), maxes.data(), sumexp.data(), logits.data(), targets.data(), kN, kV,
                             V_real);
  std::vector<float> dlogits(kN * kV, 0.0f);  // (N, V)
  core::crossentropy_backward(ctx, dlogits.data(), logits.data(), maxes.data(), sumexp.data(), targets.data(),
                              1.0f / kN, kN, kV, 0, V_real);

  const int Vl = kV / blocks;
  std::vector<std::vector<float>> shard(blocks);  // blocks × (N, Vl)
  for (int b = 0; b < blocks; ++b) shard[b] = column_block(logits, b * Vl, Vl);

  // All-reduce (max) of the partial maxes.
  std::vector<float> max_all(kN, -std::numeric_limits<float>::infinity());  // (N)
  for (int b = 0; b < blocks; ++b) {
    std::vector<float> part(kN);  // (N)
    core::crossentropy_partial_max(ctx, part.data(), shard[b].data(), kN, Vl, b * Vl, V_real);
    for (int n = 0; n < kN; ++n) max_all[n] = std::max(max_all[n], part[n]);
  }
  // All-reduce (sum) of the sums of exponentials, each taken against the full-row max, and of the
  // target logits, which are zero on every block but the target's.
  std::vector<float> sumexp_all(kN, 0.0f), target_all(kN, 0.0f);  // (N) each
  for (int b = 0; b < blocks; ++b) {
    std::vector<float> part_sumexp(kN), part_target(kN);  // (N) each
    core::crossentropy_partial_sumexp(ctx, part_sumexp.data(), shard[b].data(), max_all.data(), kN, Vl, b * Vl, V_real);
    core::crossentropy_partial_target(ctx, part_target.data(), shard[b].data(), targets.data(), kN, Vl, b * Vl);
    for (int n = 0; n < kN; ++n) {
      sumexp_all[n] += part_sumexp[n];
      target_all[n] += part_target[n];
    }
  }
  std::vector<float> losses_parallel(kN);  // (N)
  core::crossentropy_losses(ctx, losses_parallel.data(), max_all.data(), sumexp_all.data(), target_all.data(), kN);

  CHECK(max_all == maxes);
  const double err = rel_error(losses_parallel, losses);
  CAPTURE(err);
  CHECK(err <= 1e-6);

  // Each block's backward, from the all-reduced statistics, is its columns of the serial gradient.
  for (int b = 0; b < blocks; ++b) {
    std::vector<float> dshard(kN * Vl, 0.0f);  // (N, Vl)
    core::crossentropy_backward(ctx, dshard.data(), shard[b].data(), max_all.data(), sumexp_all.data(), targets.data(),
                                1.0f / kN, kN, Vl, b * Vl, V_real);
    const std::vector<float> expected = column_block(dlogits, b * Vl, Vl);
    const double derr = rel_error(dshard, expected);
    INFO("block " << b);
    CAPTURE(derr);
    CHECK(derr <= 1e-6);
  }
}
