// L0 tests of causal self-attention: forward against the float64 reference and
// backward against finite differences of it, without and with dropout on the probabilities; a
// block of (sequence, head) pairs inside a larger canonical tensor gives exactly its slice of the
// whole computation (what 1D and 2D rely on); and the backward accumulates.
#include <catch2/catch.hpp>

#include <stdexcept>
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

// Dropout on the probabilities of the block (B, NH) at (b0, h0) of a canonical (B_total, NH_total).
core::DropoutSpec attention_dropout(float p, int B, int NH, int T, int b0 = 0, int h0 = 0, int B_total = 0,
                                    int NH_total = 0) {
  core::DropoutSpec spec;
  spec.p = p;
  spec.key = core::dropout_key(2024u, 3u, core::DropoutSite::attention_probs);
  spec.step = 5;
  const int64_t TT = static_cast<int64_t>(T) * T;
  spec.block.dim[0] = B, spec.block.dim[1] = NH, spec.block.dim[2] = TT;
  spec.block.offset[0] = b0, spec.block.offset[1] = h0, spec.block.offset[2] = 0;
  spec.block.global_dim[0] = B_total ? B_total : B, spec.block.global_dim[1] = NH_total ? NH_total : NH;
  spec.block.global_dim[2] = TT;
  return spec;
}

// How many causal probabilities (s <= t) the spec drops, so a dropout test knows it tests something.
int dropped_count(const core::DropoutSpec& drop, int B, int NH, int T) {
  int count = 0;
  for (int64_t k = 0; k < static_cast<int64_t>(B) * NH * T * T; ++k) {
    const int64_t t = (k / T) % T, s = k % T;
    if (s <= t && !core::dropout_keep(drop.key, drop.block.global_index(k), drop.step, drop.p)) ++count;
  }
  return count;
}

void check_forward(float p, int B, int T, int C, int NH, uint32_t salt) {
  const auto ctx = core::cpu_context();
  const auto drop = attention_dropout(p, B, NH, T);
  if (p > 0.0f) REQUIRE(dropped_count(drop, B, NH, T) > 0);
  const auto qkv = random_normal(static_cast<int64_t>(B) * T * 3 * C, salt);
  std::vector<float> out(B * T * C, -1.0f), att(B * NH * T * T, -1.0f);
  core::attention_forward(ctx, out.data(), att.data(), qkv.data(), B, T, C, NH, drop);
  const auto want = testing::ref::attention(to_double(qkv), B, T, C, NH, drop);
  const double err_out = rel_error(out, want.out), err_att = rel_error(att, want.att);
  INFO(testing::ref::side_by_side(out, want.out));
  CAPTURE(p, B, T, C, NH, err_out, err_att);
  CHECK(err_out <= 1e-5);
  CHECK(err_att <= 1e-5);
}

void check_backward(float p, int B = 2, int T = 6, int C = 8, int NH = 2) {
  const auto ctx = core::cpu_context();
  const auto drop = attention_dropout(p, B, NH, T);
  if (p > 0.0f) REQUIRE(dropped_count(drop, B, NH, T) > 0);
  const auto qkv = random_normal(B * T * 3 * C, 11), w = random_normal(B * T * C, 12);
  std::vector<float> out(B * T * C), att(B * NH * T * T), datt(B * NH * T * T), dqkv(B * T * 3 * C, 0.0f);
  core::attention_forward(ctx, out.data(), att.data(), qkv.data(), B, T, C, NH, drop);
  core::attention_backward(ctx, dqkv.data(), datt.data(), w.data(), qkv.data(), att.data(), B, T, C, NH, drop);
  const auto want = finite_difference(
      [&](const auto& x) { return weighted_sum(testing::ref::attention(x, B, T, C, NH, drop).out, to_double(w)); },
      to_double(qkv));
  const double err = rel_error(dqkv, want);
  INFO(testing::ref::side_by_side(dqkv, want, 6));
  CAPTURE(p, B, T, C, NH, err);
  CHECK(err <= 1e-4);
}

}  // namespace

TEST_CASE("attention forward matches the float64 reference (no dropout)", "[ops]") {
  check_forward(0.0f, 2, 6, 8, 2, 1);
}

TEST_CASE("attention forward matches the float64 reference (dropout 0.1)", "[ops]") {
  check_forward(0.1f, 2, 6, 8, 2, 2);
}

TEST_CASE("attention forward matches the float64 reference at T = 128, where OpenBLAS would thread", "[ops]") {
  check_forward(0.1f, 1, 128, 64, 2, 3);
}

TEST_CASE("attention backward matches finite differences of the float64 reference (no dropout)", "[ops]") {
  check_backward(0.0f);
}

TEST_CASE("attention backward matches finite differences of the float64 reference (dropout 0.1)", "[ops]") {
  check_backward(0.1f);
}

// The CPU runs the products in blocks of 64 query rows (or key columns) and skips those above the
// diagonal: T = 70 and 130 end in a partial block.
TEST_CASE("attention matches the float64 reference where the products run in causal blocks", "[ops]") {
  check_forward(0.0f, 1, 130, 8, 2, 4);
  check_forward(0.1f, 2, 70, 8, 2, 5);
  check_backward(0.0f, 1, 70, 4, 2);
  check_backward(0.1f, 1, 70, 4, 2);
}

