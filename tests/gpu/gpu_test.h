// Helpers for the GPU tests (label gpu): the CUDA context the test main made, copies
// between host vectors and device Buffers, and the comparisons: ‖gpu − cpu‖ / ‖cpu‖ ≤ 1e-5 for
// float32 arithmetic (L0), exact where both backends do the same operations in the same
// order (dropout masks, lookups, scatter-adds). On a mismatch a few values are printed side by side.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/context.h"
#include "core/tensor.h"

namespace gpu_test {

/// The exit code of a test binary that found no GPU; ctest reports it as skipped (SKIP_RETURN_CODE).
inline constexpr int kSkip = 77;

/// The CUDA context the test main made (valid while tests run; the main sets and resets it), and a
/// CPU context.
inline std::optional<optimus::core::Context> the_cuda;
inline const optimus::core::Context& cuda() {
  return *the_cuda;
}
inline const optimus::core::Context& cpu() {
  static const optimus::core::Context ctx = optimus::core::cpu_context();
  return ctx;
}

/// A value no op writes: outputs start as it, so an element the GPU forgot stands out.
inline constexpr float kPoison = -777.0f;

inline optimus::core::Buffer to_device(const std::vector<float>& x) {
  optimus::core::Buffer b(*cuda().ledger, optimus::core::MemoryCategory::workspace, {static_cast<int64_t>(x.size())},
                          optimus::core::Device::cuda);
  optimus::core::copy_to_device(cuda(), b.data(), x.data(), static_cast<int64_t>(x.size()));
  return b;
}

inline optimus::core::IntBuffer to_device(const std::vector<int>& x) {
  optimus::core::IntBuffer b(*cuda().ledger, optimus::core::MemoryCategory::workspace, {static_cast<int64_t>(x.size())},
                             optimus::core::Device::cuda);
  optimus::core::copy_to_device(cuda(), b.data(), x.data(), static_cast<int64_t>(x.size()));
  return b;
}

inline std::vector<float> to_host(const optimus::core::Buffer& b) {
  std::vector<float> x(static_cast<size_t>(b.numel()));
  optimus::core::copy_to_host(cuda(), x.data(), b.data(), b.numel());
  return x;
}

/// ‖a − b‖ / ‖b‖ in double; infinite if the sizes differ or b is zero and a is not; NaN stays NaN.
inline double rel_error(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double num = 0.0, den = 0.0;
  for (size_t k = 0; k < a.size(); ++k) {
    num += (a[k] - b[k]) * (a[k] - b[k]);
    den += b[k] * b[k];
  }
  if (den == 0.0) return num == 0.0 ? 0.0 : INFINITY;
  return std::sqrt(num / den);
}

inline void show_side_by_side(const std::vector<float>& gpu, const std::vector<float>& cpu) {
  for (size_t k = 0; k < gpu.size() && k < cpu.size() && k < 4; ++k) {
    UNSCOPED_INFO("  [" << k << "] gpu " << gpu[k] << "  cpu " << cpu[k]);
  }
}

/// The GPU's result agrees with the CPU's to `tol` relative error.
inline bool agree(const std::vector<float>& gpu, const std::vector<float>& cpu, double tol = 1e-5) {
  const double err = rel_error({gpu.begin(), gpu.end()}, {cpu.begin(), cpu.end()});
  if (!(err <= tol)) {
    UNSCOPED_INFO("relative error " << err << " > " << tol << " over " << cpu.size() << " elements");
    show_side_by_side(gpu, cpu);
  }
  return err <= tol;
}

/// For accumulating ops: what the GPU added to `initial` agrees with what the CPU added.
inline bool agree_added(const std::vector<float>& gpu, const std::vector<float>& cpu, const std::vector<float>& initial,
                        double tol = 1e-5) {
  if (gpu.size() != initial.size() || cpu.size() != initial.size()) return false;
  std::vector<double> dg(initial.size()), dc(initial.size());
  for (size_t k = 0; k < initial.size(); ++k) {
    dg[k] = static_cast<double>(gpu[k]) - initial[k];
    dc[k] = static_cast<double>(cpu[k]) - initial[k];
  }
  const double err = rel_error(dg, dc);
  if (!(err <= tol)) {
    UNSCOPED_INFO("relative error of the added part " << err << " > " << tol << " over " << cpu.size() << " elements");
    show_side_by_side(gpu, cpu);
  }
  return err <= tol;
}

/// Bit for bit (as floats: -0 and +0 count as equal, NaN never does).
inline bool identical(const std::vector<float>& gpu, const std::vector<float>& cpu) {
  if (gpu.size() != cpu.size()) {
    UNSCOPED_INFO("gpu has " << gpu.size() << " elements, cpu " << cpu.size());
    return false;
  }
  for (size_t k = 0; k < cpu.size(); ++k) {
    if (!(gpu[k] == cpu[k])) {
      UNSCOPED_INFO("first difference at [" << k << "]: gpu " << gpu[k] << ", cpu " << cpu[k]);
      return false;
    }
  }
  return true;
}

}  // namespace gpu_test
