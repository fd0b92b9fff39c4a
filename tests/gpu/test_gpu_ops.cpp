// Every op of core/ops.h on a CUDA context against the same op on the CPU, on the same inputs
//: float32 arithmetic to 1e-5 relative, and bit for bit where both backends do the same
// operations in the same order (dropout masks, lookups, scatter-adds, the double sums). Sizes are
// deliberately not multiples of 32, and outputs start poisoned so an unwritten element shows.
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "core/ops.h"
#include "gpu_test.h"
#include "unit/check.h"

namespace {

using namespace optimus;
using core::Trans;
using gpu_test::agree;
using gpu_test::agree_added;
using gpu_test::cpu;
using gpu_test::cuda;
using gpu_test::identical;
using gpu_test::kPoison;
using gpu_test::to_device;
using gpu_test::to_host;
using testing::random_ints;
using testing::random_normal;

std::vector<float> poisoned(int64_t n) {
  return std::vector<float>(static_cast<size_t>(n), kPoison);
}

std::vector<float> positive(int64_t n, uint32_t salt) {
  std::vector<float> x = random_normal(n, salt);
  for (float& v : x) v = std::abs(v) + 0.5f;
  return x;
}

const char* name(Trans t) {
  return t == Trans::yes ? "T" : "N";
}

}  // namespace

// ---- matrix products -----------------------------------------------------------------------------

TEST_CASE("matmul equals the CPU for all four transposes, with alpha and beta", "[gpu][matmul]") {
  const int M = 33, N = 47, K = 29;
  for (Trans ta : {Trans::no, Trans::yes}) {
    for (Trans tb : {Trans::no, Trans::yes}) {
      INFO("ta " << name(ta) << ", tb " << name(tb));
      const auto a = random_normal(M * K, 1), b = random_normal(K * N, 2), c0 = random_normal(M * N, 3);
      std::vector<float> c_cpu = c0;
      core::matmul(cpu(), c_cpu.data(), a.data(), b.data(), M, N, K, ta, tb, 0.7f, 0.3f);
      auto d_a = to_device(a), d_b = to_device(b), d_c = to_device(c0);
      core::matmul(cuda(), d_c.data(), d_a.data(), d_b.data(), M, N, K, ta, tb, 0.7f, 0.3f);
      CHECK(agree(to_host(d_c), c_cpu));
    }
  }
}

TEST_CASE("matmul_strided on blocks of larger matrices equals the CPU", "[gpu][matmul]") {
  // c (M, N) inside rows of ldc; a (M, K) inside rows of lda; b (N, K) transposed inside rows of ldb.
  const int M = 20, N = 13, K = 9, lda = 15, ldb = 11, ldc = 31;
  const auto a = random_normal(M * lda, 4), b = random_normal(N * ldb, 5), c0 = random_normal(M * ldc, 6);
  std::vector<float> c_cpu = c0;
  core::matmul_strided(cpu(), c_cpu.data() + 3, ldc, a.data() + 2, lda, b.data() + 1, ldb, M, N, K, Trans::no,
                       Trans::yes, 1.5f, 1.0f);
  auto d_a = to_device(a), d_b = to_device(b), d_c = to_device(c0);
  core::matmul_strided(cuda(), d_c.data() + 3, ldc, d_a.data() + 2, lda, d_b.data() + 1, ldb, M, N, K, Trans::no,
                       Trans::yes, 1.5f, 1.0f);
  CHECK(agree(to_host(d_c), c_cpu));  // the elements outside the block stay as they were on both
}

TEST_CASE("matmul_backward equals the CPU for all four transposes", "[gpu][matmul]") {
  const int M = 17, N = 23, K = 31;
  for (Trans ta : {Trans::no, Trans::yes}) {
    for (Trans tb : {Trans::no, Trans::yes}) {
      INFO("ta " << name(ta) << ", tb " << name(tb));
      const auto a = random_normal(M * K, 7), b = random_normal(K * N, 8), dc = random_normal(M * N, 9);
      const auto da0 = random_normal(M * K, 10), db0 = random_normal(K * N, 11);
      std::vector<float> da_cpu = da0, db_cpu = db0;
      core::matmul_backward(cpu(), da_cpu.data(), db_cpu.data(), dc.data(), a.data(), b.data(), M, N, K, ta, tb);
      auto d_a = to_device(a), d_b = to_device(b), d_dc = to_device(dc), d_da = to_device(da0), d_db = to_device(db0);
      core::matmul_backward(cuda(), d_da.data(), d_db.data(), d_dc.data(), d_a.data(), d_b.data(), M, N, K, ta, tb);
      CHECK(agree_added(to_host(d_da), da_cpu, da0));
      CHECK(agree_added(to_host(d_db), db_cpu, db0));
    }
  }
}

