// Sampling text from a trained model (chapter 1, and `optimus sample`): autoregressive decoding with
// temperature and top-k, its random draws from Philox so a seed reproduces a sample.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "serial/gpt.h"
#include "text/bpe.h"

namespace optimus::train {

struct SampleOptions {
  int tokens = 200;          // how many to generate
  float temperature = 0.8f;  // > 0; lower is more conservative
  int top_k = 40;            // 0 = the whole vocabulary
  uint32_t seed = 1;
};

/// Continues `prompt` by `options.tokens` tokens and returns the continuation (without the prompt),
/// encoded and decoded by `tokenizer`, or as bytes when it is null. The context is the last
/// n_positions tokens; causal attention lets one fixed-size window serve every length (positions
/// after the last real token do not affect it).
std::string sample_text(serial::GPT& gpt, const std::string& prompt, const SampleOptions& options,
                        const text::Tokenizer* tokenizer = nullptr);

/// Whether `dir` holds a tokenizer's files (vocab.json, merges.txt).
bool has_tokenizer(const std::string& dir);

/// The tokenizer whose files are in `dir`, or null when it has none.
std::unique_ptr<text::Tokenizer> tokenizer_in(const std::string& dir);

}  // namespace optimus::train
