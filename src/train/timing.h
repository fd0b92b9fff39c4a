// What the bench's timings share: a steady clock, milliseconds since a moment, and the median of
// repeated measurements.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace optimus::train {

using Clock = std::chrono::steady_clock;

/// Milliseconds from t0 to now.
inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

/// The median of v (the mean of the middle two for an even count); v is not empty.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace optimus::train
