// StagedCommunicator: the Communicator for device buffers when NCCL cannot be used — several
// ranks on one GPU, which NCCL refuses. Each collective copies the device buffer to host memory,
// runs the MPI collective there, and copies the result back (device_comm.h chooses it).
// Over a CPU context the copies are memcpy, so it is MPI with two extra copies (and testable
// without a GPU).
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "comm/communicator.h"
#include "comm/mpi_communicator.h"
#include "core/context.h"
#include "core/tensor.h"

namespace optimus::comm {

/// Collectives on buffers in the memory of `ctx`'s device, through MPI on host copies. Every call
/// returns with its result in device memory (the copies wait for the context's stream, so the
/// ops queued before a call are done before its data is read). The host copies live in one
/// staging buffer that grows to the largest call, recorded in MemoryLedger::host() under
/// communication. Calls and bytes are recorded once, here, as the Communicator interface defines them.
class StagedCommunicator final : public Communicator {
 public:
  /// Stages the collectives of the group `comm` (not owned; e.g. MPI_COMM_WORLD).
  StagedCommunicator(MPI_Comm comm, const core::Context& ctx, std::string name,
                     CommLedger& ledger = CommLedger::process());
  /// Frees the MPI communicator if split() created it.
  ~StagedCommunicator() override;

  MPI_Comm mpi_comm() const { return comm_; }
  const core::Context& context() const { return ctx_; }

 protected:
  void do_all_reduce(void* buf, int64_t n, DType t, ReduceOp op) override;
  void do_broadcast(void* buf, int64_t n, DType t, int root) override;
  void do_reduce(void* buf, int64_t n, DType t, int root, ReduceOp op) override;
  void do_all_gather(void* recv, const void* send, int64_t n, DType t) override;
  void do_reduce_scatter(void* recv, const void* send, int64_t n, DType t, ReduceOp op) override;
  void do_barrier() override;
  std::unique_ptr<Communicator> do_split(int color, int key, std::string name) override;

 private:
  /// Host memory for `bytes` bytes (the staging buffer, grown if needed).
  void* staging(size_t bytes);

  MPI_Comm comm_;
  bool owned_ = false;  // true for communicators made by do_split
  core::Context ctx_;
  CommLedger uncounted_;                   // host_ records here: each call is counted once, in ledger()
  std::unique_ptr<MpiCommunicator> host_;  // the MPI collectives on the staged copies
  core::Buffer staging_;                   // host, grown to the largest call
};

}  // namespace optimus::comm
