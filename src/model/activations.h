// The buffers of every stage's forward and backward pass, and their one allocation (chapters 1, 2,
// 3, 5 and 7). The four stages keep the same activations in the same structs; they differ only in
// how large each rank's piece of them is, which a stage states once as its LocalShapes. The shape
// comments below are in the symbols of this table (N = B·T; p ranks in 1D, a q×q grid in 2D, a
// q×q×q cube in 3D, whose vocabulary Vp = q²·⌈V/q²⌉):
//
//             residual stream   attention    inside a branch         logits     targets
//             (Nl, Cl)          (Bl, NHl)    (Nr, Cr), (Nr, Fr)      (Nr, Vr)   (Bl, T)
//   serial    (N, C)            (B, NH)      (N, C), (N, F)          (N, V)     (B, T)
//   1D        (N, C)            (B, NH/p)    (N, C/p), (N, F/p)      (N, ⌈V/p⌉) (B, T)
//   1D + SP   (N/p, C)          (B, NH/p)    (N, C/p), (N, F/p)      (N, ⌈V/p⌉) (B, T)
//   2D        (N/q, C/q)        (B/q, NH/q)  (N/q, C/q), (N/q, F/q)  (N/q, ⌈V/q⌉) (B/q, T)
//   3D        (N/q², C/q)       (B/q², NH/q) (N/q², C/q), (N/q², F/q) (N/q², Vp/q) (B/q², T)
//
// Inside a branch means between its column-split and its row-split linear (qkv, atty, fch): rows
// Nr = Bl·T, the rank's sequences, whatever the residual stream's split (in 3D they are other
// sequences than the residual stream's: rows piece i·q + j against i·q + k).
#pragma once

#include <cstdint>
#include <vector>

#include "core/context.h"
#include "core/ops.h"
#include "core/tensor.h"
#include "model/activation_block.h"
#include "model/config.h"

namespace optimus::model {

/// A rank's local sizes, which a stage fills in for a batch of B sequences of T tokens.
struct LocalShapes {
  RankSlice mine;              // of the batch (B, T): the residual stream (Nl, Cl), attention (Bl, NHl)
  int64_t Cr = 0, Fr = 0;      // inside a branch: qkv (Nr, 3Cr), atty (Nr, Cr), fch (Nr, Fr)
  int64_t Vr = 0;              // logits (Nr, Vr): this rank's vocabulary columns
  bool target_logits = false;  // a vocab-parallel loss keeps each row's target logit (1D, 2D, 3D)
  // Whether encoded and the L block outputs are allocated: 1D's distributed checkpoints keep the
  // blocks' inputs split over the ranks instead, in buffers of its own (tp1d/gpt.h).
  bool block_inputs = true;

  int64_t Nr() const { return mine.Bl * mine.T; }
};

/// What one block's forward pass computes and its backward pass reads (its output is kept apart,
/// in Activations::outputs).
struct BlockActivations {
  core::Buffer ln1, ln1_mean, ln1_rstd;  // (Nl, Cl), (Nl), (Nl): statistics over the whole row of C
  core::Buffer qkv;                      // (Nr, 3Cr) my heads' Q | K | V
  core::Buffer att;                      // (Bl, NHl, T, T) probabilities before dropout
  core::Buffer atty;                     // (Nr, Cr) attention output, my heads side by side
  core::Buffer res1;                     // (Nl, Cl) x + attention branch
  core::Buffer ln2, ln2_mean, ln2_rstd;  // (Nl, Cl), (Nl), (Nl)
  core::Buffer fch, fch_gelu;            // (Nr, Fr), (Nr, Fr)
};

/// Everything the forward pass keeps, for one batch shape (B, T), and which pass it kept it for.
struct Activations {
  int B = 0, T = 0;                        // the batch shape the buffers are for
  RankSlice mine;                          // what I hold of the step's batch (placed by place_in_batch)
  uint32_t step = 0;                       // keys the dropout masks
  bool train = true;                       // false: no dropout (evaluation)
  bool last_part = true;                   // BatchSlice::last: the backward pass completes the step's gradients
  core::IntBuffer inputs;                  // (B, T) every token id: each rank's embedding looks up all of them
  core::IntBuffer targets;                 // (Bl, T) my sequences' targets
  core::Buffer encoded;                    // (Nl, Cl) wte[tok] + wpe[t], after dropout
  std::vector<BlockActivations> blocks;    // L working sets, or 1 with recomputation (working_set)
  std::vector<core::Buffer> outputs;       // L of (Nl, Cl): block l's output, block l+1's input
  core::Buffer branch;                     // (Nl, Cl) workspace, not kept: a branch's output (its last linear,
                                           // bias, dropout) until the residual add reads it
  core::Buffer lnf, lnf_mean, lnf_rstd;    // (Nl, Cl), (Nl), (Nl)
  core::Buffer logits;                     // (Nr, Vr)
  core::Buffer ce_max, ce_sumexp, losses;  // (Nr) each, full-row values
  core::Buffer ce_target;                  // (Nr) the vocab-parallel loss's target logits (LocalShapes::target_logits)

  /// Whether the buffers are those of batch shape (B, T).
  bool holds(int64_t B_, int64_t T_) const { return B == B_ && T == T_; }
  /// Block l's working set: its own, or the one every block shares under recomputation.
  BlockActivations& working_set(int l) { return blocks[blocks.size() == 1 ? 0 : static_cast<size_t>(l)]; }
  /// The tokens of the step's batch, whose mean loss the forward pass returns.
  int64_t batch_tokens() const { return mine.B * mine.T; }
};

/// Scratch for the backward pass: gradients of activations, reused layer after layer.
struct BackwardScratch {
  core::Buffer d_res;              // (Nl, Cl) the residual stream's gradient
  core::Buffer d_branch, d_ln;     // (Nl, Cl) a branch output's gradient (before its dropout); a LayerNorm output's
  core::Buffer d_atty;             // (Nr, Cr)
  core::Buffer d_qkv;              // (Nr, 3Cr)
  core::Buffer d_att;              // (Bl, NHl, T, T)
  core::Buffer d_fch, d_fch_gelu;  // (Nr, Fr)
  core::Buffer d_logits;           // (Nr, Vr)
};

/// Allocates acts and scratch for the batch shape of `local`, after releasing what they held: the
/// forward's kept buffers as activations, the rest as workspace, the token ids as workspace too
/// (the activation formulas count floats).
void allocate_buffers(Activations& acts, BackwardScratch& scratch, const core::Context& ctx, const GPTConfig& config,
                      Recompute recompute, const LocalShapes& local);
/// allocate_buffers unless acts already holds the batch shape of `local`; then nothing.
void ensure_buffers(Activations& acts, BackwardScratch& scratch, const core::Context& ctx, const GPTConfig& config,
                    Recompute recompute, const LocalShapes& local);

/// The start of every stage's forward pass, once its buffers are there: keeps the pass's step,
/// train and slice (its slice.last), places my part `local.mine` in the step's batch, and copies
/// the token ids to the device: all B·T inputs, and the targets of my sequences.
void begin_forward(Activations& acts, const core::Context& ctx, const LocalShapes& local, const int* inputs,
                   const int* targets, uint32_t step, bool train, const BatchSlice& slice);

/// The dropout of `site` in `layer` for the pass acts holds (model/activation_block.h).
core::DropoutSpec dropout_spec(const GPTConfig& config, const Activations& acts, uint32_t seed, int layer,
                               core::DropoutSite site);

}  // namespace optimus::model
