// NcclCommunicator: each collective is one NCCL call on the context's stream. NCCL's in-place
// conventions are the interface's: all_reduce, broadcast and reduce work on buf in place, and
// all_gather is in place when send == recv + rank·n.
#include "comm/nccl_communicator.h"

#include <cuda_runtime.h>

#include <exception>
#include <iterator>
#include <stdexcept>

#include "comm/mpi_communicator.h"
#include "core/errors.h"

namespace optimus::comm {

namespace detail {

namespace {
const char* nccl_advice(ncclResult_t result) {
  switch (result) {
    case ncclInvalidUsage:
      return "NCCL needs one rank per GPU and the same calls in the same order on every rank: with more ranks "
             "than GPUs on a node use the staged communicator (--device-comm staged)";
    case ncclUnhandledCudaError:
      return "a CUDA error on this rank's GPU (out of memory, or a fault in an earlier kernel)";
    case ncclSystemError:
      return "a system call failed (shared memory, sockets): check /dev/shm's size and the network interfaces";
    case ncclRemoteError:
      return "a peer rank failed or went away: look for its own error";
    case ncclInvalidArgument:
      return "a pointer is not device memory of this rank's GPU, or a root or count is out of range";
    default:
      return "rerun with NCCL_DEBUG=WARN for NCCL's own account";
  }
}
}  // namespace

[[noreturn]] void nccl_failed(ncclResult_t result, const char* call, const char* file, int line) {
  const char* last = ncclGetLastError(nullptr);
  const bool said = last != nullptr && *last != '\0';
  core::call_failed("NCCL", call, file, line, "ncclSuccess",
                    ncclGetErrorString(result) + (said ? std::string(" (") + last + ")" : std::string()),
                    nccl_advice(result));
}

}  // namespace detail

namespace {

ncclDataType_t nccl_type(DType t) {
  constexpr ncclDataType_t types[] = {ncclFloat32, ncclFloat64, ncclInt32};  // in DType's order
  static_assert(std::size(types) == kDTypeCount);
  return types[static_cast<size_t>(t)];
}

ncclRedOp_t nccl_op(ReduceOp op) {
  return op == ReduceOp::sum ? ncclSum : ncclMax;
}

cudaStream_t stream_of(const core::Context& ctx) {
  return static_cast<cudaStream_t>(ctx.cuda_stream);
}

void check_cuda(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string("NcclCommunicator: ") + what + " failed: expected cudaSuccess, got " +
                             cudaGetErrorName(err) + " (" + cudaGetErrorString(err) +
                             "); check that the context's GPU is usable (cuda_device_report())");
  }
}

}  // namespace

NcclCommunicator::NcclCommunicator(MPI_Comm comm, const core::Context& ctx, std::string name, CommLedger& ledger)
    : Communicator(detail::rank_in(comm), detail::size_of(comm), std::move(name), ledger), ctx_(ctx) {
  if (ctx_.device != core::Device::cuda) {
    throw std::invalid_argument("NcclCommunicator '" + this->name() +
                                "' needs a CUDA context (core::cuda_context); for host memory use MpiCommunicator");
  }
  OPTIMUS_MPI_CHECK(MPI_Comm_dup(comm, &mpi_));
  ncclUniqueId id{};
  if (rank() == 0) OPTIMUS_NCCL_CHECK(ncclGetUniqueId(&id));
  OPTIMUS_MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, mpi_));
  check_cuda(cudaSetDevice(ctx_.cuda_device), "cudaSetDevice");
  OPTIMUS_NCCL_CHECK(ncclCommInitRank(&nccl_, size(), id, rank()));
}

NcclCommunicator::NcclCommunicator(ncclComm_t nccl, MPI_Comm mpi, const core::Context& ctx, std::string name,
                                   CommLedger& ledger)
    : Communicator(detail::rank_in(mpi), detail::size_of(mpi), std::move(name), ledger),
      nccl_(nccl),
      mpi_(mpi),
      ctx_(ctx) {}

NcclCommunicator::~NcclCommunicator() {
  if (nccl_ != nullptr) {
    if (std::uncaught_exceptions() > 0) {
      ncclCommAbort(nccl_);
    } else {
      ncclCommDestroy(nccl_);
    }
  }
  if (comm_stream_ != nullptr) cudaStreamDestroy(comm_stream_);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (mpi_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&mpi_);
}

// All ranks pass the same n, so returning early on n == 0 keeps them in step.

void NcclCommunicator::do_all_reduce(void* buf, int64_t n, DType t, ReduceOp op) {
  if (n == 0) return;
  OPTIMUS_NCCL_CHECK(
      ncclAllReduce(buf, buf, static_cast<size_t>(n), nccl_type(t), nccl_op(op), nccl_, stream_of(ctx_)));
}

void NcclCommunicator::do_broadcast(void* buf, int64_t n, DType t, int root) {
  if (n == 0) return;
  OPTIMUS_NCCL_CHECK(ncclBroadcast(buf, buf, static_cast<size_t>(n), nccl_type(t), root, nccl_, stream_of(ctx_)));
}

void NcclCommunicator::do_reduce(void* buf, int64_t n, DType t, int root, ReduceOp op) {
  if (n == 0) return;
  // In place on the root; NCCL reads buf on the others and writes nothing there.
  OPTIMUS_NCCL_CHECK(
      ncclReduce(buf, buf, static_cast<size_t>(n), nccl_type(t), nccl_op(op), root, nccl_, stream_of(ctx_)));
}

