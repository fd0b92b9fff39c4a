// What every stage does the same way with the batch it runs on: the sequence-length check, and the
// dropout of each site. A stage describes once which slice of the canonical activations it holds
// (RankSlice); dropout_spec turns that into each site's DropoutSpec, whose counters are the
// canonical indices, so the serial, 1D and 2D runs drop exactly the same elements.
#pragma once

#include <cstdint>
#include <string>

#include "comm/grid.h"
#include "core/ops.h"
#include "model/config.h"
#include "model/params.h"  // InitialValues

namespace optimus::model {

/// ConfigError when a batch's sequence length T exceeds the model's n_positions (wpe has that many rows).
void check_sequence_length(const GPTConfig& config, int T);

/// Which part of a batch's canonical activations a rank holds: of the B sequences of T tokens, the
/// sequences [b0, b0 + Bl), so the rows [b0·T, (b0 + Bl)·T) of every (B·T, C) activation, and its
/// columns [c0, c0 + Cl); of the attention probabilities (B, NH, T, T), those sequences' heads
/// [h0, h0 + NHl). Serial holds everything; 1D all rows and columns and its head group; 2D batch
/// block i, C block j and head group j; 3D the sequences of row piece i·q + j, C block j and head
/// group k. The residual stream (the LayerNorms, the residual adds and their dropouts) is the rows
/// [n0, n0 + Nl): the sequences' rows b0·T … (b0 + Bl)·T, except with 1D sequence parallelism,
/// where rank r holds the r-th of p equal slices of the B·T rows, and in 3D, where it is row piece
/// i·q + k.
struct RankSlice {
  int64_t B = 0, T = 0;     // the whole batch
  int64_t b0 = 0, Bl = 0;   // my sequences
  int64_t c0 = 0, Cl = 0;   // my hidden columns, of C
  int64_t h0 = 0, NHl = 0;  // my heads, of NH
  int64_t n0 = 0, Nl = 0;   // my rows of the residual stream, of B·T
};

/// Which part of a step's batch one forward pass runs on: its B sequences are the sequences
/// [b0, b0 + B) of a batch of `global` sequences (global = 0: the batch is the whole step's). The
/// micro-batches of gradient accumulation are such parts. A stage keys its dropout masks by the
/// whole batch's canonical indices and divides its loss by the whole batch's B·T tokens, so the
/// parts' gradients add up to the whole batch's. The gradients that a stage's ranks compute apart
/// and sum over its ranks (2D's column-replicated parameters, 1D+SP's LayerNorms) are summed once,
/// in the backward pass of the `last` part: a sum of sums would count the earlier parts again.
struct BatchSlice {
  int64_t global = 0;
  int64_t b0 = 0;
  bool last = true;
};

/// `local`, a rank's slice of a batch of local.B sequences, placed in the batch `slice` is part of:
/// B becomes slice.global, and the rank's sequences and rows move down by slice.b0 sequences.
/// std::invalid_argument unless the part lies inside the batch.
RankSlice place_in_batch(RankSlice local, const BatchSlice& slice);

/// What the forward pass keeps for the backward pass (chapter 5). none: every block's activations.
/// block: each block's input only (1D without sequence parallelism: split over its p ranks, as
/// Megatron's distributed checkpoints), and one block's working set that every block reuses; the
/// backward pass reruns a block's forward from its input just before that block's backward, with
/// the same ops and the same dropout masks, so every result is bitwise the same as with none.
enum class Recompute { none, block };

/// The choices a stage is built with that leave its mathematics unchanged: chapter 5's memory
/// techniques (recomputation in every stage, sequence parallelism in the 1D stage only),
/// chapter 6's overlap of communication with computation (2D's SUMMA: the next block's transfer in
/// flight during this block's product), where the 2D grid's and the 3D cube's positions sit
/// (chapters 4 and 7), and whether
/// the initial values are drawn or a checkpoint's are loaded next.
struct StageOptions {
  Recompute recompute = Recompute::none;
  bool sequence_parallel = false;
  bool overlap = false;
  comm::Placement placement{};                  // 2d: r×c blocks of the grid per node; 3d: the cube's line on a node
  InitialValues values = InitialValues::drawn;  // loaded: a checkpoint's values come next
};

/// "none" or "block"; anything else is a ConfigError naming the choices.
Recompute parse_recompute(const std::string& name);
std::string to_string(Recompute recompute);

/// How many blocks' working sets a stage allocates: every block's (L), or one with recomputation.
int working_sets(const GPTConfig& config, Recompute recompute);

/// The dropout of `site` in `layer` on the rank's slice: on its (Bl·T, Cl) tile of a (B·T, C)
/// activation, or on its (Bl, NHl, T·T) block of the attention probabilities. The mask is keyed
/// by (seed, layer, site) and counted by step; p is the config's dropout when training, else 0.
core::DropoutSpec dropout_spec(const GPTConfig& config, const RankSlice& mine, uint32_t seed, uint32_t step, bool train,
                               int layer, core::DropoutSite site);

}  // namespace optimus::model
