// Helpers of the equivalence tests (DESIGN §10, L2–L5): canonical tensors from any layout, relative
// errors, and a one-line report per comparison printed by rank 0, so the test log shows the numbers.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/grid.h"
#include "core/philox.h"
#include "model/gather.h"
#include "model/param_set.h"
#include "mpi_test.h"

namespace equivalence {

/// ‖a − b‖ / ‖b‖ over the whole tensor (b is the reference); 0 when both are zero.
inline double rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0.0, den = 0.0;
  if (a.size() != b.size()) return INFINITY;
  for (size_t k = 0; k < a.size(); ++k) {
    const double d = static_cast<double>(a[k]) - b[k];
    num += d * d;
    den += static_cast<double>(b[k]) * b[k];
  }
  return den == 0.0 ? (num == 0.0 ? 0.0 : INFINITY) : std::sqrt(num / den);
}

/// Prints "equivalence: <what> measured M, formula F" on rank 0 (exact counts).
inline void report_count(const std::string& what, long long measured, long long formula) {
  if (mpi_test::world().rank() == 0) {
    std::printf("equivalence: %-52s measured %lld, formula %lld\n", what.c_str(), measured, formula);
  }
}

/// n numbers scale·N(0, 1) from Philox under key: the same tensor on every rank and every run.
inline std::vector<float> normal_data(int64_t n, float scale, optimus::core::PhiloxKey key) {
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k)
    x[static_cast<size_t>(k)] = scale * optimus::core::philox_normal(key, static_cast<uint64_t>(k));
  return x;
}

/// Block (i, j) of a (rows, cols) matrix cut q×q on grid g: (rows/q, cols/q), contiguous.
inline std::vector<float> grid_block(const std::vector<float>& full, int rows, int cols,
                                     const optimus::comm::Grid2D& g) {
  const int rb = rows / g.q(), cb = cols / g.q();
  std::vector<float> b(static_cast<size_t>(rb) * cb);
  for (int r = 0; r < rb; ++r) {
    const auto* src = full.data() + static_cast<size_t>(g.i() * rb + r) * cols + g.j() * cb;
    std::copy(src, src + cb, b.data() + static_cast<size_t>(r) * cb);
  }
  return b;
}

inline std::vector<float> copy(const float* p, int64_t n) {
  return std::vector<float>(p, p + n);
}

/// Prints "equivalence: <what> <value>" on rank 0.
inline void report(const std::string& what, double value) {
  if (mpi_test::world().rank() == 0) std::printf("equivalence: %-60s %.3e\n", what.c_str(), value);
}

/// A column block (N, cols) of every rank of `comm`, gathered side by side into (N, cols·size).
inline std::vector<float> gather_columns(optimus::comm::Communicator& comm, const float* local, int N, int cols) {
  std::vector<float> all(static_cast<size_t>(N) * cols * comm.size()), full(all.size());
  comm.all_gather(all.data(), local, int64_t{N} * cols);
  const int width = cols * comm.size();
  for (int k = 0; k < comm.size(); ++k) {
    for (int n = 0; n < N; ++n) {
      for (int c = 0; c < cols; ++c) {
        full[static_cast<size_t>(n) * width + k * cols + c] = all[(static_cast<size_t>(k) * N + n) * cols + c];
      }
    }
  }
  return full;
}

/// The largest relative error over all parameters between a layout's gathered tensors (values or
/// gradients) and a serial model's; prints the worst parameter.
template <typename Which>
double worst_param_error(const optimus::model::ParamSet& layout, const optimus::model::ParamSet& serial,
                         optimus::comm::Communicator& comm, const optimus::model::SpecOfRank& spec_of, Which which,
                         const std::string& what) {
  double worst = 0.0;
  std::string worst_name;
  for (size_t i = 0; i < layout.tensors.size(); ++i) {
    const auto& t = layout.tensors[i];
    const auto& s = serial.tensors[i];
    const auto full = optimus::model::gather_canonical(t, which(t), comm, spec_of);
    const double e = rel_error(full, copy(which(s), s.spec.local_numel()));
    if (e > worst || worst_name.empty()) worst = e, worst_name = t.info.name;
  }
  report(what + " (worst: " + worst_name + ")", worst);
  return worst;
}

}  // namespace equivalence
