// Helpers of the equivalence tests (levels L2–L5, docs/equivalence.md): canonical tensors from any
// layout, relative errors, and a one-line report per comparison printed by rank 0, so the test log
// shows the numbers. A NaN anywhere is the worst error of all: every aggregation here keeps it, so
// it fails every bar (NaN <= bar is false) instead of vanishing inside a max.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <initializer_list>
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

/// The larger of two errors, NaN above everything (std::max(worst, NaN) would return worst).
inline double worse(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
}

/// The largest of several errors, NaN above everything.
inline double worst_of(std::initializer_list<double> errors) {
  double w = 0.0;
  for (double e : errors) w = worse(w, e);
  return w;
}

/// The worst of named errors, NaN above everything: the first NaN stays, with its name.
struct WorstError {
  double value = 0.0;
  std::string name;
  void add(double e, const std::string& what) {
    if (name.empty() || (!std::isnan(value) && (std::isnan(e) || e > value))) value = e, name = what;
  }
};

/// The worst of every rank's error (collective), NaN if any rank's is NaN.
inline double worst_over_ranks(double e) {
  int nan = std::isnan(e) ? 1 : 0;
  mpi_test::world().comm().all_reduce(&nan, 1, optimus::comm::ReduceOp::max);
  if (nan) return NAN;
  mpi_test::world().comm().all_reduce(&e, 1, optimus::comm::ReduceOp::max);
  return e;
}

/// Prints "equivalence: <what> measured M, formula F" on rank 0 (exact counts).
inline void report_count(const std::string& what, long long measured, long long formula) {
  if (mpi_test::world().rank() == 0) {
    std::printf("equivalence: %-52s measured %lld, formula %lld\n", what.c_str(), measured, formula);
  }
}

