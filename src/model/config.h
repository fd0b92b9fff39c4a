// GPTConfig: the shape of the model every stage builds, with validation that turns
// each bad value into one clear sentence. The same struct is written to and read from a
// checkpoint's config.json (Hugging Face GPT-2 keys).
#pragma once

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

  /// Throws core::ConfigError naming the first bad value and the fix.
  void validate() const;

  /// The named configurations of the benchmarks: "tiny" (L4 C256 NH4 T128), "small" (L6 C384 NH6
  /// T256) and "tiny9" (L4 C288 NH9 T128, for 9 ranks), all with the byte vocabulary, and "gpt2"
  /// (GPT-2 124M's shapes: L12 C768 NH12 T1024, V 50304 = GPT-2's 50257 padded to a multiple of
  /// 128, as llm.c pads it; for the GPU benchmark). Throws ConfigError for another name.
  static GPTConfig named(const std::string& name);

  /// Number of parameters (the tied LM head counted once).
  long long num_parameters() const;
};

/// Throws core::ConfigError unless `parts` divides the heads, the width C and the MLP width 4C, in
/// the words of the layout that splits them: "<layout> splits the heads <over>, but 3 is not
/// divisible by 2; <run_on> 3, or use a model with --heads a multiple of 2".
void require_widths_divide(const GPTConfig& config, int parts, const std::string& layout, const std::string& over,
                           const std::string& run_on);

}  // namespace optimus::model
