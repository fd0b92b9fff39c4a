// The communication ledger: calls and bytes per (communicator name, operation), for this process
// (one rank). Every Communicator records each collective it completes here, so the benchmarks and
// chapter 4 can say exactly what a training step sends, and compare it with the cost formulas.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace optimus::comm {

enum class CommOp { all_reduce, broadcast, reduce, all_gather, reduce_scatter, barrier, split };
inline constexpr int kCommOpCount = 7;

const char* comm_op_name(CommOp op);

/// What one (communicator, operation) pair has done: how many calls, how many bytes.
struct CommCount {
  int64_t calls = 0;
  int64_t bytes = 0;
};

/// Counts per communicator name and operation. The chapters' formulas rely on this definition:
///
///   bytes of a call = the size of the call's full result buffer on this rank, for n elements of T:
///     all_reduce      n·sizeof(T)
///     broadcast       n·sizeof(T)          (on the root too, although it only sends)
///     reduce          n·sizeof(T)          (on every rank, root or not)
///     all_gather      size·n·sizeof(T)     (the gathered buffer, own block included)
///     reduce_scatter  size·n·sizeof(T)     (the buffer being reduced, not the n kept)
///     barrier         0 bytes, 1 call
///     split           0 bytes, 1 call      (recorded under the parent's name; set-up, not a step)
///
/// It is a count of what each call is about, not of what crosses the wire (which depends on the
/// algorithm MPI or NCCL picks); chapter 4 converts it with the usual ring factors.
/// Communicators with the same name on different ranks (every rank's "row") are one entry here,
/// because the ledger is per rank. Each name also keeps the size of its group (the ranks of "row"),
/// which a call's bytes need to be turned into traffic: one name, one group size in a ledger.
/// Not thread-safe: collectives come from one thread (FUNNELED).
///
///   CommLedger before = ledger.snapshot();
///   train_step(...);
///   CommLedger step = ledger.since(before);   // what one step sent
///   print0("%s", step.report().c_str());
class CommLedger {
 public:
  /// One call of `op` on the communicator `comm`, a group of `group_size` ranks. Throws
  /// std::logic_error if `comm` was recorded before with another group size.
  void record(const std::string& comm, CommOp op, int64_t bytes, int group_size);

  /// One operation on one communicator.
  int64_t calls(const std::string& comm, CommOp op) const { return count(comm, op).calls; }
  int64_t bytes(const std::string& comm, CommOp op) const { return count(comm, op).bytes; }
  /// All operations on one communicator.
  int64_t calls(const std::string& comm) const;
  int64_t bytes(const std::string& comm) const;
  /// Everything this ledger has recorded.
  int64_t calls() const;
  int64_t bytes() const;

  /// The number of ranks of the group recorded under `comm` (0 if nothing was).
  int group_size(const std::string& comm) const;

  /// The communicator names recorded so far, in alphabetical order.
  std::vector<std::string> communicators() const;

  void reset() {
    table_.clear();
    group_sizes_.clear();
  }

  /// A copy of the counts as they are now (a ledger is a plain value).
  CommLedger snapshot() const { return *this; }
  /// What was recorded after `earlier` (a snapshot of this ledger): this minus earlier, per entry.
  /// Throws std::logic_error if `earlier` has more of something than this ledger (not a snapshot).
  CommLedger since(const CommLedger& earlier) const;

  /// A small table: a header, one line per (communicator, operation) that was used, the total.
  ///   communicator   operation            calls            bytes            MiB
  ///   row            all_reduce              12            49152          0.047
  std::string report() const;

  /// The ledger of this process, which communicators record into unless given another.
  static CommLedger& process();

 private:
  CommCount count(const std::string& comm, CommOp op) const;

  std::map<std::string, std::array<CommCount, kCommOpCount>> table_;
  std::map<std::string, int> group_sizes_;
};

}  // namespace optimus::comm