TEST_CASE("attention on a block of (sequence, head) pairs equals that slice of the whole tensor's attention", "[ops]") {
  const auto ctx = core::cpu_context();
  // Canonical: 3 sequences, 4 heads of size 3. The block: sequences [1, 3), heads [2, 4).
  const int T = 5, HS = 3, B_total = 3, NH_total = 4, C_total = NH_total * HS;
  const int b0 = 1, B = 2, h0 = 2, NH = 2, C = NH * HS;
  const float p = 0.1f;
  const auto whole_drop = attention_dropout(p, B_total, NH_total, T);
  const auto block_drop = attention_dropout(p, B, NH, T, b0, h0, B_total, NH_total);
  REQUIRE(dropped_count(block_drop, B, NH, T) > 0);

  const auto qkv_whole = random_normal(B_total * T * 3 * C_total, 21),
             dout_whole = random_normal(B_total * T * C_total, 22);
  std::vector<float> out_whole(B_total * T * C_total), att_whole(B_total * NH_total * T * T);
  std::vector<float> datt_whole(att_whole.size()), dqkv_whole(qkv_whole.size(), 0.0f);
  core::attention_forward(ctx, out_whole.data(), att_whole.data(), qkv_whole.data(), B_total, T, C_total, NH_total,
                          whole_drop);
  core::attention_backward(ctx, dqkv_whole.data(), datt_whole.data(), dout_whole.data(), qkv_whole.data(),
                           att_whole.data(), B_total, T, C_total, NH_total, whole_drop);

  // The block's inputs, and the slices of the whole results it should reproduce.
  std::vector<float> qkv(B * T * 3 * C), dout(B * T * C), want_out(B * T * C), want_dqkv(B * T * 3 * C);
  std::vector<float> want_att(B * NH * T * T);
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      const int row = b * T + t, row_whole = (b0 + b) * T + t;
      for (int j = 0; j < C; ++j) {
        for (int part = 0; part < 3; ++part) {
          qkv[row * 3 * C + part * C + j] = qkv_whole[row_whole * 3 * C_total + part * C_total + h0 * HS + j];
          want_dqkv[row * 3 * C + part * C + j] = dqkv_whole[row_whole * 3 * C_total + part * C_total + h0 * HS + j];
        }
        dout[row * C + j] = dout_whole[row_whole * C_total + h0 * HS + j];
        want_out[row * C + j] = out_whole[row_whole * C_total + h0 * HS + j];
      }
      for (int h = 0; h < NH; ++h)
        for (int s = 0; s < T; ++s)
          want_att[((b * NH + h) * T + t) * T + s] = att_whole[(((b0 + b) * NH_total + h0 + h) * T + t) * T + s];
    }
  }

  std::vector<float> out(B * T * C), att(B * NH * T * T), datt(B * NH * T * T), dqkv(B * T * 3 * C, 0.0f);
  core::attention_forward(ctx, out.data(), att.data(), qkv.data(), B, T, C, NH, block_drop);
  core::attention_backward(ctx, dqkv.data(), datt.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH, block_drop);
  const auto want_ref = testing::ref::attention(to_double(qkv), B, T, C, NH, block_drop);
  const double err_out = rel_error(out, want_out), err_att = rel_error(att, want_att);
  const double err_dqkv = rel_error(dqkv, want_dqkv), err_ref = rel_error(out, want_ref.out);
  INFO(testing::ref::side_by_side(out, to_double(want_out)));
  CAPTURE(err_out, err_att, err_dqkv, err_ref);
  CHECK(err_out <= 1e-6);
  CHECK(err_att <= 1e-6);
  CHECK(err_dqkv <= 1e-6);
  CHECK(err_ref <= 1e-5);  // and the block's offsets reach the reference's dropout mask too
}

TEST_CASE("attention backward accumulates: a second call doubles dqkv", "[ops]") {
  const auto ctx = core::cpu_context();
  const int B = 2, T = 4, C = 6, NH = 3;
  const auto drop = attention_dropout(0.1f, B, NH, T);
  const auto qkv = random_normal(B * T * 3 * C, 31), dout = random_normal(B * T * C, 32);
  std::vector<float> out(B * T * C), att(B * NH * T * T), datt(B * NH * T * T), dqkv(B * T * 3 * C, 0.0f);
  core::attention_forward(ctx, out.data(), att.data(), qkv.data(), B, T, C, NH, drop);
  core::attention_backward(ctx, dqkv.data(), datt.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH, drop);
  auto dqkv2 = dqkv;
  core::attention_backward(ctx, dqkv2.data(), datt.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH, drop);
  for (size_t k = 0; k < dqkv.size(); ++k) CHECK(dqkv2[k] == Approx(2.0f * dqkv[k]).margin(1e-6));
}

TEST_CASE("attention rejects a dropout block that is not (B, NH, T*T)", "[ops]") {
  const auto ctx = core::cpu_context();
  const int B = 1, T = 3, C = 4, NH = 2;
  auto drop = attention_dropout(0.1f, B, NH, T);
  drop.block.dim[2] = T;  // one row of probabilities per pair instead of T*T
  std::vector<float> qkv(B * T * 3 * C, 0.5f), out(B * T * C), att(B * NH * T * T);
  CHECK_THROWS_AS(core::attention_forward(ctx, out.data(), att.data(), qkv.data(), B, T, C, NH, drop),
                  std::invalid_argument);
}
