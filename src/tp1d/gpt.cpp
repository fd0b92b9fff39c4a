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
    : config_(config),
      ctx_(ctx),
      seed_(seed),
      grid_(grid),
      p_(grid.p()),
      r_(grid.r()),
      recompute_(memory.recompute),
      sp_(memory.sequence_parallel),
      distributed_(memory.recompute == model::Recompute::block && !memory.sequence_parallel) {
  config_.validate();
  check_divisible(config_, p_);
  const int p = p_, r = r_;
  params_ = model::ParamSet::create(
      config_, ctx_, [p, r](const model::ParamInfo& info) { return spec_1d(info, p, r); }, seed_);
  param_ = model::ModelParams::values(params_);
  grad_ = model::ModelParams::grads(params_);
}

model::SpecOfRank GPT::spec_of() const {
  const int p = p_;
  return [p](const model::ParamInfo& info, int rank) { return spec_1d(info, p, rank); };
}

void GPT::ensure_buffers(int B, int T) {
  if (acts_.B == B && acts_.T == T) return;
  acts_ = Activations{};
  scratch_ = BackwardScratch{};
  const int64_t N = int64_t{B} * T, C = config_.n_embd, Cp = C / p_, Fp = config_.ffn() / p_,
                Vp = vocab_part(config_, p_), NHp = config_.n_head / p_;
  const int64_t Nl = sp_ ? N / p_ : N;  // my rows of the residual stream
  auto act = [&](core::Shape s) {
    return Buffer(*ctx_.ledger, MemoryCategory::activations, std::move(s), ctx_.device);
  };
  auto tmp = [&](core::Shape s) { return Buffer(*ctx_.ledger, MemoryCategory::workspace, std::move(s), ctx_.device); };
  acts_.B = B, acts_.T = T;
  acts_.inputs = core::IntBuffer(*ctx_.ledger, MemoryCategory::workspace, {B, T}, ctx_.device);
  acts_.targets = core::IntBuffer(*ctx_.ledger, MemoryCategory::workspace, {B, T}, ctx_.device);
  for (int l = 0; l < model::working_sets(config_, recompute_); ++l) {
    BlockActivations b;
    b.ln1 = act({Nl, C}), b.ln1_mean = act({Nl}), b.ln1_rstd = act({Nl});
    b.qkv = act({N, 3 * Cp});
    b.att = act({B, NHp, T, T});
    b.atty = act({N, Cp}), b.res1 = act({Nl, C});
    b.ln2 = act({Nl, C}), b.ln2_mean = act({Nl}), b.ln2_rstd = act({Nl});
    b.fch = act({N, Fp}), b.fch_gelu = act({N, Fp});
    acts_.blocks.push_back(std::move(b));
  }
  if (distributed_) {
    const int64_t piece = (Nl * C + p_ - 1) / p_;
    for (int l = 0; l < config_.n_layer; ++l) acts_.checkpoints.push_back(act({piece}));
    for (int k = 0; k < 2; ++k) acts_.whole.push_back(act({p_ * piece}));
  } else {
    acts_.encoded = act({Nl, C});
    for (int l = 0; l < config_.n_layer; ++l) acts_.outputs.push_back(act({Nl, C}));
  }
  acts_.branch = tmp({Nl, C});
  acts_.lnf = act({Nl, C}), acts_.lnf_mean = act({Nl}), acts_.lnf_rstd = act({Nl});
  acts_.logits = act({N, Vp});
  acts_.ce_max = act({N}), acts_.ce_sumexp = act({N}), acts_.ce_target = act({N}), acts_.losses = act({N});
  scratch_.d_res = tmp({Nl, C}), scratch_.d_branch = tmp({Nl, C}), scratch_.d_ln = tmp({Nl, C});
  scratch_.d_atty = tmp({N, Cp}), scratch_.d_qkv = tmp({N, 3 * Cp}), scratch_.d_att = tmp({B, NHp, T, T});
  scratch_.d_fch = tmp({N, Fp}), scratch_.d_fch_gelu = tmp({N, Fp}), scratch_.d_logits = tmp({N, Vp});
  if (sp_) {
    auto comm_buffer = [&](core::Shape sh) {
      return Buffer(*ctx_.ledger, MemoryCategory::communication, std::move(sh), ctx_.device);
    };
    scratch_.gathered = comm_buffer({N, C}), scratch_.partial = comm_buffer({N, C});
  }
}