void NcclCommunicator::do_all_gather(void* recv, const void* send, int64_t n, DType t) {
  if (n == 0) return;
  OPTIMUS_NCCL_CHECK(ncclAllGather(send, recv, static_cast<size_t>(n), nccl_type(t), nccl_, stream_of(ctx_)));
}

void NcclCommunicator::do_reduce_scatter(void* recv, const void* send, int64_t n, DType t, ReduceOp op) {
  if (n == 0) return;
  OPTIMUS_NCCL_CHECK(
      ncclReduceScatter(send, recv, static_cast<size_t>(n), nccl_type(t), nccl_op(op), nccl_, stream_of(ctx_)));
}

namespace {

/// A collective queued on a communication stream; `done` is recorded after it there.
class NcclPending final : public Pending {
 public:
  NcclPending(cudaStream_t compute, cudaEvent_t done) : compute_(compute), done_(done) {}
  ~NcclPending() override { cudaEventDestroy(done_); }
  void wait() override { check_cuda(cudaStreamWaitEvent(compute_, done_, 0), "cudaStreamWaitEvent"); }
  bool test() override {
    const cudaError_t state = cudaEventQuery(done_);
    if (state == cudaErrorNotReady) return false;
    check_cuda(state, "cudaEventQuery");
    return true;
  }

 private:
  cudaStream_t compute_;
  cudaEvent_t done_;
};

cudaEvent_t record_event(cudaStream_t stream) {
  cudaEvent_t event = nullptr;
  check_cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  check_cuda(cudaEventRecord(event, stream), "cudaEventRecord");
  return event;
}

}  // namespace

template <typename Launch>
std::unique_ptr<Pending> NcclCommunicator::on_comm_stream(Launch launch) {
  if (comm_stream_ == nullptr) {
    check_cuda(cudaStreamCreateWithFlags(&comm_stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  }
  // The communication stream waits for what the compute stream has queued (the operand's writer).
  cudaEvent_t ready = record_event(stream_of(ctx_));
  check_cuda(cudaStreamWaitEvent(comm_stream_, ready, 0), "cudaStreamWaitEvent");
  cudaEventDestroy(ready);  // released once the wait it was queued for has happened
  launch(comm_stream_);
  return std::make_unique<NcclPending>(stream_of(ctx_), record_event(comm_stream_));
}

std::unique_ptr<Pending> NcclCommunicator::do_start_broadcast(void* buf, int64_t n, DType t, int root) {
  if (n == 0) return nullptr;
  return on_comm_stream([&](cudaStream_t stream) {
    OPTIMUS_NCCL_CHECK(ncclBroadcast(buf, buf, static_cast<size_t>(n), nccl_type(t), root, nccl_, stream));
  });
}

std::unique_ptr<Pending> NcclCommunicator::do_start_reduce(void* buf, int64_t n, DType t, int root, ReduceOp op) {
  if (n == 0) return nullptr;
  return on_comm_stream([&](cudaStream_t stream) {
    OPTIMUS_NCCL_CHECK(ncclReduce(buf, buf, static_cast<size_t>(n), nccl_type(t), nccl_op(op), root, nccl_, stream));
  });
}

std::unique_ptr<Pending> NcclCommunicator::do_start_all_reduce(void* buf, int64_t n, DType t, ReduceOp op) {
  if (n == 0) return nullptr;
  return on_comm_stream([&](cudaStream_t stream) {
    OPTIMUS_NCCL_CHECK(ncclAllReduce(buf, buf, static_cast<size_t>(n), nccl_type(t), nccl_op(op), nccl_, stream));
  });
}

void NcclCommunicator::do_barrier() {
  // NCCL has no barrier: finish this rank's queued work (its collectives included), then meet in MPI.
  check_cuda(cudaStreamSynchronize(stream_of(ctx_)), "cudaStreamSynchronize");
  OPTIMUS_MPI_CHECK(MPI_Barrier(mpi_));
}

std::unique_ptr<Communicator> NcclCommunicator::do_split(int color, int key, std::string name) {
  // The same split twice, in the same order on every rank: MPI's for the child's bootstrap and
  // barrier, NCCL's for its collectives. Both order the ranks by (key, parent rank).
  MPI_Comm child_mpi = MPI_COMM_NULL;
  OPTIMUS_MPI_CHECK(MPI_Comm_split(mpi_, color, key, &child_mpi));
  ncclComm_t child_nccl = nullptr;
  OPTIMUS_NCCL_CHECK(ncclCommSplit(nccl_, color, key, &child_nccl, nullptr));
  auto child =
      std::unique_ptr<NcclCommunicator>(new NcclCommunicator(child_nccl, child_mpi, ctx_, std::move(name), ledger()));
  int nccl_rank = -1;
  OPTIMUS_NCCL_CHECK(ncclCommUserRank(child_nccl, &nccl_rank));
  if (nccl_rank != child->rank()) {
    throw std::logic_error("split of '" + this->name() + "': NCCL placed this rank at " + std::to_string(nccl_rank) +
                           " but MPI at " + std::to_string(child->rank()) + "; the two splits must agree");
  }
  return child;
}

}  // namespace optimus::comm
