// L0 tests of AdamW: several steps against the float64 reference of torch.optim.AdamW,
// with and without weight decay, and two steps worked out by hand so that the expected numbers do
// not come from running any code.
#include <catch2/catch.hpp>

#include <vector>

#include "core/ops.h"
#include "unit/check.h"
#include "unit/reference_dense.h"
#include "unit/reference_loss.h"

using namespace optimus;
using namespace optimus::testing;

TEST_CASE("AdamW over 5 steps equals the float64 reference, with and without weight decay", "[ops]") {
  const core::Context ctx = core::cpu_context();
  const int64_t n = 1000;
  core::AdamWConfig cfg;
  cfg.lr = 1e-2f;
  cfg.beta1 = 0.9f;
  cfg.beta2 = 0.95f;
  cfg.eps = 1e-8f;
  cfg.weight_decay = GENERATE(0.0f, 0.1f);
  CAPTURE(cfg.weight_decay);

  std::vector<float> param = random_normal(n, 30), m(n, 0.0f), v(n, 0.0f);  // (n) each
  ref::AdamWState state{to_double(param), std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
  for (int t = 1; t <= 5; ++t) {
    const std::vector<float> grad = random_normal(n, 30 + t, 0.1f);  // (n)
    cfg.step = t;
    core::adamw_update(ctx, param.data(), m.data(), v.data(), grad.data(), n, cfg);
    ref::adamw_step(state, to_double(grad), cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay, t);

    const double err_param = rel_error(param, state.param);
    const double err_m = rel_error(m, state.m);
    const double err_v = rel_error(v, state.v);
    INFO(ref::side_by_side(param, state.param));
    CAPTURE(t, err_param, err_m, err_v);
    CHECK(err_param <= 1e-5);
    CHECK(err_m <= 1e-5);
    CHECK(err_v <= 1e-5);
  }
}

TEST_CASE("AdamW's first two steps match numbers worked out by hand", "[ops]") {
  // lr = 0.1, β1 = 0.9, β2 = 0.999, eps = 1e-8, weight decay 0.1, so the decay factor is
  // 1 − 0.1·0.1 = 0.99. The same gradient at both steps, so bias correction must give back
  // m̂ = g and v̂ = g² exactly, and each step moves a parameter by lr·sign(g) after the decay.
  //
  // step 1 (1 − β1 = 0.1, 1 − β2 = 0.001):
  //   θ = 1,  g = 0.5: θ = 0.99;  m = 0.1·0.5 = 0.05;  v = 0.001·0.25 = 0.00025;
  //                    m̂ = 0.05/0.1 = 0.5;  v̂ = 0.00025/0.001 = 0.25;  θ = 0.99 − 0.1·0.5/0.5 = 0.89
  //   θ = −3, g = −2:  θ = −2.97; m = −0.2;  v = 0.004;  m̂ = −2;  v̂ = 4;  θ = −2.97 + 0.1 = −2.87
  //   θ = 2,  g = 0:   θ = 1.98;  m = v = 0;  the step is 0/(0 + eps) = 0, so only the decay acts
  // step 2 (1 − β1² = 0.19, 1 − β2² = 0.001999):
  //   θ = 0.89·0.99 = 0.8811;  m = 0.9·0.05 + 0.05 = 0.095;  v = 0.999·0.00025 + 0.00025 = 0.00049975;
  //                    m̂ = 0.095/0.19 = 0.5;  v̂ = 0.00049975/0.001999 = 0.25;  θ = 0.8811 − 0.1 = 0.7811
  //   θ = −2.87·0.99 = −2.8413;  m = −0.18 − 0.2 = −0.38;  v = 0.003996 + 0.004 = 0.007996;
  //                    m̂ = −2;  v̂ = 4;  θ = −2.8413 + 0.1 = −2.7413
  //   θ = 1.98·0.99 = 1.9602
  // (eps shifts each step by lr·eps/|g| ≤ 2e-9, far below the tolerance. The float β's are not
  // exactly 0.9 and 0.999: 1 − 0.999f is 1.3e-5 relative away from 0.001, which moves v that much,
  // hence the 1e-4 tolerance on m and v. It does not move θ: for a constant gradient m̂ = g and
  // v̂ = g² hold for any β.)
  const core::Context ctx = core::cpu_context();
  core::AdamWConfig cfg;
  cfg.lr = 0.1f;
  cfg.beta1 = 0.9f;
  cfg.beta2 = 0.999f;
  cfg.eps = 1e-8f;
  cfg.weight_decay = 0.1f;
  std::vector<float> param = {1.0f, -3.0f, 2.0f}, m(3, 0.0f), v(3, 0.0f);
  const std::vector<float> grad = {0.5f, -2.0f, 0.0f};

  cfg.step = 1;
  core::adamw_update(ctx, param.data(), m.data(), v.data(), grad.data(), 3, cfg);
  const std::vector<double> param1 = {0.89, -2.87, 1.98}, m1 = {0.05, -0.2, 0.0}, v1 = {0.00025, 0.004, 0.0};
  for (int k = 0; k < 3; ++k) {
    INFO("step 1, element " << k);
    CHECK(param[k] == Approx(param1[k]).margin(1e-6));
    CHECK(m[k] == Approx(m1[k]).epsilon(1e-4).margin(1e-12));
    CHECK(v[k] == Approx(v1[k]).epsilon(1e-4).margin(1e-12));
  }

  cfg.step = 2;
  core::adamw_update(ctx, param.data(), m.data(), v.data(), grad.data(), 3, cfg);
  const std::vector<double> param2 = {0.7811, -2.7413, 1.9602}, m2 = {0.095, -0.38, 0.0},
                            v2 = {0.00049975, 0.007996, 0.0};
  for (int k = 0; k < 3; ++k) {
    INFO("step 2, element " << k);
    CHECK(param[k] == Approx(param2[k]).margin(1e-6));
    CHECK(m[k] == Approx(m2[k]).epsilon(1e-4).margin(1e-12));
    CHECK(v[k] == Approx(v2[k]).epsilon(1e-4).margin(1e-12));
  }
}