// Every row and column; of the heads, my NH/p; of the residual stream's rows all, or with sequence
// parallelism my slice [r·N/p, (r+1)·N/p).
model::ActivationBlock GPT::block_of(int B, int T) const {
  const int64_t N = int64_t{B} * T, NHp = config_.n_head / p_, Nl = sp_ ? N / p_ : N;
  return {.B = B,
          .T = T,
          .b0 = 0,
          .Bl = B,
          .c0 = 0,
          .Cl = config_.n_embd,
          .h0 = r_ * NHp,
          .NHl = NHp,
          .n0 = sp_ ? r_ * Nl : 0,
          .Nl = Nl};
}

// Block l's working set: its own, or the one every block shares under recomputation.
BlockActivations& GPT::working_set(int l) {
  return acts_.blocks[recompute_ == model::Recompute::block ? 0 : static_cast<size_t>(l)];
}

// Block l's input, the residual stream entering it (l = L: the last block's output, ln_f's input):
// encoded or outputs[l − 1]; with distributed checkpoints the whole buffer of the pair that is l's.
float* GPT::residual(int l) {
  if (distributed_) return acts_.whole[static_cast<size_t>(l % 2)].data();
  return l == 0 ? acts_.encoded.data() : acts_.outputs[static_cast<size_t>(l - 1)].data();
}

// Keeps rank r's piece r of block l's input, elements [r·piece, (r+1)·piece) of its Nl·C (the
// last pieces are short or empty: their tails are never read back).
void GPT::keep_checkpoint(int l) {
  const int64_t n = acts_.block.Nl * config_.n_embd, piece = acts_.checkpoints[0].numel();
  const int64_t mine = std::clamp<int64_t>(n - r_ * piece, 0, piece);
  core::copy_on_device(ctx_, acts_.checkpoints[static_cast<size_t>(l)].data(), residual(l) + r_ * piece, mine);
}

// Block l's input again, whole: every rank's piece, all-gathered into the buffer it was in.
void GPT::restore_checkpoint(int l) {
  const core::Buffer& piece = acts_.checkpoints[static_cast<size_t>(l)];
  tp().all_gather(residual(l), piece.data(), piece.numel());
}

// Replicated activations drop the same (canonical) elements on every rank, exactly as the serial
// run does; the attention probabilities of this rank's heads are the block (B, NH/p, T*T) at head
// offset r·NH/p of the canonical (B, NH, T*T).
core::DropoutSpec GPT::dropout_spec(int layer, DropoutSite site) const {
  return model::dropout_spec(config_, acts_.block, seed_, step_, train_, layer, site);
}

// ---- forward ------------------------------------------------------------------------------------

float GPT::forward(const int* inputs, const int* targets, int B, int T, uint32_t step, bool train,
                   const model::BatchSlice& slice) {
  model::check_sequence_length(config_, T);
  if (sp_) check_tokens_divisible(int64_t{B} * T, p_);
  ensure_buffers(B, T);
  acts_.block = model::place_in_batch(block_of(B, T), slice);
  last_part_ = slice.last;
  step_ = step;
  train_ = train;
  const int N = B * T, Nl = static_cast<int>(acts_.block.Nl), C = config_.n_embd, V = config_.vocab_size,
            Vp = vocab_part(config_, p_), v0 = r_ * Vp;
  const float eps = config_.layer_norm_epsilon;
  const model::ModelParams& w = param_;  // w.wte (V/p, C): vocabulary rows [v0, v0 + V/p)
  core::copy_to_device(ctx_, acts_.inputs.data(), inputs, N);
  core::copy_to_device(ctx_, acts_.targets.data(), targets, N);

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
  const float* lnf = acts_.lnf.data();  // every row: as it is, or gathered by f_sp
  if (sp_) {
    f_sp_forward(tp(), scratch_.gathered.data(), lnf, int64_t{Nl} * C);
    lnf = scratch_.gathered.data();
  } else {
    f_forward();
  }
  core::matmul(ctx_, acts_.logits.data(), lnf, w.wte, N, Vp, C, Trans::no, Trans::yes);
  model::vocab_parallel_cross_entropy_forward(ctx_, tp(), acts_.losses.data(), acts_.ce_max.data(),
                                              acts_.ce_sumexp.data(), acts_.ce_target.data(), acts_.logits.data(),
                                              acts_.targets.data(), N, Vp, v0, V);
  double sum = 0.0;
  core::sum(ctx_, &sum, acts_.losses.data(), N);  // every rank holds every token's loss
  return static_cast<float>(sum / static_cast<double>(batch_tokens()));
}

