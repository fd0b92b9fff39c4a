// Naive float64 references for the L0 op tests: the math of each op written as plain
// loops straight from its definition, sharing no code with src/core, so a bug in an op cannot hide
// in its reference. Only the dropout decision comes from core::dropout_keep, so the reference drops
// the same attention probabilities as the op. The tests compare the ops' forward passes with these
// and their backward passes with finite differences of these.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "core/ops.h"
#include "core/philox.h"

namespace optimus::testing::ref {

using Vec = std::vector<double>;

/// c (M, N) = op(a) · op(b); a is stored (M, K), or (K, M) when ta; b is (K, N), or (N, K) when tb.
inline Vec matmul(const Vec& a, const Vec& b, int M, int N, int K, bool ta, bool tb) {
  Vec c(static_cast<size_t>(M) * N, 0.0);
  for (int m = 0; m < M; ++m) {
    for (int n = 0; n < N; ++n) {
      double s = 0.0;
      for (int k = 0; k < K; ++k) {
        const double av = ta ? a[static_cast<size_t>(k) * M + m] : a[static_cast<size_t>(m) * K + k];
        const double bv = tb ? b[static_cast<size_t>(n) * K + k] : b[static_cast<size_t>(k) * N + n];
        s += av * bv;
      }
      c[static_cast<size_t>(m) * N + n] = s;
    }
  }
  return c;
}

/// out (N, OC) + bias (OC) on every row.
inline Vec bias_add(Vec out, const Vec& bias, int N, int OC) {
  for (int n = 0; n < N; ++n) {
    for (int o = 0; o < OC; ++o) out[static_cast<size_t>(n) * OC + o] += bias[static_cast<size_t>(o)];
  }
  return out;
}

/// out (N, OC) = inp (N, C) · weight (C, OC) + bias (OC); an empty bias means none.
inline Vec linear(const Vec& inp, const Vec& weight, const Vec& bias, int N, int C, int OC) {
  Vec out(static_cast<size_t>(N) * OC, 0.0);
  for (int n = 0; n < N; ++n) {
    for (int o = 0; o < OC; ++o) {
      double s = bias.empty() ? 0.0 : bias[static_cast<size_t>(o)];
      for (int c = 0; c < C; ++c) s += inp[static_cast<size_t>(n) * C + c] * weight[static_cast<size_t>(c) * OC + o];
      out[static_cast<size_t>(n) * OC + o] = s;
    }
  }
  return out;
}

struct LayerNormOut {
  Vec out;   // (N, C)
  Vec mean;  // (N)
  Vec rstd;  // (N)
};

/// out (N, C) = (x - mean) / sqrt(var + eps) * weight + bias per row, var the biased variance.
inline LayerNormOut layernorm(const Vec& inp, const Vec& weight, const Vec& bias, int N, int C, double eps) {
  LayerNormOut r{Vec(static_cast<size_t>(N) * C), Vec(static_cast<size_t>(N)), Vec(static_cast<size_t>(N))};
  for (int n = 0; n < N; ++n) {
    const double* x = inp.data() + static_cast<size_t>(n) * C;
    double mean = 0.0;
    for (int c = 0; c < C; ++c) mean += x[c];
    mean /= C;
    double var = 0.0;
    for (int c = 0; c < C; ++c) var += (x[c] - mean) * (x[c] - mean);
    var /= C;
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (int c = 0; c < C; ++c) {
      r.out[static_cast<size_t>(n) * C + c] =
          (x[c] - mean) * rstd * weight[static_cast<size_t>(c)] + bias[static_cast<size_t>(c)];
    }
    r.mean[static_cast<size_t>(n)] = mean;
    r.rstd[static_cast<size_t>(n)] = rstd;
  }
  return r;
}

/// GPT-2's gelu_new: 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))).
inline Vec gelu(const Vec& x) {
  const double pi = 3.14159265358979323846;
  Vec y(x.size());
  for (size_t k = 0; k < x.size(); ++k) {
    y[k] = 0.5 * x[k] * (1.0 + std::tanh(std::sqrt(2.0 / pi) * (x[k] + 0.044715 * x[k] * x[k] * x[k])));
  }
  return y;
}

inline Vec residual(const Vec& a, const Vec& b) {
  Vec y(a.size());
  for (size_t k = 0; k < a.size(); ++k) y[k] = a[k] + b[k];
  return y;
}

struct AttentionOut {
  Vec out;  // (B, T, C)
  Vec att;  // (B, NH, T, T), before dropout
};

/// Causal self-attention of the B sequences and NH heads in qkv (B, T, 3C), [Q | K | V] columns.
/// The block sits at (b0, h0) of a canonical (B_total, NH_total) tensor, given by drop.block; the
/// probability (b, h, t, s) is dropped by core::dropout_keep on the canonical index
/// ((b0 + b) * NH_total + h0 + h) * T*T + t*T + s.
inline AttentionOut attention(const Vec& qkv, int B, int T, int C, int NH, const core::DropoutSpec& drop) {
  const int HS = C / NH;
  const int64_t b0 = drop.block.offset[0], h0 = drop.block.offset[1], NH_total = drop.block.global_dim[1];
  AttentionOut r{Vec(static_cast<size_t>(B) * T * C, 0.0), Vec(static_cast<size_t>(B) * NH * T * T, 0.0)};
  auto at = [&](int b, int t, int part, int h, int i) {  // qkv[b, t, part*C + h*HS + i]
    return qkv[(static_cast<size_t>(b) * T + t) * 3 * C + part * C + h * HS + i];
  };
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      for (int t = 0; t < T; ++t) {
        Vec p(static_cast<size_t>(t) + 1);
        double maxval = -INFINITY;
        for (int s = 0; s <= t; ++s) {
          double dot = 0.0;
          for (int i = 0; i < HS; ++i) dot += at(b, t, 0, h, i) * at(b, s, 1, h, i);
          p[static_cast<size_t>(s)] = dot / std::sqrt(static_cast<double>(HS));
          maxval = std::max(maxval, p[static_cast<size_t>(s)]);
        }
        double sum = 0.0;
        for (int s = 0; s <= t; ++s) sum += (p[static_cast<size_t>(s)] = std::exp(p[static_cast<size_t>(s)] - maxval));
        for (int s = 0; s <= t; ++s) {
          const double prob = p[static_cast<size_t>(s)] / sum;
          r.att[((static_cast<size_t>(b) * NH + h) * T + t) * T + s] = prob;
          double used = prob;
          if (drop.p > 0.0f) {
            const uint64_t g = static_cast<uint64_t>(((b0 + b) * NH_total + h0 + h) * T * T + t * T + s);
            used = core::dropout_keep(drop.key, g, drop.step, drop.p) ? prob / (1.0 - drop.p) : 0.0;
          }
          for (int i = 0; i < HS; ++i)
            r.out[(static_cast<size_t>(b) * T + t) * C + h * HS + i] += used * at(b, s, 2, h, i);
        }
      }
    }
  }
  return r;
}

/// The first few values of an op's output beside the reference's, for a failing test's message.
template <typename A>
std::string side_by_side(const std::vector<A>& got, const Vec& want, size_t count = 4) {
  std::ostringstream s;
  s.precision(9);
  for (size_t k = 0; k < std::min({count, got.size(), want.size()}); ++k) {
    s << "[" << k << "] op " << static_cast<double>(got[k]) << "  ref " << want[k] << "\n";
  }
  return s.str();
}

}  // namespace optimus::testing::ref
