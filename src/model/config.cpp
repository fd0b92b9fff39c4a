// GPTConfig's validation and the named configurations.
#include "model/config.h"

#include <cmath>
#include <cstdio>

#include "core/errors.h"

namespace optimus::model {

using core::ConfigError;

void GPTConfig::validate() const {
  auto positive = [](const char* what, int v) {
    if (v <= 0) throw ConfigError(std::string(what) + " must be positive, but is " + std::to_string(v));
  };
  positive("the number of layers (--layers)", n_layer);
  positive("the embedding width (--embd)", n_embd);
  positive("the number of heads (--heads)", n_head);
  positive("the sequence length (--seq, n_positions)", n_positions);
  positive("the vocabulary size", vocab_size);
  if (n_embd % n_head != 0) {
    throw ConfigError("the embedding width " + std::to_string(n_embd) + " is not divisible by the number of heads " +
                      std::to_string(n_head) + "; choose --embd a multiple of --heads");
  }
  if (!(dropout >= 0.0f && dropout < 1.0f)) {
    char value[32];
    std::snprintf(value, sizeof value, "%g", static_cast<double>(dropout));
    throw ConfigError(std::string("the dropout probability (--dropout) must be in [0, 1), but is ") + value);
  }
  if (!(layer_norm_epsilon > 0.0f) || !std::isfinite(layer_norm_epsilon)) {
    throw ConfigError("layer_norm_epsilon must be positive and finite, but is " + std::to_string(layer_norm_epsilon));
  }
}

GPTConfig GPTConfig::named(const std::string& name) {
  GPTConfig c;
  if (name == "tiny") {
    c.n_layer = 4, c.n_embd = 256, c.n_head = 4, c.n_positions = 128;
  } else if (name == "small") {
    c.n_layer = 6, c.n_embd = 384, c.n_head = 6, c.n_positions = 256;
  } else if (name == "tiny9") {  // tiny with 9 heads of 32: 1D on 9 ranks and a 3×3 grid both fit
    c.n_layer = 4, c.n_embd = 288, c.n_head = 9, c.n_positions = 128;
  } else if (name == "gpt2") {  // GPT-2 124M's shapes (the same model at full size)
    c.n_layer = 12, c.n_embd = 768, c.n_head = 12, c.n_positions = 1024, c.vocab_size = 50304;
  } else {
    throw ConfigError("unknown model name '" + name + "'; the named models are tiny, small, tiny9 and gpt2");
  }
  return c;
}

long long GPTConfig::num_parameters() const {
  const long long C = n_embd, V = vocab_size, T = n_positions, L = n_layer, F = ffn();
  const long long per_layer = 2 * C + (C * 3 * C + 3 * C) + (C * C + C) + 2 * C + (C * F + F) + (F * C + C);
  return V * C + T * C + L * per_layer + 2 * C;
}

void require_widths_divide(const GPTConfig& c, int parts, const std::string& layout, const std::string& over,
                           const std::string& run_on) {
  auto need = [&](const std::string& what, int value, const std::string& flag) {
    if (value % parts == 0) return;
    const std::string n = std::to_string(value), ps = std::to_string(parts);
    throw core::ConfigError(layout + " splits " + what + " " + over + ", but " + n + " is not divisible by " + ps +
                            "; " + run_on + " " + n + ", or use a model with " + flag + " a multiple of " + ps);
  };
  need("the heads", c.n_head, "--heads");
  need("the embedding width", c.n_embd, "--embd");
  need("the MLP width 4C", c.ffn(), "--embd");
}

}  // namespace optimus::model
