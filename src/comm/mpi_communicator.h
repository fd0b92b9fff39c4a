// MpiCommunicator: the Communicator over an MPI communicator, for buffers in host memory, and
// OPTIMUS_MPI_CHECK, the one macro every MPI return code goes through. The CPU runs of stages 2
// and 3 use it for the world, row_comm and col_comm.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "comm/communicator.h"

namespace optimus::comm {

namespace detail {
/// Prints "rank r: error: MPI call failed: <call> at <file>:<line>: <MPI's message>" and calls
/// MPI_Abort on the world: an MPI error is not something the other ranks could recover from.
[[noreturn]] void mpi_failed(int code, const char* call, const char* file, int line);
inline void mpi_check(int code, const char* call, const char* file, int line) {
  if (code != MPI_SUCCESS) mpi_failed(code, call, file, line);
}
}  // namespace detail

/// Checks an MPI return code. MPI only returns codes where the error handler is
/// MPI_ERRORS_RETURN, which World sets on the world (split communicators inherit it).
#define OPTIMUS_MPI_CHECK(call) ::optimus::comm::detail::mpi_check((call), #call, __FILE__, __LINE__)

namespace detail {
/// This process's rank in `comm`, and the number of ranks of `comm` (checked MPI calls).
int rank_in(MPI_Comm comm);
int size_of(MPI_Comm comm);
}  // namespace detail

/// The started collectives are MPI's non-blocking ones (MPI_Ibcast, MPI_Ireduce, MPI_Iallreduce).
/// Open MPI moves their data only inside MPI calls, so a transfer advances while this rank starts
/// or waits for another, not while it computes. MPI counts are int, so one call carries at most INT_MAX elements (per
/// rank's block for all_gather and reduce_scatter); a larger n throws std::length_error before any communication.
class MpiCommunicator final : public Communicator {
 public:
  /// Wraps `comm` (e.g. MPI_COMM_WORLD) without owning it.
  MpiCommunicator(MPI_Comm comm, std::string name, CommLedger& ledger = CommLedger::process());
  /// Frees the MPI communicator if split() created it; never MPI_COMM_WORLD.
  ~MpiCommunicator() override;

  MPI_Comm mpi_comm() const { return comm_; }

 protected:
  void do_all_reduce(void* buf, int64_t n, DType t, ReduceOp op) override;
  void do_broadcast(void* buf, int64_t n, DType t, int root) override;
  void do_reduce(void* buf, int64_t n, DType t, int root, ReduceOp op) override;
  void do_all_gather(void* recv, const void* send, int64_t n, DType t) override;
  void do_reduce_scatter(void* recv, const void* send, int64_t n, DType t, ReduceOp op) override;
  void do_barrier() override;
  std::unique_ptr<Pending> do_start_broadcast(void* buf, int64_t n, DType t, int root) override;
  std::unique_ptr<Pending> do_start_reduce(void* buf, int64_t n, DType t, int root, ReduceOp op) override;
  std::unique_ptr<Pending> do_start_all_reduce(void* buf, int64_t n, DType t, ReduceOp op) override;
  std::unique_ptr<Communicator> do_split(int color, int key, std::string name) override;

 private:
  int mpi_count(const char* op, int64_t n) const;

  MPI_Comm comm_;
  bool owned_ = false;  // true for communicators made by do_split
};

}  // namespace optimus::comm
