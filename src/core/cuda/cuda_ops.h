// The CUDA backend's ops: the same functions as core/ops.h, with the same arguments and the same
// rules (outputs first; backward ops accumulate; nullptr gradients are skipped), on device memory
// and queued on the context's stream. The CPU op in core/cpu/ hands a CUDA context here
// (core/dispatch.h), so stages call only core::op(ctx, ...). Composite ops (matmul, linear_*,
// layernorm_forward, crossentropy_forward, matmul_backward) have no entry here: their CPU code is
// a sequence of these pieces and dispatches piece by piece. Plain C++: no CUDA types, so the CPU
// files can include it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/ops.h"

namespace optimus::core::cuda {

// ---- matmul.cu: cuBLAS products and the bias --------------------------------------------------
void matmul_strided(const Context& ctx, float* c, int ldc, const float* a, int lda, const float* b, int ldb, int M,
                    int N, int K, Trans ta, Trans tb, float alpha, float beta);
void bias_add_forward(const Context& ctx, float* out, const float* bias, int N, int OC);
void bias_add_backward(const Context& ctx, float* dbias, const float* dout, int N, int OC);

// ---- layernorm.cu ------------------------------------------------------------------------------
void layernorm_partial_sum(const Context& ctx, float* sum, const float* inp, int N, int C);
void layernorm_partial_sqdev(const Context& ctx, float* sqdev, const float* inp, const float* sum, int N, int C,
                             int C_total);
void layernorm_normalize(const Context& ctx, float* out, float* mean, float* rstd, const float* inp, const float* sum,
                         const float* sqdev, const float* weight, const float* bias, int N, int C, int C_total,
                         float eps);
void layernorm_backward_partial(const Context& ctx, float* sum_g, float* sum_gx, const float* dout, const float* inp,
                                const float* weight, const float* mean, const float* rstd, int N, int C);
void layernorm_backward_apply(const Context& ctx, const LayerGrads& add_to, const float* dout, const float* inp,
                              const float* weight, const float* mean, const float* rstd, const float* sum_g,
                              const float* sum_gx, int N, int C, int C_total);
void layernorm_backward(const Context& ctx, const LayerGrads& add_to, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C);

// ---- elementwise.cu ----------------------------------------------------------------------------
void gelu_forward(const Context& ctx, float* out, const float* inp, int64_t n);
void gelu_backward(const Context& ctx, float* dinp, const float* inp, const float* dout, int64_t n);
void residual_forward(const Context& ctx, float* out, const float* a, const float* b, int64_t n);
void zero(const Context& ctx, float* x, int64_t n);
void scale(const Context& ctx, float* x, float s, int64_t n);
void sum_squares(const Context& ctx, double* out, const float* x, int64_t n);
void sum(const Context& ctx, double* out, const float* x, int64_t n);

// ---- dropout.cu --------------------------------------------------------------------------------
void dropout_forward(const Context& ctx, float* out, const float* inp, const DropoutSpec& spec);
void dropout_backward(const Context& ctx, float* dinp, const float* dout, const DropoutSpec& spec);

// ---- attention.cu ------------------------------------------------------------------------------
void attention_forward(const Context& ctx, float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                       const DropoutSpec& drop);
void attention_backward(const Context& ctx, float* dqkv, float* datt, const float* dout, const float* qkv,
                        const float* att, int B, int T, int C, int NH, const DropoutSpec& drop);

// ---- embedding.cu ------------------------------------------------------------------------------
void embedding_forward(const Context& ctx, float* out, const int* tokens, const float* wte, int N, int C, int v0,
                       int Vl);
void embedding_backward(const Context& ctx, float* dwte, const float* dout, const int* tokens, int N, int C, int v0,
                        int Vl);
void position_add_forward(const Context& ctx, float* out, const float* wpe, int B, int T, int C);
void position_add_backward(const Context& ctx, float* dwpe, const float* dout, int B, int T, int C);

// ---- crossentropy.cu ---------------------------------------------------------------------------
void crossentropy_partial_max(const Context& ctx, float* maxes, const float* logits, int N, int Vl, int v0, int V_real);
void crossentropy_partial_sumexp(const Context& ctx, float* sumexp, const float* logits, const float* maxes, int N,
                                 int Vl, int v0, int V_real);
void crossentropy_partial_target(const Context& ctx, float* target_logit, const float* logits, const int* targets,
                                 int N, int Vl, int v0);
void crossentropy_losses(const Context& ctx, float* losses, const float* maxes, const float* sumexp,
                         const float* target_logit, int N);
void crossentropy_backward(const Context& ctx, float* dlogits, const float* logits, const float* maxes,
                           const float* sumexp, const int* targets, float dloss, int N, int Vl, int v0, int V_real);

// ---- adamw.cu ----------------------------------------------------------------------------------
void adamw_update(const Context& ctx, float* param, float* m, float* v, const float* grad, int64_t n,
                  const AdamWConfig& cfg);

// ---- device.cu: copies and waiting (core/context.h's helpers on a CUDA context) ----------------
void copy_bytes_to_device(const Context& ctx, void* device_dst, const void* host_src, size_t bytes);
void copy_bytes_to_host(const Context& ctx, void* host_dst, const void* device_src, size_t bytes);
void copy_bytes_on_device(const Context& ctx, void* device_dst, const void* device_src, size_t bytes);
void synchronize(const Context& ctx);

}  // namespace optimus::core::cuda