TEST_CASE("linear layer forward and backward equal the CPU, with and without bias", "[gpu][matmul]") {
  const int N = 45, C = 37, OC = 70;
  const auto x = random_normal(N * C, 12), w = random_normal(C * OC, 13), bias = random_normal(OC, 14);
  const auto dout = random_normal(N * OC, 15);
  const auto dx0 = random_normal(N * C, 16), dw0 = random_normal(C * OC, 17), db0 = random_normal(OC, 18);
  auto d_x = to_device(x), d_w = to_device(w), d_bias = to_device(bias), d_dout = to_device(dout);
  for (bool with_bias : {true, false}) {
    INFO("bias " << with_bias);
    std::vector<float> out_cpu = poisoned(N * OC);
    core::linear_forward(cpu(), out_cpu.data(), x.data(), w.data(), with_bias ? bias.data() : nullptr, N, C, OC);
    auto d_out = to_device(poisoned(N * OC));
    core::linear_forward(cuda(), d_out.data(), d_x.data(), d_w.data(), with_bias ? d_bias.data() : nullptr, N, C, OC);
    CHECK(agree(to_host(d_out), out_cpu));
  }
  std::vector<float> dx_cpu = dx0, dw_cpu = dw0, db_cpu = db0;
  core::linear_backward(cpu(), {.dinp = dx_cpu.data(), .dweight = dw_cpu.data(), .dbias = db_cpu.data()}, dout.data(),
                        x.data(), w.data(), N, C, OC);
  auto d_dx = to_device(dx0), d_dw = to_device(dw0), d_db = to_device(db0);
  core::linear_backward(cuda(), {.dinp = d_dx.data(), .dweight = d_dw.data(), .dbias = d_db.data()}, d_dout.data(),
                        d_x.data(), d_w.data(), N, C, OC);
  CHECK(agree_added(to_host(d_dx), dx_cpu, dx0));
  CHECK(agree_added(to_host(d_dw), dw_cpu, dw0));
  CHECK(agree_added(to_host(d_db), db_cpu, db0));
  // nullptr gradients are skipped on both
  std::vector<float> dw_only_cpu = dw0;
  core::linear_backward(cpu(), {.dweight = dw_only_cpu.data()}, dout.data(), x.data(), w.data(), N, C, OC);
  auto d_dw_only = to_device(dw0);
  core::linear_backward(cuda(), {.dweight = d_dw_only.data()}, d_dout.data(), d_x.data(), d_w.data(), N, C, OC);
  CHECK(agree_added(to_host(d_dw_only), dw_only_cpu, dw0));
}

TEST_CASE("bias add forward and backward equal the CPU", "[gpu][matmul]") {
  const int N = 1001, OC = 70;  // more rows than the 32 row groups, columns not a multiple of 32
  const auto out0 = random_normal(N * OC, 19), bias = random_normal(OC, 20), db0 = random_normal(OC, 21);
  std::vector<float> out_cpu = out0, db_cpu = db0;
  core::bias_add_forward(cpu(), out_cpu.data(), bias.data(), N, OC);
  core::bias_add_backward(cpu(), db_cpu.data(), out0.data(), N, OC);
  auto d_out = to_device(out0), d_bias = to_device(bias), d_db = to_device(db0), d_dout = to_device(out0);
  core::bias_add_forward(cuda(), d_out.data(), d_bias.data(), N, OC);
  core::bias_add_backward(cuda(), d_db.data(), d_dout.data(), N, OC);
  CHECK(identical(to_host(d_out), out_cpu));  // one addition per element on both
  CHECK(agree_added(to_host(d_db), db_cpu, db0));
}

// ---- LayerNorm -----------------------------------------------------------------------------------

