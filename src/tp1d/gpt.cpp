// Stage 2: the Megatron 1D GPT. Read it beside serial/gpt.cpp: the same forward and backward, with
// the weights split and four kinds of communication added — g after each row-parallel linear and
// after the embedding, f's all-reduce in backward where replicated activations entered a parallel
// region, the three all-reduces of the vocab-parallel loss, and one for the gradient norm. With
// sequence parallelism f and g become all-gathers and reduce-scatters of rows, and one more
// all-reduce sums the LayerNorms' gradients (each rank saw only its rows).
#include "tp1d/gpt.h"

#include <algorithm>

#include "core/errors.h"
#include "model/gradient_bucket.h"
#include "model/vocab_parallel_loss.h"
#include "tp1d/layers.h"
#include "tp1d/mappings.h"
#include "tp1d/shard_1d.h"

namespace optimus::tp1d {

using core::Buffer;
using core::DropoutSite;
using core::MemoryCategory;
using core::Trans;

GPT::GPT(const model::GPTConfig& config, const core::Context& ctx, uint32_t seed, const comm::Grid1D& grid,
         const model::StageOptions& memory)
    : Stage(config, ctx, seed, memory),
      grid_(grid),
      p_(grid.p()),
      r_(grid.r()),
      region_(grid_.comm(), memory.sequence_parallel),
      distributed_(memory.recompute == model::Recompute::block && !memory.sequence_parallel) {
  check_divisible(config_, p_);
  const int p = p_, r = r_;
  create_params([p, r](const model::ParamInfo& info) { return spec_1d(info, p, r); });
}

model::SpecOfRank GPT::spec_of() const {
  const int p = p_;
  return [p](const model::ParamInfo& info, int rank) { return spec_1d(info, p, rank); };
}

// Every row and column of the residual stream, or with sequence parallelism my slice of its rows
// [r·N/p, (r+1)·N/p); of the heads and of a branch's columns my 1/p; my vocabulary columns.
// Replicated activations then drop the same (canonical) elements on every rank, exactly as the
// serial run does (model::Stage::dropout_spec); the attention probabilities of this rank's heads
// are the block (B, NH/p, T*T) at head offset r·NH/p of the canonical (B, NH, T*T).
model::LocalShapes GPT::local_shapes(int B, int T) const {
  const int64_t N = int64_t{B} * T, NHp = config_.n_head / p_, Nl = region_.rows(N);
  return {.mine = {.B = B,
                   .T = T,
                   .b0 = 0,
                   .Bl = B,
                   .c0 = 0,
                   .Cl = config_.n_embd,
                   .h0 = r_ * NHp,
                   .NHl = NHp,
                   .n0 = region_.sequence_parallel() ? r_ * Nl : 0,
                   .Nl = Nl},
          .Cr = config_.n_embd / p_,
          .Fr = config_.ffn() / p_,
          .Vr = vocab_part(config_, p_),
          .target_logits = true,
          .block_inputs = !distributed_};
}

// With distributed checkpoints, their buffers for Nl rows of the residual stream; else none.
void GPT::allocate_checkpoints(int64_t Nl) {
  if (!distributed_) return;
  auto act = [&](core::Shape s) {
    return Buffer(*ctx_.ledger, MemoryCategory::activations, std::move(s), ctx_.device);
  };
  const int64_t piece = (Nl * config_.n_embd + p_ - 1) / p_;
  for (int l = 0; l < config_.n_layer; ++l) checkpoints_.pieces.push_back(act({piece}));
  for (int k = 0; k < 2; ++k) checkpoints_.whole.push_back(act({p_ * piece}));
}

// Block l's input, the residual stream entering it (l = L: the last block's output, ln_f's input):
// model::Stage's, or with distributed checkpoints the whole buffer of the pair that is l's.
float* GPT::residual(int l) const {
  if (distributed_) return checkpoints_.whole[static_cast<size_t>(l % 2)].data();
  return model::Stage::residual(l);
}

// Keeps rank r's piece r of block l's input, elements [r·piece, (r+1)·piece) of its Nl·C (the
// last pieces are short or empty: their tails are never read back).
void GPT::keep_checkpoint(int l) {
  const int64_t n = acts_.mine.Nl * config_.n_embd, piece = checkpoints_.pieces[0].numel();
  const int64_t mine = std::clamp<int64_t>(n - r_ * piece, 0, piece);
  core::copy_on_device(ctx_, checkpoints_.pieces[static_cast<size_t>(l)].data(), residual(l) + r_ * piece, mine);
}

// Block l's input again, whole: every rank's piece, all-gathered into the buffer it was in.
void GPT::restore_checkpoint(int l) {
  const core::Buffer& piece = checkpoints_.pieces[static_cast<size_t>(l)];
  tp().all_gather(residual(l), piece.data(), piece.numel());
}

// ---- forward ------------------------------------------------------------------------------------

float GPT::forward(const int* inputs, const int* targets, int B, int T, uint32_t step, bool train,
                   const model::BatchSlice& slice) {
  model::check_sequence_length(config_, T);
  if (region_.sequence_parallel()) check_tokens_divisible(int64_t{B} * T, p_);
  const model::LocalShapes local = local_shapes(B, T);
  if (!acts_.holds(B, T)) {  // a new batch shape: every buffer of the last one goes first
    checkpoints_ = DistributedCheckpoints{};
    region_.release();
    model::allocate_buffers(acts_, scratch_, ctx_, config_, recompute_, local);
    allocate_checkpoints(local.mine.Nl);
    region_.allocate(ctx_, int64_t{B} * T, config_.n_embd);
  }
  model::begin_forward(acts_, ctx_, local, inputs, targets, step, train, slice);
  const int N = B * T, Nl = static_cast<int>(acts_.mine.Nl), C = config_.n_embd, V = config_.vocab_size,
            Vp = vocab_part(config_, p_), v0 = r_ * Vp;
  const float eps = config_.layer_norm_epsilon;
  const model::ModelParams& w = weights_;  // w.wte (V/p, C): vocabulary rows [v0, v0 + V/p)

  embedding_forward(residual(0), w.wte, w.wpe);
  core::dropout_forward(ctx_, residual(0), residual(0), dropout_spec(0, DropoutSite::embedding));

  for (int l = 0; l < config_.n_layer; ++l) {
    if (distributed_) keep_checkpoint(l);
    block_forward(l, residual(l), residual(l + 1));
  }
  const float* x = residual(config_.n_layer);

  // Final LayerNorm (on my rows), f, my vocabulary's logits, vocab-parallel cross-entropy.
  core::layernorm_forward(ctx_, acts_.lnf.data(), acts_.lnf_mean.data(), acts_.lnf_rstd.data(), x, w.ln_f_w, w.ln_f_b,
                          Nl, C, eps);
  const float* lnf = region_.f_forward(acts_.lnf.data(), N, C);  // every row
  core::matmul(ctx_, acts_.logits.data(), lnf, w.wte, N, Vp, C, Trans::no, Trans::yes);
  model::vocab_parallel_cross_entropy_forward(ctx_, tp(), acts_.losses.data(), acts_.ce_max.data(),
                                              acts_.ce_sumexp.data(), acts_.ce_target.data(), acts_.logits.data(),
                                              acts_.targets.data(), N, Vp, v0, V);
  double sum = 0.0;
  core::sum(ctx_, &sum, acts_.losses.data(), N);  // every rank holds every token's loss
  return static_cast<float>(sum / static_cast<double>(acts_.batch_tokens()));
}

// Vocab-parallel embedding into out (Nl, C): rows of tokens outside my vocabulary are zero, g
// sums the ranks, then the positions are added. With sequence parallelism g leaves me my rows of
// the sum, so the positions join the partial sums on rank 0 only (added once, as a bias is), which
// gives the same sums: every row is one wte row and one wpe row plus zeros. This is the one place
// the two modes differ in more than f and g.
void GPT::embedding_forward(float* out, const float* wte, const float* wpe) {
  const int B = acts_.B, T = acts_.T, N = B * T, C = config_.n_embd, V = vocab_part(config_, p_) * p_;
  if (!region_.sequence_parallel()) {
    vocab_parallel_embedding_forward(ctx_, tp(), out, acts_.inputs.data(), wte, N, C, V);
    core::position_add_forward(ctx_, out, wpe, B, T, C);
    return;
  }
  const int Vp = V / p_;
  float* partial = region_.g_partial(out);  // (N, C)
  core::embedding_forward(ctx_, partial, acts_.inputs.data(), wte, N, C, r_ * Vp, Vp);
  if (r_ == 0) core::position_add_forward(ctx_, partial, wpe, B, T, C);
  region_.g_forward(out, partial, N, C);
}

// One block from x into out (Nl, C) each; each branch's output through scratch, as in serial::GPT.
void GPT::block_forward(int l, const float* x, float* out) {
  model::BlockActivations& a = acts_.working_set(l);
  float* branch = acts_.branch.data();  // (Nl, C) scratch
  const model::BlockParams& w = weights_.blocks[static_cast<size_t>(l)];
  const int B = acts_.B, T = acts_.T, N = B * T, Nl = static_cast<int>(acts_.mine.Nl), C = config_.n_embd, Cp = C / p_,
            F = config_.ffn(), Fp = F / p_, NHp = config_.n_head / p_;
  const float eps = config_.layer_norm_epsilon;

  // Attention: f → column-parallel c_attn (my heads) → local attention → row-parallel c_proj → g → bias.
  core::layernorm_forward(ctx_, a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), x, w.ln_1_w, w.ln_1_b, Nl, C, eps);
  column_parallel_linear_forward(ctx_, region_, a.qkv.data(), a.ln1.data(), w.c_attn_w, w.c_attn_b, N, C, 3 * C);
  core::attention_forward(ctx_, a.atty.data(), a.att.data(), a.qkv.data(), B, T, Cp, NHp,
                          dropout_spec(l, DropoutSite::attention_probs));
  row_parallel_linear_forward(ctx_, region_, branch, a.atty.data(), w.attn_proj_w, w.attn_proj_b, N, C, C);
  core::dropout_forward(ctx_, branch, branch, dropout_spec(l, DropoutSite::attn_residual));
  core::residual_forward(ctx_, a.res1.data(), x, branch, int64_t{Nl} * C);

