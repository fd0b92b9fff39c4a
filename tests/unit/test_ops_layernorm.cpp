// L0 tests of LayerNorm: the serial composite against the float64 reference and
// finite differences, and the pieces the 2D stage uses: a row split over 2 and 3 column blocks,
// with the partial sums added by hand where the 2D stage would all-reduce over the row, gives
// what the composite gives.
#include <catch2/catch.hpp>

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

constexpr float kEps = 1e-5f;  // GPT-2's layer_norm_epsilon

// A shifted, scaled input so the mean and variance are not trivially 0 and 1.
std::vector<float> layernorm_input(int n, uint32_t salt) {
  auto x = random_normal(n, salt, 2.0f);
  for (float& v : x) v += 0.5f;
  return x;
}

// Columns [c0, c0 + width) of an (N, C) matrix, as a contiguous (N, width) one; and back.
std::vector<float> column_block(const std::vector<float>& x, int N, int C, int c0, int width) {
  std::vector<float> out(static_cast<size_t>(N) * width);
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < width; ++c) out[n * width + c] = x[n * C + c0 + c];
  return out;
}
void put_column_block(std::vector<float>& x, const std::vector<float>& block, int N, int C, int c0, int width) {
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < width; ++c) x[n * C + c0 + c] = block[n * width + c];
}

}  // namespace

TEST_CASE("layernorm forward matches the float64 reference (out, mean, rstd)", "[ops]") {
  const auto ctx = core::cpu_context();
  const int N = 7, C = 19;
  const auto inp = layernorm_input(N * C, 1), weight = random_normal(C, 2), bias = random_normal(C, 3);
  std::vector<float> out(N * C), mean(N), rstd(N);
  core::layernorm_forward(ctx, out.data(), mean.data(), rstd.data(), inp.data(), weight.data(), bias.data(), N, C,
                          kEps);
  const auto want = testing::ref::layernorm(to_double(inp), to_double(weight), to_double(bias), N, C, kEps);
  const double err_out = rel_error(out, want.out), err_mean = rel_error(mean, want.mean);
  const double err_rstd = rel_error(rstd, want.rstd);
  INFO(testing::ref::side_by_side(out, want.out));
  CAPTURE(err_out, err_mean, err_rstd);
  CHECK(err_out <= 1e-5);
  CHECK(err_mean <= 1e-5);
  CHECK(err_rstd <= 1e-5);
}

TEST_CASE("layernorm forward uses the eps it is given (0.5 and 1e-3, not GPT-2's 1e-5)", "[ops]") {
  const auto ctx = core::cpu_context();
  const int N = 5, C = 16;
  // A small input, so that eps is not negligible beside the variance.
  const auto inp = random_normal(N * C, 16, 0.3f);
  const auto weight = random_normal(C, 17), bias = random_normal(C, 18);
  for (float eps : {0.5f, 1e-3f}) {
    CAPTURE(eps);
    std::vector<float> out(N * C), mean(N), rstd(N);
    core::layernorm_forward(ctx, out.data(), mean.data(), rstd.data(), inp.data(), weight.data(), bias.data(), N, C,
                            eps);
    const auto want = testing::ref::layernorm(to_double(inp), to_double(weight), to_double(bias), N, C, eps);
    const auto gpt2 = testing::ref::layernorm(to_double(inp), to_double(weight), to_double(bias), N, C, 1e-5);
    const double err_out = rel_error(out, want.out), err_rstd = rel_error(rstd, want.rstd);
    const double off_gpt2 = rel_error(rstd, gpt2.rstd);
    INFO(testing::ref::side_by_side(rstd, want.rstd));
    CAPTURE(err_out, err_rstd, off_gpt2);
    CHECK(err_out <= 1e-5);
    CHECK(err_rstd <= 1e-5);
    CHECK(off_gpt2 > 1e-3);  // the test would notice an op that kept 1e-5
  }
}

