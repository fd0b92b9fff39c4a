// How Optimus 2D holds each canonical tensor: rank (i, j) of the q×q grid holds block (i, j) of
// wte (vocabulary block i of ⌈V/q⌉ rows, the last padded with zero rows, so V need not be
// divisible by q; C block j) and of the three square-ish weights; of c_attn.weight, the rows of C
// block i and head group j's Q, K and V columns; the 1-D parameters (and wpe) are column j's
// slice, replicated down column j and owned by row i = 0.
#pragma once

#include <string>

#include "model/config.h"
#include "model/params.h"
#include "model/shard.h"

namespace optimus::tp2d {

/// Throws core::ConfigError unless q divides NH, C and F (identically on every rank). That q
/// divides the batch B is checked where the batch is known (check_batch_divisible_2d).
void check_divisible_2d(const model::GPTConfig& config, int q);

/// Throws core::ConfigError unless the q rows of the grid can split a pass of B sequences. `batch`
/// names B in the message (default "the batch B"), `choose` says what to change.
void check_batch_divisible_2d(int B, int q, const std::string& batch = "",
                              const std::string& choose = "choose --batch");

/// ⌈V/q⌉, the rows of a vocabulary block (and logit columns of a rank); V is padded to q·⌈V/q⌉.
int vocab_block(const model::GPTConfig& config, int q);

/// Whether a parameter of this kind is column-replicated: the 1-D parameters (LayerNorm weights
/// and biases, the linear biases) and wpe, of which every rank of column j holds the same slice.
/// Each rank's backward adds its rows' share of their gradients; one column all-reduce sums them.
bool column_replicated(model::ParamKind kind);

/// The shard of `info` that rank (i, j) of the q×q grid holds.
model::ShardSpec spec_2d(const model::ParamInfo& info, int q, int i, int j);

}  // namespace optimus::tp2d