  // MLP: f → column-parallel c_fc (F/p columns) → GELU → row-parallel c_proj → g → bias.
  core::layernorm_forward(ctx_, a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.res1.data(), w.ln_2_w, w.ln_2_b,
                          Nl, C, eps);
  column_parallel_linear_forward(ctx_, region_, a.fch.data(), a.ln2.data(), w.c_fc_w, w.c_fc_b, N, C, F);
  core::gelu_forward(ctx_, a.fch_gelu.data(), a.fch.data(), int64_t{N} * Fp);
  row_parallel_linear_forward(ctx_, region_, branch, a.fch_gelu.data(), w.mlp_proj_w, w.mlp_proj_b, N, F, C);
  core::dropout_forward(ctx_, branch, branch, dropout_spec(l, DropoutSite::mlp_residual));
  core::residual_forward(ctx_, out, a.res1.data(), branch, int64_t{Nl} * C);
}

// ---- backward -----------------------------------------------------------------------------------
// As in serial::GPT, every op adds into its gradient outputs; an activation gradient that one op
// makes is passed zeroed.

void GPT::backward() {
  const int N = acts_.B * acts_.T, Nl = static_cast<int>(acts_.mine.Nl), C = config_.n_embd, V = config_.vocab_size,
            Vp = vocab_part(config_, p_), v0 = r_ * Vp;
  model::BackwardScratch& s = scratch_;
  const model::ModelParams &w = weights_, &dw = grads_;

  // Loss: my vocabulary columns' share of (softmax − onehot) / N, from the full-row statistics.
  core::crossentropy_backward(ctx_, core::zeroed(ctx_, s.d_logits), acts_.logits.data(), acts_.ce_max.data(),
                              acts_.ce_sumexp.data(), acts_.targets.data(),
                              1.0f / static_cast<float>(acts_.batch_tokens()), N, Vp, v0, V);
  // LM head: my partial d_lnf = d_logits · wte_mine; f's backward sums the ranks' partials (with
  // sequence parallelism lnf is gathered again for dwte, and f's backward gives me my rows of the sum).
  const float* lnf = region_.f_forward(acts_.lnf.data(), N, C);
  float* d_lnf = region_.zeroed_partial(ctx_, s.d_ln);  // (N, C) my partial gradient of every row
  core::matmul_backward(ctx_, d_lnf, dw.wte, s.d_logits.data(), lnf, w.wte, N, Vp, C, Trans::no, Trans::yes);
  region_.f_backward(s.d_ln.data(), d_lnf, N, C);
  core::layernorm_backward(ctx_, {.dinp = core::zeroed(ctx_, s.d_res), .dweight = dw.ln_f_w, .dbias = dw.ln_f_b},
                           s.d_ln.data(), residual(config_.n_layer), w.ln_f_w, acts_.lnf_mean.data(),
                           acts_.lnf_rstd.data(), Nl, C);

  // With recomputation each block first reruns its forward (its collectives too) from its input,
  // which refills the working set its backward reads; with distributed checkpoints that input is
  // first gathered whole from the ranks' pieces.
  for (int l = config_.n_layer - 1; l >= 0; --l) {
    if (distributed_) restore_checkpoint(l);
    if (recompute_ == model::Recompute::block) block_forward(l, residual(l), residual(l + 1));
    block_backward(l, residual(l));
    block_ready(l);
  }

  core::dropout_backward(ctx_, core::zeroed(ctx_, s.d_branch), s.d_res.data(), dropout_spec(0, DropoutSite::embedding));
  embedding_backward(dw.wte, dw.wpe);
  all_ready();

  // Each rank's LayerNorms saw only its rows: sum their gradients over the ranks, in one bucket
  // (after the step's last part when the step accumulates several).
  if (region_.sequence_parallel() && acts_.last_part) {
    model::sum_gradients(params_, ctx_, tp(), [](model::ParamKind kind) {
      return kind == model::ParamKind::norm_weight || kind == model::ParamKind::norm_bias;
    });
  }
}

