// MpiCommunicator: each collective is one MPI call on host buffers.
#include "comm/mpi_communicator.h"

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <stdexcept>

namespace optimus::comm {

namespace detail {
[[noreturn]] void mpi_failed(int code, const char* call, const char* file, int line) {
  char message[MPI_MAX_ERROR_STRING] = "unknown MPI error";
  int length = 0;
  MPI_Error_string(code, message, &length);
  abort_world(std::string("MPI call failed: ") + call + " at " + file + ":" + std::to_string(line) + ": " + message);
}
}  // namespace detail

namespace {

MPI_Datatype mpi_type(DType t) {
  const MPI_Datatype types[] = {MPI_FLOAT, MPI_DOUBLE, MPI_INT32_T};  // in DType's order
  static_assert(std::size(types) == kDTypeCount);
  return types[static_cast<size_t>(t)];
}

MPI_Op mpi_op(ReduceOp op) {
  return op == ReduceOp::sum ? MPI_SUM : MPI_MAX;
}

}  // namespace

namespace detail {

int rank_in(MPI_Comm comm) {
  int r = 0;
  OPTIMUS_MPI_CHECK(MPI_Comm_rank(comm, &r));
  return r;
}

int size_of(MPI_Comm comm) {
  int s = 0;
  OPTIMUS_MPI_CHECK(MPI_Comm_size(comm, &s));
  return s;
}

}  // namespace detail

MpiCommunicator::MpiCommunicator(MPI_Comm comm, std::string name, CommLedger& ledger)
    : Communicator(detail::rank_in(comm), detail::size_of(comm), std::move(name), ledger), comm_(comm) {}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owned_ && !finalized) OPTIMUS_MPI_CHECK(MPI_Comm_free(&comm_));
}

int MpiCommunicator::mpi_count(const char* op, int64_t n) const {
  if (n > INT_MAX) {
    throw std::length_error(std::string(op) + " on '" + name() + "': " + std::to_string(n) +
                            " elements are more than one MPI call carries (" + std::to_string(INT_MAX) +
                            "); send the buffer in smaller pieces");
  }
  return static_cast<int>(n);
}

void MpiCommunicator::do_all_reduce(void* buf, int64_t n, DType t, ReduceOp op) {
  const int count = mpi_count("all_reduce", n);
  OPTIMUS_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf, count, mpi_type(t), mpi_op(op), comm_));
}

void MpiCommunicator::do_broadcast(void* buf, int64_t n, DType t, int root) {
  const int count = mpi_count("broadcast", n);
  OPTIMUS_MPI_CHECK(MPI_Bcast(buf, count, mpi_type(t), root, comm_));
}

void MpiCommunicator::do_reduce(void* buf, int64_t n, DType t, int root, ReduceOp op) {
  const int count = mpi_count("reduce", n);
  // In place on the root; the others only send (their receive buffer is not used).
  if (rank() == root) {
    OPTIMUS_MPI_CHECK(MPI_Reduce(MPI_IN_PLACE, buf, count, mpi_type(t), mpi_op(op), root, comm_));
  } else {
    OPTIMUS_MPI_CHECK(MPI_Reduce(buf, nullptr, count, mpi_type(t), mpi_op(op), root, comm_));
  }
}

namespace {

/// An MPI request in flight; waiting completes it.
class MpiPending final : public Pending {
 public:
  MpiPending() = default;
  MPI_Request* request() { return &request_; }
  void wait() override { OPTIMUS_MPI_CHECK(MPI_Wait(&request_, MPI_STATUS_IGNORE)); }
  bool test() override {
    int done = 0;
    OPTIMUS_MPI_CHECK(MPI_Test(&request_, &done, MPI_STATUS_IGNORE));
    return done != 0;
  }

 private:
  MPI_Request request_ = MPI_REQUEST_NULL;
};

}  // namespace

std::unique_ptr<Pending> MpiCommunicator::do_start_broadcast(void* buf, int64_t n, DType t, int root) {
  const int count = mpi_count("broadcast", n);
  auto pending = std::make_unique<MpiPending>();
  OPTIMUS_MPI_CHECK(MPI_Ibcast(buf, count, mpi_type(t), root, comm_, pending->request()));
  return pending;
}

std::unique_ptr<Pending> MpiCommunicator::do_start_reduce(void* buf, int64_t n, DType t, int root, ReduceOp op) {
  const int count = mpi_count("reduce", n);
  auto pending = std::make_unique<MpiPending>();
  // In place on the root, as do_reduce.
  const void* send = rank() == root ? MPI_IN_PLACE : buf;
  void* recv = rank() == root ? buf : nullptr;
  OPTIMUS_MPI_CHECK(MPI_Ireduce(send, recv, count, mpi_type(t), mpi_op(op), root, comm_, pending->request()));
  return pending;
}

std::unique_ptr<Pending> MpiCommunicator::do_start_all_reduce(void* buf, int64_t n, DType t, ReduceOp op) {
  const int count = mpi_count("all_reduce", n);
  auto pending = std::make_unique<MpiPending>();
  OPTIMUS_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, buf, count, mpi_type(t), mpi_op(op), comm_, pending->request()));
  return pending;
}

void MpiCommunicator::do_all_gather(void* recv, const void* send, int64_t n, DType t) {
  const int count = mpi_count("all_gather", n);
  // MPI forbids aliased buffers unless the send side is MPI_IN_PLACE.
  const bool in_place = send == static_cast<const char*>(recv) + rank() * n * dtype_size(t);
  OPTIMUS_MPI_CHECK(MPI_Allgather(in_place ? MPI_IN_PLACE : send, count, mpi_type(t), recv, count, mpi_type(t), comm_));
}

void MpiCommunicator::do_reduce_scatter(void* recv, const void* send, int64_t n, DType t, ReduceOp op) {
  const int count = mpi_count("reduce_scatter", n);
  OPTIMUS_MPI_CHECK(MPI_Reduce_scatter_block(send, recv, count, mpi_type(t), mpi_op(op), comm_));
}

void MpiCommunicator::do_barrier() {
  OPTIMUS_MPI_CHECK(MPI_Barrier(comm_));
}

std::unique_ptr<Communicator> MpiCommunicator::do_split(int color, int key, std::string name) {
  MPI_Comm child = MPI_COMM_NULL;
  OPTIMUS_MPI_CHECK(MPI_Comm_split(comm_, color, key, &child));
  auto result = std::make_unique<MpiCommunicator>(child, std::move(name), ledger());
  result->owned_ = true;
  return result;
}

}  // namespace optimus::comm