// Vocab-parallel embedding into out (Nl, C): rows of tokens outside my vocabulary are zero, g
// sums the ranks, then the positions are added. With sequence parallelism g_sp leaves me my rows
// of the sum; the positions join the partial sums on rank 0 only (added once, as a bias is), which
// gives the same sums: every row is one wte row and one wpe row plus zeros.
void GPT::embedding_forward(float* out, const float* wte, const float* wpe) {
  const int B = acts_.B, T = acts_.T, N = B * T, C = config_.n_embd, Vp = vocab_part(config_, p_), v0 = r_ * Vp;
  if (!sp_) {
    vocab_parallel_embedding_forward(ctx_, tp(), out, acts_.inputs.data(), wte, N, C, v0, Vp);
    core::position_add_forward(ctx_, out, wpe, B, T, C);
    return;
  }
  float* partial = scratch_.partial.data();  // (N, C)
  core::embedding_forward(ctx_, partial, acts_.inputs.data(), wte, N, C, v0, Vp);
  if (r_ == 0) core::position_add_forward(ctx_, partial, wpe, B, T, C);
  g_sp_forward(tp(), out, partial, acts_.block.Nl * C);
}

// One block from x into out (Nl, C) each; each branch's output through scratch, as in serial::GPT.
void GPT::block_forward(int l, const float* x, float* out) {
  BlockActivations& a = working_set(l);
  float* branch = acts_.branch.data();  // (Nl, C) scratch
  const model::BlockParams& w = param_.blocks[static_cast<size_t>(l)];
  const int B = acts_.B, T = acts_.T, N = B * T, Nl = static_cast<int>(acts_.block.Nl), C = config_.n_embd, Cp = C / p_,
            Fp = config_.ffn() / p_, NHp = config_.n_head / p_;
  const float eps = config_.layer_norm_epsilon;

  // Attention: f → column-parallel c_attn (my heads) → local attention → row-parallel c_proj → g → bias.
  core::layernorm_forward(ctx_, a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), x, w.ln_1_w, w.ln_1_b, Nl, C, eps);
  column_parallel_forward(a.qkv.data(), a.ln1.data(), w.c_attn_w, w.c_attn_b, 3 * Cp);
  core::attention_forward(ctx_, a.atty.data(), a.att.data(), a.qkv.data(), B, T, Cp, NHp,
                          dropout_spec(l, DropoutSite::attention_probs));
  row_parallel_forward(branch, a.atty.data(), w.attn_proj_w, w.attn_proj_b, Cp);
  core::dropout_forward(ctx_, branch, branch, dropout_spec(l, DropoutSite::attn_residual));
  core::residual_forward(ctx_, a.res1.data(), x, branch, int64_t{Nl} * C);

  // MLP: f → column-parallel c_fc (F/p columns) → GELU → row-parallel c_proj → g → bias.
  core::layernorm_forward(ctx_, a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.res1.data(), w.ln_2_w, w.ln_2_b,
                          Nl, C, eps);
  column_parallel_forward(a.fch.data(), a.ln2.data(), w.c_fc_w, w.c_fc_b, Fp);
  core::gelu_forward(ctx_, a.fch_gelu.data(), a.fch.data(), int64_t{N} * Fp);
  row_parallel_forward(branch, a.fch_gelu.data(), w.mlp_proj_w, w.mlp_proj_b, Fp);
  core::dropout_forward(ctx_, branch, branch, dropout_spec(l, DropoutSite::mlp_residual));
  core::residual_forward(ctx_, out, a.res1.data(), branch, int64_t{Nl} * C);
}

void GPT::column_parallel_forward(float* out, const float* inp, const float* w, const float* b, int OCp) {
  const int N = acts_.B * acts_.T, C = config_.n_embd;
  if (sp_) {
    column_parallel_linear_forward_sp(ctx_, tp(), out, scratch_.gathered.data(), inp, w, b, N, C, OCp);
  } else {
    column_parallel_linear_forward(ctx_, out, inp, w, b, N, C, OCp);
  }
}