TEST_CASE("layernorm backward matches finite differences of the float64 reference", "[ops]") {
  const auto ctx = core::cpu_context();
  const int N = 5, C = 11;
  const auto inp = layernorm_input(N * C, 4), weight = random_normal(C, 5), bias = random_normal(C, 6);
  const auto w = random_normal(N * C, 7);
  std::vector<float> out(N * C), mean(N), rstd(N);
  core::layernorm_forward(ctx, out.data(), mean.data(), rstd.data(), inp.data(), weight.data(), bias.data(), N, C,
                          kEps);
  std::vector<float> dinp(N * C, 0.0f), dweight(C, 0.0f), dbias(C, 0.0f);
  core::layernorm_backward(ctx, {.dinp = dinp.data(), .dweight = dweight.data(), .dbias = dbias.data()}, w.data(),
                           inp.data(), weight.data(), mean.data(), rstd.data(), N, C);

  const auto xd = to_double(inp), wtd = to_double(weight), bd = to_double(bias), wd = to_double(w);
  auto loss = [&](const std::vector<double>& x, const std::vector<double>& W, const std::vector<double>& b) {
    return weighted_sum(testing::ref::layernorm(x, W, b, N, C, kEps).out, wd);
  };
  const auto want_dinp = finite_difference([&](const auto& x) { return loss(x, wtd, bd); }, xd);
  const auto want_dweight = finite_difference([&](const auto& W) { return loss(xd, W, bd); }, wtd);
  const auto want_dbias = finite_difference([&](const auto& b) { return loss(xd, wtd, b); }, bd);
  const double err_inp = rel_error(dinp, want_dinp), err_weight = rel_error(dweight, want_dweight);
  const double err_bias = rel_error(dbias, want_dbias);
  INFO("dinp\n"
       << testing::ref::side_by_side(dinp, want_dinp) << "dweight\n"
       << testing::ref::side_by_side(dweight, want_dweight));
  CAPTURE(err_inp, err_weight, err_bias);
  CHECK(err_inp <= 1e-4);
  CHECK(err_weight <= 1e-4);
  CHECK(err_bias <= 1e-4);
}

TEST_CASE("layernorm pieces over 2 and 3 column blocks, summed by hand, give the composite's result", "[ops]") {
  const auto ctx = core::cpu_context();
  const int N = 6, C = 12;
  const auto inp = layernorm_input(N * C, 8), weight = random_normal(C, 9), bias = random_normal(C, 10);
  const auto dout = random_normal(N * C, 11);

  // The composite.
  std::vector<float> out(N * C), mean(N), rstd(N);
  core::layernorm_forward(ctx, out.data(), mean.data(), rstd.data(), inp.data(), weight.data(), bias.data(), N, C,
                          kEps);
  std::vector<float> dinp(N * C, 0.0f), dweight(C, 0.0f), dbias(C, 0.0f);
  core::layernorm_backward(ctx, {.dinp = dinp.data(), .dweight = dweight.data(), .dbias = dbias.data()}, dout.data(),
                           inp.data(), weight.data(), mean.data(), rstd.data(), N, C);

  const std::vector<std::vector<int>> splits = {{6, 6}, {3, 4, 5}};  // widths of the column blocks
  for (const auto& widths : splits) {
    CAPTURE(widths);
    const int blocks = static_cast<int>(widths.size());
    std::vector<int> c0(blocks, 0);
    for (int j = 1; j < blocks; ++j) c0[j] = c0[j - 1] + widths[j - 1];
    std::vector<std::vector<float>> x(blocks), wt(blocks), bs(blocks), dy(blocks);
    for (int j = 0; j < blocks; ++j) {
      x[j] = column_block(inp, N, C, c0[j], widths[j]);
      wt[j] = column_block(weight, 1, C, c0[j], widths[j]);
      bs[j] = column_block(bias, 1, C, c0[j], widths[j]);
      dy[j] = column_block(dout, N, C, c0[j], widths[j]);
    }

    // Forward: each pass is a partial over the block, then the "row all-reduce" is a sum here.
    std::vector<float> sum(N, 0.0f), sqdev(N, 0.0f), part(N);
    for (int j = 0; j < blocks; ++j) {
      core::layernorm_partial_sum(ctx, part.data(), x[j].data(), N, widths[j]);
      for (int n = 0; n < N; ++n) sum[n] += part[n];
    }
    for (int j = 0; j < blocks; ++j) {
      core::layernorm_partial_sqdev(ctx, part.data(), x[j].data(), sum.data(), N, widths[j], C);
      for (int n = 0; n < N; ++n) sqdev[n] += part[n];
    }
    std::vector<float> out_split(N * C), mean_split(N), rstd_split(N);
    for (int j = 0; j < blocks; ++j) {
      std::vector<float> out_j(static_cast<size_t>(N) * widths[j]);
      core::layernorm_normalize(ctx, out_j.data(), mean_split.data(), rstd_split.data(), x[j].data(), sum.data(),
                                sqdev.data(), wt[j].data(), bs[j].data(), N, widths[j], C, kEps);
      put_column_block(out_split, out_j, N, C, c0[j], widths[j]);
    }

    // Backward: the same shape, Σg and Σg·xhat summed over the blocks.
    std::vector<float> sum_g(N, 0.0f), sum_gx(N, 0.0f), part_g(N), part_gx(N);
    for (int j = 0; j < blocks; ++j) {
      core::layernorm_backward_partial(ctx, part_g.data(), part_gx.data(), dy[j].data(), x[j].data(), wt[j].data(),
                                       mean_split.data(), rstd_split.data(), N, widths[j]);
      for (int n = 0; n < N; ++n) sum_g[n] += part_g[n], sum_gx[n] += part_gx[n];
    }
    std::vector<float> dinp_split(N * C), dweight_split(C), dbias_split(C);
    for (int j = 0; j < blocks; ++j) {
      std::vector<float> dx_j(static_cast<size_t>(N) * widths[j], 0.0f), dw_j(widths[j], 0.0f), db_j(widths[j], 0.0f);
      core::layernorm_backward_apply(ctx, {.dinp = dx_j.data(), .dweight = dw_j.data(), .dbias = db_j.data()},
                                     dy[j].data(), x[j].data(), wt[j].data(), mean_split.data(), rstd_split.data(),
                                     sum_g.data(), sum_gx.data(), N, widths[j], C);
      put_column_block(dinp_split, dx_j, N, C, c0[j], widths[j]);
      put_column_block(dweight_split, dw_j, 1, C, c0[j], widths[j]);
      put_column_block(dbias_split, db_j, 1, C, c0[j], widths[j]);
    }

    // Only the order of float additions differs from the composite, so they agree to rounding.
    const double err_out = rel_error(out_split, out), err_mean = rel_error(mean_split, mean);
    const double err_rstd = rel_error(rstd_split, rstd), err_dinp = rel_error(dinp_split, dinp);
    const double err_dweight = rel_error(dweight_split, dweight), err_dbias = rel_error(dbias_split, dbias);
    CAPTURE(err_out, err_mean, err_rstd, err_dinp, err_dweight, err_dbias);
    CHECK(err_out <= 1e-6);
    CHECK(err_mean <= 1e-6);
    CHECK(err_rstd <= 1e-6);
    CHECK(err_dinp <= 1e-6);
    CHECK(err_dweight <= 1e-6);
    CHECK(err_dbias <= 1e-6);
  }
}

