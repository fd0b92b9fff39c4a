// The kernel core's ops: every piece of arithmetic the three stages do.
// Each op is a free function: the Context first, then outputs, then inputs, then sizes, the way
// llm.c writes them. Each forward op has its backward beside it. Rules that hold for every op:
//   - arrays are row-major float32; shapes are given in the comment, e.g. (N, C);
//   - forward ops overwrite their outputs (ops named *_add add into them, as the comment says);
//   - backward ops ACCUMULATE (+=) into every gradient output, so a tensor used twice (the tied
//     wte, a residual stream) simply receives both contributions. An op with the three gradients
//     of a layer takes them as one LayerGrads named `add_to`; an activation gradient that one op
//     makes is passed as zeroed(ctx, buffer) (both just below);
//   - a gradient output may be nullptr when the caller does not need it.
// The pieces with "partial" in their names compute over a block of columns; a serial op is the
// same pieces over all columns, and the 2D stage puts a row all-reduce between them. That is how
// one implementation serves every stage and how the stages agree to the last bit of each piece.
#pragma once

#include <cstdint>

#include "core/context.h"
#include "core/philox.h"
#include "core/tensor.h"

namespace optimus::core {

// ---- gradient outputs -------------------------------------------------------------------------

/// The gradients a backward op adds into (+=) for a layer with an input, a weight and a bias:
/// dinp += ∂L/∂inp, dweight += ∂L/∂weight, dbias += ∂L/∂bias; a null member is not computed.
/// Callers name the members, `{.dinp = d_ln, .dweight = dw.c_fc_w, .dbias = dw.c_fc_b}`, so a
/// swapped pair shows at the call instead of compiling unseen.
struct LayerGrads {
  float* dinp = nullptr;
  float* dweight = nullptr;
  float* dbias = nullptr;
};

/// b's data, set to 0 first: the output of a backward op that makes an activation gradient on
/// its own. The op adds into it, so `gelu_backward(ctx, zeroed(ctx, d_fch), ...)` leaves exactly
/// that op's gradient in d_fch. (Parameter gradients collect from several ops and layers; they
/// are zeroed once a step, by ParamSet::zero_grads.)
float* zeroed(const Context& ctx, Buffer& b);

// ---- matrix products (OpenBLAS on the CPU, cuBLAS on the GPU) ---------------------------------

enum class Trans { no, yes };

/// c (M, N) = alpha * op(a) * op(b) + beta * c, where op(a) is (M, K) and op(b) is (K, N).
/// a is stored (M, K) if ta == no, else (K, M); b is stored (K, N) if tb == no, else (N, K).
/// Leading dimensions are the natural ones (contiguous matrices).
void matmul(const Context& ctx, float* c, const float* a, const float* b, int M, int N, int K, Trans ta, Trans tb,
            float alpha = 1.0f, float beta = 0.0f);

/// The same with explicit leading dimensions (row strides), for blocks of larger matrices such as
/// one head's columns of qkv.
void matmul_strided(const Context& ctx, float* c, int ldc, const float* a, int lda, const float* b, int ldb, int M,
                    int N, int K, Trans ta, Trans tb, float alpha = 1.0f, float beta = 0.0f);

/// Backward of c = op(a) * op(b): da += dc-derived gradient of a, db += that of b (stored like a, b).
void matmul_backward(const Context& ctx, float* da, float* db, const float* dc, const float* a, const float* b, int M,
                     int N, int K, Trans ta, Trans tb);

/// A GPT-2 Conv1D linear layer: out (N, OC) = inp (N, C) * weight (C, OC) + bias (OC). bias may be null.
void linear_forward(const Context& ctx, float* out, const float* inp, const float* weight, const float* bias, int N,
                    int C, int OC);
/// add_to: dinp (N, C) += dout * weightᵀ; dweight (C, OC) += inpᵀ * dout; dbias (OC) += column
/// sums of dout.
void linear_backward(const Context& ctx, const LayerGrads& add_to, const float* dout, const float* inp,
                     const float* weight, int N, int C, int OC);

/// out (N, OC) += bias (OC) on every row. (Megatron and Optimus add some biases after a reduction.)
void bias_add_forward(const Context& ctx, float* out, const float* bias, int N, int OC);
/// dbias (OC) += column sums of dout (N, OC).
void bias_add_backward(const Context& ctx, float* dbias, const float* dout, int N, int OC);

// ---- LayerNorm (two-pass statistics) ----------------------------------------------------------
// eps is the model's layer_norm_epsilon (GPTConfig, read from config.json; GPT-2 uses 1e-5). Only
// the forward pieces take it: the backward works from the rstd the forward saved.

/// out (N, C) = (inp - mean) * rstd * weight + bias, per row, with rstd = 1 / sqrt(var + eps);
/// mean (N) and rstd (N) are kept for backward.
void layernorm_forward(const Context& ctx, float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int N, int C, float eps);
/// add_to: dinp (N, C), dweight (C), dbias (C) += gradients, given the saved mean and rstd.
void layernorm_backward(const Context& ctx, const LayerGrads& add_to, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C);

// The pieces, for a row split over ranks: C is the local width, C_total the full width of a row.
/// sum (N) = Σ_c inp[n, c] over the local columns (first pass).
void layernorm_partial_sum(const Context& ctx, float* sum, const float* inp, int N, int C);
/// sqdev (N) = Σ_c (inp[n, c] - sum[n] / C_total)² over the local columns (second pass).
void layernorm_partial_sqdev(const Context& ctx, float* sqdev, const float* inp, const float* sum, int N, int C,
                             int C_total);
/// From full-row sum and sqdev: mean = sum / C_total, rstd = 1 / sqrt(sqdev / C_total + eps), and
/// out = (inp - mean) * rstd * weight + bias on the local columns. mean may alias sum, rstd sqdev.
void layernorm_normalize(const Context& ctx, float* out, float* mean, float* rstd, const float* inp, const float* sum,
                         const float* sqdev, const float* weight, const float* bias, int N, int C, int C_total,
                         float eps);
/// With g = dout * weight and xhat = (inp - mean) * rstd: sum_g (N) = Σ_c g, sum_gx (N) = Σ_c g * xhat
/// over the local columns.
void layernorm_backward_partial(const Context& ctx, float* sum_g, float* sum_gx, const float* dout, const float* inp,
                                const float* weight, const float* mean, const float* rstd, int N, int C);
/// From full-row sum_g, sum_gx, add_to on the local columns: dinp += rstd * (g - sum_g / C_total -
/// xhat * sum_gx / C_total); dweight += Σ_n dout * xhat; dbias += Σ_n dout.
void layernorm_backward_apply(const Context& ctx, const LayerGrads& add_to, const float* dout, const float* inp,
                              const float* weight, const float* mean, const float* rstd, const float* sum_g,
                              const float* sum_gx, int N, int C, int C_total);

// ---- elementwise ------------------------------------------------------------------------------

/// GELU, tanh approximation (GPT-2's gelu_new): out (n) = 0.5 x (1 + tanh(√(2/π)(x + 0.044715 x³))).
void gelu_forward(const Context& ctx, float* out, const float* inp, int64_t n);
/// dinp (n) += gelu'(inp) * dout.
void gelu_backward(const Context& ctx, float* dinp, const float* inp, const float* dout, int64_t n);

/// out (n) = a + b. Its backward is no op: the gradient of out is that of a and of b, so a stage
/// keeps the residual stream's gradient in one buffer and each branch's backward adds into it.
void residual_forward(const Context& ctx, float* out, const float* a, const float* b, int64_t n);

/// Where a local block sits in its canonical tensor: the local array is (d0, d1, d2), the canonical
/// one (g0, g1, g2), and local (a, b, c) is canonical (o0 + a, o1 + b, o2 + c). Activations
/// (rows, cols) use d2 = g2 = 1; attention probabilities use (B, NH, T*T).
struct GlobalBlock {
  int64_t dim[3] = {0, 1, 1};
  int64_t offset[3] = {0, 0, 0};
  int64_t global_dim[3] = {0, 1, 1};

