// Sums down the rows, column by column, the same for any thread count: threads own strips of
// columns and walk down the rows, so every read is a run of whole cache lines and every column is
// summed in row order (deterministic: a column's sum does not depend on which strip holds it).
// Bias and LayerNorm gradients use it.
#pragma once

#include <omp.h>

#include <algorithm>

namespace optimus::core {

/// The widest strip, in columns: its float accumulators (1 KiB each) stay in the L1 cache while a
/// strip walks down the rows.
constexpr int kStrip = 256;

/// The strip width for C columns: at least one strip per thread where C allows, strips of equal
/// width, each a whole number of cache lines (16 floats) and at most kStrip.
inline int column_strip_width(int C) {
  const int threads = omp_get_max_threads();
  int strips = (C + kStrip - 1) / kStrip;
  strips = (strips + threads - 1) / threads * threads;  // a multiple of the threads
  const int width = (C + strips - 1) / strips;
  return std::clamp((width + 15) / 16 * 16, 16, kStrip);
}

/// Calls strip(c0, width) for the strips [c0, c0 + width) of C columns, width ≤ kStrip, in
/// parallel over the strips.
template <typename Strip>
void for_each_column_strip(int C, const Strip& strip) {
  const int width = column_strip_width(C);
  const int strips = (C + width - 1) / width;
#pragma omp parallel for schedule(static)
  for (int s = 0; s < strips; ++s) strip(s * width, std::min(width, C - s * width));
}

}  // namespace optimus::core