TEST_CASE("layernorm forward and backward equal the CPU", "[gpu][layernorm]") {
  for (int C : {75, 1000}) {
    const int N = 37;
    const float eps = C == 75 ? 0.5f : 1e-5f;  // the model's layer_norm_epsilon, GPT-2's or not
    INFO("C " << C);
    const auto x = random_normal(N * C, 22, 2.0f), w = random_normal(C, 23), b = random_normal(C, 24);
    const auto dout = random_normal(N * C, 25);
    const auto dx0 = random_normal(N * C, 26), dw0 = random_normal(C, 27), db0 = random_normal(C, 28);
    std::vector<float> out_cpu = poisoned(N * C), mean_cpu = poisoned(N), rstd_cpu = poisoned(N);
    core::layernorm_forward(cpu(), out_cpu.data(), mean_cpu.data(), rstd_cpu.data(), x.data(), w.data(), b.data(), N, C,
                            eps);
    std::vector<float> dx_cpu = dx0, dw_cpu = dw0, db_cpu = db0;
    core::layernorm_backward(cpu(), {.dinp = dx_cpu.data(), .dweight = dw_cpu.data(), .dbias = db_cpu.data()},
                             dout.data(), x.data(), w.data(), mean_cpu.data(), rstd_cpu.data(), N, C);

    auto d_x = to_device(x), d_w = to_device(w), d_b = to_device(b), d_dout = to_device(dout);
    auto d_out = to_device(poisoned(N * C)), d_mean = to_device(poisoned(N)), d_rstd = to_device(poisoned(N));
    core::layernorm_forward(cuda(), d_out.data(), d_mean.data(), d_rstd.data(), d_x.data(), d_w.data(), d_b.data(), N,
                            C, eps);
    CHECK(agree(to_host(d_out), out_cpu));
    CHECK(agree(to_host(d_mean), mean_cpu));
    CHECK(agree(to_host(d_rstd), rstd_cpu));
    // backward from the CPU's statistics, so only the backward's arithmetic is compared
    auto d_cmean = to_device(mean_cpu), d_crstd = to_device(rstd_cpu);
    auto d_dx = to_device(dx0), d_dw = to_device(dw0), d_db = to_device(db0);
    core::layernorm_backward(cuda(), {.dinp = d_dx.data(), .dweight = d_dw.data(), .dbias = d_db.data()}, d_dout.data(),
                             d_x.data(), d_w.data(), d_cmean.data(), d_crstd.data(), N, C);
    CHECK(agree_added(to_host(d_dx), dx_cpu, dx0));
    CHECK(agree_added(to_host(d_dw), dw_cpu, dw0));
    CHECK(agree_added(to_host(d_db), db_cpu, db0));
  }
}

