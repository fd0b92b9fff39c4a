// The first 3D layers: the 3D product plus a bias, and model's split LayerNorm along the line of
// the cube that holds a row's columns.
#include "tp3d/layers.h"

#include <string>

#include "core/ops.h"
#include "model/split_layernorm.h"
#include "tp3d/shared.h"

namespace optimus::tp3d {

namespace {

void check_layernorm_sizes(const comm::Grid3D& cube, int N, int C) {
  const int q = cube.q();
  const std::string who = "3D LayerNorm";
  check_multiple(who, "N (the rows)", N, q * q, "q²", "they are cut into q² row pieces");
  check_multiple(who, "C (the columns)", C, q, "q", "they are cut into q column blocks");
}

}  // namespace

// ---- LayerNorm ----------------------------------------------------------------------------------

void layernorm_3d_forward(const core::Context& ctx, const comm::Grid3D& cube, float* out, float* mean, float* rstd,
                          const float* inp, const float* weight, const float* bias, int N, int C, float eps,
                          Orientation o) {
  check_layernorm_sizes(cube, N, C);
  // The q ranks of the `in` line hold my rows' C columns between them.
  const int q = cube.q();
  model::split_layernorm_forward(ctx, lines(cube, o).in, out, mean, rstd, inp, weight, bias, N / (q * q), C / q, C,
                                 eps);
}

void layernorm_3d_backward(const core::Context& ctx, const comm::Grid3D& cube, const core::LayerGrads& add_to,
                           const float* dout, const float* inp, const float* weight, const float* mean,
                           const float* rstd, int N, int C, Orientation o) {
  check_layernorm_sizes(cube, N, C);
  const int q = cube.q();
  model::split_layernorm_backward(ctx, lines(cube, o).in, add_to, dout, inp, weight, mean, rstd, N / (q * q), C / q, C);
}

// ---- linear -------------------------------------------------------------------------------------

void linear_3d_forward(const core::Context& ctx, const comm::Grid3D& cube, float* out, const float* inp, const float* w,
                       const float* b, int N, int C, int OC, Orientation o) {
  product_3d(ctx, cube, out, inp, w, N, OC, C, o);  // (N, OC) = (N, C)·(C, OC)
  const int q = cube.q();
  if (b != nullptr) core::bias_add_forward(ctx, out, b, N / (q * q), OC / q);  // out's column block is b's
}

void linear_3d_backward(const core::Context& ctx, const comm::Grid3D& cube, const core::LayerGrads& add_to,
                        const float* dout, const float* inp, const float* w, int N, int C, int OC, Orientation o) {
  product_3d_backward(ctx, cube, add_to.dinp, add_to.dweight, dout, inp, w, N, OC, C, o);  // checks the sizes
  const int q = cube.q();
  if (add_to.dbias != nullptr) core::bias_add_backward(ctx, add_to.dbias, dout, N / (q * q), OC / q);  // my rows
}

}  // namespace optimus::tp3d
