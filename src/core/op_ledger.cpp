// The op ledger's totals and report.
#include "core/op_ledger.h"

#include <cstdio>
#include <iterator>
#include <sstream>

namespace optimus::core {

const char* op_kind_name(OpKind k) {
  // In the enum's order.
  static constexpr const char* kNames[] = {"matmul",      "attention", "layernorm", "crossentropy",
                                           "elementwise", "reduction", "embedding", "optimizer"};
  static_assert(std::size(kNames) == kOpKindCount);
  return kNames[static_cast<size_t>(k)];
}

OpCost operator+(const OpCost& a, const OpCost& b) {
  return {.kind = a.kind,
          .flops = a.flops + b.flops,
          .bytes_read = a.bytes_read + b.bytes_read,
          .bytes_written = a.bytes_written + b.bytes_written,
          .min_dim = a.min_dim};
}

void OpLedger::record(const OpCost& cost) {
  Totals& t = by_kind_[static_cast<size_t>(cost.kind)];
  t.calls += 1;
  t.flops += cost.flops;
  t.bytes_read += cost.bytes_read;
  t.bytes_written += cost.bytes_written;
  if (cost.min_dim > 0) t.flops_by_min_dim[cost.min_dim] += cost.flops;
}

OpLedger OpLedger::since(const OpLedger& earlier) const {
  OpLedger d = *this;
  for (size_t k = 0; k < by_kind_.size(); ++k) {
    Totals& t = d.by_kind_[k];
    const Totals& e = earlier.by_kind_[k];
    t.calls -= e.calls, t.flops -= e.flops, t.bytes_read -= e.bytes_read, t.bytes_written -= e.bytes_written;
    for (const auto& [dim, flops] : e.flops_by_min_dim) {
      if ((t.flops_by_min_dim[dim] -= flops) == 0) t.flops_by_min_dim.erase(dim);
    }
  }
  return d;
}

OpLedger::Totals OpLedger::total() const {
  Totals sum;
  for (const Totals& t : by_kind_) {
    sum.calls += t.calls;
    sum.flops += t.flops;
    sum.bytes_read += t.bytes_read;
    sum.bytes_written += t.bytes_written;
  }
  return sum;
}

bool OpLedger::operator==(const OpLedger& other) const {
  for (size_t k = 0; k < by_kind_.size(); ++k) {
    const Totals &a = by_kind_[k], &b = other.by_kind_[k];
    if (a.calls != b.calls || a.flops != b.flops || a.bytes_read != b.bytes_read ||
        a.bytes_written != b.bytes_written || a.flops_by_min_dim != b.flops_by_min_dim) {
      return false;
    }
  }
  return true;
}

std::string OpLedger::report() const {
  std::ostringstream out;
  auto line = [&](const char* name, const Totals& t) {
    char text[160];
    std::snprintf(text, sizeof text, "%-13s calls %8lld  GFLOP %12.3f  read %12.2f MiB  written %12.2f MiB\n", name,
                  static_cast<long long>(t.calls), static_cast<double>(t.flops) / 1e9,
                  static_cast<double>(t.bytes_read) / (1 << 20), static_cast<double>(t.bytes_written) / (1 << 20));
    out << text;
  };
  for (int i = 0; i < kOpKindCount; ++i) line(op_kind_name(static_cast<OpKind>(i)), of(static_cast<OpKind>(i)));
  line("total", total());
  return out.str();
}

OpStopwatch::OpStopwatch(OpClock* clock, OpKind kind) : clock_(clock), kind_(kind) {
  if (clock_ != nullptr) start_ = std::chrono::steady_clock::now();
}

OpStopwatch::~OpStopwatch() {
  if (clock_ == nullptr) return;
  clock_->seconds[static_cast<size_t>(kind_)] +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

}  // namespace optimus::core
