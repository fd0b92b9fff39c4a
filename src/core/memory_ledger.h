// The memory ledger: current and peak bytes per category, for this process (one rank).
// Every Buffer records its allocation here, so the benchmarks and chapter 4 can say exactly where
// the memory of a rank goes. A budget turns an allocation past it into a clear error, which is how
// the benchmarks find "the largest batch that fits" without needing a machine that runs out.
// Each ledger also owns the BlockPool its Buffers' memory comes from: the logical record (current,
// peak, budget) counts what Buffers hold, whatever the pool keeps besides.
#pragma once

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "core/block_pool.h"

namespace optimus::core {

enum class MemoryCategory {
  parameters,
  gradients,
  optimizer,    // AdamW moments
  activations,  // what the forward pass keeps for the backward pass
  communication,
  workspace,  // scratch that lives for one op or one layer
};
inline constexpr int kMemoryCategoryCount = 6;

const char* memory_category_name(MemoryCategory c);

/// Thrown when an allocation would take the ledger's total past its budget.
struct MemoryBudgetExceeded : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A ledger's numbers at one moment (MemoryLedger::snapshot): current and peak bytes per category
/// and of the total. Plain numbers, copied freely, read as the ledger is read.
struct MemorySnapshot {
  std::array<size_t, kMemoryCategoryCount> current_bytes{};  // by category
  std::array<size_t, kMemoryCategoryCount> peak_bytes{};     // by category
  size_t current_total_bytes = 0;
  size_t peak_total_bytes = 0;  // the peak of the total, not the sum of the categories' peaks

  size_t current(MemoryCategory c) const { return current_bytes[static_cast<int>(c)]; }
  size_t peak(MemoryCategory c) const { return peak_bytes[static_cast<int>(c)]; }
  size_t current_total() const { return current_total_bytes; }
  size_t peak_total() const { return peak_total_bytes; }
};

/// Not copyable: its Buffers point to it and its pool owns their blocks; snapshot() gives its
/// numbers. A ledger must outlive its Buffers. Its destructor frees the pool's blocks, so a ledger
/// holding GPU blocks must go while the CUDA runtime lives: a ledger local to a function or a test
/// does, and train::device_ledger(), a static, is made after the runtime has started, so that it
/// goes before the runtime at exit.
class MemoryLedger {
 public:
  /// budget_bytes = 0 means no budget.
  explicit MemoryLedger(size_t budget_bytes = 0) : budget_(budget_bytes) {}
  MemoryLedger(const MemoryLedger&) = delete;
  MemoryLedger& operator=(const MemoryLedger&) = delete;

  /// Records an allocation; throws MemoryBudgetExceeded (and records nothing) past the budget.
  void allocate(MemoryCategory c, size_t bytes);
  /// Records a release; throws std::logic_error if more is released than was allocated.
  void release(MemoryCategory c, size_t bytes);

  size_t current(MemoryCategory c) const { return numbers_.current(c); }
  size_t peak(MemoryCategory c) const { return numbers_.peak(c); }
  size_t current_total() const { return numbers_.current_total(); }
  /// The peak of the total (not the sum of per-category peaks, which may occur at different times).
  size_t peak_total() const { return numbers_.peak_total(); }
  /// The numbers above as they stand now, to keep after the ledger has moved on (or gone).
  MemorySnapshot snapshot() const { return numbers_; }

  size_t budget() const { return budget_; }
  /// Forgets the peaks (sets them to the current values), e.g. after initialisation.
  void reset_peaks();
  /// Counts each 4-byte element of category `c` as `bytes` bytes in allocations and releases from
  /// now on: the planner's precision accounting (plan/precision.h) on a meta run of float32 code.
  /// 4, the default, records what Buffers hold.
  void set_bytes_per_element(MemoryCategory c, int bytes) { element_bytes_[index(c)] = bytes; }

  // ---- the pool: what the system has lent, beyond the logical record ----
  /// Blocks asked of the system (aligned_alloc, cudaMalloc) since the ledger was made; a training
  /// step that asks for none after its first reuses every block.
  int64_t system_allocations() const { return pool_.system_allocations(); }
  /// Bytes of free blocks kept for reuse: not in current_total(), not under the budget.
  size_t cached_bytes() const { return pool_.cached_bytes(); }
  /// Bytes the system has lent: blocks in use (current_total() but for meta Buffers) and cached.
  size_t reserved_bytes() const { return pool_.reserved_bytes(); }
  /// Returns the cached blocks to the system, e.g. after a model of other shapes is gone.
  void release_cached() { pool_.release_cached(); }
  /// Where Buffers take their blocks from and give them back to.
  BlockPool& pool() { return pool_; }

  /// One line per category: "parameters  current 1.23 MiB  peak 1.23 MiB".
  std::string report() const;

  /// The ledger of this process's CPU memory, used where no other is given.
  static MemoryLedger& host();

 private:
  static int index(MemoryCategory c) { return static_cast<int>(c); }
  size_t counted(MemoryCategory c, size_t bytes) const {
    return bytes / 4 * static_cast<size_t>(element_bytes_[index(c)]) + bytes % 4;
  }

  size_t budget_ = 0;
  std::array<int, kMemoryCategoryCount> element_bytes_{4, 4, 4, 4, 4, 4};
  MemorySnapshot numbers_;  // current and peak bytes
  BlockPool pool_;
};

}  // namespace optimus::core
