// MetaCommunicator: the Communicator of a meta run (core::meta_context), for chapter 4's planner.
// It plays one rank of a world of any size, in one process, with no MPI: every collective returns
// at once without touching its buffers (they are meta, they hold nothing) and is recorded in the
// communication ledger exactly as MpiCommunicator records it — name, operation, bytes, group size.
// So a parallel stage built on it records, rank by rank, the ledgers of a real run of its shapes.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "comm/communicator.h"

namespace optimus::comm {

/// The size of each communicator a meta world will be split into, by name: {{"row", q}, {"col", q}}.
using SplitSizes = std::map<std::string, int>;

/// Rank `rank()` of a group of `size()` simulated ranks.
///
/// The split rule. A real split learns the other ranks' colors and keys in a collective; a single
/// simulated rank cannot, so it is told the sizes instead: split(color, key, name) makes the
/// communicator `name` of the size declared for that name, in which this rank is `key`. That is
/// what MPI gives when the keys of a new group are 0..size−1 (the grids' are: j along a row, i down
/// a column); the color is not needed. A name that was not declared is a std::logic_error naming
/// it, and so is a key outside [0, size).
///
///   auto world = MetaCommunicator::world(9, 4, {{"row", 3}, {"col", 3}}, ledger);
///   Grid2D grid(*world);   // rank 4 of 9: row_comm is rank 1 of 3, col_comm rank 1 of 3
class MetaCommunicator final : public Communicator {
 public:
  /// Rank `rank` of a world of `size` ranks, named "world", recording into `ledger`; `splits`
  /// declares the communicators it (or any communicator split from it) may be split into.
  /// Throws std::invalid_argument unless 0 <= rank < size.
  static std::unique_ptr<MetaCommunicator> world(int size, int rank, SplitSizes splits = {},
                                                 CommLedger& ledger = CommLedger::process());

 protected:
  // Nothing moves: the buffers are meta. The base class has checked and records each call.
  void do_all_reduce(void*, int64_t, DType, ReduceOp) override {}
  void do_broadcast(void*, int64_t, DType, int) override {}
  void do_reduce(void*, int64_t, DType, int, ReduceOp) override {}
  void do_all_gather(void*, const void*, int64_t, DType) override {}
  void do_reduce_scatter(void*, const void*, int64_t, DType, ReduceOp) override {}
  void do_barrier() override {}
  std::unique_ptr<Communicator> do_split(int color, int key, std::string name) override;

 private:
  MetaCommunicator(int rank, int size, std::string name, SplitSizes splits, CommLedger& ledger);

  SplitSizes splits_;
};

}  // namespace optimus::comm