TEST_CASE("layernorm backward accumulates: a second call doubles every gradient, and null outputs are skipped",
          "[ops]") {
  const auto ctx = core::cpu_context();
  const int N = 4, C = 20;
  const auto inp = layernorm_input(N * C, 12), weight = random_normal(C, 13), bias = random_normal(C, 14);
  const auto dout = random_normal(N * C, 15);
  std::vector<float> out(N * C), mean(N), rstd(N);
  core::layernorm_forward(ctx, out.data(), mean.data(), rstd.data(), inp.data(), weight.data(), bias.data(), N, C,
                          kEps);
  std::vector<float> dinp(N * C, 0.0f), dweight(C, 0.0f), dbias(C, 0.0f);
  core::layernorm_backward(ctx, {.dinp = dinp.data(), .dweight = dweight.data(), .dbias = dbias.data()}, dout.data(),
                           inp.data(), weight.data(), mean.data(), rstd.data(), N, C);
  auto dinp2 = dinp, dweight2 = dweight, dbias2 = dbias;
  core::layernorm_backward(ctx, {.dinp = dinp2.data(), .dweight = dweight2.data(), .dbias = dbias2.data()}, dout.data(),
                           inp.data(), weight.data(), mean.data(), rstd.data(), N, C);
  for (size_t k = 0; k < dinp.size(); ++k) CHECK(dinp2[k] == Approx(2.0f * dinp[k]));
  for (int c = 0; c < C; ++c) CHECK(dweight2[c] == Approx(2.0f * dweight[c]));
  for (int c = 0; c < C; ++c) CHECK(dbias2[c] == Approx(2.0f * dbias[c]));

  std::vector<float> dweight_only(C, 0.0f);
  core::layernorm_backward(ctx, {.dweight = dweight_only.data()}, dout.data(), inp.data(), weight.data(), mean.data(),
                           rstd.data(), N, C);
  CHECK(dweight_only == dweight);
}