void GPT::row_parallel_forward(float* out, const float* inp, const float* w, const float* b, int Kp) {
  const int N = acts_.B * acts_.T, C = config_.n_embd;
  if (sp_) {
    row_parallel_linear_forward_sp(ctx_, tp(), out, scratch_.partial.data(), inp, w, b, N, Kp, C);
  } else {
    row_parallel_linear_forward(ctx_, tp(), out, inp, w, b, N, Kp, C);
  }
}

// ---- backward -----------------------------------------------------------------------------------
// As in serial::GPT, every op adds into its gradient outputs; an activation gradient that one op
// makes is passed zeroed.

void GPT::backward() {
  const int N = acts_.B * acts_.T, Nl = static_cast<int>(acts_.block.Nl), C = config_.n_embd, V = config_.vocab_size,
            Vp = vocab_part(config_, p_), v0 = r_ * Vp;
  BackwardScratch& s = scratch_;
  const model::ModelParams &w = param_, &dw = grad_;

  // Loss: my vocabulary columns' share of (softmax − onehot) / N, from the full-row statistics.
  core::crossentropy_backward(ctx_, core::zeroed(ctx_, s.d_logits), acts_.logits.data(), acts_.ce_max.data(),
                              acts_.ce_sumexp.data(), acts_.targets.data(), 1.0f / static_cast<float>(batch_tokens()),
                              N, Vp, v0, V);
  // LM head: my partial d_lnf = d_logits · wte_mine; f's backward sums the ranks' partials (with
  // sequence parallelism f_sp's gives me my rows of the sum, and lnf is gathered again for dwte).
  if (sp_) {
    f_sp_forward(tp(), s.gathered.data(), acts_.lnf.data(), int64_t{Nl} * C);
    core::matmul_backward(ctx_, core::zeroed(ctx_, s.partial), dw.wte, s.d_logits.data(), s.gathered.data(), w.wte, N,
                          Vp, C, Trans::no, Trans::yes);
    f_sp_backward(tp(), s.d_ln.data(), s.partial.data(), int64_t{Nl} * C);
  } else {
    core::matmul_backward(ctx_, core::zeroed(ctx_, s.d_ln), dw.wte, s.d_logits.data(), acts_.lnf.data(), w.wte, N, Vp,
                          C, Trans::no, Trans::yes);
    f_backward(tp(), s.d_ln.data(), int64_t{N} * C);
  }
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
    if (listener_ != nullptr && last_part_) listener_->block_ready(l);
  }

  core::dropout_backward(ctx_, core::zeroed(ctx_, s.d_branch), s.d_res.data(), dropout_spec(0, DropoutSite::embedding));
  embedding_backward(dw.wte, dw.wpe);
  if (listener_ != nullptr && last_part_) listener_->all_ready();

  // Each rank's LayerNorms saw only its rows: sum their gradients over the ranks, in one bucket
  // (after the step's last part when the step accumulates several).
  if (sp_ && last_part_) {
    model::sum_gradients(params_, ctx_, tp(), [](model::ParamKind kind) {
      return kind == model::ParamKind::norm_weight || kind == model::ParamKind::norm_bias;
    });
  }
}

// The embedding's backward from s.d_branch, the gradient of my rows of its output: g's backward is
// the identity (with sequence parallelism g_sp's gathers every row), then scatter-add the rows of
// my vocabulary into dwte and every row into dwpe.
void GPT::embedding_backward(float* dwte, float* dwpe) {
  const int B = acts_.B, T = acts_.T, N = B * T, C = config_.n_embd, Vp = vocab_part(config_, p_), v0 = r_ * Vp;
  const float* d_encoded = scratch_.d_branch.data();
  if (sp_) {
    g_sp_backward(tp(), scratch_.gathered.data(), d_encoded, acts_.block.Nl * C);
    d_encoded = scratch_.gathered.data();
  }
  vocab_parallel_embedding_backward(ctx_, dwte, d_encoded, acts_.inputs.data(), N, C, v0, Vp);
  core::position_add_backward(ctx_, dwpe, d_encoded, B, T, C);
}