  /// A whole tensor of n elements.
  static GlobalBlock whole(int64_t n);
  /// Rows [row0, row0 + rows) and columns [col0, col0 + cols) of a (total_rows, total_cols) matrix.
  static GlobalBlock matrix(int64_t rows, int64_t cols, int64_t row0, int64_t col0, int64_t total_rows,
                            int64_t total_cols);
  int64_t numel() const { return dim[0] * dim[1] * dim[2]; }
  /// The canonical flat index of local flat index k.
  int64_t global_index(int64_t k) const;
};

/// Dropout on a block: element k is kept when philox_uniform(key, block.global_index(k), step) >= p,
/// and kept elements are scaled by 1 / (1 - p). p = 0 means identity. Masks are recomputed from the
/// counter in backward, never stored.
struct DropoutSpec {
  float p = 0.0f;
  PhiloxKey key{};
  uint32_t step = 0;
  GlobalBlock block{};
};

/// out (n) = dropout(inp), n = spec.block.numel(). out may equal inp.
void dropout_forward(const Context& ctx, float* out, const float* inp, const DropoutSpec& spec);
/// dinp (n) += mask * dout / (1 - p).
void dropout_backward(const Context& ctx, float* dinp, const float* dout, const DropoutSpec& spec);

/// x (n) = 0.
void zero(const Context& ctx, float* x, int64_t n);
/// x (n) *= s.
void scale(const Context& ctx, float* x, float s, int64_t n);
/// out (one double) = Σ x², accumulated in double. out is host memory.
void sum_squares(const Context& ctx, double* out, const float* x, int64_t n);
/// out (one double, host memory) = Σ x. Both sums run in chunks of 2^14 elements, summed in
/// order, then the chunks in order: for n ≤ 2^14 exactly the sequential double sum, and the same
/// bits for any number of threads and on the GPU. (A stage sums its per-token losses with it.)
void sum(const Context& ctx, double* out, const float* x, int64_t n);

// ---- attention --------------------------------------------------------------------------------

/// Causal self-attention for B sequences and NH heads (a rank's block of (sequence, head) pairs).
/// qkv (B, T, 3C): columns [Q | K | V], each C = NH * HS wide, head h at columns [h*HS, (h+1)*HS).
/// att (B, NH, T, T): softmax(q·kᵀ / √HS) with the causal mask (zeros above the diagonal), before
/// dropout; kept for backward. out (B, T, C) = dropout(att) · v, heads side by side.
/// drop.block must be (B, NH, T*T) placed in the canonical (B_total, NH_total, T*T); with p > 0 a
/// block of another shape is std::invalid_argument.
void attention_forward(const Context& ctx, float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                       const DropoutSpec& drop);
/// dqkv (B, T, 3C) += gradients of q, k, v. datt (B, NH, T, T) is scratch the caller provides.
void attention_backward(const Context& ctx, float* dqkv, float* datt, const float* dout, const float* qkv,
                        const float* att, int B, int T, int C, int NH, const DropoutSpec& drop);

// ---- embeddings -------------------------------------------------------------------------------

/// out (N, C) = wte[tokens[n] - v0] for tokens in [v0, v0 + Vl), and 0 for others.
/// wte (Vl, C) is a block of vocab rows (and possibly of columns: C is the local width).
void embedding_forward(const Context& ctx, float* out, const int* tokens, const float* wte, int N, int C, int v0,
                       int Vl);
/// dwte (Vl, C) += the rows of dout (N, C) whose tokens fall in [v0, v0 + Vl) (scatter-add).
void embedding_backward(const Context& ctx, float* dwte, const float* dout, const int* tokens, int N, int C, int v0,
                        int Vl);
/// out (B, T, C) += wpe (T, C) broadcast over B.
void position_add_forward(const Context& ctx, float* out, const float* wpe, int B, int T, int C);
/// dwpe (T, C) += Σ_b dout (B, T, C).
void position_add_backward(const Context& ctx, float* dwpe, const float* dout, int B, int T, int C);

// ---- softmax cross-entropy --------------------------------------------------------------------
// logits (N, Vl) hold the columns [v0, v0 + Vl) of the vocabulary; ids >= V_real are padding and
// take no part. The serial loss is the composite over all columns (v0 = 0, Vl = V); the vocab-
// parallel loss all-reduces max, sum of exponentials and target logit between the pieces.

/// maxes (N) = max over the local real columns (-inf if there are none).
void crossentropy_partial_max(const Context& ctx, float* maxes, const float* logits, int N, int Vl, int v0, int V_real);
/// sumexp (N) = Σ exp(logit - maxes[n]) over the local real columns, maxes being the full-row max.
void crossentropy_partial_sumexp(const Context& ctx, float* sumexp, const float* logits, const float* maxes, int N,
                                 int Vl, int v0, int V_real);
/// target_logit (N) = logits[n, targets[n] - v0] if the target is local, else 0.
void crossentropy_partial_target(const Context& ctx, float* target_logit, const float* logits, const int* targets,
                                 int N, int Vl, int v0);
/// losses (N) = log(sumexp) + maxes - target_logit, from full-row values. losses may alias any input.
void crossentropy_losses(const Context& ctx, float* losses, const float* maxes, const float* sumexp,
                         const float* target_logit, int N);
/// The serial composite: losses (N), and maxes (N), sumexp (N) kept for backward.
void crossentropy_forward(const Context& ctx, float* losses, float* maxes, float* sumexp, const float* logits,
                          const int* targets, int N, int V, int V_real);
/// dlogits (N, Vl) += dloss * (softmax - onehot(target)) on the local columns, given the full-row
/// maxes and sumexp; padding columns get nothing. dloss is ∂L/∂loss_n, the same for every n
/// (1 / number of tokens for a mean loss).
void crossentropy_backward(const Context& ctx, float* dlogits, const float* logits, const float* maxes,
                           const float* sumexp, const int* targets, float dloss, int N, int Vl, int v0, int V_real);

// ---- optimizer --------------------------------------------------------------------------------

/// AdamW hyper-parameters for one update; step counts from 1.
struct AdamWConfig {
  float lr = 3e-4f;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  int step = 1;
};

/// PyTorch's AdamW on n elements: param *= 1 - lr*wd; m = β1 m + (1-β1) g; v = β2 v + (1-β2) g²;
/// param -= lr * (m / (1-β1^t)) / (√(v / (1-β2^t)) + eps).
void adamw_update(const Context& ctx, float* param, float* m, float* v, const float* grad, int64_t n,
                  const AdamWConfig& cfg);

}  // namespace optimus::core