TEST_CASE("layernorm pieces on a block of columns equal the CPU, aliases included", "[gpu][layernorm]") {
  // A rank's 40 columns of rows 120 wide: the statistics come from the whole row (given here).
  const int N = 29, C = 40, C_total = 120;
  const float eps = 0.25f;  // not GPT-2's 1e-5, so a kernel that ignored it would differ
  const auto x = random_normal(N * C, 30, 1.5f), w = random_normal(C, 31), b = random_normal(C, 32);
  const auto row_sum = random_normal(N, 33, 10.0f), row_sqdev = positive(N, 34);
  auto d_x = to_device(x), d_w = to_device(w), d_b = to_device(b);

  std::vector<float> sum_cpu = poisoned(N), sqdev_cpu = poisoned(N);
  core::layernorm_partial_sum(cpu(), sum_cpu.data(), x.data(), N, C);
  core::layernorm_partial_sqdev(cpu(), sqdev_cpu.data(), x.data(), row_sum.data(), N, C, C_total);
  auto d_sum = to_device(poisoned(N)), d_sqdev = to_device(poisoned(N)), d_row_sum = to_device(row_sum);
  core::layernorm_partial_sum(cuda(), d_sum.data(), d_x.data(), N, C);
  core::layernorm_partial_sqdev(cuda(), d_sqdev.data(), d_x.data(), d_row_sum.data(), N, C, C_total);
  CHECK(agree(to_host(d_sum), sum_cpu));
  CHECK(agree(to_host(d_sqdev), sqdev_cpu));

  // normalize with mean aliasing sum and rstd aliasing sqdev, as layernorm_forward calls it
  std::vector<float> out_cpu = poisoned(N * C), stat1_cpu = row_sum, stat2_cpu = row_sqdev;
  core::layernorm_normalize(cpu(), out_cpu.data(), stat1_cpu.data(), stat2_cpu.data(), x.data(), stat1_cpu.data(),
                            stat2_cpu.data(), w.data(), b.data(), N, C, C_total, eps);
  auto d_out = to_device(poisoned(N * C)), d_stat1 = to_device(row_sum), d_stat2 = to_device(row_sqdev);
  core::layernorm_normalize(cuda(), d_out.data(), d_stat1.data(), d_stat2.data(), d_x.data(), d_stat1.data(),
                            d_stat2.data(), d_w.data(), d_b.data(), N, C, C_total, eps);
  CHECK(agree(to_host(d_out), out_cpu));
  CHECK(identical(to_host(d_stat1), stat1_cpu));  // one division each
  CHECK(identical(to_host(d_stat2), stat2_cpu));  // IEEE division and square root on both

  // backward pieces, from the statistics just made
  const std::vector<float>& mean = stat1_cpu;
  const std::vector<float>& rstd = stat2_cpu;
  const auto dout = random_normal(N * C, 35), row_sum_g = random_normal(N, 36), row_sum_gx = random_normal(N, 37);
  const auto dx0 = random_normal(N * C, 38), dw0 = random_normal(C, 39), db0 = random_normal(C, 40);
  std::vector<float> sg_cpu = poisoned(N), sgx_cpu = poisoned(N);
  core::layernorm_backward_partial(cpu(), sg_cpu.data(), sgx_cpu.data(), dout.data(), x.data(), w.data(), mean.data(),
                                   rstd.data(), N, C);
  std::vector<float> dx_cpu = dx0, dw_cpu = dw0, db_cpu = db0;
  core::layernorm_backward_apply(cpu(), {.dinp = dx_cpu.data(), .dweight = dw_cpu.data(), .dbias = db_cpu.data()},
                                 dout.data(), x.data(), w.data(), mean.data(), rstd.data(), row_sum_g.data(),
                                 row_sum_gx.data(), N, C, C_total);

  auto d_dout = to_device(dout), d_mean = to_device(mean), d_rstd = to_device(rstd);
  auto d_row_sum_g = to_device(row_sum_g), d_row_sum_gx = to_device(row_sum_gx);
  auto d_sg = to_device(poisoned(N)), d_sgx = to_device(poisoned(N));
  core::layernorm_backward_partial(cuda(), d_sg.data(), d_sgx.data(), d_dout.data(), d_x.data(), d_w.data(),
                                   d_mean.data(), d_rstd.data(), N, C);
  CHECK(agree(to_host(d_sg), sg_cpu));
  CHECK(agree(to_host(d_sgx), sgx_cpu));
  auto d_dx = to_device(dx0), d_dw = to_device(dw0), d_db = to_device(db0);
  core::layernorm_backward_apply(cuda(), {.dinp = d_dx.data(), .dweight = d_dw.data(), .dbias = d_db.data()},
                                 d_dout.data(), d_x.data(), d_w.data(), d_mean.data(), d_rstd.data(),
                                 d_row_sum_g.data(), d_row_sum_gx.data(), N, C, C_total);
  CHECK(agree_added(to_host(d_dx), dx_cpu, dx0));
  CHECK(agree_added(to_host(d_dw), dw_cpu, dw0));
  CHECK(agree_added(to_host(d_db), db_cpu, db0));
}

// ---- elementwise ---------------------------------------------------------------------------------

TEST_CASE("gelu forward and backward equal the CPU", "[gpu][elementwise]") {
  const int64_t n = 100003;
  const auto x = random_normal(n, 41, 3.0f), dout = random_normal(n, 42), dx0 = random_normal(n, 43);
  std::vector<float> out_cpu = poisoned(n), dx_cpu = dx0;
  core::gelu_forward(cpu(), out_cpu.data(), x.data(), n);
  core::gelu_backward(cpu(), dx_cpu.data(), x.data(), dout.data(), n);
  auto d_x = to_device(x), d_dout = to_device(dout), d_out = to_device(poisoned(n)), d_dx = to_device(dx0);
  core::gelu_forward(cuda(), d_out.data(), d_x.data(), n);
  core::gelu_backward(cuda(), d_dx.data(), d_x.data(), d_dout.data(), n);
  CHECK(agree(to_host(d_out), out_cpu));
  CHECK(agree_added(to_host(d_dx), dx_cpu, dx0));
}

