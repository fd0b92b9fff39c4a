// L0 tests of Philox dropout: the reference mask, the kept fraction and scale,
// and the property every parallel stage stands on: a block of a tensor, placed by its global
// offsets, drops exactly the elements that the whole tensor drops there.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "core/ops.h"
#include "unit/check.h"
#include "unit/reference_dense.h"
#include "unit/reference_loss.h"

using namespace optimus;
using namespace optimus::testing;

namespace {

core::DropoutSpec make_spec(float p, core::PhiloxKey key, uint32_t step, core::GlobalBlock block) {
  core::DropoutSpec spec;
  spec.p = p;
  spec.key = key;
  spec.step = step;
  spec.block = block;
  return spec;
}

/// Rows [r0, r0 + rows) and columns [c0, c0 + cols) of a row-major matrix with `width` columns.
std::vector<float> slice(const std::vector<float>& x, int width, int r0, int rows, int c0, int cols) {
  std::vector<float> out(static_cast<size_t>(rows) * cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      out[static_cast<size_t>(r) * cols + c] = x[static_cast<size_t>(r0 + r) * width + c0 + c];
  return out;
}

const core::PhiloxKey kKey = core::dropout_key(1234u, 2u, core::DropoutSite::attn_residual);

}  // namespace

TEST_CASE("dropout forward on a sub-block equals the float64 reference", "[ops]") {
  const core::Context ctx = core::cpu_context();
  const float p = 0.3f;
  // Rows [3, 9) and columns [5, 12) of a (16, 20) activation.
  const int rows = 6, cols = 7, row0 = 3, col0 = 5, total_rows = 16, total_cols = 20;
  const std::vector<float> inp = random_normal(rows * cols, 40);  // (rows, cols)
  const auto spec = make_spec(p, kKey, 7u, core::GlobalBlock::matrix(rows, cols, row0, col0, total_rows, total_cols));
  std::vector<float> out(rows * cols);  // (rows, cols)
  core::dropout_forward(ctx, out.data(), inp.data(), spec);

  const std::vector<double> mask = ref::dropout_mask(kKey, 7u, p, rows, cols, row0, col0, total_cols);
  const std::vector<double> want = ref::dropout(to_double(inp), mask, p);
  const double err = rel_error(out, want);
  INFO(ref::side_by_side(out, want));
  CAPTURE(err);
  CHECK(err <= 1e-5);
}

TEST_CASE("dropout keeps a fraction close to 1 - p and scales kept elements by 1/(1 - p)", "[ops]") {
  const core::Context ctx = core::cpu_context();
  const float p = GENERATE(0.1f, 0.5f, 0.9f);
  const int64_t n = 1 << 18;
  const std::vector<float> inp = random_normal(n, 41);  // (n)
  std::vector<float> out(n);                            // (n)
  core::dropout_forward(ctx, out.data(), inp.data(), make_spec(p, kKey, 0u, core::GlobalBlock::whole(n)));

  const float keep_scale = 1.0f / (1.0f - p);
  int64_t kept = 0, wrong = 0;
  for (int64_t k = 0; k < n; ++k) {
    if (out[k] == 0.0f) continue;
    ++kept;
    if (out[k] != inp[k] * keep_scale) ++wrong;
  }
  const double fraction = static_cast<double>(kept) / n;
  const double sigma = std::sqrt(p * (1.0 - p) / n);  // binomial standard deviation of the fraction
  CAPTURE(p, fraction, sigma, wrong);
  CHECK(std::abs(fraction - (1.0 - p)) <= 5.0 * sigma);
  CHECK(wrong == 0);
}

TEST_CASE("dropout on sub-blocks drops exactly the elements of the whole tensor's slices", "[ops]") {
  const core::Context ctx = core::cpu_context();
  const float p = 0.4f;
  const int R = 12, W = 20;
  const std::vector<float> inp = random_normal(R * W, 42);  // (R, W)
  std::vector<float> whole(R * W);                          // (R, W)
  core::dropout_forward(ctx, whole.data(), inp.data(), make_spec(p, kKey, 3u, core::GlobalBlock::whole(R * W)));

  // A 3 × 2 grid of blocks, as a 2D rank layout would hold them.
  for (int bi = 0; bi < 3; ++bi) {
    for (int bj = 0; bj < 2; ++bj) {
      const int rows = R / 3, cols = W / 2, r0 = bi * rows, c0 = bj * cols;
      const std::vector<float> block_inp = slice(inp, W, r0, rows, c0, cols);  // (rows, cols)
      std::vector<float> block_out(rows * cols);                               // (rows, cols)
      core::dropout_forward(ctx, block_out.data(), block_inp.data(),
                            make_spec(p, kKey, 3u, core::GlobalBlock::matrix(rows, cols, r0, c0, R, W)));
      INFO("block (" << bi << ", " << bj << ")");
      CHECK(block_out == slice(whole, W, r0, rows, c0, cols));
    }
  }
}

TEST_CASE("dropout on a block of attention probabilities drops exactly the whole tensor's elements", "[ops]") {
  // Probabilities (B, NH, T*T) = (2, 4, 9); the block is sequence 1, heads [2, 4): what a rank
  // holding one sequence and half the heads computes.
  const core::Context ctx = core::cpu_context();
  const float p = 0.5f;
  const int B = 2, NH = 4, TT = 9;
  const std::vector<float> inp = random_normal(B * NH * TT, 43);  // (B, NH, T*T)
  core::GlobalBlock whole_block;
  whole_block.dim[0] = whole_block.global_dim[0] = B;
  whole_block.dim[1] = whole_block.global_dim[1] = NH;
  whole_block.dim[2] = whole_block.global_dim[2] = TT;
  std::vector<float> whole(inp.size());  // (B, NH, T*T)
  core::dropout_forward(ctx, whole.data(), inp.data(), make_spec(p, kKey, 5u, whole_block));

  core::GlobalBlock block = whole_block;
  block.dim[0] = 1;
  block.offset[0] = 1;
  block.dim[1] = 2;
  block.offset[1] = 2;
  // Sequence 1, heads 2 and 3: one contiguous run of 2 * T*T elements in the whole tensor.
  const int64_t first = (1 * NH + 2) * TT;
  const std::vector<float> block_inp(inp.begin() + first, inp.begin() + first + 2 * TT);  // (1, 2, T*T)
  std::vector<float> block_out(block_inp.size());                                         // (1, 2, T*T)
  core::dropout_forward(ctx, block_out.data(), block_inp.data(), make_spec(p, kKey, 5u, block));
  CHECK(block_out == std::vector<float>(whole.begin() + first, whole.begin() + first + 2 * TT));
}

TEST_CASE("the dropout mask is fixed by step and stream, and changes with either", "[ops]") {
  const core::Context ctx = core::cpu_context();
  const float p = 0.5f;
  const int64_t n = 4096;
  const std::vector<float> ones(n, 1.0f);  // (n)
  const auto mask_of = [&](core::PhiloxKey key, uint32_t step) {
    std::vector<float> out(n);  // (n)
    core::dropout_forward(ctx, out.data(), ones.data(), make_spec(p, key, step, core::GlobalBlock::whole(n)));
    return out;
  };
  const auto disagreement = [&](const std::vector<float>& a, const std::vector<float>& b) {
    int64_t d = 0;
    for (int64_t k = 0; k < n; ++k) d += (a[k] == 0.0f) != (b[k] == 0.0f);
    return static_cast<double>(d) / n;
  };
  const core::PhiloxKey other_stream = core::dropout_key(1234u, 2u, core::DropoutSite::mlp_residual);
  const std::vector<float> base = mask_of(kKey, 0u);
  CHECK(mask_of(kKey, 0u) == base);
  // Independent masks with p = 0.5 disagree on half the elements.
  const double by_step = disagreement(base, mask_of(kKey, 1u));
  const double by_stream = disagreement(base, mask_of(other_stream, 0u));
  CAPTURE(by_step, by_stream);
  CHECK(std::abs(by_step - 0.5) < 0.05);
  CHECK(std::abs(by_stream - 0.5) < 0.05);
}

TEST_CASE("dropout backward is mask * dout / (1 - p), accumulates, and equals finite differences", "[ops]") {
  const core::Context ctx = core::cpu_context();
  const float p = 0.3f;
  const int rows = 6, cols = 7, row0 = 2, col0 = 4, total_rows = 10, total_cols = 16;
  const auto spec = make_spec(p, kKey, 9u, core::GlobalBlock::matrix(rows, cols, row0, col0, total_rows, total_cols));
  const std::vector<float> inp = random_normal(rows * cols, 44);    // (rows, cols)
  const std::vector<float> w = random_normal(rows * cols, 45);      // (rows, cols): L = Σ w · out, so dout = w
  const std::vector<float> dinp0 = random_normal(rows * cols, 46);  // (rows, cols): what was there before
  std::vector<float> dinp(dinp0);                                   // (rows, cols)
  core::dropout_backward(ctx, dinp.data(), w.data(), spec);

  const std::vector<double> mask = ref::dropout_mask(kKey, 9u, p, rows, cols, row0, col0, total_cols);
  std::vector<double> grad(rows * cols);
  for (size_t k = 0; k < grad.size(); ++k) {
    grad[k] = static_cast<double>(dinp[k]) - dinp0[k];
    INFO("element " << k << " mask " << mask[k]);
    CHECK(grad[k] == Approx(mask[k] * w[k] / (1.0 - p)).margin(1e-6));
  }
  const std::vector<double> wd = to_double(w);
  const auto loss = [&](const std::vector<double>& x) { return weighted_sum(ref::dropout(x, mask, p), wd); };
  const double err = rel_error(grad, finite_difference(loss, to_double(inp)));
  CAPTURE(err);
  CHECK(err <= 1e-4);
}

TEST_CASE("dropout with p = 0 is the identity, and dropout may run in place", "[ops]") {
  const core::Context ctx = core::cpu_context();
  const int64_t n = 100;
  const std::vector<float> inp = random_normal(n, 47);  // (n)
  std::vector<float> out(n);                            // (n)
  core::dropout_forward(ctx, out.data(), inp.data(), make_spec(0.0f, kKey, 0u, core::GlobalBlock::whole(n)));
  CHECK(out == inp);

  core::dropout_forward(ctx, out.data(), inp.data(), make_spec(0.5f, kKey, 0u, core::GlobalBlock::whole(n)));
  std::vector<float> in_place(inp);  // (n)
  core::dropout_forward(ctx, in_place.data(), in_place.data(), make_spec(0.5f, kKey, 0u, core::GlobalBlock::whole(n)));
  CHECK(in_place == out);
}
