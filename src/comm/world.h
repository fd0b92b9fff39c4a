// World: MPI's lifetime for one program, the world communicator, and the two ways a run ends on an
// error: fail() when every rank found the same error, abort() when one rank is alone with it.
// run_main() wraps a program's body so that escaping exceptions take the right way, and
// agree_on() turns a check that only some ranks fail (a file one node cannot see) into an error
// every rank raises with the same sentence.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <mpi.h>

#include "comm/communicator.h"

namespace optimus::comm {

/// One per process, created first in main. Collectives come from the main thread only
/// (MPI_THREAD_FUNNELED); OpenMP threads inside ops never call MPI.
///
///   int main(int argc, char** argv) {
///     return comm::run_main(argc, argv, [&](comm::World& world) {
///       comm::Grid2D grid(world.comm());   // a ConfigError here: rank 0 says why, all exit 1
///       ...
///       return 0;
///     });
///   }
class World {
 public:
  /// MPI_Init_thread (FUNNELED) and MPI_ERRORS_RETURN on the world, so that OPTIMUS_MPI_CHECK
  /// sees every error code. Throws std::logic_error if MPI is already initialised.
  World(int& argc, char**& argv);
  /// MPI_Finalize (unless fail() or MPI_Abort already ended the run).
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  int rank() const { return comm_->rank(); }
  int size() const { return comm_->size(); }
  /// Every rank of the job, named "world"; records into CommLedger::process().
  Communicator& comm() { return *comm_; }

  /// printf on rank 0 only (no newline added), flushed at once.
  void print0(const char* format, ...) const __attribute__((format(printf, 2, 3)));

  /// Collective: true on every rank if `ok` is true on every rank (logical AND over the world).
  bool all_agree(bool ok);

  /// Collective: runs check() on every rank. If it throws a core::ConfigError on any rank, every
  /// rank throws a ConfigError with the message of the lowest such rank (prefixed "on rank r: "
  /// when rank 0 itself passed), so rank 0 reports what went wrong wherever it happened. For the
  /// checks each rank makes alone: reading the data, a checkpoint, a file system.
  void agree_on(const std::function<void()>& check);

  /// For an error every rank detected identically, before any collective it would spoil: rank 0
  /// prints "error: <message>" to stderr, every rank finalizes and exits 1. The ranks first meet in
  /// a barrier of their own (a communicator no computation uses); if some rank does not arrive
  /// within a grace period, it is not failing but waiting elsewhere, and this rank prints its
  /// message and aborts the job instead, so nobody hangs.
  [[noreturn]] void fail(const std::string& message);
  /// For an error on this rank alone: prints "rank r: error: <message>" to stderr and calls
  /// MPI_Abort on the world, which ends every rank (none is left waiting in a collective).
  [[noreturn]] void abort(const std::string& message);

 private:
  std::unique_ptr<Communicator> comm_;
  MPI_Comm failure_comm_ = MPI_COMM_NULL;  // a duplicate of the world, for fail()'s barrier alone
};

/// Creates the World and runs body(world). A core::ConfigError escaping the body becomes
/// world.fail(what) (meant for errors detected identically on every rank; fail() aborts if they
/// were not); any other
/// exception becomes world.abort(what) on the rank it escaped from. Returns the body's result.
int run_main(int argc, char** argv, const std::function<int(World&)>& body);

}  // namespace optimus::comm
