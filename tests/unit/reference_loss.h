// Float64 references for the L0 tests of the model's ends and its optimizer: token and
// position embeddings, softmax cross-entropy over the whole vocabulary, AdamW and dropout.
// Each is the textbook formula in plain loops, sharing no code with src/core, so a test that compares
// the two compares two independent readings of the maths. Only the dropout mask calls
// core::philox_uniform, because that number is the mask's definition.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/philox.h"

namespace optimus::testing::ref {

/// out (N, C) = wte[tokens[n]] for the whole vocabulary wte (V, C).
inline std::vector<double> embedding(const std::vector<int>& tokens, const std::vector<double>& wte, int C) {
  const int N = static_cast<int>(tokens.size());
  std::vector<double> out(static_cast<size_t>(N) * C);
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c) out[static_cast<size_t>(n) * C + c] = wte[static_cast<size_t>(tokens[n]) * C + c];
  return out;
}

/// out (B, T, C) = x (B, T, C) + wpe (T, C) for every sequence b.
inline std::vector<double> position_add(const std::vector<double>& x, const std::vector<double>& wpe, int B, int T,
                                        int C) {
  std::vector<double> out(x);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int c = 0; c < C; ++c) out[(static_cast<size_t>(b) * T + t) * C + c] += wpe[static_cast<size_t>(t) * C + c];
  return out;
}

/// losses (N) = −log softmax(logits[n, :V_real])[targets[n]]; logits (N, V), columns >= V_real ignored.
inline std::vector<double> crossentropy_losses(const std::vector<double>& logits, const std::vector<int>& targets,
                                               int V, int V_real) {
  const int N = static_cast<int>(targets.size());
  std::vector<double> losses(static_cast<size_t>(N));
  for (int n = 0; n < N; ++n) {
    const double* row = logits.data() + static_cast<size_t>(n) * V;
    double mx = row[0];
    for (int v = 1; v < V_real; ++v) mx = std::max(mx, row[v]);
    double s = 0.0;
    for (int v = 0; v < V_real; ++v) s += std::exp(row[v] - mx);
    losses[static_cast<size_t>(n)] = std::log(s) + mx - row[targets[static_cast<size_t>(n)]];
  }
  return losses;
}

/// The mean of crossentropy_losses: the model's training loss.
inline double crossentropy_mean(const std::vector<double>& logits, const std::vector<int>& targets, int V, int V_real) {
  const std::vector<double> losses = crossentropy_losses(logits, targets, V, V_real);
  double s = 0.0;
  for (double l : losses) s += l;
  return s / static_cast<double>(losses.size());
}

/// AdamW state in float64.
struct AdamWState {
  std::vector<double> param, m, v;
};

/// One torch.optim.AdamW step at step t (t counts from 1), straight from its documented algorithm:
/// θ ← θ(1 − lr·λ); m ← β1 m + (1 − β1) g; v ← β2 v + (1 − β2) g²;
/// θ ← θ − lr · (m / (1 − β1ᵗ)) / (√(v / (1 − β2ᵗ)) + ε).
inline void adamw_step(AdamWState& s, const std::vector<double>& grad, double lr, double beta1, double beta2,
                       double eps, double weight_decay, int t) {
  for (size_t k = 0; k < grad.size(); ++k) {
    s.param[k] *= 1.0 - lr * weight_decay;
    s.m[k] = beta1 * s.m[k] + (1.0 - beta1) * grad[k];
    s.v[k] = beta2 * s.v[k] + (1.0 - beta2) * grad[k] * grad[k];
    const double m_hat = s.m[k] / (1.0 - std::pow(beta1, t));
    const double v_hat = s.v[k] / (1.0 - std::pow(beta2, t));
    s.param[k] -= lr * m_hat / (std::sqrt(v_hat) + eps);
  }
}

/// The dropout mask of rows [row0, row0 + rows) × columns [col0, col0 + cols) of a matrix with
/// total_cols columns: 1 where element (r, c) is kept, i.e. where the uniform number of its
/// canonical index r·total_cols + c is >= p, else 0.
inline std::vector<double> dropout_mask(core::PhiloxKey key, uint32_t step, double p, int64_t rows, int64_t cols,
                                        int64_t row0, int64_t col0, int64_t total_cols) {
  std::vector<double> mask(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const uint64_t index = static_cast<uint64_t>((row0 + r) * total_cols + (col0 + c));
      mask[static_cast<size_t>(r * cols + c)] = core::philox_uniform(key, index, step) >= p ? 1.0 : 0.0;
    }
  }
  return mask;
}

/// out = mask · inp / (1 − p).
inline std::vector<double> dropout(const std::vector<double>& inp, const std::vector<double>& mask, double p) {
  std::vector<double> out(inp.size());
  for (size_t k = 0; k < inp.size(); ++k) out[k] = mask[k] * inp[k] / (1.0 - p);
  return out;
}

}  // namespace optimus::testing::ref
