// GPTConfig's validation, the sizes of a step, and the named configurations.
#include "model/config.h"

#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>

#include "core/errors.h"

namespace optimus::model {

using core::ConfigError;

namespace {

constexpr int64_t kIntMax = std::numeric_limits<int>::max();
constexpr int64_t kSaturated = std::numeric_limits<int64_t>::max();
constexpr int64_t kMaxLayers = int64_t{1} << 24;

// Products and sums of positive sizes, saturating at INT64_MAX: a size past every limit stays past
// it, and no intermediate overflows.
int64_t product(std::initializer_list<int64_t> factors) {
  int64_t p = 1;
  for (int64_t f : factors) {
    if (__builtin_mul_overflow(p, f, &p)) return kSaturated;
  }
  return p;
}

int64_t sum(std::initializer_list<int64_t> terms) {
  int64_t s = 0;
  for (int64_t t : terms) {
    if (__builtin_add_overflow(s, t, &s)) return kSaturated;
  }
  return s;
}

// A size for a message: the number, or "more than 9223372036854775807" where it saturated.
std::string amount(int64_t n) {
  return n == kSaturated ? "more than " + std::to_string(kSaturated) : std::to_string(n);
}

// L·(12C² + 13C) + (V + T)·C + 2C, the tied LM head once, saturating.
int64_t parameter_count(const GPTConfig& c) {
  const int64_t C = c.n_embd, V = c.vocab_size, T = c.n_positions, L = c.n_layer;
  const int64_t per_layer = sum({product({12, C, C}), product({13, C})});
  return sum({product({L, per_layer}), product({sum({V, T}), C}), product({2, C})});
}

}  // namespace

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
  if (n_layer > kMaxLayers) {  // each layer's dropout has its own Philox stream (core/philox.h)
    throw ConfigError("the number of layers (--layers) must be at most " + std::to_string(kMaxLayers) +
                      " (2^24: each layer's dropout has one of 2^24 streams of random numbers), but is " +
                      std::to_string(n_layer));
  }
  if (4 * int64_t{n_embd} > kIntMax) {
    throw ConfigError("the embedding width (--embd) " + std::to_string(n_embd) + " makes the MLP width 4C = " +
                      std::to_string(4 * int64_t{n_embd}) + ", past " + std::to_string(kIntMax) +
                      " (widths are ints); use --embd " + std::to_string(kIntMax / 4) + " or less");
  }
  if (const int64_t parameters = parameter_count(*this); parameters > kMaxTensorElements) {
    throw ConfigError("the model has " + amount(parameters) + " parameters (L·(12C² + 13C) + (V + T)·C + 2C), past " +
                      "2^52 = " + std::to_string(kMaxTensorElements) +
                      ", the most one tensor holds (its gradients are one buffer); use a smaller --layers, --embd, "
                      "--seq or vocabulary");
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
  // Per block: ln_1 2C, c_attn C·3C + 3C, attn proj C·C + C, ln_2 2C, c_fc C·4C + 4C, mlp proj 4C·C + C.
  return parameter_count(*this);
}

int64_t step_count_bound(const GPTConfig& c, const StepExtent& step) {
  const int64_t L = c.n_layer, C = c.n_embd, T = step.seq, Vp = sum({c.vocab_size, step.ranks - 1});
  const int64_t N = (product({step.batch, T}) + step.copies - 1) / step.copies;  // one copy's tokens
  const int64_t parameters = parameter_count(c);
  const int64_t split = sum({parameters, product({8, L, T, C})});  // saturated stays past every limit
  const int64_t per_rank = split == kSaturated ? kSaturated : (split + step.ranks - 1) / step.ranks;
  const int64_t per_token = sum({per_rank, product({128, L, C}), product({8, Vp})});
  return sum({product({8, N, per_token}), product({64, parameters})});
}

std::string step_sizes_problem(const GPTConfig& c, const StepExtent& step) {
  const int64_t B = step.batch, T = step.seq, P = step.ranks, D = step.copies;
  if (B < 1 || T < 1 || P < 1 || D < 1 || step.threads < 1) {
    return "a step needs a batch, a sequence length, ranks, copies and threads of at least 1, but has " +
           std::to_string(B) + ", " + std::to_string(T) + ", " + std::to_string(P) + ", " + std::to_string(D) +
           " and " + std::to_string(step.threads);
  }
  const int64_t N = product({B, T}), Vp = sum({c.vocab_size, P - 1});
  if (N > kIntMax) {
    return "a step of --batch " + std::to_string(B) + " sequences of --seq " + std::to_string(T) +
           " tokens has B·T = " + amount(N) + " tokens, past " + std::to_string(kIntMax) +
           " (token counts are ints); use a smaller --batch or --seq";
  }
  if (Vp > kIntMax) {
    return "the vocabulary of " + std::to_string(c.vocab_size) + " tokens, padded to split over " + std::to_string(P) +
           " ranks, can reach " + amount(Vp) + ", past " + std::to_string(kIntMax) +
           " (vocabulary sizes are ints); use a vocabulary of at most " + std::to_string(kIntMax - (P - 1)) + " tokens";
  }
  const int64_t Bc = (B + D - 1) / D, Nc = (N + D - 1) / D;  // one copy's sequences and tokens
  if (const int64_t pairs = product({Bc, c.n_head}); pairs > kIntMax) {
    return "attention's (sequence, head) pairs of a copy's step, B·NH = " + amount(pairs) + ", are past " +
           std::to_string(kIntMax) + " (they are counted in an int); use a smaller --batch or fewer --heads";
  }
  const struct {
    const char* what;
    int64_t elements;
  } tensors[] = {
      {"the logits (B·T, V)", product({Nc, Vp})},
      {"the attention scores (B, NH, T, T)", product({Bc, c.n_head, T, T})},
      {"the MLP's activations (B·T, 4C)", product({Nc, 4, c.n_embd})},
      {"attention's dropout scratch (threads, 2, T, T)", c.dropout > 0.0f ? product({step.threads, 2, T, T}) : 0}};
  for (const auto& t : tensors) {
    if (t.elements <= kMaxTensorElements) continue;
    return std::string(t.what) + " of a copy's step at --batch " + std::to_string(B) + " and --seq " +
           std::to_string(T) + " hold " + amount(t.elements) +
           " elements, past 2^52 = " + std::to_string(kMaxTensorElements) +
           ", the most one tensor holds; use a smaller --batch, --seq or model" +
           (c.dropout > 0.0f ? " (or fewer --threads)" : "");
  }
  if (const int64_t count = step_count_bound(c, step); count > kMaxStepCount) {
    return "a step of this model at --batch " + std::to_string(B) + " and --seq " + std::to_string(T) +
           " may count up to " + amount(count) +
           " FLOPs or bytes on one rank (8·N·((parameters + 8·L·T·C) / P + 128·L·C + 8·V) + 64·parameters, N a "
           "copy's B·T), "
           "past 2^62 = " +
           std::to_string(kMaxStepCount) + ", the most the ledgers count; use a smaller --batch, --seq or model";
  }
  return "";
}

void require_step_sizes(const GPTConfig& config, const StepExtent& step) {
  const std::string problem = step_sizes_problem(config, step);
  if (!problem.empty()) throw ConfigError(problem);
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
