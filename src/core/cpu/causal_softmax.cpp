// The causal softmax on the CPU. Like gelu.cpp this file is compiled with -ffast-math
// (src/CMakeLists.txt), so GCC vectorizes its loops, the sums included, with glibc's vector expf;
// and each function is cloned for AVX-512 and AVX2 (core/cpu/vector_clones.h). -ffast-math assumes
// no infinities, so the row maximum starts from the row's first score (every row t has s = 0 <= t).
// The sums are vector sums: their order is fixed by the build, the same in every call.
#include "core/cpu/causal_softmax.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/cpu/vector_clones.h"

namespace optimus::core {

namespace {

// exp(x) for x <= 0, its argument held at -87 or more: the vector expf need not give 0 for an
// argument below float's range (-103), and exp(-87) ≈ 1.6e-38 is 0 beside a sum of at least 1.
inline float exp_nonpositive(float x) {
  return std::exp(std::max(x, -87.0f));
}

}  // namespace

OPTIMUS_VECTOR_CLONES void causal_softmax(float* att, int T) {
  for (int t = 0; t < T; ++t) {
    float* row = att + static_cast<int64_t>(t) * T;  // (T)
    float maxval = row[0];
    for (int s = 1; s <= t; ++s) maxval = std::max(maxval, row[s]);
    float sum = 0.0f;
    for (int s = 0; s <= t; ++s) {
      row[s] = exp_nonpositive(row[s] - maxval);
      sum += row[s];
    }
    const float inv = 1.0f / sum;
    for (int s = 0; s <= t; ++s) row[s] *= inv;
    std::fill(row + t + 1, row + T, 0.0f);
  }
}

OPTIMUS_VECTOR_CLONES void causal_softmax_backward(float* datt, const float* att, int T) {
  for (int t = 0; t < T; ++t) {
    float* drow = datt + static_cast<int64_t>(t) * T;      // (T)
    const float* row = att + static_cast<int64_t>(t) * T;  // (T)
    float dot = 0.0f;
    for (int s = 0; s <= t; ++s) dot += row[s] * drow[s];
    for (int s = 0; s <= t; ++s) drow[s] = row[s] * (drow[s] - dot);
    std::fill(drow + t + 1, drow + T, 0.0f);
  }
}

}  // namespace optimus::core
