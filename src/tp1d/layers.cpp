// Megatron's parallel layers: core ops plus the region's f and g.
#include "tp1d/layers.h"

#include "core/ops.h"

namespace optimus::tp1d {

void column_parallel_linear_forward(const core::Context& ctx, Region& region, float* out, const float* inp,
                                    const float* w, const float* b, int N, int C, int OC) {
  const int OCp = OC / region.comm().size();
  const float* x = region.f_forward(inp, N, C);  // (N, C) every row
  core::linear_forward(ctx, out, x, w, b, N, C, OCp);
}

void column_parallel_linear_backward(const core::Context& ctx, Region& region, const core::LayerGrads& add_to,
                                     const float* dout, const float* inp, const float* w, int N, int C, int OC) {
  const int OCp = OC / region.comm().size();
  float* partial = region.partial(ctx, add_to.dinp);  // (N, C) my partial gradient of every row
  const float* x = region.f_forward(inp, N, C);
  core::linear_backward(ctx, {.dinp = partial, .dweight = add_to.dweight, .dbias = add_to.dbias}, dout, x, w, N, C,
                        OCp);
  region.f_backward(add_to.dinp, partial, N, C);
}

void row_parallel_linear_forward(const core::Context& ctx, Region& region, float* out, const float* inp, const float* w,
                                 const float* b, int N, int C, int OC) {
  const int Cp = C / region.comm().size();
  float* partial = region.g_partial(out);  // (N, OC) my partial sums of every row
  core::linear_forward(ctx, partial, inp, w, nullptr, N, Cp, OC);
  region.g_forward(out, partial, N, OC);
  if (b != nullptr) core::bias_add_forward(ctx, out, b, static_cast<int>(region.rows(N)), OC);
}

void row_parallel_linear_backward(const core::Context& ctx, Region& region, const core::LayerGrads& add_to,
                                  const float* dout, const float* inp, const float* w, int N, int C, int OC) {
  const int Cp = C / region.comm().size();
  const float* dy = region.g_backward(dout, N, OC);  // (N, OC) every row's gradient
  if (add_to.dbias != nullptr) core::bias_add_backward(ctx, add_to.dbias, dy, N, OC);
  core::linear_backward(ctx, {.dinp = add_to.dinp, .dweight = add_to.dweight}, dy, inp, w, N, Cp, OC);
}

void vocab_parallel_embedding_forward(const core::Context& ctx, comm::Communicator& tp, float* out, const int* tokens,
                                      const float* wte, int N, int C, int V) {
  const int Vp = V / tp.size();
  core::embedding_forward(ctx, out, tokens, wte, N, C, tp.rank() * Vp, Vp);
  tp.all_reduce(out, int64_t{N} * C);  // g forward
}

void vocab_parallel_embedding_backward(const core::Context& ctx, comm::Communicator& tp, float* dwte, const float* dout,
                                       const int* tokens, int N, int C, int V) {
  const int Vp = V / tp.size();  // g backward is the identity
  core::embedding_backward(ctx, dwte, dout, tokens, N, C, tp.rank() * Vp, Vp);
}

}  // namespace optimus::tp1d
