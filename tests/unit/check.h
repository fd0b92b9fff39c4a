// Helpers for the L0 op tests: deterministic test data, relative errors, and central
// finite differences of a float64 reference. Test data comes from Philox too (a test-only stream),
// so every run and every machine tests the same numbers.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/philox.h"

namespace optimus::testing {

/// n numbers from N(0, std), reproducible: `salt` picks the stream.
inline std::vector<float> random_normal(int64_t n, uint32_t salt, float std = 1.0f) {
  std::vector<float> x(static_cast<size_t>(n));
  const core::PhiloxKey key{12345u, 0x70000000u + salt};
  for (int64_t k = 0; k < n; ++k) x[static_cast<size_t>(k)] = std * core::philox_normal(key, static_cast<uint64_t>(k));
  return x;
}

/// n integers in [0, hi), reproducible.
inline std::vector<int> random_ints(int64_t n, int hi, uint32_t salt) {
  std::vector<int> x(static_cast<size_t>(n));
  const core::PhiloxKey key{12345u, 0x71000000u + salt};
  for (int64_t k = 0; k < n; ++k) {
    x[static_cast<size_t>(k)] =
        static_cast<int>(core::philox(key, static_cast<uint64_t>(k)).v[0] % static_cast<uint32_t>(hi));
  }
  return x;
}

inline std::vector<double> to_double(const std::vector<float>& x) {
  return {x.begin(), x.end()};
}

/// ‖a − b‖ / ‖b‖ over the whole tensor (b is the reference). 0 when both are zero.
template <typename A, typename B>
double rel_error(const std::vector<A>& a, const std::vector<B>& b) {
  double num = 0.0, den = 0.0;
  for (size_t k = 0; k < a.size() && k < b.size(); ++k) {
    const double d = static_cast<double>(a[k]) - static_cast<double>(b[k]);
    num += d * d;
    den += static_cast<double>(b[k]) * static_cast<double>(b[k]);
  }
  if (a.size() != b.size()) return INFINITY;
  if (den == 0.0) return num == 0.0 ? 0.0 : INFINITY;
  return std::sqrt(num / den);
}

/// Σ w·y: the scalar "loss" whose gradient the backward tests check (w random, so every output
/// element's gradient path is exercised with a different weight).
inline double weighted_sum(const std::vector<double>& y, const std::vector<double>& w) {
  double s = 0.0;
  for (size_t k = 0; k < y.size(); ++k) s += y[k] * w[k];
  return s;
}

/// Central finite differences of f at x, one element at a time: (f(x + h e_k) − f(x − h e_k)) / 2h.
/// f is a float64 reference, so h = 1e-6 gives about 1e-9 relative accuracy.
inline std::vector<double> finite_difference(const std::function<double(const std::vector<double>&)>& f,
                                             std::vector<double> x, double h = 1e-6) {
  std::vector<double> g(x.size());
  for (size_t k = 0; k < x.size(); ++k) {
    const double x0 = x[k];
    x[k] = x0 + h;
    const double fp = f(x);
    x[k] = x0 - h;
    const double fm = f(x);
    x[k] = x0;
    g[k] = (fp - fm) / (2.0 * h);
  }
  return g;
}

}  // namespace optimus::testing
