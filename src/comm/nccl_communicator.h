// NcclCommunicator: the Communicator over NCCL, for buffers in GPU memory, one rank per GPU,
// and OPTIMUS_NCCL_CHECK, the one macro every NCCL return code goes through. The group
// is bootstrapped over MPI: rank 0 makes an ncclUniqueId and MPI broadcasts it; row_comm and
// col_comm come from ncclCommSplit. NCCL refuses two ranks on one GPU: StagedCommunicator covers
// that case, and device_comm.h chooses between the two.
#pragma once

#include <mpi.h>
#include <nccl.h>

#include <memory>
#include <string>

#include "comm/communicator.h"
#include "core/context.h"

namespace optimus::comm {

namespace detail {
/// Throws std::runtime_error: "NCCL call failed: <call> at <file>:<line>: expected ncclSuccess,
/// got <result> (<NCCL's last error>); <what to do>".
[[noreturn]] void nccl_failed(ncclResult_t result, const char* call, const char* file, int line);
}  // namespace detail

#define OPTIMUS_NCCL_CHECK(call)                                                             \
  do {                                                                                       \
    const ncclResult_t optimus_nccl_result_ = (call);                                        \
    if (optimus_nccl_result_ != ncclSuccess) {                                               \
      ::optimus::comm::detail::nccl_failed(optimus_nccl_result_, #call, __FILE__, __LINE__); \
    }                                                                                        \
  } while (0)

/// Collectives on device buffers of `ctx`'s GPU, queued on the context's stream: a call returns
/// once the collective is queued, its result ready for the ops queued after it (copy_to_host,
/// which waits for the stream, to read it on the host). barrier() also waits for the stream.
/// A started collective runs on the communicator's own communication stream, after everything
/// queued on the context's stream before it (an event orders the two); its wait() makes the
/// context's stream wait for it (another event) and returns at once, so products queued between
/// the start and the wait run while the transfer moves.
/// Every rank of the group must be on a different GPU.
class NcclCommunicator final : public Communicator {
 public:
  /// Collective over the group `comm` (not owned; duplicated for the bootstrap and barrier):
  /// ncclCommInitRank on ctx's GPU. Throws std::invalid_argument for a CPU context.
  NcclCommunicator(MPI_Comm comm, const core::Context& ctx, std::string name,
                   CommLedger& ledger = CommLedger::process());
  /// ncclCommDestroy (ncclCommAbort while an exception unwinds: the peers may never arrive), and
  /// frees the MPI duplicate.
  ~NcclCommunicator() override;

  const core::Context& context() const { return ctx_; }

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
  /// A split's child: takes ownership of `nccl` and `mpi`.
  NcclCommunicator(ncclComm_t nccl, MPI_Comm mpi, const core::Context& ctx, std::string name, CommLedger& ledger);

  /// Queues `launch(stream)` on the communication stream after the context's stream's work.
  template <typename Launch>
  std::unique_ptr<Pending> on_comm_stream(Launch launch);

  ncclComm_t nccl_ = nullptr;
  cudaStream_t comm_stream_ = nullptr;  // owned; made by the first started collective
  MPI_Comm mpi_ = MPI_COMM_NULL;        // owned: the same group in MPI, for the unique id and barrier
  core::Context ctx_;                   // keeps the stream alive
};

}  // namespace optimus::comm
