// The memory ledger's bookkeeping.
#include "core/memory_ledger.h"

#include <cstdint>
#include <cstdio>
#include <iterator>
#include <sstream>
#include <stdexcept>

namespace optimus::core {

const char* memory_category_name(MemoryCategory c) {
  // In the enum's order.
  static constexpr const char* kNames[] = {"parameters",  "gradients",     "optimizer",
                                           "activations", "communication", "workspace"};
  static_assert(std::size(kNames) == kMemoryCategoryCount);
  return kNames[static_cast<size_t>(c)];
}

// The most bytes a ledger records: int64's range, so that a total is also a valid int64 (the plan's JSON).
constexpr size_t kMaxRecorded = static_cast<size_t>(INT64_MAX);

static std::string mib(size_t bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.3f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return s;
}

// One line of report(): what, its current bytes and its peak.
static void report_line(std::ostream& out, const char* what, size_t current, size_t peak) {
  char line[128];
  std::snprintf(line, sizeof line, "%-14s current %12s  peak %12s\n", what, mib(current).c_str(), mib(peak).c_str());
  out << line;
}

void MemoryLedger::allocate(MemoryCategory c, size_t bytes) {
  bytes = counted(c, bytes);
  MemorySnapshot& n = numbers_;
  // The sizes are checked before a step is built (model::require_step_sizes), so this never wraps;
  // if it would, the record stays right and the allocation is refused.
  if (bytes > kMaxRecorded - n.current_total_bytes) {
    throw MemoryBudgetExceeded("memory ledger: allocating " + std::to_string(bytes) + " bytes of " +
                               memory_category_name(c) +
                               " would bring this rank past 2^63 bytes; use a smaller "
                               "batch or model");
  }
  if (budget_ != 0 && n.current_total_bytes + bytes > budget_) {
    throw MemoryBudgetExceeded("memory budget exceeded: allocating " + mib(bytes) + " of " + memory_category_name(c) +
                               " would bring this rank to " + mib(n.current_total_bytes + bytes) +
                               ", over its budget of " + mib(budget_) +
                               "; use a smaller batch or model, more ranks, or a larger budget");
  }
  size_t& current = n.current_bytes[index(c)];
  current += bytes;
  n.current_total_bytes += bytes;
  if (current > n.peak_bytes[index(c)]) n.peak_bytes[index(c)] = current;
  if (n.current_total_bytes > n.peak_total_bytes) n.peak_total_bytes = n.current_total_bytes;
}

void MemoryLedger::release(MemoryCategory c, size_t bytes) {
  bytes = counted(c, bytes);
  size_t& current = numbers_.current_bytes[index(c)];
  if (bytes > current) {
    throw std::logic_error(std::string("memory ledger: releasing ") + std::to_string(bytes) + " bytes of " +
                           memory_category_name(c) + " but only " + std::to_string(current) + " are recorded");
  }
  current -= bytes;
  numbers_.current_total_bytes -= bytes;
}

void MemoryLedger::reset_peaks() {
  numbers_.peak_bytes = numbers_.current_bytes;
  numbers_.peak_total_bytes = numbers_.current_total_bytes;
}

std::string MemoryLedger::report() const {
  std::ostringstream out;
  for (int i = 0; i < kMemoryCategoryCount; ++i) {
    const auto c = static_cast<MemoryCategory>(i);
    report_line(out, memory_category_name(c), current(c), peak(c));
  }
  report_line(out, "total", current_total(), peak_total());
  return out.str();
}

MemoryLedger& MemoryLedger::host() {
  static MemoryLedger ledger;
  return ledger;
}

}  // namespace optimus::core
