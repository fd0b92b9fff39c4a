// The first 3D layers: core ops, the 3D product, and an all-reduce along the line that holds a
// row's columns.
#include "tp3d/layers.h"

#include <string>

#include "core/ops.h"
#include "core/tensor.h"
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
  const int q = cube.q(), Nr = N / (q * q), Cb = C / q;  // my rows, my columns
  comm::Communicator& row = lines(cube, o).in;           // the q ranks holding my rows' C columns
  core::layernorm_partial_sum(ctx, mean, inp, Nr, Cb);
  row.all_reduce(mean, Nr);  // the row sum over all C columns
  core::layernorm_partial_sqdev(ctx, rstd, inp, mean, Nr, Cb, C);
  row.all_reduce(rstd, Nr);  // Σ (x − mean)² over all C columns
  core::layernorm_normalize(ctx, out, mean, rstd, inp, mean, rstd, weight, bias, Nr, Cb, C, eps);
}

void layernorm_3d_backward(const core::Context& ctx, const comm::Grid3D& cube, const core::LayerGrads& add_to,
                           const float* dout, const float* inp, const float* weight, const float* mean,
                           const float* rstd, int N, int C, Orientation o) {
  check_layernorm_sizes(cube, N, C);
  const int q = cube.q(), Nr = N / (q * q), Cb = C / q;
  core::Buffer sums = scratch(ctx, 2, Nr);  // (2, N/q²): Σ g, then Σ g·x̂
  float* sum_g = sums.data();
  float* sum_gx = sums.data() + Nr;
  core::layernorm_backward_partial(ctx, sum_g, sum_gx, dout, inp, weight, mean, rstd, Nr, Cb);
  lines(cube, o).in.all_reduce(sums.data(), 2 * int64_t{Nr});  // both sums over all C columns, one call
  core::layernorm_backward_apply(ctx, add_to, dout, inp, weight, mean, rstd, sum_g, sum_gx, Nr, Cb, C);
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
