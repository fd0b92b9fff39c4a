// The communication tests of the stages (chapters 3 and 7): a training step's ledger against the
// chapter's table, one expected entry per communicator and operation, each printed beside what was
// measured.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/comm_ledger.h"
#include "compare.h"

namespace equivalence {

/// One row of a chapter's table: calls and bytes of an operation on a communicator.
struct ExpectedComm {
  const char* comm;
  optimus::comm::CommOp op;
  int64_t calls, bytes;
};

inline const char* op_name(optimus::comm::CommOp op) {
  using optimus::comm::CommOp;
  switch (op) {
    case CommOp::all_reduce:
      return "all-reduce";
    case CommOp::broadcast:
      return "broadcast";
    case CommOp::reduce:
      return "reduce";
    case CommOp::all_gather:
      return "all-gather";
    case CommOp::reduce_scatter:
      return "reduce-scatter";
    default:
      return "other";
  }
}

/// Prints, on rank 0, "ledger: <comm> <op> calls<suffix>" and "... bytes<suffix>" measured beside
/// the formula for every row, then the totals; true when every row matches and the step sent
/// nothing else.
inline bool ledger_matches(const optimus::comm::CommLedger& step, const std::vector<ExpectedComm>& expected,
                           const std::string& suffix) {
  bool all_equal = true;
  int64_t calls = 0, bytes = 0;
  for (const ExpectedComm& e : expected) {
    const std::string what = "ledger: " + std::string(e.comm) + " " + op_name(e.op);
    report_count(what + " calls" + suffix, step.calls(e.comm, e.op), e.calls);
    report_count(what + " bytes" + suffix, step.bytes(e.comm, e.op), e.bytes);
    all_equal = all_equal && step.calls(e.comm, e.op) == e.calls && step.bytes(e.comm, e.op) == e.bytes;
    calls += e.calls, bytes += e.bytes;
  }
  report_count("ledger: all calls" + suffix, step.calls(), calls);
  report_count("ledger: all bytes" + suffix, step.bytes(), bytes);
  return all_equal && step.calls() == calls && step.bytes() == bytes;
}

}  // namespace equivalence