TEST_CASE("residual, scale and zero equal the CPU past the grid-stride limit", "[gpu][elementwise]") {
  // More elements than one pass of the largest grid (2^16 blocks × 256 threads) covers.
  const int64_t n = (int64_t{1} << 24) + 12345;
  const auto a = random_normal(n, 44), b = random_normal(n, 45);
  std::vector<float> out_cpu = poisoned(n);
  core::residual_forward(cpu(), out_cpu.data(), a.data(), b.data(), n);
  core::scale(cpu(), out_cpu.data(), 0.37f, n);
  auto d_a = to_device(a), d_b = to_device(b), d_out = to_device(poisoned(n));
  core::residual_forward(cuda(), d_out.data(), d_a.data(), d_b.data(), n);
  core::scale(cuda(), d_out.data(), 0.37f, n);
  CHECK(identical(to_host(d_out), out_cpu));  // an addition, then a multiplication, on both
  core::zero(cuda(), d_out.data(), n);
  CHECK(identical(to_host(d_out), std::vector<float>(static_cast<size_t>(n), 0.0f)));
}

TEST_CASE("sum_squares and sum give the CPU's double bit for bit", "[gpu][elementwise]") {
  // Empty, one short chunk, one whole chunk, a partial last chunk, chunks over several blocks of warps.
  for (int64_t n : {int64_t{0}, int64_t{5}, int64_t{16384}, int64_t{100003}, int64_t{20 * 16384 + 3}}) {
    INFO("n " << n);
    const auto x = random_normal(n, 46, 3.0f);
    double sq_cpu = -1.0, sq_gpu = -2.0, s_cpu = -1.0, s_gpu = -2.0;
    core::sum_squares(cpu(), &sq_cpu, x.data(), n);
    core::sum(cpu(), &s_cpu, x.data(), n);
    auto d_x = to_device(x);
    core::sum_squares(cuda(), &sq_gpu, d_x.data(), n);
    core::sum(cuda(), &s_gpu, d_x.data(), n);
    CHECK(sq_gpu == sq_cpu);
    CHECK(s_gpu == s_cpu);
  }
}

// ---- dropout -------------------------------------------------------------------------------------

TEST_CASE("dropout masks are the CPU's, bit for bit, on a block of a larger tensor", "[gpu][dropout]") {
  // Rows [5, 38) and columns [40, 60) of a (100, 64) canonical matrix.
  core::DropoutSpec spec;
  spec.p = 0.3f;
  spec.key = core::dropout_key(1234u, 3u, core::DropoutSite::attn_residual);
  spec.step = 7;
  spec.block = core::GlobalBlock::matrix(33, 20, 5, 40, 100, 64);
  const int64_t n = spec.block.numel();
  const auto x = random_normal(n, 47), dout = random_normal(n, 48), dx0 = random_normal(n, 49);

  std::vector<float> out_cpu = poisoned(n), in_place_cpu = x, dx_cpu = dx0;
  core::dropout_forward(cpu(), out_cpu.data(), x.data(), spec);
  core::dropout_forward(cpu(), in_place_cpu.data(), in_place_cpu.data(), spec);
  core::dropout_backward(cpu(), dx_cpu.data(), dout.data(), spec);
  auto d_x = to_device(x), d_out = to_device(poisoned(n)), d_in_place = to_device(x);
  auto d_dout = to_device(dout), d_dx = to_device(dx0);
  core::dropout_forward(cuda(), d_out.data(), d_x.data(), spec);
  core::dropout_forward(cuda(), d_in_place.data(), d_in_place.data(), spec);
  core::dropout_backward(cuda(), d_dx.data(), d_dout.data(), spec);
  CHECK(identical(to_host(d_out), out_cpu));
  CHECK(identical(to_host(d_in_place), in_place_cpu));
  CHECK(identical(to_host(d_dx), dx_cpu));

  // p = 0 is the identity forward and a plain add backward
  spec.p = 0.0f;
  std::vector<float> copy_cpu = poisoned(n), dx2_cpu = dx0;
  core::dropout_forward(cpu(), copy_cpu.data(), x.data(), spec);
  core::dropout_backward(cpu(), dx2_cpu.data(), dout.data(), spec);
  auto d_copy = to_device(poisoned(n)), d_dx2 = to_device(dx0);
  core::dropout_forward(cuda(), d_copy.data(), d_x.data(), spec);
  core::dropout_backward(cuda(), d_dx2.data(), d_dout.data(), spec);
  CHECK(identical(to_host(d_copy), copy_cpu));
  CHECK(identical(to_host(d_dx2), dx2_cpu));
}