// The embedding's backward from s.d_branch, the gradient of my rows of its output: g's backward
// (the identity, or with sequence parallelism a gather of every row), then scatter-add the rows of
// my vocabulary into dwte and every row into dwpe.
void GPT::embedding_backward(float* dwte, float* dwpe) {
  const int B = acts_.B, T = acts_.T, N = B * T, C = config_.n_embd, V = vocab_part(config_, p_) * p_;
  const float* d_encoded = region_.g_backward(scratch_.d_branch.data(), N, C);  // (N, C)
  vocab_parallel_embedding_backward(ctx_, tp(), dwte, d_encoded, acts_.inputs.data(), N, C, V);
  core::position_add_backward(ctx_, dwpe, d_encoded, B, T, C);
}

void GPT::block_backward(int l, const float* x) {
  model::BlockActivations& a = acts_.working_set(l);
  model::BackwardScratch& s = scratch_;
  const model::BlockParams &w = weights_.blocks[static_cast<size_t>(l)], &dw = grads_.blocks[static_cast<size_t>(l)];
  const int B = acts_.B, T = acts_.T, N = B * T, Nl = static_cast<int>(acts_.mine.Nl), C = config_.n_embd, Cp = C / p_,
            F = config_.ffn(), Fp = F / p_, NHp = config_.n_head / p_;

  // MLP branch, backwards: dropout, the row-parallel c_proj (its g is the identity), GELU, the
  // column-parallel c_fc, whose f all-reduces the partial d_ln2 before LayerNorm's backward.
  core::dropout_backward(ctx_, core::zeroed(ctx_, s.d_branch), s.d_res.data(),
                         dropout_spec(l, DropoutSite::mlp_residual));
  row_parallel_linear_backward(
      ctx_, region_, {.dinp = core::zeroed(ctx_, s.d_fch_gelu), .dweight = dw.mlp_proj_w, .dbias = dw.mlp_proj_b},
      s.d_branch.data(), a.fch_gelu.data(), w.mlp_proj_w, N, F, C);
  core::gelu_backward(ctx_, core::zeroed(ctx_, s.d_fch), a.fch.data(), s.d_fch_gelu.data(), int64_t{N} * Fp);
  column_parallel_linear_backward(ctx_, region_,
                                  {.dinp = core::zeroed(ctx_, s.d_ln), .dweight = dw.c_fc_w, .dbias = dw.c_fc_b},
                                  s.d_fch.data(), a.ln2.data(), w.c_fc_w, N, C, F);
  core::layernorm_backward(ctx_, {.dinp = s.d_res.data(), .dweight = dw.ln_2_w, .dbias = dw.ln_2_b}, s.d_ln.data(),
                           a.res1.data(), w.ln_2_w, a.ln2_mean.data(), a.ln2_rstd.data(), Nl, C);

  // Attention branch, backwards, the same pattern.
  core::dropout_backward(ctx_, core::zeroed(ctx_, s.d_branch), s.d_res.data(),
                         dropout_spec(l, DropoutSite::attn_residual));
  row_parallel_linear_backward(
      ctx_, region_, {.dinp = core::zeroed(ctx_, s.d_atty), .dweight = dw.attn_proj_w, .dbias = dw.attn_proj_b},
      s.d_branch.data(), a.atty.data(), w.attn_proj_w, N, C, C);
  core::attention_backward(ctx_, core::zeroed(ctx_, s.d_qkv), s.d_att.data(), s.d_atty.data(), a.qkv.data(),
                           a.att.data(), B, T, Cp, NHp, dropout_spec(l, DropoutSite::attention_probs));
  column_parallel_linear_backward(ctx_, region_,
                                  {.dinp = core::zeroed(ctx_, s.d_ln), .dweight = dw.c_attn_w, .dbias = dw.c_attn_b},
                                  s.d_qkv.data(), a.ln1.data(), w.c_attn_w, N, C, 3 * C);
  core::layernorm_backward(ctx_, {.dinp = s.d_res.data(), .dweight = dw.ln_1_w, .dbias = dw.ln_1_b}, s.d_ln.data(), x,
                           w.ln_1_w, a.ln1_mean.data(), a.ln1_rstd.data(), Nl, C);
}

// The norm counts every canonical element once: replicated tensors on rank 0 only, then one
// all-reduce over the p ranks.
float GPT::clip_gradients(float max_norm) {
  return model::clip_grad_norm(params_, ctx_, &tp(), max_norm);
}

}  // namespace optimus::tp1d
