// How Megatron 1D holds each canonical tensor: rank r of p holds the
// vocabulary rows [r·Vp, (r+1)·Vp) of wte, Vp = ⌈V/p⌉ (the last ranks' rows past V are zero
// padding, so V need not be divisible by p), head group r's columns of c_attn (its Q, then K, then
// V columns) and rows of attn.c_proj, the F/p columns of mlp.c_fc and rows of mlp.c_proj; the
// rest (wpe, LayerNorms, the row-parallel biases) is replicated, owned by rank 0.
#pragma once

#include <cstdint>
#include <string>

#include "model/config.h"
#include "model/params.h"
#include "model/shard.h"

namespace optimus::tp1d {

/// Throws core::ConfigError unless p divides NH, C and F (identically on every rank).
void check_divisible(const model::GPTConfig& config, int p);

/// Throws core::ConfigError unless sequence parallelism can split the `tokens` (B·T) of a pass over
/// p ranks; `choose` says what to change (e.g. "choose --batch").
void check_tokens_divisible(int64_t tokens, int p, const std::string& choose = "choose --batch");

/// Vp = ⌈V/p⌉, the vocabulary rows (and logit columns) of each rank; V is padded to p·Vp.
int vocab_part(const model::GPTConfig& config, int p);

/// The shard of `info` that rank r of p holds.
model::ShardSpec spec_1d(const model::ParamInfo& info, int p, int r);

}  // namespace optimus::tp1d