// ---- attention -----------------------------------------------------------------------------------

TEST_CASE("attention forward and backward equal the CPU, with and without dropout", "[gpu][attention]") {
  const int B = 2, T = 17, C = 24, NH = 3;
  const int64_t TT = int64_t{T} * T;
  const auto qkv = random_normal(B * T * 3 * C, 50), dout = random_normal(B * T * C, 51);
  const auto dqkv0 = random_normal(B * T * 3 * C, 52);
  auto d_qkv = to_device(qkv), d_dout = to_device(dout);
  for (float p : {0.0f, 0.25f}) {
    INFO("dropout " << p);
    core::DropoutSpec drop;
    drop.p = p;
    drop.key = core::dropout_key(99u, 1u, core::DropoutSite::attention_probs);
    drop.step = 3;
    // this rank's (B, NH, T*T) block sits at sequences [1, 3) and heads [3, 6) of a (5, 6, T*T) tensor
    const int64_t dims[3] = {B, NH, TT}, offsets[3] = {1, 3, 0}, global_dims[3] = {5, 6, TT};
    for (int k = 0; k < 3; ++k) {
      drop.block.dim[k] = dims[k];
      drop.block.offset[k] = offsets[k];
      drop.block.global_dim[k] = global_dims[k];
    }

    std::vector<float> out_cpu = poisoned(B * T * C), att_cpu = poisoned(B * NH * TT);
    core::attention_forward(cpu(), out_cpu.data(), att_cpu.data(), qkv.data(), B, T, C, NH, drop);
    std::vector<float> dqkv_cpu = dqkv0, datt_cpu = poisoned(B * NH * TT);
    core::attention_backward(cpu(), dqkv_cpu.data(), datt_cpu.data(), dout.data(), qkv.data(), att_cpu.data(), B, T, C,
                             NH, drop);

    auto d_out = to_device(poisoned(B * T * C)), d_att = to_device(poisoned(B * NH * TT));
    core::attention_forward(cuda(), d_out.data(), d_att.data(), d_qkv.data(), B, T, C, NH, drop);
    CHECK(agree(to_host(d_out), out_cpu));
    CHECK(agree(to_host(d_att), att_cpu));
    auto d_catt = to_device(att_cpu);  // backward from the CPU's probabilities
    auto d_dqkv = to_device(dqkv0), d_datt = to_device(poisoned(B * NH * TT));
    core::attention_backward(cuda(), d_dqkv.data(), d_datt.data(), d_dout.data(), d_qkv.data(), d_catt.data(), B, T, C,
                             NH, drop);
    CHECK(agree_added(to_host(d_dqkv), dqkv_cpu, dqkv0));
    CHECK(agree(to_host(d_datt), datt_cpu));  // the scratch ends as d(scores) on both
  }
}

// ---- embeddings ----------------------------------------------------------------------------------

TEST_CASE("embedding lookup and scatter-add over a vocab range equal the CPU bit for bit", "[gpu][embedding]") {
  // 300 tokens from a vocabulary of 1200, repeats included; this rank holds rows [500, 1100).
  const int N = 300, C = 70, v0 = 500, Vl = 600;
  const auto tokens = random_ints(N, 1200, 53);
  const auto wte = random_normal(int64_t{Vl} * C, 54), dout = random_normal(N * C, 55);
  const auto dwte0 = random_normal(int64_t{Vl} * C, 56);
  std::vector<float> out_cpu = poisoned(N * C), dwte_cpu = dwte0;
  core::embedding_forward(cpu(), out_cpu.data(), tokens.data(), wte.data(), N, C, v0, Vl);
  core::embedding_backward(cpu(), dwte_cpu.data(), dout.data(), tokens.data(), N, C, v0, Vl);
  auto d_tokens = to_device(tokens);
  auto d_wte = to_device(wte), d_dout = to_device(dout), d_out = to_device(poisoned(N * C)), d_dwte = to_device(dwte0);
  core::embedding_forward(cuda(), d_out.data(), d_tokens.data(), d_wte.data(), N, C, v0, Vl);
  core::embedding_backward(cuda(), d_dwte.data(), d_dout.data(), d_tokens.data(), N, C, v0, Vl);
  CHECK(identical(to_host(d_out), out_cpu));
  CHECK(identical(to_host(d_dwte), dwte_cpu));  // each element sums its tokens in order on both
}