void GPT::block_backward(int l, const float* x) {
  BlockActivations& a = working_set(l);
  BackwardScratch& s = scratch_;
  const model::BlockParams &w = param_.blocks[static_cast<size_t>(l)], &dw = grad_.blocks[static_cast<size_t>(l)];
  const int B = acts_.B, T = acts_.T, N = B * T, Nl = static_cast<int>(acts_.block.Nl), C = config_.n_embd, Cp = C / p_,
            Fp = config_.ffn() / p_, NHp = config_.n_head / p_;

  // MLP branch, backwards: dropout, the row-parallel c_proj (its g is the identity), GELU, the
  // column-parallel c_fc, whose f all-reduces the partial d_ln2 before LayerNorm's backward.
  core::dropout_backward(ctx_, core::zeroed(ctx_, s.d_branch), s.d_res.data(),
                         dropout_spec(l, DropoutSite::mlp_residual));
  row_parallel_backward({.dinp = core::zeroed(ctx_, s.d_fch_gelu), .dweight = dw.mlp_proj_w, .dbias = dw.mlp_proj_b},
                        s.d_branch.data(), a.fch_gelu.data(), w.mlp_proj_w, Fp);
  core::gelu_backward(ctx_, core::zeroed(ctx_, s.d_fch), a.fch.data(), s.d_fch_gelu.data(), int64_t{N} * Fp);
  column_parallel_backward({.dinp = core::zeroed(ctx_, s.d_ln), .dweight = dw.c_fc_w, .dbias = dw.c_fc_b},
                           s.d_fch.data(), a.ln2.data(), w.c_fc_w, Fp);
  core::layernorm_backward(ctx_, {.dinp = s.d_res.data(), .dweight = dw.ln_2_w, .dbias = dw.ln_2_b}, s.d_ln.data(),
                           a.res1.data(), w.ln_2_w, a.ln2_mean.data(), a.ln2_rstd.data(), Nl, C);

  // Attention branch, backwards, the same pattern.
  core::dropout_backward(ctx_, core::zeroed(ctx_, s.d_branch), s.d_res.data(),
                         dropout_spec(l, DropoutSite::attn_residual));
  row_parallel_backward({.dinp = core::zeroed(ctx_, s.d_atty), .dweight = dw.attn_proj_w, .dbias = dw.attn_proj_b},
                        s.d_branch.data(), a.atty.data(), w.attn_proj_w, Cp);
  core::attention_backward(ctx_, core::zeroed(ctx_, s.d_qkv), s.d_att.data(), s.d_atty.data(), a.qkv.data(),
                           a.att.data(), B, T, Cp, NHp, dropout_spec(l, DropoutSite::attention_probs));
  column_parallel_backward({.dinp = core::zeroed(ctx_, s.d_ln), .dweight = dw.c_attn_w, .dbias = dw.c_attn_b},
                           s.d_qkv.data(), a.ln1.data(), w.c_attn_w, 3 * Cp);
  core::layernorm_backward(ctx_, {.dinp = s.d_res.data(), .dweight = dw.ln_1_w, .dbias = dw.ln_1_b}, s.d_ln.data(), x,
                           w.ln_1_w, a.ln1_mean.data(), a.ln1_rstd.data(), Nl, C);
}

void GPT::column_parallel_backward(const core::LayerGrads& add_to, const float* dout, const float* inp, const float* w,
                                   int OCp) {
  const int N = acts_.B * acts_.T, C = config_.n_embd;
  if (sp_) {
    column_parallel_linear_backward_sp(ctx_, tp(), add_to, scratch_.gathered.data(),
                                       core::zeroed(ctx_, scratch_.partial), dout, inp, w, N, C, OCp);
  } else {
    column_parallel_linear_backward(ctx_, tp(), add_to, dout, inp, w, N, C, OCp);
  }
}

void GPT::row_parallel_backward(const core::LayerGrads& add_to, const float* dout, const float* inp, const float* w,
                                int Kp) {
  const int N = acts_.B * acts_.T, C = config_.n_embd;
  if (sp_) {
    row_parallel_linear_backward_sp(ctx_, tp(), add_to, scratch_.gathered.data(), dout, inp, w, N, Kp, C);
  } else {
    row_parallel_linear_backward(ctx_, add_to, dout, inp, w, N, Kp, C);
  }
}

// The norm counts every canonical element once: replicated tensors on rank 0 only, then one
// all-reduce over the p ranks.
float GPT::clip_gradients(float max_norm) {
  return model::clip_grad_norm(params_, ctx_, &tp(), max_norm);
}

}  // namespace optimus::tp1d
