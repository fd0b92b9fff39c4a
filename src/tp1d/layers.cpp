// Megatron's parallel layers: core ops plus the f and g operators.
#include "tp1d/layers.h"

#include "core/ops.h"
#include "tp1d/mappings.h"

namespace optimus::tp1d {

void column_parallel_linear_forward(const core::Context& ctx, float* out, const float* inp, const float* w,
                                    const float* b, int N, int C, int OCp) {
  f_forward();
  core::linear_forward(ctx, out, inp, w, b, N, C, OCp);
}

void column_parallel_linear_backward(const core::Context& ctx, comm::Communicator& tp, const core::LayerGrads& add_to,
                                     const float* dout, const float* inp, const float* w, int N, int C, int OCp) {
  core::linear_backward(ctx, add_to, dout, inp, w, N, C, OCp);
  f_backward(tp, add_to.dinp, int64_t{N} * C);
}

void row_parallel_linear_forward(const core::Context& ctx, comm::Communicator& tp, float* out, const float* inp,
                                 const float* w, const float* b, int N, int Cp, int OC) {
  core::linear_forward(ctx, out, inp, w, nullptr, N, Cp, OC);
  g_forward(tp, out, int64_t{N} * OC);
  if (b != nullptr) core::bias_add_forward(ctx, out, b, N, OC);
}

void row_parallel_linear_backward(const core::Context& ctx, const core::LayerGrads& add_to, const float* dout,
                                  const float* inp, const float* w, int N, int Cp, int OC) {
  if (add_to.dbias != nullptr) core::bias_add_backward(ctx, add_to.dbias, dout, N, OC);
  g_backward();
  core::linear_backward(ctx, {.dinp = add_to.dinp, .dweight = add_to.dweight}, dout, inp, w, N, Cp, OC);
}

void column_parallel_linear_forward_sp(const core::Context& ctx, comm::Communicator& tp, float* out, float* gathered,
                                       const float* inp, const float* w, const float* b, int N, int C, int OCp) {
  const int p = tp.size();
  f_sp_forward(tp, gathered, inp, int64_t{N / p} * C);
  core::linear_forward(ctx, out, gathered, w, b, N, C, OCp);
}

void column_parallel_linear_backward_sp(const core::Context& ctx, comm::Communicator& tp,
                                        const core::LayerGrads& add_to, float* gathered, float* partial,
                                        const float* dout, const float* inp, const float* w, int N, int C, int OCp) {
  const int p = tp.size();
  f_sp_forward(tp, gathered, inp, int64_t{N / p} * C);
  core::linear_backward(ctx, {.dinp = partial, .dweight = add_to.dweight, .dbias = add_to.dbias}, dout, gathered, w, N,
                        C, OCp);
  f_sp_backward(tp, add_to.dinp, partial, int64_t{N / p} * C);
}

void row_parallel_linear_forward_sp(const core::Context& ctx, comm::Communicator& tp, float* out, float* partial,
                                    const float* inp, const float* w, const float* b, int N, int Cp, int OC) {
  const int Np = N / tp.size();
  core::linear_forward(ctx, partial, inp, w, nullptr, N, Cp, OC);
  g_sp_forward(tp, out, partial, int64_t{Np} * OC);
  if (b != nullptr) core::bias_add_forward(ctx, out, b, Np, OC);
}

void row_parallel_linear_backward_sp(const core::Context& ctx, comm::Communicator& tp, const core::LayerGrads& add_to,
                                     float* gathered, const float* dout, const float* inp, const float* w, int N,
                                     int Cp, int OC) {
  g_sp_backward(tp, gathered, dout, int64_t{N / tp.size()} * OC);
  row_parallel_linear_backward(ctx, add_to, gathered, inp, w, N, Cp, OC);
}

void vocab_parallel_embedding_forward(const core::Context& ctx, comm::Communicator& tp, float* out, const int* tokens,
                                      const float* wte, int N, int C, int v0, int Vp) {
  core::embedding_forward(ctx, out, tokens, wte, N, C, v0, Vp);
  g_forward(tp, out, int64_t{N} * C);
}

void vocab_parallel_embedding_backward(const core::Context& ctx, float* dwte, const float* dout, const int* tokens,
                                       int N, int C, int v0, int Vp) {
  g_backward();
  core::embedding_backward(ctx, dwte, dout, tokens, N, C, v0, Vp);
}

}  // namespace optimus::tp1d