/// A batch (B, T) of token ids, the same on every rank (a pure function of the index and salt).
inline void make_batch(std::vector<int>& inputs, std::vector<int>& targets, int B, int T, int salt) {
  inputs.resize(static_cast<size_t>(B) * T), targets.resize(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    inputs[k] = static_cast<int>((k * 37 + 11 * salt) % 256);
    targets[k] = static_cast<int>((k * 53 + 7 + salt) % 256);
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

/// The (rows, cols) matrix whose q×q tiles (rows/q, cols/q) the ranks of the world hold, rank r
/// tile (r / q, r % q) — the inverse of grid_block — on every rank.
inline std::vector<float> gather_grid(const optimus::comm::Grid2D& g, const float* tile, int rows, int cols) {
  const int q = g.q(), rb = rows / q, cb = cols / q;
  const int64_t n = int64_t{rb} * cb;
  std::vector<float> all(static_cast<size_t>(n) * q * q), full(static_cast<size_t>(rows) * cols);
  g.world().all_gather(all.data(), tile, n);
  for (int r = 0; r < q * q; ++r) {
    for (int a = 0; a < rb; ++a) {
      const float* src = all.data() + r * n + int64_t{a} * cb;
      std::copy(src, src + cb, full.data() + static_cast<size_t>((r / q) * rb + a) * cols + (r % q) * cb);
    }
  }
  return full;
}

/// The first `keep` columns of a (rows, cols) matrix (e.g. the real vocabulary of padded logits).
inline std::vector<float> first_columns(const std::vector<float>& m, int rows, int cols, int keep) {
  std::vector<float> out;
  for (int r = 0; r < rows; ++r)
    out.insert(out.end(), m.begin() + int64_t{r} * cols, m.begin() + int64_t{r} * cols + keep);
  return out;
}

inline std::vector<float> copy(const float* p, int64_t n) {
  return std::vector<float>(p, p + n);
}

/// What one training step of `gpt` (zero the gradients, forward, backward, clip at 1) sends: the
/// ledger of `world`, which also records every group split from it, before and after.
template <typename Model>
optimus::comm::CommLedger step_communication(Model& gpt, optimus::comm::Communicator& world,
                                             const std::vector<int>& inputs, const std::vector<int>& targets, int B,
                                             int T) {
  auto& ledger = world.ledger();
  const auto before = ledger.snapshot();
  gpt.params().zero_grads();
  gpt.forward(inputs.data(), targets.data(), B, T, 0);
  gpt.backward();
  gpt.clip_gradients(1.0f);
  return ledger.since(before);
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

/// The key third [C, 2C) of c_attn.bias (3C) has a gradient that is zero in exact arithmetic: adding
/// b_k to every key adds q·b_k to every score of a query, which softmax ignores. Its computed
/// gradient is round-off, different in every layout, and AdamW (which divides by √v) turns that
/// noise into weight differences of any relative size. So the parameter comparisons leave that
/// third out (its Q and V thirds are compared as usual) and key_bias_gradient_ratio() checks that
/// its gradient is round-off indeed.
inline std::vector<float> comparable_part(const optimus::model::ParamInfo& info, const std::vector<float>& canonical) {
  if (info.kind != optimus::model::ParamKind::attn_qkv_bias) return canonical;
  const size_t C = canonical.size() / 3;
  std::vector<float> qv(canonical.begin(), canonical.begin() + static_cast<std::ptrdiff_t>(C));
  qv.insert(qv.end(), canonical.begin() + static_cast<std::ptrdiff_t>(2 * C), canonical.end());
  return qv;
}

/// The name of what comparable_part compares: "…c_attn.bias (Q, V)" for the biases it cuts.
inline std::string compared_name(const optimus::model::ParamInfo& info) {
  return info.kind == optimus::model::ParamKind::attn_qkv_bias ? info.name + " (Q, V)" : info.name;
}

/// max over layers of ‖gradient of the key bias‖ / ‖gradient of the whole c_attn.bias‖, from a
/// model's canonical (serial) gradients: round-off size (≲ 1e-6) when the claim above holds.
inline double key_bias_gradient_ratio(const optimus::model::ParamSet& serial) {
  double worst = 0.0;
  for (const auto& t : serial.tensors) {
    if (t.info.kind != optimus::model::ParamKind::attn_qkv_bias) continue;
    const int64_t C = t.grad.numel() / 3;
    double key = 0.0, all = 0.0;
    for (int64_t k = 0; k < 3 * C; ++k) {
      const double g = t.grad.data()[k];
      all += g * g;
      if (k >= C && k < 2 * C) key += g * g;
    }
    worst = worse(worst, all == 0.0 ? 0.0 : std::sqrt(key / all));
  }
  return worst;
}

/// The largest relative error over all parameters between a layout's gathered tensors (values or
/// gradients) and a serial model's; prints the worst parameter.
template <typename Which>
double worst_param_error(const optimus::model::ParamSet& layout, const optimus::model::ParamSet& serial,
                         optimus::comm::Communicator& comm, const optimus::model::SpecOfRank& spec_of, Which which,
                         const std::string& what) {
  WorstError worst;
  for (size_t i = 0; i < layout.tensors.size(); ++i) {
    const auto& t = layout.tensors[i];
    const auto& s = serial.tensors[i];
    const auto full = optimus::model::gather_canonical(t, which(t), comm, spec_of);
    worst.add(rel_error(comparable_part(t.info, full), comparable_part(t.info, copy(which(s), s.spec.local_numel()))),
              compared_name(t.info));
  }
  report(what + " (worst: " + worst.name + ")", worst.value);
  return worst.value;
}

/// The same between two parallel layouts on the same world: both gathered to canonical tensors.
template <typename Which>
double worst_param_error_between(const optimus::model::ParamSet& a, const optimus::model::SpecOfRank& spec_a,
                                 const optimus::model::ParamSet& b, const optimus::model::SpecOfRank& spec_b,
                                 optimus::comm::Communicator& comm, Which which, const std::string& what) {
  WorstError worst;
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const auto& ta = a.tensors[i];
    const auto& tb = b.tensors[i];
    worst.add(rel_error(comparable_part(ta.info, optimus::model::gather_canonical(ta, which(ta), comm, spec_a)),
                        comparable_part(tb.info, optimus::model::gather_canonical(tb, which(tb), comm, spec_b))),
              compared_name(ta.info));
  }
  report(what + " (worst: " + worst.name + ")", worst.value);
  return worst.value;
}

}  // namespace equivalence
