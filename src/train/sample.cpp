// Autoregressive sampling with temperature and top-k.
#include "train/sample.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <vector>

#include "core/errors.h"
#include "core/philox.h"
#include "train/data.h"

namespace optimus::train {

// Picks a token from one row of logits (V): softmax(logits / temperature) restricted to the top k.
static int pick_token(const float* logits, int V, const SampleOptions& o, uint64_t draw_index) {
  std::vector<int> ids(static_cast<size_t>(V));
  std::iota(ids.begin(), ids.end(), 0);
  const int k = (o.top_k > 0 && o.top_k < V) ? o.top_k : V;
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  std::vector<double> p(static_cast<size_t>(k));
  const double top = logits[ids[0]];
  double sum = 0.0;
  for (int i = 0; i < k; ++i)
    sum += p[static_cast<size_t>(i)] = std::exp((logits[ids[static_cast<size_t>(i)]] - top) / o.temperature);
  const double u = core::philox_uniform({o.seed, core::streams::kSample}, draw_index) * sum;
  double acc = 0.0;
  for (int i = 0; i < k; ++i) {
    acc += p[static_cast<size_t>(i)];
    if (u < acc) return ids[static_cast<size_t>(i)];
  }
  return ids[static_cast<size_t>(k - 1)];
}

Sample sample_text(serial::GPT& gpt, const std::string& prompt, const SampleOptions& options,
                   const text::Tokenizer* tokenizer, const SampleStream& stream) {
  const int T = gpt.config().n_positions, V = gpt.config().vocab_size;
  std::vector<int> context = tokenizer ? tokenizer->encode(prompt) : encode(prompt);
  if (context.empty()) context = tokenizer ? tokenizer->encode("\n") : encode("\n");
  if (const int top = *std::max_element(context.begin(), context.end()); top >= V) {
    throw core::ConfigError("the prompt holds the token " + std::to_string(top) + (tokenizer ? "" : " (a byte)") +
                            ", past the model's vocabulary of " + std::to_string(V) +
                            " tokens; give a prompt of tokens below " + std::to_string(V));
  }
  std::vector<int> window(static_cast<size_t>(T)), dummy_targets(static_cast<size_t>(T), 0);
  Sample sample;
  for (; sample.tokens < options.tokens; ++sample.tokens) {
    // Asked before each token's forward pass: a stop ends the sample within one pass of arriving.
    if (stream.stop != nullptr) sample.stopped_by = stream.stop->received();
    if (sample.stopped_by != 0) break;
    const int len = std::min(static_cast<int>(context.size()), T);
    std::fill(window.begin(), window.end(), 0);
    std::copy(context.end() - len, context.end(), window.begin());
    gpt.forward(window.data(), dummy_targets.data(), 1, T, 0, /*train=*/false);
    const float* row = gpt.activations().logits.data() + static_cast<int64_t>(len - 1) * V;
    const int next = pick_token(row, V, options, static_cast<uint64_t>(sample.tokens));
    context.push_back(next);
    // Both decoders are a token's bytes in order, so the pieces join into the whole text's decoding.
    const std::string piece = tokenizer ? tokenizer->decode({next}) : decode({next});
    sample.text += piece;
    if (stream.on_text) stream.on_text(piece);
  }
  return sample;
}

void print_text(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

bool has_tokenizer(const std::string& dir) {
  for (const char* file : text::Tokenizer::kFiles) {
    std::error_code ec;
    if (!std::filesystem::exists(std::filesystem::path(dir) / file, ec)) return false;
  }
  return true;
}

std::unique_ptr<text::Tokenizer> tokenizer_in(const std::string& dir) {
  return has_tokenizer(dir) ? std::make_unique<text::Tokenizer>(text::Tokenizer::load(dir)) : nullptr;
}

}  // namespace optimus::train
