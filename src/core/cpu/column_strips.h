// Sums down the rows, column by column, the same for any thread count: threads own strips of
// kStrip columns and walk down the rows, so every read is a whole cache line and every column is
// summed in row order (deterministic). Bias and LayerNorm gradients use it.
#pragma once

#include <algorithm>

namespace optimus::core {

constexpr int kStrip = 16;

/// Calls strip(c0, width) for the strips [c0, c0 + width) of C columns, width ≤ kStrip, in
/// parallel over the strips.
template <typename Strip>
void for_each_column_strip(int C, const Strip& strip) {
  const int strips = (C + kStrip - 1) / kStrip;
#pragma omp parallel for schedule(static)
  for (int s = 0; s < strips; ++s) strip(s * kStrip, std::min(kStrip, C - s * kStrip));
}

}  // namespace optimus::core
