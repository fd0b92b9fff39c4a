// Sampling text from a trained model (chapter 1, and `optimus sample`): autoregressive decoding with
// temperature and top-k, its random draws from Philox so a seed reproduces a sample.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "serial/gpt.h"
#include "text/bpe.h"
#include "train/stop_signals.h"

namespace optimus::train {

struct SampleOptions {
  int tokens = 200;          // how many to generate
  float temperature = 0.8f;  // > 0; lower is more conservative
  int top_k = 40;            // 0 = the whole vocabulary
  uint32_t seed = 1;
};

/// What a caller may attach to a long sample: the text of each token as it is made (to print it as
/// it goes), and the stop signals, asked before each token (a stop ends the sample at once).
struct SampleStream {
  std::function<void(const std::string&)> on_text;  // null: the text is only returned
  const StopSignals* stop = nullptr;                // null: the sample runs to its end
};

/// A sample: the continuation, how many tokens it has, and the signal that ended it early (0: none,
/// all `options.tokens` were made).
struct Sample {
  std::string text;
  int tokens = 0;
  int stopped_by = 0;
};

/// Continues `prompt` by `options.tokens` tokens (fewer when `stream.stop` is signalled) and returns
/// the continuation (without the prompt), encoded and decoded by `tokenizer`, or as bytes when it is
/// null; a prompt holding a token past the model's vocabulary is a ConfigError. The context is the
/// last n_positions tokens; causal attention lets one fixed-size window serve every length
/// (positions after the last real token do not affect it).
Sample sample_text(serial::GPT& gpt, const std::string& prompt, const SampleOptions& options,
                   const text::Tokenizer* tokenizer = nullptr, const SampleStream& stream = {});

/// Writes `text` to standard output byte for byte (a byte-level sample may hold a 0 byte, where
/// printf would end it) and flushes: the printing rank's SampleStream::on_text.
void print_text(const std::string& text);

/// Whether `dir` holds a tokenizer's files (vocab.json, merges.txt).
bool has_tokenizer(const std::string& dir);

/// The tokenizer whose files are in `dir`, or null when it has none.
std::unique_ptr<text::Tokenizer> tokenizer_in(const std::string& dir);

}  // namespace optimus::train
