// GPTConfig: the shape of the model every stage builds, with validation that turns
// each bad value into one clear sentence. The same struct is written to and read from a
// checkpoint's config.json (Hugging Face GPT-2 keys). The sizes a step computes with (B·T, 4C,
// the padded vocabulary, a tensor's elements, a ledger's counts) are checked here too, before any
// product of them is formed, so that no size overflows the type the code holds it in.
#pragma once

#include <cstdint>
#include <string>

namespace optimus::model {

struct GPTConfig {
  int n_layer = 4;        // L
  int n_embd = 256;       // C
  int n_head = 4;         // NH; head size HS = C / NH
  int n_positions = 128;  // the longest sequence T (rows of wpe)
  int vocab_size = 256;   // V (rows of wte): bytes
  float dropout = 0.0f;   // embedding, attention-probability and residual dropout
  float layer_norm_epsilon = 1e-5f;

  int ffn() const { return 4 * n_embd; }  // F

  /// Throws core::ConfigError naming the first bad value and the fix: a count that is not
  /// positive, more than 2^24 layers, C not divisible by NH, the MLP width 4C past an int, more
  /// than kMaxTensorElements parameters (the flat gradient buffer is one tensor), a dropout or an
  /// epsilon out of range.
  void validate() const;

  /// The named configurations of the benchmarks: "tiny" (L4 C256 NH4 T128), "small" (L6 C384 NH6
  /// T256) and "tiny9" (L4 C288 NH9 T128, for 9 ranks), all with the byte vocabulary, and "gpt2"
  /// (GPT-2 124M's shapes: L12 C768 NH12 T1024, V 50304 = GPT-2's 50257 padded to a multiple of
  /// 128, as llm.c pads it; for the GPU benchmark). Throws ConfigError for another name.
  static GPTConfig named(const std::string& name);

  /// Number of parameters (the tied LM head counted once).
  long long num_parameters() const;
};

// ---- sizes ------------------------------------------------------------------------------------------

/// The most elements one tensor may have: 2^52 float32 numbers are 16 PiB, past any device's
/// memory and the most one meta Buffer addresses (core/meta/meta_memory.h).
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 52;
/// The most step_count_bound may be: half of int64's range, so that a ledger's count (FLOPs or
/// bytes of a kind of op, a rank's bytes of memory) and a second one still add up in int64.
inline constexpr int64_t kMaxStepCount = int64_t{1} << 62;

/// A training step's extent: B sequences of T tokens over D copies of a layout of P ranks.
struct StepExtent {
  int64_t batch = 1;    // B, the whole step's
  int64_t seq = 1;      // T
  int64_t ranks = 1;    // P, the ranks of one copy (the vocabulary is padded to their split)
  int64_t copies = 1;   // D, each running B / D sequences
  int64_t threads = 1;  // CPU threads per rank: attention's dropout keeps (T, T) scratch for each
};

/// A generous upper bound of every count a rank's ledgers keep in one step of `config` over one
/// copy's N = B·T / D tokens split over P ranks: each kind of op's FLOPs, bytes read or bytes
/// written, each communicator's bytes, and the bytes of memory, with or without recomputation, at
/// any precision:
///   8·N·(⌈(parameters + 8·L·T·C) / P⌉ + 128·L·C + 8·Vp) + 64·parameters,  Vp = V + P − 1.
/// The products and attention are split over the P ranks in every layout: 6·N·parameters FLOPs,
/// 8 with recomputation's second forward, and attention's scores about 40·N·T·C per block. Every
/// other op, which a layout may repeat on each rank (1D's LayerNorms), less than 1024·N·C a block,
/// the vocabulary's ops 64·N·Vp, and the parameters' own (AdamW, the gradient norm) 64 per
/// parameter. Saturates at INT64_MAX. Assumes validate() passed.
int64_t step_count_bound(const GPTConfig& config, const StepExtent& step);

/// Throws core::ConfigError unless every size of a step of `config` over `step` fits the type the
/// code holds it in, each in one sentence naming the value and the fix: B·T tokens, the vocabulary
/// padded for P ranks and attention's B·NH (sequence, head) pairs are ints; the logits (B·T, Vp),
/// the attention scores (B, NH, T, T), the MLP's (B·T, 4C) and, with dropout, attention's scratch
/// (threads, 2, T, T) at most kMaxTensorElements; step_count_bound at most kMaxStepCount.
/// Checked before any allocation or collective, with the counts computed saturating.
void require_step_sizes(const GPTConfig& config, const StepExtent& step);

/// require_step_sizes's message, or "" when every size fits.
std::string step_sizes_problem(const GPTConfig& config, const StepExtent& step);

/// Throws core::ConfigError unless `parts` divides the heads, the width C and the MLP width 4C, in
/// the words of the layout that splits them: "<layout> splits the heads <over>, but 3 is not
/// divisible by 2; <run_on> 3, or use a model with --heads a multiple of 2".
void require_widths_divide(const GPTConfig& config, int parts, const std::string& layout, const std::string& over,
                           const std::string& run_on);

}  // namespace optimus::model