TEST_CASE("position add forward and backward equal the CPU bit for bit", "[gpu][embedding]") {
  const int B = 3, T = 17, C = 70;
  const auto out0 = random_normal(B * T * C, 57), wpe = random_normal(T * C, 58), dwpe0 = random_normal(T * C, 59);
  std::vector<float> out_cpu = out0, dwpe_cpu = dwpe0;
  core::position_add_forward(cpu(), out_cpu.data(), wpe.data(), B, T, C);
  core::position_add_backward(cpu(), dwpe_cpu.data(), out0.data(), B, T, C);
  auto d_out = to_device(out0), d_wpe = to_device(wpe), d_dwpe = to_device(dwpe0), d_dout = to_device(out0);
  core::position_add_forward(cuda(), d_out.data(), d_wpe.data(), B, T, C);
  core::position_add_backward(cuda(), d_dwpe.data(), d_dout.data(), B, T, C);
  CHECK(identical(to_host(d_out), out_cpu));
  CHECK(identical(to_host(d_dwpe), dwpe_cpu));
}

// ---- cross-entropy -------------------------------------------------------------------------------

TEST_CASE("cross-entropy pieces on a vocab block with padding equal the CPU", "[gpu][crossentropy]") {
  // This rank holds vocab columns [140, 210); ids from 190 on are padding; targets anywhere in [0, 250).
  const int N = 37, Vl = 70, v0 = 140, V_real = 190;
  const auto logits = random_normal(N * Vl, 60, 3.0f);
  const auto targets = random_ints(N, 250, 61);
  const auto dlogits0 = random_normal(N * Vl, 62);
  auto d_logits = to_device(logits);
  auto d_targets = to_device(targets);

  std::vector<float> max_cpu = poisoned(N), sumexp_cpu = poisoned(N), target_cpu = poisoned(N);
  core::crossentropy_partial_max(cpu(), max_cpu.data(), logits.data(), N, Vl, v0, V_real);
  core::crossentropy_partial_sumexp(cpu(), sumexp_cpu.data(), logits.data(), max_cpu.data(), N, Vl, v0, V_real);
  core::crossentropy_partial_target(cpu(), target_cpu.data(), logits.data(), targets.data(), N, Vl, v0);
  std::vector<float> losses_cpu = poisoned(N), dlogits_cpu = dlogits0;
  core::crossentropy_losses(cpu(), losses_cpu.data(), max_cpu.data(), sumexp_cpu.data(), target_cpu.data(), N);
  core::crossentropy_backward(cpu(), dlogits_cpu.data(), logits.data(), max_cpu.data(), sumexp_cpu.data(),
                              targets.data(), 1.0f / N, N, Vl, v0, V_real);

  auto d_max = to_device(poisoned(N)), d_sumexp = to_device(poisoned(N)), d_target = to_device(poisoned(N));
  core::crossentropy_partial_max(cuda(), d_max.data(), d_logits.data(), N, Vl, v0, V_real);
  core::crossentropy_partial_sumexp(cuda(), d_sumexp.data(), d_logits.data(), d_max.data(), N, Vl, v0, V_real);
  core::crossentropy_partial_target(cuda(), d_target.data(), d_logits.data(), d_targets.data(), N, Vl, v0);
  CHECK(identical(to_host(d_max), max_cpu));  // a maximum is exact
  CHECK(agree(to_host(d_sumexp), sumexp_cpu));
  CHECK(identical(to_host(d_target), target_cpu));  // a lookup
  auto d_losses = to_device(poisoned(N)), d_dlogits = to_device(dlogits0);
  auto d_cmax = to_device(max_cpu), d_csumexp = to_device(sumexp_cpu), d_ctarget = to_device(target_cpu);
  core::crossentropy_losses(cuda(), d_losses.data(), d_cmax.data(), d_csumexp.data(), d_ctarget.data(), N);
  core::crossentropy_backward(cuda(), d_dlogits.data(), d_logits.data(), d_cmax.data(), d_csumexp.data(),
                              d_targets.data(), 1.0f / N, N, Vl, v0, V_real);
  CHECK(agree(to_host(d_losses), losses_cpu));
  CHECK(agree_added(to_host(d_dlogits), dlogits_cpu, dlogits0));

  // a block wholly of padding: max -inf, sum 0, and no gradient
  std::vector<float> pad_max_cpu = poisoned(N);
  core::crossentropy_partial_max(cpu(), pad_max_cpu.data(), logits.data(), N, Vl, 200, V_real);
  auto d_pad_max = to_device(poisoned(N));
  core::crossentropy_partial_max(cuda(), d_pad_max.data(), d_logits.data(), N, Vl, 200, V_real);
  CHECK(identical(to_host(d_pad_max), pad_max_cpu));
}

