// The communication ledger's bookkeeping (the definition of bytes is in comm_ledger.h).
#include "comm/comm_ledger.h"

#include <cstdio>
#include <iterator>
#include <sstream>
#include <stdexcept>

namespace optimus::comm {

const char* comm_op_name(CommOp op) {
  // In the enum's order.
  static constexpr const char* kNames[] = {"all_reduce",     "broadcast", "reduce", "all_gather",
                                           "reduce_scatter", "barrier",   "split"};
  static_assert(std::size(kNames) == kCommOpCount);
  return kNames[static_cast<size_t>(op)];
}

// One line of report(): the communicator, the operation, its calls, bytes and MiB.
static void report_line(std::ostream& out, const char* comm, const char* op, const CommCount& count) {
  char line[160];
  std::snprintf(line, sizeof line, "%-14s %-15s %10lld %16lld %14.3f\n", comm, op, static_cast<long long>(count.calls),
                static_cast<long long>(count.bytes), static_cast<double>(count.bytes) / (1024.0 * 1024.0));
  out << line;
}

void CommLedger::record(const std::string& comm, CommOp op, int64_t bytes, int group_size) {
  auto [known, inserted] = group_sizes_.emplace(comm, group_size);
  if (!inserted && known->second != group_size) {
    throw std::logic_error("comm ledger: '" + comm + "' was recorded as a group of " + std::to_string(known->second) +
                           " ranks and now of " + std::to_string(group_size) +
                           "; give communicators of different sizes different names");
  }
  CommCount& c = table_[comm][static_cast<int>(op)];
  c.calls += 1;
  c.bytes += bytes;
}

CommCount CommLedger::count(const std::string& comm, CommOp op) const {
  auto it = table_.find(comm);
  return it == table_.end() ? CommCount{} : it->second[static_cast<int>(op)];
}

int64_t CommLedger::calls(const std::string& comm) const {
  int64_t total = 0;
  for (int k = 0; k < kCommOpCount; ++k) total += calls(comm, static_cast<CommOp>(k));
  return total;
}

int64_t CommLedger::bytes(const std::string& comm) const {
  int64_t total = 0;
  for (int k = 0; k < kCommOpCount; ++k) total += bytes(comm, static_cast<CommOp>(k));
  return total;
}

int64_t CommLedger::calls() const {
  int64_t total = 0;
  for (const auto& [name, row] : table_) total += calls(name);
  return total;
}

int64_t CommLedger::bytes() const {
  int64_t total = 0;
  for (const auto& [name, row] : table_) total += bytes(name);
  return total;
}

int CommLedger::group_size(const std::string& comm) const {
  auto it = group_sizes_.find(comm);
  return it == group_sizes_.end() ? 0 : it->second;
}

std::vector<std::string> CommLedger::communicators() const {
  std::vector<std::string> names;
  for (const auto& [name, row] : table_) names.push_back(name);
  return names;
}

CommLedger CommLedger::since(const CommLedger& earlier) const {
  CommLedger diff = *this;
  for (const auto& [name, row] : earlier.table_) {
    for (int k = 0; k < kCommOpCount; ++k) {
      const CommCount now = count(name, static_cast<CommOp>(k));
      if (row[k].calls > now.calls || row[k].bytes > now.bytes) {
        throw std::logic_error("comm ledger: since() was given a ledger with more " +
                               std::string(comm_op_name(static_cast<CommOp>(k))) + " on '" + name +
                               "' than this one; pass a snapshot taken earlier from this ledger");
      }
      diff.table_[name][k] = CommCount{now.calls - row[k].calls, now.bytes - row[k].bytes};
    }
  }
  return diff;
}

std::string CommLedger::report() const {
  std::ostringstream out;
  char header[160];
  std::snprintf(header, sizeof header, "%-14s %-15s %10s %16s %14s\n", "communicator", "operation", "calls", "bytes",
                "MiB");
  out << header;
  for (const auto& [name, row] : table_) {
    for (int k = 0; k < kCommOpCount; ++k) {
      if (row[k].calls > 0) report_line(out, name.c_str(), comm_op_name(static_cast<CommOp>(k)), row[k]);
    }
  }
  report_line(out, "total", "", CommCount{calls(), bytes()});
  return out.str();
}

CommLedger& CommLedger::process() {
  static CommLedger ledger;
  return ledger;
}

}  // namespace optimus::comm