TEST_CASE("serial cross-entropy (all columns, padding at the end) equals the CPU", "[gpu][crossentropy]") {
  const int N = 45, V = 96, V_real = 90;
  const auto logits = random_normal(N * V, 63, 4.0f);
  const auto targets = random_ints(N, V_real, 64);
  std::vector<float> losses_cpu = poisoned(N), max_cpu = poisoned(N), sumexp_cpu = poisoned(N);
  core::crossentropy_forward(cpu(), losses_cpu.data(), max_cpu.data(), sumexp_cpu.data(), logits.data(), targets.data(),
                             N, V, V_real);
  auto d_logits = to_device(logits);
  auto d_targets = to_device(targets);
  auto d_losses = to_device(poisoned(N)), d_max = to_device(poisoned(N)), d_sumexp = to_device(poisoned(N));
  core::crossentropy_forward(cuda(), d_losses.data(), d_max.data(), d_sumexp.data(), d_logits.data(), d_targets.data(),
                             N, V, V_real);
  CHECK(agree(to_host(d_losses), losses_cpu));
  CHECK(identical(to_host(d_max), max_cpu));
  CHECK(agree(to_host(d_sumexp), sumexp_cpu));
}

// ---- AdamW ---------------------------------------------------------------------------------------

TEST_CASE("AdamW over three steps equals the CPU", "[gpu][adamw]") {
  const int64_t n = 10007;
  std::vector<float> param_cpu = random_normal(n, 65), m_cpu(static_cast<size_t>(n), 0.0f), v_cpu = m_cpu;
  auto d_param = to_device(param_cpu), d_m = to_device(m_cpu), d_v = to_device(v_cpu);
  core::AdamWConfig cfg;
  cfg.lr = 1e-2f;
  cfg.weight_decay = 0.1f;
  for (int step = 1; step <= 3; ++step) {
    cfg.step = step;
    const auto grad = random_normal(n, 66 + static_cast<uint32_t>(step));
    core::adamw_update(cpu(), param_cpu.data(), m_cpu.data(), v_cpu.data(), grad.data(), n, cfg);
    auto d_grad = to_device(grad);
    core::adamw_update(cuda(), d_param.data(), d_m.data(), d_v.data(), d_grad.data(), n, cfg);
  }
  CHECK(agree(to_host(d_param), param_cpu));
  CHECK(agree(to_host(d_m), m_cpu));
  CHECK(agree(to_host(d_v), v_cpu));
}

// ---- the context and its copies ------------------------------------------------------------------

TEST_CASE("copies of floats and token ids round-trip, and device buffers are in the ledger", "[gpu][context]") {
  const size_t before = cuda().ledger->current_total();
  const auto x = random_normal(1000, 70);
  const auto ids = random_ints(1000, 50257, 71);
  {
    auto d_x = to_device(x);
    auto d_ids = to_device(ids);
    CHECK(cuda().ledger->current_total() == before + 2 * 1000 * 4);
    core::Buffer d_y(*cuda().ledger, core::MemoryCategory::activations, {1000}, core::Device::cuda);
    core::copy_on_device(cuda(), d_y.data(), d_x.data(), 1000);
    CHECK(identical(to_host(d_y), x));
    std::vector<int> ids_back(1000, -1);
    core::copy_to_host(cuda(), ids_back.data(), d_ids.data(), 1000);
    CHECK(ids_back == ids);
    core::Buffer zeroed(*cuda().ledger, core::MemoryCategory::activations, {77}, core::Device::cuda);
    CHECK(identical(to_host(zeroed), std::vector<float>(77, 0.0f)));  // device Buffers start at zero too
    core::synchronize(cuda());
  }
  CHECK(cuda().ledger->current_total() == before);
}
